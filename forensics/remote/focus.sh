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
  _fx_u=; { read -r _fx_u </proc/sys/kernel/random/uuid; } 2>/dev/null
  [ -n "$_fx_u" ] || _fx_u="fx-$$-$(date +%s%N)"
  printf '%s\n' "$_fx_u" >fsep
  : >fsubj; : >fpid; : >fsubj.c; : >fpid.c
  _fx_a=; _fx_n=0
  # shellcheck disable=SC2086 # /proc paths, split on purpose: one head per 200 processes
  for _fx_d in /proc/[0-9]*; do
    _fx_a="$_fx_a fsep $_fx_d/comm $_fx_d/cmdline"; _fx_n=$((_fx_n + 1))
    if [ "$_fx_n" -ge 200 ]; then _fx_subjects $_fx_a; _fx_a=; _fx_n=0; fi
  done
  # shellcheck disable=SC2086
  if [ -n "$_fx_a" ]; then _fx_subjects $_fx_a; fi
  cat fsubj.c >>fsubj; cat fpid.c >>fpid
  grep -n -E -f focus.re fsubj >fhit 2>ferr
  if [ $? -gt 1 ]; then IFS= read -r _fx_fe <ferr; _fx_fe=${_fx_fe:-grep -E failed}; return 0; fi
  _fx_self=" $$ "; _fx_p=$$
  while _fx_ppid "$_fx_p" && [ "$_fx_pp" -gt 1 ]; do
    _fx_p=$_fx_pp; _fx_self="$_fx_self$_fx_p "
  done
  # The collector itself, when this host is the machine it runs on (see host_script.sh).
  if [ -r client.pids ]; then read -r _fx_c <client.pids; _fx_self="$_fx_self$_fx_c "; fi
  # shellcheck disable=SC2013 # pids: one word each
  for _fx_p in $(awk -F: 'NR == FNR { hit[$1] = 1; next } (FNR in hit) && !seen[$0]++' fhit fpid); do
    case $_fx_self in *" $_fx_p "*) continue ;; esac
    _fx_ppid "$_fx_p" || continue
    _fx_kthread "$_fx_p" && continue
    _fx_i=0
    while [ "$_fx_pp" -gt 1 ] && [ "$_fx_pp" != $$ ] && [ "$_fx_i" -lt 64 ]; do
      _fx_ppid "$_fx_pp" || break
      _fx_i=$((_fx_i + 1))
    done
    [ "$_fx_pp" = $$ ] && continue
    _fx_fn=$((_fx_fn + 1))
    if [ "$_fx_fn" -le "$1" ]; then _fx_fp="$_fx_fp $_fx_p"; fi
  done
  rm -f fsep fsubj fpid fsubj.c fpid.c fhit ferr
}

# The names into fsubj, the command lines into fsubj.c, one line each, and the pid of each
# into fpid (fpid.c) on the same line: processes the pattern names come first.
_fx_subjects() {
  head -v -c 4096 "$@" 2>/dev/null | tr '\000' ' ' | awk -v u="$_fx_u" '
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

# _fx_ppid PID: sets _fx_pp to the parent of PID; fails when PID is gone.
_fx_ppid() {
  _fx_l=; read -r _fx_l <"/proc/$1/stat" 2>/dev/null || return 1
  # shellcheck disable=SC2086 # the fields after the name: numbers and a state letter
  set -- ${_fx_l##*) }
  case $2 in '' | *[!0-9]*) return 1 ;; esac
  _fx_pp=$2
}

# _fx_kthread PID: the process is a kernel thread (PF_KTHREAD in its stat flags).
_fx_kthread() {
  _fx_l=; read -r _fx_l <"/proc/$1/stat" 2>/dev/null || return 1
  # shellcheck disable=SC2086 # the fields after the name: numbers and a state letter
  set -- ${_fx_l##*) }
  case $7 in '' | *[!0-9]*) return 1 ;; esac
  [ $(($7 & 2097152)) -ne 0 ]
}
