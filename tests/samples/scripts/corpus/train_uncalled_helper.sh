#!/bin/bash
# Fine-tuning launcher. resume_from() was used before checkpoints moved to S3.
set -euo pipefail

resume_from() {
  local ckpt=$1
  python train.py --resume "$ckpt" | tee -a logs/resume.log
  echo "resumed from $ckpt: $?"
}

finetune() {
  accelerate launch --multi_gpu finetune.py --model "$MODEL" 2>&1 | tee -a logs/finetune.log
}

MODEL=${MODEL:-llama-7b}
mkdir -p logs
# resume_from checkpoints/step_1000.pt
finetune
echo "fine-tuning of $MODEL finished"
