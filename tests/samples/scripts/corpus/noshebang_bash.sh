# Run from cron as `bash noshebang_bash.sh`: nightly regression benchmark.
RESULTS=results/nightly
mkdir -p "$RESULTS"

if [[ -z "${SKIP_BENCH:-}" ]]; then
  python bench_suite.py --all 2>&1 | tee "$RESULTS/bench.log"
  rc=$?
  if [[ $rc -ne 0 ]]; then
    echo "nightly benchmark failed with $rc"
    exit "$rc"
  fi
fi
echo "nightly benchmark passed"
