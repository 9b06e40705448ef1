#!/bin/bash
# Cluster smoke test. The benchmark helpers below are kept for manual runs.
set -e

bench_nccl() {
  all_reduce_perf -b 8 -e 4G -f 2 -g 8 | tee nccl.log
}

bench_disk() {
  python disk_bench.py --path /scratch | tee disk.log
  echo "disk bench: $?"
}

check_gpus() {
  nvidia-smi -L
  python -c 'import torch; assert torch.cuda.device_count() > 0'
}

check_gpus
#bench_nccl
echo "smoke test passed"
