#!/bin/bash
# Keep relaunching the elastic job until a run completes.
mkdir -p logs
attempt=0

while true; do
  attempt=$((attempt + 1))
  echo "launch $attempt"
  torchrun --nnodes=1:4 --max-restarts=3 train.py 2>&1 | tee -a logs/elastic.log
  if [ $? -eq 0 ]; then
    echo "elastic run completed after $attempt launch(es)"
    break
  fi
  [ "$attempt" -ge 5 ] && exit 1
  sleep 60
done
