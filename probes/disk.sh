# shellcheck shell=sh
# disk: df -P and df -P -i of each directory that matters, each filesystem once. Set by
# probes/disk.py: paths (one "WHY PATH" per line: root /, tmp /tmp, var_log /var/log and
# the directories of the watched logs), focus_most (empty: no --focus). Some busybox df
# have no -i: after the first refusal the inode check is skipped.
_dk_seen='|'; _dk_noi=
# _dk WHY SHOWN PATH: the filesystem of PATH's nearest existing directory (SHOWN: as named).
_dk() {
  printf '@ path %s %s\n' "$1" "$2"
  _d=$3
  # shellcheck disable=SC2088 # the operator's ~ is expanded here
  case $_d in '~') _d=$HOME ;; '~/'*) _d=$HOME/${_d#??} ;; esac
  case $_d in /*) ;; *) _d=/ ;; esac
  while [ ! -d "$_d" ]; do _d=${_d%/*}; [ -n "$_d" ] || _d=/; done
  printf '@ resolved %s\n' "$_d"
  case $_dk_seen in *"|$_d|"*) echo '@ seen'; return ;; esac
  _dk_seen="$_dk_seen$_d|"
  echo '@ df'
  df -P -- "$_d" 2>&1
  printf '@ rc %s\n' "$?"
  if [ -n "$_dk_noi" ]; then return; fi
  echo '@ dfi'
  df -P -i -- "$_d" 2>&1
  _dk_rc=$?
  printf '@ rc %s\n' "$_dk_rc"
  [ "$_dk_rc" -eq 0 ] || _dk_noi=1
}
while read -r _why _path; do [ -z "$_why" ] || _dk "$_why" "$_path" "$_path"; done <<_FX_PATHS_
$paths
_FX_PATHS_
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
