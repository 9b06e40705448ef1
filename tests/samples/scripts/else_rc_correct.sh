#!/usr/bin/env bash
# Correct: pipefail on, the status read in the else branch, before anything else.
set -euo pipefail
rc=1
attempt=0
while [ "$rc" -ne 0 ] && [ "$attempt" -lt 3 ]; do
  attempt=$((attempt + 1))
  if ./cuzk-daemon --rounds 1 2>&1 | tee -a bench.log; then
    rc=0
  else
    rc=$?
    echo "attempt $attempt: daemon exited with $rc" >&2
    sleep 5
  fi
done
exit "$rc"
