#!/bin/bash
# CI pipeline in one file: each stage is a function, the runner calls them in order.
set -euo pipefail

stage_lint() {
  make lint 2>&1 | tee lint.log
}

stage_unit() {
  pytest -q tests/unit 2>&1 | tee unit.log
}

stage_gpu() {
  pytest -q tests/gpu 2>&1 | tee gpu.log
}

stage_docs() {
  make docs | tee docs.log
}

for stage in lint unit gpu; do
  echo "--- stage $stage"
  "stage_$stage"
done
echo "pipeline green"
