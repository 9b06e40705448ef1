#!/bin/bash
# DeepSpeed pretraining launcher; the status is read after the notification went out.
set -o pipefail
mkdir -p logs

notify() {
  curl -s -X POST -d "text=$1" "${SLACK_HOOK:-http://127.0.0.1:9/hook}" > /dev/null
}

deepspeed --num_gpus 8 pretrain_gpt.py --deepspeed_config ds_config.json 2>&1 | tee logs/pretrain.log
notify "pretraining step ended"
if [ $? -ne 0 ]; then
  echo "pretraining failed"
  exit 1
fi
echo "pretraining finished"
