#!/bin/bash
# Timing and the job's output go to one log.
set -e
mkdir -p logs

{
  echo "start: $(date)"
  mpirun -np 4 --bind-to core python train_hvd.py --epochs 2
  echo "end: $(date)"
} 2>&1 | tee logs/hvd.log

echo "horovod job finished"
