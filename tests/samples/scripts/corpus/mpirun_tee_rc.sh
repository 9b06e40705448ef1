#!/bin/sh
# Multi-node allreduce; the output is kept and the status reported.
HOSTFILE=${HOSTFILE:-hosts.txt}
NP=${NP:-16}

mpirun --hostfile "$HOSTFILE" -np "$NP" all_reduce_perf -b 1G -e 4G | tee allreduce.log
rc=$?
echo "mpirun finished with status $rc"
exit "$rc"
