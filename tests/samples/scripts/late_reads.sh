#!/bin/bash
log() { printf '%s %s\n' "$(date +%T)" "$*" >&2; }
./prove --sector 4
log "prove returned"
if [ $? -ne 0 ]; then
  log "prove failed"
fi
set +e
./seal --sector 4
set -e
rc=$?
./daemon | tee daemon.log || :
echo "statuses: ${PIPESTATUS[*]}"
