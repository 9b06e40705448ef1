#!/bin/bash
# The data step runs in a subshell function with its own options; training does not get them.
set -e
mkdir -p logs

prepare() (
  set -o pipefail
  python prepare_data.py --out data/ | tee logs/prepare.log
)

prepare
echo "data ready"
python train.py --data data/ | tee logs/train.log
echo "training finished"
