# shellcheck shell=sh
# recorder: the host side of the flight recorder (forensics arm). It runs after the host
# script's prelude (host_script.sh: private directory, traps, focus.sh and focus.re), with
# these set before it by forensics/watch/recorder_host.py: nonce (framing of every line),
# focus_most (the most focus processes followed), thread_cap (threads looked at per
# process for state D).
#
# The client drives it: each line it writes on this shell's stdin is one tick, whose words
# say what to do ("s": sample; "d": also count the focus threads in state D; "f": find the
# focus processes again first; "o": also read the host's OOM-kill counter). Between ticks the shell sits in `read`, a builtin: an idle
# recorder runs no process, and a sample is builtins only. When the client goes away
# (Ctrl-C, a dropped connection), stdin ends, the loop ends, and the EXIT trap removes the
# private directory: nothing is left running on the host.
#
# Lines written (all begin with the nonce):
#   F COUNT PID...               the focus processes (at most focus_most; COUNT matched)
#   X TEXT                       grep's complaint about the regex
#   N PID COMM                   a focus process's name
#   G PID DIR                    its memory cgroup directory (- when none is readable)
#   S UPTIME MEMTOTAL MEMAVAILABLE OOM_KILL PSI_SOME10 PSI_FULL10   (kB; - when unreadable)
#   P PID STATE THREADS RSS_KB EXIT_CODE  (STATE "gone" when /proc/PID is gone)
#   D PID IN_D LOOKED                      threads in state D, of those looked at
#   C DIR USAGE LIMIT OOM_KILL             bytes; the cgroup's own OOM-kill counter
#   E                            the tick is complete
rn=$nonce
# _fx_focus runs in this shell and uses _fx_* names of its own (_fx_d, _fx_n among them):
# keep the private directory under a name of ours, for the EXIT trap.
rd=$_fx_d
trap 'cd /; rm -rf "$rd"' EXIT
pids=; cgroups=
pk=$(getconf PAGESIZE 2>/dev/null); pk=$((${pk:-4096} / 1024))
# _fx_focus (focus.sh) is defined here, run from the private directory.
if [ -s focus.re ]; then . ./focus.sh; fi

_memcg() {
  m=-; v1=; v2=
  { while IFS=: read -r _ h q; do
      case ",$h," in *,memory,*) v1=${q%/} ;; ,,) v2=${q%/} ;; esac
    done <"/proc/$1/cgroup"; } 2>/dev/null
  for d in "/sys/fs/cgroup/memory$v1" "/sys/fs/cgroup$v2"; do
    if [ -r "$d/memory.usage_in_bytes" ] || [ -r "$d/memory.current" ]; then m=$d; break; fi
  done
}

_refocus() {
  pids=; cgroups=
  if command -v _fx_focus >/dev/null 2>&1; then
    _fx_focus "$focus_most"
    pids=${_fx_fp# }
    printf '%s F %s %s\n' "$rn" "$_fx_fn" "$pids"
    if [ -n "$_fx_fe" ]; then printf '%s X %s\n' "$rn" "$_fx_fe"; fi
  else
    printf '%s F 0 \n' "$rn"
  fi
  for p in $pids; do
    c=; { IFS= read -r c <"/proc/$p/comm"; } 2>/dev/null
    printf '%s N %s %s\n' "$rn" "$p" "$c"
    _memcg "$p"
    printf '%s G %s %s\n' "$rn" "$p" "$m"
    case " $cgroups " in *" $m "*) ;; *) [ "$m" = - ] || cgroups="$cgroups $m" ;; esac
  done
}

_host() {
  up=-; { read -r up _ </proc/uptime; } 2>/dev/null
  t=-; a=-
  { while read -r k v _; do
      case $k in MemTotal:) t=$v ;; MemAvailable:) a=$v; break ;; esac
    done </proc/meminfo; } 2>/dev/null
  o=-
  # /proc/vmstat is 4 KiB that sh reads a byte a syscall: only on ticks that ask ("o").
  case " $tick " in *" o "*)
    { while read -r k v; do
        if [ "$k" = oom_kill ]; then o=$v; break; fi
      done </proc/vmstat; } 2>/dev/null ;;
  esac
  ps=-; pf=-
  { while read -r k v _; do
      case $k in some) ps=${v#avg10=} ;; full) pf=${v#avg10=} ;; esac
    done </proc/pressure/memory; } 2>/dev/null
  printf '%s S %s %s %s %s %s %s\n' "$rn" "$up" "$t" "$a" "$o" "$ps" "$pf"
}

_process() {
  l=; { read -r l <"/proc/$1/stat"; } 2>/dev/null
  if [ -z "$l" ]; then printf '%s P %s gone - - -\n' "$rn" "$1"; return 0; fi
  # shellcheck disable=SC2086 # the fields after the name: numbers and a state letter
  set -- "$1" ${l##*) }
  # Field k of /proc/PID/stat is ${k-1} here: state 3, num_threads 20, rss 24 (pages),
  # exit_code 52 (a wait status, set once the process has exited).
  r=-; case ${23} in '' | *[!0-9]*) ;; *) r=$((${23} * pk)) ;; esac
  printf '%s P %s %s %s %s %s\n' "$rn" "$1" "$2" "${19:--}" "$r" "${51:--}"
}

_threads() {
  n=0; dn=0
  for t in /proc/"$1"/task/*; do
    [ "$n" -lt "$thread_cap" ] || break
    n=$((n + 1))
    l=; { read -r l <"$t/stat"; } 2>/dev/null
    l=${l##*") "}
    case $l in D*) dn=$((dn + 1)) ;; esac
  done
  printf '%s D %s %s %s\n' "$rn" "$1" "$dn" "$n"
}

_cgroup() {
  if [ -r "$1/memory.current" ]; then u=$1/memory.current; lim=$1/memory.max; ev=$1/memory.events
  else u=$1/memory.usage_in_bytes; lim=$1/memory.limit_in_bytes; ev=$1/memory.oom_control
  fi
  cu=-; cl=-; co=-
  { read -r cu <"$u"; } 2>/dev/null
  { read -r cl <"$lim"; } 2>/dev/null
  { while read -r k v; do
      if [ "$k" = oom_kill ]; then co=$v; break; fi
    done <"$ev"; } 2>/dev/null
  printf '%s C %s %s %s %s\n' "$rn" "$1" "$cu" "$cl" "$co"
}

while read -r tick; do
  case " $tick " in *" f "*) _refocus ;; esac
  _host
  for p in $pids; do
    _process "$p"
    case " $tick " in *" d "*) _threads "$p" ;; esac
  done
  for g in $cgroups; do _cgroup "$g"; done
  printf '%s E\n' "$rn" || exit 0
done
