#!/bin/bash
# Runs the job in a subshell so its cd stays local, and logs everything it prints.
set -e
mkdir -p logs
WORKDIR=${WORKDIR:-.}

(
  cd "$WORKDIR"
  echo "cwd: $(pwd)"
  torchrun --nproc_per_node=2 train.py --epochs 1
) 2>&1 | tee logs/subshell.log

echo "job finished"
