#!/bin/bash
# Submit the nightly feature job; the driver's own status decides.
set -e
DATE=${DATE:-2026-11-30}
mkdir -p logs

spark-submit --master yarn jobs/features.py --date "$DATE" > "logs/features-$DATE.log" 2>&1 &&
  rc=0 || rc=$?

if [ "$rc" -ne 0 ]; then
  echo "features job failed with $rc, see logs/features-$DATE.log"
  exit "$rc"
fi
echo "features for $DATE written"
