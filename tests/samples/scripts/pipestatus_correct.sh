#!/usr/bin/env bash
# Correct: PIPESTATUS captured at once, then acted on; retry decided on the real status.
set -eu
for attempt in 1 2 3; do
  set +e
  ./cuzk-daemon --rounds 1 2>&1 | tee -a bench.log
  statuses=("${PIPESTATUS[@]}")
  set -e
  rc=${statuses[0]}
  if [ "$rc" -eq 0 ]; then
    break
  fi
  echo "attempt $attempt: daemon exited with $rc" >&2
  sleep 5
done
exit "$rc"
