#!/bin/sh
# CI stage: configure, build, run the unit tests; the status is kept before it is tested.
BUILD_DIR=${BUILD_DIR:-build}
mkdir -p "$BUILD_DIR"

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
make -C "$BUILD_DIR" -j8
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "build failed"
  exit "$rc"
fi

ctest --test-dir "$BUILD_DIR" --output-on-failure || exit $?
echo "tests passed"
