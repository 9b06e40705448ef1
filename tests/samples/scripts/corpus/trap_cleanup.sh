#!/bin/bash
# Always collect the GPU state when the job ends, whatever happened.
set -euo pipefail
mkdir -p logs

collect_state() {
  nvidia-smi -q | tee logs/gpu-state.txt > /dev/null
}
trap collect_state EXIT

torchrun --nproc_per_node=8 train.py 2>&1 | tee logs/train.log
echo "training finished"
