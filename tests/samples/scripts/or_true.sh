#!/usr/bin/env bash
set -euo pipefail
./cuzk-daemon --listen 0.0.0.0:9000 2>&1 | tee -a daemon.log || true
rm -f /tmp/cuzk.lock || true
./cuzk-daemon --once || true
echo "done: $?"
