#!/usr/bin/env bash
# `make soak`: each fuzz target for SECONDS, then the unit, integration and
# fault tests of a ThreadSanitizer tree (cmake -DHYBRIDJOB_TSAN=ON); fails if
# any run fails or any process of the TSan tree reports a race, after running
# them all.
#
#   hack/soak.sh [FUZZ_BUILD_DIR] [SECONDS] [TSAN_BUILD_DIR] [CTEST_JOBS] [BUILD_DIR]
# With BUILD_DIR, the load test also runs at full size there (1,000 jobs x 10
# members on 1,000 simulated nodes; `make test` runs 200).
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ_DIR="${1:-build-fuzz}"
SECONDS_EACH="${2:-600}"
TSAN_DIR="${3:-build-tsan}"
JOBS="${4:-2}"
BUILD_DIR="${5:-}"

status=0
echo "== fuzz targets, ${SECONDS_EACH}s each ($FUZZ_DIR)"
"$ROOT/hack/fuzz.sh" "$FUZZ_DIR" "$SECONDS_EACH" || status=1

# Every process of the TSan tree, tests and the binaries they start alike,
# writes its reports to a file of its own, so a race in a child whose exit code
# no test reads still fails the soak. test/tsan.supp silences third-party
# frames only.
if [ ! -d "$TSAN_DIR" ]; then
  echo "make soak: $TSAN_DIR is missing (make tsan-build)" >&2
  exit 1
fi
reports="$(cd "$TSAN_DIR" && pwd)/tsan-reports"
rm -rf "$reports"
mkdir -p "$reports"
echo "== unit, integration and fault tests under ThreadSanitizer ($TSAN_DIR)"
TSAN_OPTIONS="suppressions=$ROOT/test/tsan.supp:log_path=$reports/tsan:second_deadlock_stack=1" \
  ctest --test-dir "$TSAN_DIR" -L 'unit|integration|fault' -j "$JOBS" --output-on-failure ||
  status=1
if compgen -G "$reports/tsan*" >/dev/null; then
  echo "ThreadSanitizer reports ($reports):" >&2
  for report in "$reports"/tsan*; do
    echo "--- $report" >&2
    grep -E '^(WARNING|SUMMARY)|^    #[0-3] ' "$report" | head -40 >&2
  done
  status=1
fi

if [ -n "$BUILD_DIR" ]; then
  echo "== load test at full size ($BUILD_DIR)"
  log="$(cd "$BUILD_DIR" && pwd)/soak-load.log"
  HYBRIDJOB_LOAD_JOBS="${HYBRIDJOB_LOAD_JOBS:-1000}" \
    ctest --test-dir "$BUILD_DIR" -R 'LoadFaultTest|local_cluster' --output-on-failure -V \
    >"$log" 2>&1 || status=1
  grep -E 'Passed|Failed|tests passed|RSS|CPU' "$log" || true
  echo "(full output: $log)"
fi

if [ "$status" -ne 0 ]; then
  echo "make soak: FAILED" >&2
else
  echo "make soak: all passed"
fi
exit "$status"
