#!/bin/bash
# Launch a DDP job on one node and keep a copy of the log.
set -e

NPROC=${NPROC:-8}
RUN=${RUN:-resnet50-ddp}
mkdir -p logs

echo "starting $RUN on $NPROC GPUs"
torchrun --standalone --nproc_per_node="$NPROC" train.py \
    --config configs/resnet50.yaml --run-name "$RUN" 2>&1 | tee "logs/$RUN.log"

echo "training finished, uploading checkpoints"
aws s3 sync checkpoints/ "s3://ml-ckpt/$RUN/"
echo "done"
