#!/bin/bash
# CI entry point: the job name picks the stage.
set -e

build() {
  bazel build //... 2>&1 | tee build.log
}

unit() {
  bazel test //tests/... 2>&1 | tee test.log
}

case "${1:-build}" in
  build) build ;;
  test)
    set -o pipefail
    unit
    ;;
  *) echo "unknown job $1"; exit 2 ;;
esac
echo "job ${1:-build} done"
