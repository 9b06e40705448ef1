#!/bin/bash
# Timing and the job's output go to one log; pipefail lets a crash through.
set -eo pipefail
mkdir -p logs

{
  echo "start: $(date)"
  mpirun -np 4 --bind-to core python train_hvd.py --epochs 2
} 2>&1 | tee logs/hvd.log

(
  cd .
  torchrun --nproc_per_node=2 train.py --epochs 1
) 2>&1 | tee logs/subshell.log

echo "jobs finished"
