# shellcheck shell=sh
# cgroup: the memory cgroups of the root, PID 1, this session and the focus processes, with
# every visible ancestor, then one head for all their files. Set by probes/cgroup.py:
# v1_root, v2_root (the mount points), v1_files, v2_files (the files read, space
# separated), v1_marker, v2_marker (a directory is read only when it has this file),
# unified_controllers, focus_most (the most focus processes looked at; empty: no --focus).

# _cg FILE ROLE: print where /proc/PID/cgroup FILE puts it (v1 memory, v2) as ROLE.
_cg() {
  _v1=; _v2=
  [ -r "$1" ] || return 0
  while IFS=: read -r _ c p; do
    case ",$c," in
      *,memory,*) echo "$2 v1 $p"; _v1=$p ;;
      ,,) echo "$2 v2 $p"; _v2=$p ;;
    esac
  done <"$1"
}
# _rel ROOT PATH: PATH as seen under a mount of the hierarchy at ROOT, into _p.
_rel() {
  _p=$2
  if [ "$1" != / ]; then
    case $2 in "$1") _p=/ ;; "$1"/*) _p=${2#"$1"} ;; esac
  fi
}
_files=$unified_controllers; _seen=
# _dir VERSION CGROUP: list its files for the dump, once.
_dir() {
  case "$_seen" in *"|$1$2|"*) return 0 ;; esac
  _seen="$_seen|$1$2|"
  if [ "$1" = 1 ]; then _d=$v1_root; _fl=$v1_files; _mk=$v1_marker
  else _d=$v2_root; _fl=$v2_files; _mk=$v2_marker
  fi
  [ "$2" = / ] || _d="$_d$2"
  [ -e "$_d/$_mk" ] || return 0
  echo "dir $1 $2"
  for f in $_fl; do _files="$_files
$_d/$f"; done
}
# _want VERSION ROLE CGROUP: that cgroup and its ancestors.
_want() {
  case $3 in /*) ;; *) return 0 ;; esac
  echo "want $1 $2 $3"
  _a=$3
  while :; do
    _dir "$1" "$_a"
    case $_a in /) break ;; esac
    _a=${_a%/*}; [ -n "$_a" ] || _a=/
  done
}
_both() {
  if [ -n "$_v1" ]; then _rel "$_r1" "$_v1"; _want 1 "$1" "$_p"; fi
  if [ -n "$_v2" ]; then _rel "$_r2" "$_v2"; _want 2 "$1" "$_p"; fi
}
_r1=/; _r2=/
if [ -r /proc/self/mountinfo ]; then
  while read -r _ _ _ _root _mp _ _rest; do
    case $_mp in /sys/fs/cgroup|/sys/fs/cgroup/*) ;; *) continue ;; esac
    _fs=${_rest#*- }
    echo "mount $_root $_mp $_fs"
    case $_mp in
      "$v1_root") _r1=$_root ;;
      "$v2_root") case $_fs in cgroup2\ *) _r2=$_root ;; esac ;;
    esac
  done </proc/self/mountinfo
fi
if [ -r /proc/vmstat ]; then
  while read -r k v; do
    if [ "$k" = oom_kill ]; then echo "vmstat_oom_kill $v"; fi
  done </proc/vmstat
fi
_want 1 root /
_want 2 root /
_cg /proc/1/cgroup pid1; _both pid1
_cg /proc/self/cgroup self; _both self
if [ -n "$focus_most" ]; then
  # shellcheck source=focus.sh
  . ./focus.sh
  _fx_focus "$focus_most"
  if [ -n "$_fx_fe" ]; then echo "focus_error $_fx_fe"; fi
  for _fp in $_fx_fp; do
    _c=; if [ -r "/proc/$_fp/comm" ]; then read -r _c <"/proc/$_fp/comm"; fi
    echo "focus_name $_fp $_c"
    _cg "/proc/$_fp/cgroup" "focus $_fp"; _both focus
  done
  if [ "$_fx_fn" -gt "$focus_most" ]; then echo focus_more; fi
fi
IFS='
'
set -f
# shellcheck disable=SC2086 # one path per line (IFS), no globbing: one head for every file
head -v -c 65536 $_files
