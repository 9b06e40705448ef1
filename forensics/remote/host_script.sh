# shellcheck shell=sh
# The prelude of the one script that runs every section on the host. Set before it by
# forensics/remote/host_script.py: _fx_n (this run's nonce), _fx_kill (seconds between
# TERM and KILL when a section overruns), _fx_errlines (stderr lines kept per section),
# _fx_errbytes (bytes kept of each stderr line),
# _fx_client_boot and _fx_client_pids (the collector's machine and pids),
# _fx_focus_octal (the --focus regex as printf %b escapes, or empty) and _fx_focus_sh (the
# text of focus.sh). Then come the calls: _fx_sec NAME TIMEOUT MAX_BYTES 'SHELL'.
LC_ALL=C; export LC_ALL
PATH="$PATH:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"; export PATH
umask 077
_fx_d="${TMPDIR:-/tmp}/forensics.$$.$_fx_n"
if ! mkdir "$_fx_d" 2>/dev/null; then
  _fx_d="/dev/shm/forensics.$$.$_fx_n"
  mkdir "$_fx_d" 2>/dev/null || { printf '\n%s FATAL no writable temp dir\n' "$_fx_n"; exit 70; }
fi
trap 'cd /; rm -rf "$_fx_d"' EXIT
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
if timeout -k 1 5 true 2>/dev/null; then _fx_to=k
elif timeout -t 5 true 2>/dev/null; then _fx_to=t
else _fx_to=w
fi
_fx_sec() {
  printf '\n%s START %s\n' "$_fx_n" "$1"
  _fx_u0=0; read -r _fx_u0 _fx_x </proc/uptime 2>/dev/null
  case $_fx_to in
    k) timeout -k "$_fx_kill" "$2" sh -c "$4" >o 2>e </dev/null ;;
    t) timeout -t "$2" sh -c "$4" >o 2>e </dev/null ;;
    *) sh -c "$4" >o 2>e </dev/null &
       _fx_p=$!
       ( sleep "$2"; kill -9 "$_fx_p" ) >/dev/null 2>&1 &
       _fx_w=$!
       wait "$_fx_p"; _fx_rc=$?
       kill "$_fx_w" 2>/dev/null
       ( exit "$_fx_rc" ) ;;
  esac
  _fx_rc=$?
  _fx_u1=0; read -r _fx_u1 _fx_x </proc/uptime 2>/dev/null
  _fx_s=$(wc -c <o); _fx_s=$((_fx_s + 0))
  printf '\n%s DATA %s %s %s %s %s %s\n' \
    "$_fx_n" "$1" "$_fx_rc" "$_fx_u0" "$_fx_u1" "$_fx_s" "$_fx_to"
  if [ "$_fx_s" -gt 0 ]; then head -c "$3" o; fi
  _fx_i=0
  while [ "$_fx_i" -lt "$_fx_errlines" ] && IFS= read -r _fx_l || [ -n "$_fx_l" ]; do
    # The precision must sit in the format; _fx_errbytes is a number we set.
    # shellcheck disable=SC2059
    printf "\n%s ERR %.${_fx_errbytes}s" "$_fx_n" "$_fx_l"
    _fx_i=$((_fx_i + 1)); _fx_l=
  done <e
  printf '\n%s END %s\n' "$_fx_n" "$1"
}
