#!/bin/bash
# Profile one training step and keep every status of the pipeline.
mkdir -p profiles

nsys profile -o profiles/step python train.py --max-steps 1 2>&1 | tee profiles/nsys.log
statuses=("${PIPESTATUS[@]}")
if [ "${statuses[0]}" -ne 0 ]; then
  echo "profiling failed with ${statuses[0]}"
  exit "${statuses[0]}"
fi
echo "profile written to profiles/step"
