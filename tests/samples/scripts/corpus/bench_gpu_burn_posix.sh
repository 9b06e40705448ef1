#!/bin/sh
# Burn-in every GPU for ten minutes and keep the summary.
set -e
LOG=burn.log
: > "$LOG"

nvidia-smi -L | tee -a "$LOG"
for gpu in 0 1 2 3; do
  echo "GPU $gpu" >> "$LOG"
  python gpu_burn.py --device "$gpu" --minutes 10 | tail -n 3 >> "$LOG"
done
echo "burn-in finished"
