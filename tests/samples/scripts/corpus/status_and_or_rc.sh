#!/bin/sh
# Data sync before training: keep going on failure, but say so and fail at the end.
set -e
failed=0

gsutil -m rsync -r gs://datasets/imagenet data/imagenet && rc=0 || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "dataset sync failed ($rc), training on the cached copy"
  failed=$rc
fi

python train.py --data data/imagenet --epochs 1
exit "$failed"
