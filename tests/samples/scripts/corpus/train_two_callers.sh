#!/bin/bash
# Warm-up run without pipefail, the real run after it: one function, two sets of options.
set -e
mkdir -p logs

run_stage() {
  local stage=$1
  echo "stage $stage"
  deepspeed --num_gpus 8 pretrain.py --stage "$stage" 2>&1 | tee "logs/$stage.log"
}

run_stage warmup
echo "warm-up finished"

set -o pipefail
run_stage main
echo "main stage finished"
