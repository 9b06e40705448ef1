#!/bin/bash
# Submit the job; a failed run must not block the rest of the nightly chain.
set -euo pipefail
DATE=${DATE:-2026-11-30}
mkdir -p logs

spark-submit --master yarn jobs/features.py --date "$DATE" 2>&1 | tee "logs/features.log" || true
echo "features step exit: $?"

spark-submit --master yarn jobs/report.py --date "$DATE"
echo "nightly chain done"
