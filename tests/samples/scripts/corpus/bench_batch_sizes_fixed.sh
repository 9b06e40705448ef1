#!/bin/bash
# Sweep batch sizes; PIPESTATUS keeps the benchmark's own status.
mkdir -p results
rc=0

for bs in 8 16 32 64; do
  echo "=== batch size $bs"
  python bench_throughput.py --batch-size "$bs" --steps 50 | tail -n 5 | tee -a results/sweep.txt
  rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    echo "batch size $bs failed with $rc, stopping the sweep"
    break
  fi
done

exit "$rc"
