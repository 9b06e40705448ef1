#!/usr/bin/env bash
# benchmark.sh as it ran in the story: every daemon crash read as success.
set -euo pipefail
LOG=${LOG:-/var/log/cuzk/bench.log}
rc=0
for attempt in 1 2 3; do
  if ! /opt/cuzk/cuzk-daemon --gpus all 2>&1 | tee -a "$LOG"; then
    echo "daemon exited with status $?" | tee -a "$LOG"
    rc=$?
  fi
  if [ "$rc" -eq 0 ]; then
    echo "benchmark finished"
    break
  fi
  echo "attempt $attempt failed, retrying in 30s"
  sleep 30
done
