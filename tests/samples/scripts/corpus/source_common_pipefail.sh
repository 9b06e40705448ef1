#!/bin/bash
# Launcher built on the shared helpers; options are set before any helper runs.
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"
RUN=${RUN:-vit-base}
mkdir -p logs results

launch_job train.py --config configs/vit.yaml
sync_results
log_step "run $RUN complete"
