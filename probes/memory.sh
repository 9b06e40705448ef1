# shellcheck shell=sh
# memory: the kernel's memory counters, pressure and swaps, read with builtins in the
# script's shell (_fx_dump in host_script.sh: this is an in-shell section, no process).
# Set by probes/memory.py: files (one path per line).
IFS='
'
set -f
# shellcheck disable=SC2086 # one path per line (IFS), no globbing
_fx_dump 65536 $files
