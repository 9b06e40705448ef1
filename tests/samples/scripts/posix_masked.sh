#!/bin/sh
# dash: no pipefail, no PIPESTATUS.
set -e
if ! ./daemon | tee daemon.log; then
  echo "failed: $?"
fi
