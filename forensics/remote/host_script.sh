# shellcheck shell=sh
# The prelude of the one script that runs every section on the host. Set before it by
# forensics/remote/host_script.py: _fx_n (this run's nonce), _fx_kill (seconds between
# TERM and KILL when a section overruns), _fx_errlines (stderr lines kept per section),
# _fx_errbytes (bytes kept of each stderr line),
# _fx_client_boot and _fx_client_pids (the collector's machine and pids),
# _fx_focus_octal (the --focus regex as printf %b escapes, or empty) and _fx_focus_sh (the
# text of focus.sh). Then come the calls: _fx_sec NAME TIMEOUT MAX_BYTES 'SHELL' for a
# section that runs commands that can hang, _fx_in NAME MAX_BYTES 'SHELL' for one that runs
# in this shell (after _fx_deadline SECONDS, the one watchdog of the whole script).
LC_ALL=C; export LC_ALL
PATH="$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"; export PATH
umask 077
_fx_d="${TMPDIR:-/tmp}/forensics.$$.$_fx_n"
if ! mkdir "$_fx_d" 2>/dev/null; then
  _fx_d="/dev/shm/forensics.$$.$_fx_n"
  mkdir "$_fx_d" 2>/dev/null || { printf '\n%s FATAL no writable temp dir\n' "$_fx_n"; exit 70; }
fi
# The watchdog (the script's deadline) and the running section end with the script.
_fx_wd=; _fx_p=
_fx_exit() {
  if [ -n "$_fx_p" ]; then kill "$_fx_p" 2>/dev/null; fi
  if [ -n "$_fx_wd" ]; then { _fx_unwatch; wait "$_fx_wd"; } 2>/dev/null; fi
  cd /; rm -rf "$_fx_d"
}
trap _fx_exit EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 143' TERM; trap '' PIPE
cd "$_fx_d" || exit 70
# Sections find the focus processes with the function in focus.sh, the regex in focus.re.
printf '%s\n' "$_fx_focus_sh" >focus.sh
if [ -n "$_fx_focus_octal" ]; then printf '%b' "$_fx_focus_octal" >focus.re; fi
# When this host is the machine the collector runs on, the collector's own processes
# (whose command line holds the --focus regex) are this collection's too: client.pids.
_fx_b=; { read -r _fx_b </proc/sys/kernel/random/boot_id; } 2>/dev/null
if [ -n "$_fx_client_pids" ] && [ "$_fx_b" = "$_fx_client_boot" ]; then
  printf '%s\n' "$_fx_client_pids" >client.pids
fi
# Which timeout the host has, from one run that fails before it starts anything: GNU,
# toybox and newer busybox reject the duration x after accepting -k; older busybox
# rejects -k itself (then -t is tried); none at all is 127.
_fx_to=w
timeout -k 1 x true >/dev/null 2>tk
case $? in
  127) ;;
  *) _fx_l=; { IFS= read -r _fx_l <tk; } 2>/dev/null
     case $_fx_l in
       *option*) if timeout -t 5 true 2>/dev/null; then _fx_to=t; fi ;;
       *) _fx_to=k ;;
     esac ;;
