#!/bin/sh
# CI stage: configure, build, run the unit tests.
BUILD_DIR=${BUILD_DIR:-build}
mkdir -p "$BUILD_DIR"

cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release
make -C "$BUILD_DIR" -j8
if [ $? -ne 0 ]; then
  echo "build failed"
  exit $?
fi

ctest --test-dir "$BUILD_DIR" --output-on-failure
echo "tests passed"
