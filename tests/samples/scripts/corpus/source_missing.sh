#!/bin/bash
# Site settings come from files next to the launcher and from the scheduler.
set -euo pipefail
. "$(dirname "$0")/site-env.sh"
source "${JOB_CONFIG:-/dev/null}"

mpirun -np "${NP:-8}" python train_hvd.py 2>&1 | tee hvd.log
echo "horovod run finished"
