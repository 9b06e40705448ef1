#!/bin/sh
# CI stage: run the GPU test suite and print a summary either way.
mkdir -p reports

pytest -q tests/gpu --junitxml=reports/gpu.xml
if [ $? -eq 0 ]; then
  echo "gpu tests: PASS"
else
  echo "gpu tests: FAIL ($?)"
  exit 1
fi
