#!/bin/bash
# The story's wrapper before anyone had heard of pipefail.
set -eu
LOG=/var/log/cuzk/bench.log
if ! /opt/cuzk/cuzk-daemon --gpus all 2>&1 | tee -a "$LOG"; then
  echo "daemon failed: $?"
fi
/opt/cuzk/cuzk-bench --rounds 3 | tee -a "$LOG"
rc=$?
echo "bench finished with $rc"
