#!/bin/bash
# Sweep batch sizes; stop at the first size that does not fit in memory.
mkdir -p results

for bs in 8 16 32 64; do
  echo "=== batch size $bs"
  python bench_throughput.py --batch-size "$bs" --steps 50 | tail -n 5 | tee -a results/sweep.txt
  if [ ! $? -eq 0 ]; then
    echo "batch size $bs failed, stopping the sweep"
    exit 1
  fi
done

echo "sweep complete"
