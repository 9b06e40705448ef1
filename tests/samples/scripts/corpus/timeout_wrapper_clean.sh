#!/bin/bash
# Bounded training run for the perf regression gate.
set -euo pipefail
mkdir -p logs

timeout 3600 env CUDA_VISIBLE_DEVICES=0,1 \
  accelerate launch --num_processes 2 train.py --max-steps 500 2>&1 | tee logs/gate.log
nohup python upload_metrics.py --run gate > logs/upload.log 2>&1 &
wait $!
echo "perf gate run finished"
