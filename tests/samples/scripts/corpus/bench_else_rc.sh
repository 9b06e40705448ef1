#!/bin/bash
# Read the status in the else branch, before anything else runs.
set -o pipefail
mkdir -p logs

if mpirun -np 8 ./osu_bw 2>&1 | tee logs/osu.log; then
  echo "bandwidth test passed"
else
  rc=$?
  echo "bandwidth test failed with $rc"
  exit "$rc"
fi
