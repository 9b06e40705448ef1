#!/bin/bash
# pipefail is switched on inside a subshell only; the main run does not get it.
set -e
mkdir -p logs

(
  set -o pipefail
  python preprocess.py --shards 16 | tee logs/preprocess.log
)
echo "preprocessing ok"

torchrun --nproc_per_node=8 train.py --epochs 90 | tee logs/train.log
echo "training ok"
