# shellcheck shell=sh
# gpu: nvidia-smi's answers to a few queries, each run recorded with its exit status and
# every line of its output behind "|". Set by probes/gpu.py: line_chars, query_gpus,
# query_throttle, query_memory_health, query_apps (each nvidia-smi's --query-... option).
echo "clock $(date +%s)"
if ! command -v nvidia-smi >/dev/null 2>&1; then echo "@ absent"; exit 0; fi
_gq() {
  printf '@ run %s\n' "$1"
  _gn=$1; shift
  nvidia-smi "$@" --format=csv,nounits >q 2>&1
  _grc=$?
  printf '@ exit %s %s\n' "$_gn" "$_grc"
  awk -v w="$line_chars" '{ print "|" substr($0, 1, w) }' q
  return "$_grc"
}
# The main query failing means the others would fail (or hang) too.
_gq gpus "$query_gpus" || exit 0
_gq throttle "$query_throttle"
_gq memory_health "$query_memory_health"
_gq apps "$query_apps"
