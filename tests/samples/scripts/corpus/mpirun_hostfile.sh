#!/bin/sh
# Multi-node allreduce check over the hostfile; prints the bus bandwidth line.
HOSTFILE=${HOSTFILE:-hosts.txt}
NP=${NP:-16}
printf 'node1 slots=8\nnode2 slots=8\n' > "$HOSTFILE"

mpirun --hostfile "$HOSTFILE" -np "$NP" -x NCCL_DEBUG=WARN \
  all_reduce_perf -b 1G -e 4G -f 2 -g 1 | grep "Avg bus bandwidth"
rc=$?
if [ "$rc" -ne 0 ]; then
  echo "allreduce check failed ($rc)"
  exit "$rc"
fi
echo "allreduce check passed"
