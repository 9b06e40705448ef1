# shellcheck shell=sh
# _dump CAP FILE: FILE (stat, status, ...) of every process, CAP bytes of each, with head -v
# so each file is named, batch files per head, and after each the private separator file
# $s (it holds a nonce: no command line, comm or cgroup path can forge a file boundary).
# Both process snapshots use it (processes.sh, processes.again.sh).
_dump() {
  a=; n=0
  for d in /proc/[0-9]*; do
    a="$a $d/$2 $s"; n=$((n + 1))
    # shellcheck disable=SC2086 # /proc paths, split on purpose: one head per batch
    if [ "$n" -ge "$batch" ]; then head -v -c "$1" $a 2>/dev/null; a=; n=0; fi
  done
  # shellcheck disable=SC2086 # as above
  if [ -n "$a" ]; then head -v -c "$1" $a 2>/dev/null; fi
}
