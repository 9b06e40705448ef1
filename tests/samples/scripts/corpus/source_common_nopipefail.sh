#!/bin/bash
# Older launcher on the same helpers: set -e only.
set -e
source "$(dirname "$0")/lib/common.sh"
RUN=${RUN:-vit-base}
mkdir -p logs results

launch_job train.py --config configs/vit.yaml
sync_results
log_step "run $RUN complete"
