# shellcheck shell=sh
# kernel_log: the kernel's log from the first source that answers (dmesg, journalctl -k,
# then the syslog files), what each source said, and the OOM counters of the memory cgroups
# its OOM lines name. Set by probes/kernel_log.py: file_sources (space separated),
# syslog_tail_lines, memcg_paths_read, log_bytes_kept (a larger log is cut to the lines
# matching interesting, with context_lines around each), v1_root, v2_root, marker (the
# line before the log itself); device_lines, lspci_devices (lspci -s for the devices PCIe
# errors and lost GPUs name), previous_bytes_kept, previous_marker (the previous boot's
# matching lines from a persistent journal, after the log).
_r=unreadable; read -r _r </proc/sys/kernel/dmesg_restrict 2>/dev/null
echo "dmesg_restrict $_r"
while read -r _k _v _x; do if [ "$_k" = btime ]; then echo "btime $_v"; fi; done </proc/stat
_u=; read -r _u _x </proc/uptime 2>/dev/null; echo "uptime $_u"
echo "utc_offset $(date +%z 2>/dev/null)"
_src=
# _size FD FILE: the bytes written to FILE through FD, into _sz: the kernel's offset of that
# open file (/proc/$$/fdinfo/FD), read with a builtin; wc only where /proc does not say.
_size() {
  _k=; _sz=; { read -r _k _sz <"/proc/$$/fdinfo/$1"; } 2>/dev/null
  case $_k$_sz in pos:*) ;; *) _sz= ;; esac
  case $_sz in '' | *[!0-9]*) _sz=$(wc -c <"$2") ;; esac
  _sz=$((_sz + 0))
}
_tried() {
  _l=; IFS= read -r _l <kl.err
  if [ "$1" = "$_src" ]; then echo "tried $1 $2 ok"
  elif [ -n "$_l" ]; then echo "tried $1 $2 $_l"
  else echo "tried $1 $2 $3"; fi
}
: >kl.err
if command -v dmesg >/dev/null 2>&1; then
  exec 4>kl.out; dmesg >&4 2>kl.err; _rc=$?
  if [ "$_rc" -eq 0 ] && [ -s kl.out ]; then _src=dmesg; fi
  _tried dmesg "$_rc" "printed nothing"
else
  echo "tried dmesg 127 not installed"
fi
if [ -z "$_src" ]; then
  if command -v journalctl >/dev/null 2>&1; then
    exec 4>kl.out
    journalctl -k -b --no-pager -q -o short-monotonic >&4 2>kl.err; _rc=$?
    if [ "$_rc" -eq 0 ] && grep -q '^\[' kl.out; then _src=journalctl; fi
    _tried journalctl "$_rc" "no kernel messages for this boot"
  else
    echo "tried journalctl 127 not installed"
  fi
fi
# shellcheck disable=SC2086 # paths without spaces, one word each
for _f in $file_sources; do
  if [ -n "$_src" ]; then break; fi
  if [ ! -e "$_f" ]; then echo "tried $_f 127 absent"; continue; fi
  : >kl.err; exec 4>kl.out
  tail -n "$syslog_tail_lines" "$_f" 2>kl.err | grep -F ' kernel: ' >&4; _rc=$?
  if [ -s kl.out ]; then _src=$_f; fi
  _tried "$_f" "$_rc" "no kernel lines"
