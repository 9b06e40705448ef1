#!/usr/bin/env bash
# The same wrapper, reading the real status from PIPESTATUS first thing in the branch.
set -euo pipefail
mkdir -p logs

if ! deepspeed --num_gpus 8 bench_zero3.py --steps 100 2>&1 | tee logs/zero3.log; then
  rc=${PIPESTATUS[0]}
  echo "zero3 benchmark failed with status $rc"
  exit "$rc"
fi
echo "zero3 benchmark passed"
