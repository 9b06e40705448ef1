#!/bin/bash
# pipefail set in the parent reaches the subshell and the function it calls.
set -euo pipefail
mkdir -p logs

train_once() {
  torchrun --nproc_per_node=8 train.py --max-steps "$1" | tee -a logs/steps.log
}

(
  echo "short smoke run first"
  train_once 10
)
echo "smoke run ok"
