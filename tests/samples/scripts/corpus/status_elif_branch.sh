#!/bin/sh
# Download the checkpoint, telling a missing object from a network error.
aws s3 cp "s3://ml-ckpt/${RUN:-base}/last.pt" checkpoints/last.pt
rc=$?
if [ "$rc" -eq 0 ]; then
  echo "checkpoint downloaded"
elif [ "$rc" -eq 1 ]; then
  echo "checkpoint missing, starting from scratch"
else
  echo "download failed"
  exit $?
fi
python train.py --resume checkpoints/last.pt
