#!/bin/sh
# Pull the dataset snapshot, retrying transient failures; give up after three tries.
n=0
until python fetch_snapshot.py --dataset laion-subset --out data/; do
  n=$((n + 1))
  echo "fetch failed (try $n)"
  if [ "$n" -ge 3 ]; then
    echo "giving up"
    exit 1
  fi
  sleep 30
done
echo "snapshot ready"
