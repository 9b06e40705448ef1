#!/bin/bash
# Nothing here reads a status for real: heredocs, single quotes, substitutions.
./daemon
cat <<EOF2
echo "$?"
rc=$?
EOF2
echo 'exit $? is literal here'
out=$(./probe; echo "inner $?")
./daemon || echo "daemon failed with $?"
rc=0; ./daemon || rc=$?
if ./daemon; then :; else rc=$?; fi
