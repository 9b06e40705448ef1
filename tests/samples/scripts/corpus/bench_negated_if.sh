#!/usr/bin/env bash
# The story's wrapper shape: a negated pipeline, then $? in the failure branch.
set -euo pipefail
mkdir -p logs

if ! deepspeed --num_gpus 8 bench_zero3.py --steps 100 2>&1 | tee logs/zero3.log; then
  echo "zero3 benchmark failed with status $?"
  exit 1
fi
echo "zero3 benchmark passed"
