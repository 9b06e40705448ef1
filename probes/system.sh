# shellcheck shell=sh
# system: which tools the host has, container markers, boot time, the host's clock, then
# one head for the identity files. Set by probes/system.py: tools, markers (space
# separated), files (one path per line).
for t in $tools; do
  if command -v "$t" >/dev/null 2>&1; then echo "tool $t yes"; else echo "tool $t no"; fi
done
for m in $markers; do if [ -e "$m" ]; then echo "marker $m"; fi; done
while read -r k v _; do if [ "$k" = btime ]; then echo "btime $v"; fi; done </proc/stat
echo "clock $(date +%s)"
IFS='
'
set -f
# shellcheck disable=SC2086 # one path per line (IFS), no globbing
head -v -c 65536 $files
