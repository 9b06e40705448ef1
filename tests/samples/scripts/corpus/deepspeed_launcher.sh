#!/bin/bash
# DeepSpeed pretraining launcher with a hostfile; slack message on failure.
set -o pipefail
HOSTFILE=${HOSTFILE:-/job/hostfile}
mkdir -p logs

notify() {
  curl -s -X POST -d "text=$1" "${SLACK_HOOK:-http://127.0.0.1:9/hook}" > /dev/null
}

deepspeed --hostfile "$HOSTFILE" pretrain_gpt.py \
  --deepspeed_config ds_config.json 2>&1 | tee logs/pretrain.log
status=$?
if [ $status -ne 0 ]; then
  notify "pretraining failed with $status"
  exit $status
fi
notify "pretraining finished"
