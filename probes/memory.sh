# shellcheck shell=sh
# memory: one head for the kernel's memory counters, pressure and swaps. Set by
# probes/memory.py: files (one path per line).
IFS='
'
set -f
# shellcheck disable=SC2086 # one path per line (IFS), no globbing
head -v -c 65536 $files
