#!/bin/bash
# init() sets the shell options for everything after it.
init() {
  set -eo pipefail
  mkdir -p logs
}

run_eval() {
  python evaluate.py --suite quick | tee logs/eval.log
}

init
run_eval
echo "quick evaluation passed"
