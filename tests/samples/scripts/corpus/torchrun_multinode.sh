#!/bin/bash
# Rendezvous launcher for one node of a multi-node job (rank from the scheduler).
set -euo pipefail
: "${NODE_RANK:=0}"
: "${MASTER_ADDR:=127.0.0.1}"
mkdir -p "logs/node$NODE_RANK"

run_node() {
  torchrun --nnodes=4 --nproc_per_node=8 --node_rank="$NODE_RANK" \
    --rdzv_backend=c10d --rdzv_endpoint="$MASTER_ADDR:29500" \
    train.py --config configs/llm.yaml 2>&1 | tee "logs/node$NODE_RANK/train.log"
}

if ! run_node; then
  echo "node $NODE_RANK: training failed"
  exit 1
fi
echo "node $NODE_RANK: training finished"
