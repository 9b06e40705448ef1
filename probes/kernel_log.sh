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
_tried() {
  _l=; IFS= read -r _l <kl.err
  if [ "$1" = "$_src" ]; then echo "tried $1 $2 ok"
  elif [ -n "$_l" ]; then echo "tried $1 $2 $_l"
  else echo "tried $1 $2 $3"; fi
}
: >kl.err
if command -v dmesg >/dev/null 2>&1; then
  dmesg >kl.out 2>kl.err; _rc=$?
  if [ "$_rc" -eq 0 ] && [ -s kl.out ]; then _src=dmesg; fi
  _tried dmesg "$_rc" "printed nothing"
else
  echo "tried dmesg 127 not installed"
fi
if [ -z "$_src" ]; then
  if command -v journalctl >/dev/null 2>&1; then
    journalctl -k -b --no-pager -q -o short-monotonic >kl.out 2>kl.err; _rc=$?
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
  : >kl.err
  tail -n "$syslog_tail_lines" "$_f" 2>kl.err | grep -F ' kernel: ' >kl.out; _rc=$?
  if [ -s kl.out ]; then _src=$_f; fi
  _tried "$_f" "$_rc" "no kernel lines"
done
if [ -z "$_src" ]; then echo "source none"; exit 0; fi
echo "source $_src"
_b=$(wc -c <kl.out); _b=$((_b + 0)); echo "log_bytes $_b"
_n=$(wc -l <kl.out); _n=$((_n + 0)); echo "log_lines $_n"
set -f
_files=
# The most recently named cgroups first: on a host with many OOM kills the one in question
# is usually the last, and only memcg_paths_read are read.
for _p in $(grep -o -E '(oom_memcg=|task_memcg=|Task in |limit of )/[^, ]*' kl.out |
            sed 's/^[^/]*//' |
            awk '{ p[NR] = $0 } END { for (i = NR; i > 0; i--) if (!s[p[i]]++) print p[i] }' |
            head -n "$memcg_paths_read"); do
  case $_p in /|*..*) continue ;; esac
  echo "memcg $_p"
  _files="$_files $v1_root$_p/memory.oom_control $v1_root$_p/memory.failcnt"
  _files="$_files $v2_root$_p/memory.events $v2_root$_p/memory.events.local"
done
if [ "$_b" -gt "$log_bytes_kept" ]; then
  grep -E -C "$context_lines" -e "$interesting" kl.out >kl.cut 2>/dev/null
  if [ $? -gt 1 ]; then grep -E -e "$interesting" kl.out >kl.cut; fi
  _c=$(wc -c <kl.cut); echo "filtered $((_c + 0)) $log_bytes_kept"
fi
# --- issue 16: lspci for the devices PCIe errors and lost GPUs name; the previous boot
if command -v lspci >/dev/null 2>&1; then
  for _d in $(grep -E -e "$device_lines" kl.out |
              grep -o -E '[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}[.][0-7]' |
              sort -u | head -n "$lspci_devices"); do
    echo "lspci $_d $(lspci -s "$_d" 2>/dev/null | head -n 1)"
  done
fi
: >kl.prev
if command -v journalctl >/dev/null 2>&1; then
  : >kl.err
  journalctl -k -b -1 --no-pager -q -o short-iso-precise >kl.prev 2>kl.err ||
    journalctl -k -b -1 --no-pager -q -o short-iso >kl.prev 2>kl.err; _rc=$?
  _l=; IFS= read -r _l <kl.err
  grep -E -e "$interesting" kl.prev 2>/dev/null | tail -c "$previous_bytes_kept" >kl.pcut
  _c=$(wc -c <kl.pcut); _p=$(wc -c <kl.prev)
  echo "previous_boot journalctl $_rc $((_p + 0)) $((_c + 0)) ${_l:-ok}"
fi
# --- end issue 16
# shellcheck disable=SC2086 # split on purpose (set -f): one head for every file
if [ -n "$_files" ]; then head -v -c 4096 $_files 2>/dev/null; fi
echo; echo "$marker"
if [ "$_b" -gt "$log_bytes_kept" ]; then head -n 1 kl.out; tail -c "$log_bytes_kept" kl.cut
else cat kl.out; fi
if [ -s kl.pcut ]; then echo "$previous_marker"; cat kl.pcut; fi
rm -f kl.out kl.err kl.cut kl.prev kl.pcut
