#!/bin/bash
# CI stage: run the flaky integration tests, keep going, report the status at the end.
set -euo pipefail
mkdir -p reports

set +e
pytest -q tests/integration --maxfail=5 2>&1 | tee reports/integration.log
rc=$?
set -e

echo "integration tests finished with $rc"
exit "$rc"
