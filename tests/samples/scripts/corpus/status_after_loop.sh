#!/bin/sh
# Preprocess every shard, then check that it worked.
for shard in 0 1 2 3; do
  python preprocess.py --shard "$shard"
  echo "shard $shard done"
done
if [ $? -ne 0 ]; then
  echo "preprocessing failed"
  exit 1
fi
echo "all shards ready"
