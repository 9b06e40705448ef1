#!/bin/bash
# Profile one training step; the status is read after the summary line.
mkdir -p profiles

nsys profile -o profiles/step python train.py --max-steps 1 2>&1 | tee profiles/nsys.log
echo "profiling run ended"
rc=${PIPESTATUS[0]}
if [ "$rc" -ne 0 ]; then
  echo "profiling failed with $rc"
  exit "$rc"
fi
echo "profile written to profiles/step"
