# shellcheck shell=sh
# processes: the process table read straight from /proc, the first of two snapshots (the
# second is processes.again.sh, which reads this one's uptime from .t). Set by
# probes/processes.py: batch (processes per head), stat_cap, status_cap, cmdline_cap,
# cgroup_cap (bytes read of each file), threads_per_process, thread_lines (threads
# listed). After every file head prints a private separator file holding a random nonce,
# so no command line, comm or cgroup path can forge a file boundary.
s=.s; u=
{ read -r u </proc/sys/kernel/random/uuid; } 2>/dev/null
u=${u%-*-*}; [ -n "$u" ] || u="nouuid-$$"
printf '%s\n' "$u" >"$s" || exit 70
echo "nonce $u"
echo "clock_ticks $(getconf CLK_TCK 2>/dev/null)"
echo "page_size $(getconf PAGESIZE 2>/dev/null)"
while read -r k v _; do if [ "$k" = btime ]; then echo "btime $v"; fi; done </proc/stat
echo "self $$"
# The collector's pids when this host is its own machine (written by the host script).
if [ -r client.pids ]; then read -r c <client.pids; echo "client $c"; fi
_tasks() {
  for d in /proc/[0-9]*; do
    set -- "$d"/task/*
    [ "$#" -gt 1 ] || continue
    echo "tasks ${d#/proc/} $#"
    i=0
    for t do
      [ "$i" -lt "$threads_per_process" ] && [ "$m" -lt "$thread_lines" ] || break
      i=$((i + 1)); m=$((m + 1))
      l=; { while IFS= read -r x; do l=$x; done <"$t/stat"; } 2>/dev/null
      w=; { read -r w <"$t/wchan"; } 2>/dev/null
      c=; { IFS= read -r c <"$t/comm"; } 2>/dev/null
      l=${l##*") "}
      printf 'thread %s %s %s %s %s\n' "${d#/proc/}" "${t##*/}" "${l%% *}" "${w:--}" "$c"
    done
  done
}
q=; if ls -q -d / >/dev/null 2>&1; then q=q; fi
{ read -r up _ </proc/uptime; } 2>/dev/null; echo "snapshot 1 $up"
printf '%s\n' "$up" >.t
_dump "$stat_cap" stat
_dump "$status_cap" status
_dump "$cmdline_cap" cmdline
_dump 64 wchan
_dump "$cgroup_cap" cgroup
echo threads; m=0
_tasks
echo links
ls -lnd$q /proc/[0-9]*/exe /proc/[0-9]*/cwd 2>/dev/null
head -v -c 64 "$s"
