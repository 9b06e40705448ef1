#!/usr/bin/env bash
# The helpers are defined first; the options are set just before anything runs.

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*"; }

launch() {
  local cfg=$1
  log "launching with $cfg"
  torchrun --nnodes=1 --nproc_per_node=4 train.py --config "$cfg" 2>&1 | tee -a logs/train.log
  log "launch of $cfg returned"
}

evaluate() {
  python eval.py --ckpt checkpoints/last.pt | tee -a logs/eval.log
}

main() {
  mkdir -p logs
  launch configs/base.yaml
  evaluate
  log "all stages passed"
}

set -euo pipefail
main "$@"
