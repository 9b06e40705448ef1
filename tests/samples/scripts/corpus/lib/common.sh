# Shared helpers for the launchers in this directory (sourced, never run on its own).

log_step() { echo "==> $*"; }

launch_job() {
  log_step "launching $*"
  torchrun --nproc_per_node="${NPROC:-8}" "$@" 2>&1 | tee -a logs/job.log
}

sync_results() {
  aws s3 sync results/ "s3://ml-results/${RUN:-default}/"
}
