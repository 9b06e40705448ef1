#!/bin/bash
# Evaluate the candidate model and stop the release when it fails.
log_error() { echo "ERROR: $*" >&2; }

if python evaluate.py --model candidate --suite release; then
  echo "evaluation passed"
else
  log_error "evaluation failed, not releasing"
  exit $?
fi
echo "releasing candidate"
