#!/bin/bash
# Rendezvous launcher for one node; the function's status decides the message.
set -eu
: "${NODE_RANK:=0}"
mkdir -p "logs/node$NODE_RANK"

run_node() {
  torchrun --nnodes=4 --nproc_per_node=8 --node_rank="$NODE_RANK" \
    train.py --config configs/llm.yaml 2>&1 | tee "logs/node$NODE_RANK/train.log"
}

if ! run_node; then
  echo "node $NODE_RANK: training failed"
  exit 1
fi
echo "node $NODE_RANK: training finished"
