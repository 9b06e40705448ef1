# shellcheck shell=sh
# disk: df -P and df -P -i of each directory that matters, each filesystem once. Set by
# probes/disk.py: paths (one "WHY PATH" per line: root /, tmp /tmp, var_log /var/log and
# the directories of the watched logs), focus_most (empty: no --focus). One df -P and one
# df -P -i answer for every directory at once; where either fails (a path it cannot read,
# a busybox df without -i) each directory gets its own, as before: after the first
# refusal of -i the inode check is skipped.
_dk_seen='|'; _dk_noi=; _dk_ok=; _dk_oki=
# _dk_dir SHOWN PATH: PATH's nearest existing directory, into _d.
_dk_dir() {
  _d=$2
  # shellcheck disable=SC2088 # the operator's ~ is expanded here
  case $_d in '~') _d=$HOME ;; '~/'*) _d=$HOME/${_d#??} ;; esac
  case $_d in /*) ;; *) _d=/ ;; esac
  while [ ! -d "$_d" ]; do _d=${_d%/*}; [ -n "$_d" ] || _d=/; done
}
# _dk_nth FILE N: line N of FILE, into _dl.
_dk_nth() {
  _dl=; _i=0
  while IFS= read -r _dl; do _i=$((_i + 1)); [ "$_i" -lt "$2" ] || return 0; done <"$1"
  _dl=
}
# _dk_lines FILE: how many lines FILE has, into _dn.
_dk_lines() { _dn=0; while IFS= read -r _dl; do _dn=$((_dn + 1)); done <"$1"; }
# _dk WHY SHOWN PATH: the filesystem of PATH's nearest existing directory (SHOWN: as named);
# its df lines come from the one df of every directory (line _dk_i + 1) when that one
# answered for each, else from a df of its own.
_dk() {
  printf '@ path %s %s\n' "$1" "$2"
  _dk_dir "$2" "$3"
  printf '@ resolved %s\n' "$_d"
  case $_dk_seen in *"|$_d|"*) echo '@ seen'; return ;; esac
  _dk_seen="$_dk_seen$_d|"; _dk_i=$((_dk_i + 1))
  echo '@ df'
  if [ -n "$_dk_ok" ]; then
    _dk_nth dk.df 1; printf '%s\n' "$_dl"; _dk_nth dk.df $((_dk_i + 1)); printf '%s\n' "$_dl"
    echo '@ rc 0'
  else
    df -P -- "$_d" 2>&1
    printf '@ rc %s\n' "$?"
  fi
  if [ -n "$_dk_noi" ]; then return; fi
  echo '@ dfi'
  if [ -n "$_dk_oki" ]; then
    _dk_nth dk.dfi 1; printf '%s\n' "$_dl"; _dk_nth dk.dfi $((_dk_i + 1)); printf '%s\n' "$_dl"
    echo '@ rc 0'
    return
  fi
  df -P -i -- "$_d" 2>&1
  _dk_rc=$?
  printf '@ rc %s\n' "$_dk_rc"
  [ "$_dk_rc" -eq 0 ] || _dk_noi=1
}
# One df and one df -i for every distinct directory: a line for each, in order.
set --
while read -r _why _path; do
  [ -n "$_why" ] || continue
  _dk_dir "$_path" "$_path"
  case $_dk_seen in *"|$_d|"*) continue ;; esac
  _dk_seen="$_dk_seen$_d|"; set -- "$@" "$_d"
done <<_FX_PATHS_
$paths
_FX_PATHS_
_dk_seen='|'; _dk_i=0
if [ "$#" -gt 0 ]; then
  if df -P -- "$@" >dk.df 2>&1; then _dk_lines dk.df; [ "$_dn" -ne $(($# + 1)) ] || _dk_ok=1; fi
  if df -P -i -- "$@" >dk.dfi 2>&1; then
    _dk_lines dk.dfi; [ "$_dn" -ne $(($# + 1)) ] || _dk_oki=1
  fi
fi
while read -r _why _path; do [ -z "$_why" ] || _dk "$_why" "$_path" "$_path"; done <<_FX_PATHS_
$paths
_FX_PATHS_
_dk_ok=; _dk_oki=
if [ -n "$focus_most" ]; then
  # shellcheck source=focus.sh
  . ./focus.sh
  _fx_focus "$focus_most"
  for _p in $_fx_fp; do
    _l=; read -r _l <"/proc/$_p/stat" 2>/dev/null && printf 'focus_pid %s %s\n' "$_p" "$_l"
  done
  # The working directory of each, read through /proc (it may be in another mount namespace).
  for _p in $_fx_fp; do
    [ -d /proc/"$_p"/cwd/ ] || continue
    _t=$(readlink /proc/"$_p"/cwd 2>/dev/null) && _dk "cwd:$_p" "$_t" /proc/"$_p"/cwd/
  done
fi