esac
# _fx_deadline SECONDS: end the script (TERM, then KILL after the grace) when SECONDS have
# passed. In-shell sections have no watchdog of their own; this one bounds them all.
_fx_deadline() {
  _fx_m=$$
  (
    trap 'kill $! 2>/dev/null; exit 0' TERM
    sleep "$1" &
    wait $! || exit 0
    kill -TERM "$_fx_m" 2>/dev/null
    sleep "$_fx_kill" &
    wait $! || exit 0
    # Only while the script is still this subshell's parent: never a reused pid.
    _fx_l=; read -r _fx_l </proc/self/stat
    # shellcheck disable=SC2086 # the fields after the name: numbers and a state letter
    set -- ${_fx_l##*) }
    if [ "$2" = "$_fx_m" ]; then kill -KILL "$_fx_m"; fi
  ) </dev/null >/dev/null 2>&1 &
  _fx_wd=$!
}
# _fx_unwatch: end the watchdog and its sleep. Stopped first, its children read from /proc
# and then killed, so no sleep it was just starting is left behind; where /proc does not
# list children, TERM (its trap kills its sleep).
_fx_unwatch() {
  if [ -r "/proc/$_fx_wd/task/$_fx_wd/children" ]; then
    kill -STOP "$_fx_wd" 2>/dev/null
    _fx_c=; { read -r _fx_c <"/proc/$_fx_wd/task/$_fx_wd/children"; } 2>/dev/null
    kill -KILL "$_fx_wd" 2>/dev/null
    # shellcheck disable=SC2086 # pids
    if [ -n "$_fx_c" ]; then kill $_fx_c 2>/dev/null; fi
  else
    kill "$_fx_wd" 2>/dev/null
  fi
}
# A section writes its stdout through fd 3, which this shell holds open on its file o<k>:
# the kernel's offset of that one open file (/proc/$$/fdinfo/3, "pos:") is how many bytes
# the section wrote, read with a builtin, so counting them costs no process (wc only where
# /proc does not say). Its frame goes out at once with exactly min(size, cap) bytes (head
# -c): a process it started may still write (one stuck in the kernel outlives KILL), and
# a run cut later (the client's deadline, a dropped session) still brings it back.
_fx_sec() {
  printf '\n%s START %s\n' "$_fx_n" "$1"
  _fx_u0=0; read -r _fx_u0 _fx_x </proc/uptime 2>/dev/null
  command exec 3>o
  # In the background and waited for, so that a signal (the deadline) is handled at once:
  # the EXIT trap stops the section (_fx_p) instead of waiting for it.
  case $_fx_to in
    k) timeout -k "$_fx_kill" "$2" sh -c "$4" >&3 2>e </dev/null 3>&- &
       _fx_p=$!; wait "$_fx_p"; _fx_rc=$? ;;
    t) timeout -t "$2" sh -c "$4" >&3 2>e </dev/null 3>&- &
       _fx_p=$!; wait "$_fx_p"; _fx_rc=$? ;;
    *) sh -c "$4" >&3 2>e </dev/null 3>&- &
       _fx_p=$!
       ( sleep "$2"; kill -9 "$_fx_p" ) >/dev/null 2>&1 &
       _fx_w=$!
       wait "$_fx_p"; _fx_rc=$?
       kill "$_fx_w" 2>/dev/null ;;
  esac
  _fx_p=
  _fx_frame "$1" "$3"
}
# _fx_frame NAME MAX_BYTES: frame the section just run (its stdout in o, fd 3; _fx_rc,
# _fx_u0 set): its header, exactly min(size, cap) bytes (head -c), its stderr lines.
_fx_frame() {
  _fx_u1=0; read -r _fx_u1 _fx_x </proc/uptime 2>/dev/null
  _fx_x=; _fx_s=; { read -r _fx_x _fx_s </proc/$$/fdinfo/3; } 2>/dev/null
  exec 3>&-
  case $_fx_x in pos:) ;; *) _fx_s= ;; esac
  case $_fx_s in '' | *[!0-9]*) _fx_s=$(wc -c <o) ;; esac
  _fx_s=$((_fx_s + 0))
  _fx_head "$@"
  if [ "$_fx_s" -gt 0 ]; then head -c "$_fx_c" o; fi
  _fx_err "$1"
}
_fx_head() {
  _fx_c=$_fx_s; if [ "$_fx_c" -gt "$2" ]; then _fx_c=$2; fi
  printf '\n%s DATA %s %s %s %s %s %s\n' \
    "$_fx_n" "$1" "$_fx_rc" "$_fx_u0" "$_fx_u1" "$_fx_s" "$_fx_to"
}
# _fx_err NAME: the section's first stderr lines, cut, and its END frame.
_fx_err() {
  _fx_i=0; _fx_l=
  while [ "$_fx_i" -lt "$_fx_errlines" ] && IFS= read -r _fx_l || [ -n "$_fx_l" ]; do
    # The precision must sit in the format; _fx_errbytes is a number we set.
    # shellcheck disable=SC2059
    printf "\n%s ERR %.${_fx_errbytes}s" "$_fx_n" "$_fx_l"
    _fx_i=$((_fx_i + 1)); _fx_l=
  done <e
  printf '\n%s END %s\n' "$_fx_n" "$1"
}
# _fx_in NAME MAX_BYTES 'SHELL': a section that only reads files (with builtins) and runs
# nothing that can hang runs in this shell as a function body: no sh, no timeout, no frame
# process of its own; it returns, never exits. Its frame goes out at once (_fx_frame),
# so a run cut while a later section hangs still brings it back.
_fx_run() { eval "$1"; }
_fx_in() {
  printf '\n%s START %s\n' "$_fx_n" "$1"
  _fx_u0=0; read -r _fx_u0 _fx_x </proc/uptime 2>/dev/null
  command exec 3>o
  _fx_ifs=$IFS
  _fx_run "$3" >&3 2>e </dev/null 3>&-
  _fx_rc=$?
  IFS=$_fx_ifs; set +f; cd "$_fx_d" || exit 70
  _fx_frame "$1" "$2"
}
# _fx_dump CAP FILE...: what head -v -c CAP FILE... prints, read with builtins (no process)
# for in-shell sections: "==> FILE <==" and at most CAP bytes of each readable file, a
# blank line between files. Text files only: the shell cannot hold a NUL byte.
_fx_dump() {
  _fx_dc=$1; shift; _fx_ds=
  for _fx_df do
    if [ ! -r "$_fx_df" ]; then printf '%s: cannot read\n' "$_fx_df" >&2; continue; fi
    printf '%s==> %s <==\n' "$_fx_ds" "$_fx_df"; _fx_ds='
'
    _fx_dn=$_fx_dc
    while [ "$_fx_dn" -gt 0 ]; do
      _fx_dl=; IFS= read -r _fx_dl; _fx_de=$?
      if [ "$_fx_de" -ne 0 ] && [ -z "$_fx_dl" ]; then break; fi
      _fx_dm=$((${#_fx_dl} + 1))
      if [ "$_fx_dm" -gt "$_fx_dn" ] || [ "$_fx_de" -ne 0 ]; then
        # The precision must sit in the format; _fx_dn is a number.
        # shellcheck disable=SC2059
        printf "%.${_fx_dn}s" "$_fx_dl"
        break
      fi
      printf '%s\n' "$_fx_dl"; _fx_dn=$((_fx_dn - _fx_dm))
    done <"$_fx_df"
  done
}