done
if [ -z "$_src" ]; then echo "source none"; exit 0; fi
echo "source $_src"
_size 4 kl.out; _b=$_sz; exec 4>&-; echo "log_bytes $_b"
# One pass over the log: its line count, the memory cgroups its OOM lines name (the most
# recently named first: on a host with many OOM kills the one in question is usually the
# last, and only memcg_paths_read are read), and the PCI addresses (sorted, at most
# lspci_devices) on the lines about PCIe errors and lost GPUs.
awk -v most="$memcg_paths_read" -v dev="$device_lines" -v devmost="$lspci_devices" '
  { s = $0
    if (!index(s, "memcg=") && !index(s, "Task in ") && !index(s, "limit of ")) s = ""
    while (match(s, /(oom_memcg=|task_memcg=|Task in |limit of )\/[^, ]*/)) {
      m = substr(s, RSTART, RLENGTH); sub(/^[^\/]*/, "", m); p[++n] = m
      s = substr(s, RSTART + RLENGTH)
    }
    if ($0 ~ dev) {
      s = $0
      while (match(s, /[0-9a-f][0-9a-f][0-9a-f][0-9a-f]:[0-9a-f][0-9a-f]:[0-9a-f][0-9a-f][.][0-7]/)) {
        a = substr(s, RSTART, RLENGTH); if (!(a in d)) { d[a] = 1; nd++; ds[nd] = a }
        s = substr(s, RSTART + RLENGTH)
      }
    }
  }
  END {
    print "lines " NR
    k = 0
    for (i = n; i > 0 && k < most; i--) if (!seen[p[i]]++) { print "memcg " p[i]; k++ }
    for (i = 2; i <= nd; i++) {
      v = ds[i]; j = i - 1
      while (j > 0 && ds[j] > v) { ds[j + 1] = ds[j]; j-- }
      ds[j + 1] = v
    }
    for (i = 1; i <= nd && i <= devmost; i++) print "dev " ds[i]
  }' kl.out >kl.an
_n=0; while read -r _k _v; do [ "$_k" = lines ] && _n=$_v; done <kl.an
echo "log_lines $_n"
set -f
_files=
while read -r _k _p; do
  [ "$_k" = memcg ] || continue
  case $_p in /|*..*) continue ;; esac
  echo "memcg $_p"
  _files="$_files $v1_root$_p/memory.oom_control $v1_root$_p/memory.failcnt"
  _files="$_files $v2_root$_p/memory.events $v2_root$_p/memory.events.local"
done <kl.an
if [ "$_b" -gt "$log_bytes_kept" ]; then
  exec 4>kl.cut
  grep -E -C "$context_lines" -e "$interesting" kl.out >&4 2>/dev/null
  if [ $? -gt 1 ]; then exec 4>kl.cut; grep -E -e "$interesting" kl.out >&4; fi
  _size 4 kl.cut; exec 4>&-; echo "filtered $_sz $log_bytes_kept"
fi
# --- issue 16: lspci for the devices PCIe errors and lost GPUs name; the previous boot
if command -v lspci >/dev/null 2>&1; then
  while read -r _k _d; do
    [ "$_k" = dev ] || continue
    _l=; { IFS= read -r _l; } <<_FX_LSPCI_
$(lspci -s "$_d" 2>/dev/null)
_FX_LSPCI_
    echo "lspci $_d $_l"
  done <kl.an
fi
: >kl.prev
if command -v journalctl >/dev/null 2>&1; then
  : >kl.err; exec 4>kl.prev
  journalctl -k -b -1 --no-pager -q -o short-iso-precise >&4 2>kl.err; _rc=$?
  _l=; IFS= read -r _l <kl.err
  # An older journalctl without short-iso-precise says so; then short-iso.
  case $_rc$_l in
    0*) ;;
    *format*|*precise*)
      exec 4>kl.prev
      journalctl -k -b -1 --no-pager -q -o short-iso >&4 2>kl.err; _rc=$?
      _l=; IFS= read -r _l <kl.err ;;
  esac
  _size 4 kl.prev; _p=$_sz; exec 4>&-
  exec 4>kl.pcut
  if [ "$_p" -gt 0 ]; then
    grep -E -e "$interesting" kl.prev 2>/dev/null | tail -c "$previous_bytes_kept" >&4
  fi
  _size 4 kl.pcut; exec 4>&-
  echo "previous_boot journalctl $_rc $_p $_sz ${_l:-ok}"
fi
# --- end issue 16
# shellcheck disable=SC2086 # split on purpose (set -f): one head for every file
if [ -n "$_files" ]; then head -v -c 4096 $_files 2>/dev/null; fi
echo; echo "$marker"
if [ "$_b" -gt "$log_bytes_kept" ]; then head -n 1 kl.out; tail -c "$log_bytes_kept" kl.cut
else cat kl.out; fi
if [ -s kl.pcut ]; then echo "$previous_marker"; cat kl.pcut; fi
