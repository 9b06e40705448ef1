#!/bin/bash
# Run every model on every precision; the runner is shared by both loops.
mkdir -p results

run_one() {
  model=$1
  precision=$2
  python bench.py --model "$model" --precision "$precision" > "results/$model-$precision.txt"
  echo "finished $model/$precision with $?"
}

set -e
for model in resnet50 bert-large; do
  for precision in fp32 fp16; do
    run_one "$model" "$precision"
  done
done
echo "matrix done"
