#!/bin/bash
# Submit the nightly feature job to YARN and archive the driver log.
set -e
DATE=${DATE:-2026-11-30}
mkdir -p logs

spark-submit \
  --master yarn --deploy-mode client \
  --num-executors 40 --executor-memory 24g \
  jobs/features.py --date "$DATE" 2>&1 | tee "logs/features-$DATE.log"

hdfs dfs -put -f "logs/features-$DATE.log" /logs/features/
echo "features for $DATE written"
