# shellcheck shell=sh
# _fx_focus MOST: the processes that --focus names. The host script writes this file and
# the regex (focus.re) into its private directory; a section that needs the focus
# processes sources it from there (". ./focus.sh") and calls _fx_focus from that directory.
#
# A process matches when the extended regular expression (grep -E, C locale) matches its
# name (/proc/PID/comm) or its command line: the first 4096 bytes of /proc/PID/cmdline,
# NULs and newlines read as spaces, trailing spaces dropped. forensics/core/focus.py reads
# the same two texts the same way. Kernel threads never match, nor do this collection's
# own processes: this shell, its ancestors (in "collect local", the forensics command,
# whose command line holds the regex), its descendants and, when the host is the
# collector's own machine, the collector's pids (client.pids). The regex reaches grep through
# focus.re, never on a command line.
#
# The names and command lines come through one head, each process's files after a
# separator file holding a random nonce, so no command line can fake a file boundary.
#
# Sets _fx_fp (the first MOST pids, space separated: those matched by name, then those
# matched by command line, each in /proc's order), _fx_fn (how many matched) and _fx_fe
# (grep's complaint about the regex, if any).
_fx_focus() {
  _fx_fp=; _fx_fn=0; _fx_fe=
  [ -s focus.re ] || return 0
  _fo_u=; { read -r _fo_u </proc/sys/kernel/random/uuid; } 2>/dev/null
  [ -n "$_fo_u" ] || _fo_u="fx-$$-$(date +%s%N)"
  printf '%s\n' "$_fo_u" >fsep
  : >fsubj; : >fpid; : >fsubj.c; : >fpid.c
  _fo_a=; _fo_n=0
  # shellcheck disable=SC2086 # /proc paths, split on purpose: one head per 200 processes
  for _fo_d in /proc/[0-9]*; do
    _fo_a="$_fo_a fsep $_fo_d/comm $_fo_d/cmdline"; _fo_n=$((_fo_n + 1))
    if [ "$_fo_n" -ge 200 ]; then _fo_subjects $_fo_a; _fo_a=; _fo_n=0; fi
  done
  # shellcheck disable=SC2086
  if [ -n "$_fo_a" ]; then _fo_subjects $_fo_a; fi
  cat fsubj.c >>fsubj; cat fpid.c >>fpid
  grep -n -E -f focus.re fsubj >fhit 2>ferr
  if [ $? -gt 1 ]; then IFS= read -r _fx_fe <ferr; _fx_fe=${_fx_fe:-grep -E failed}; return 0; fi
  _fo_self=" $$ "; _fo_p=$$
  while _fo_ppid "$_fo_p" && [ "$_fo_pp" -gt 1 ]; do
    _fo_p=$_fo_pp; _fo_self="$_fo_self$_fo_p "
  done
  # The collector itself, when this host is the machine it runs on (see host_script.sh).
  if [ -r client.pids ]; then read -r _fo_c <client.pids; _fo_self="$_fo_self$_fo_c "; fi
  # shellcheck disable=SC2013 # pids: one word each
  for _fo_p in $(awk -F: 'NR == FNR { hit[$1] = 1; next } (FNR in hit) && !seen[$0]++' fhit fpid); do
    case $_fo_self in *" $_fo_p "*) continue ;; esac
    _fo_ppid "$_fo_p" || continue
    _fo_kthread "$_fo_p" && continue
    _fo_i=0
    while [ "$_fo_pp" -gt 1 ] && [ "$_fo_pp" != $$ ] && [ "$_fo_i" -lt 64 ]; do
      _fo_ppid "$_fo_pp" || break
      _fo_i=$((_fo_i + 1))
    done
    [ "$_fo_pp" = $$ ] && continue
    _fx_fn=$((_fx_fn + 1))
    if [ "$_fx_fn" -le "$1" ]; then _fx_fp="$_fx_fp $_fo_p"; fi
  done
  rm -f fsep fsubj fpid fsubj.c fpid.c fhit ferr
}

# The names into fsubj, the command lines into fsubj.c, one line each, and the pid of each
# into fpid (fpid.c) on the same line: processes the pattern names come first.
_fo_subjects() {
  head -v -c 4096 "$@" 2>/dev/null | tr '\000' ' ' | awk -v u="$_fo_u" '
    function done(   t, i) {
      if (k == "") return
      if (k == "cmdline" && n > 0 && l[n] == "==> fsep <==") n--
      if (n > 0 && l[n] == "") n--
      t = ""
      for (i = 1; i <= n; i++) t = (i > 1 ? t " " : "") l[i]
      sub(/ +$/, "", t)
      if (k == "comm") { print p >>"fpid"; print t >>"fsubj" }
      else { print p >>"fpid.c"; print t >>"fsubj.c" }
      k = ""; n = 0
    }
    $0 == u { done(); s = 1; next }
    s == 1 && /^==> \/proc\/[0-9]+\/(comm|cmdline) <==$/ {
      p = $2; sub(/^\/proc\//, "", p); sub(/\/.*/, "", p)
      k = ($2 ~ /comm$/) ? "comm" : "cmdline"; n = 0; s = 2; next
    }
    s == 1 { next }
    s == 2 && k == "comm" && $0 == "==> /proc/" p "/cmdline <==" { done(); k = "cmdline"; next }
    s == 2 { l[++n] = $0 }
    END { done() }' 
}

# _fo_ppid PID: sets _fo_pp to the parent of PID; fails when PID is gone.
_fo_ppid() {
  _fo_l=; read -r _fo_l <"/proc/$1/stat" 2>/dev/null || return 1
  # shellcheck disable=SC2086 # the fields after the name: numbers and a state letter
  set -- ${_fo_l##*) }
  case $2 in '' | *[!0-9]*) return 1 ;; esac
  _fo_pp=$2
}

# _fo_kthread PID: the process is a kernel thread (PF_KTHREAD in its stat flags).
_fo_kthread() {
  _fo_l=; read -r _fo_l <"/proc/$1/stat" 2>/dev/null || return 1
  # shellcheck disable=SC2086 # the fields after the name: numbers and a state letter
  set -- ${_fo_l##*) }
  case $7 in '' | *[!0-9]*) return 1 ;; esac
  [ $(($7 & 2097152)) -ne 0 ]
}
