#!/usr/bin/env bash
# `make test`'s runs, in two lanes that go side by side once both trees are
# built:
#   normal tree:    the integration, e2e and fault labels (and the unit label
#                   when the tree has unit tests);
#   sanitizer tree: its unit tests under AddressSanitizer +
#                   UndefinedBehaviorSanitizer, then each fuzz target for
#                   $FUZZ_SECONDS (default 60), two at a time, at the lowest
#                   CPU priority.
# The end-to-end and fault tests mostly wait for simulated work, so the
# sanitizer lane uses the cores they leave idle. Fails if any run fails, after
# running them all; says how long each step took.
#
# The normal tree's tests run at TEST_JOBS, by default twice CTEST_JOBS: the
# tests of a binary that shares a cluster run one after another, and at one
# and a half times the cores the test step took 660 s where at twice it took
# 577 s, all passing (docs/development.md).
#
#   hack/run-tests.sh [BUILD_DIR] [SANITIZER_DIR] [CTEST_JOBS]
set -uo pipefail
set -m  # the sanitizer lane gets a process group of its own, to stop it whole

HACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD_DIR="${1:-build}"
SAN_DIR="${2:-build-fuzz}"
JOBS="${3:-2}"
TEST_JOBS="${TEST_JOBS:-$((JOBS * 2))}"
START=$SECONDS

# step NAME COMMAND...: runs COMMAND, then says how long it took.
step() {
  local name="$1" begin=$SECONDS rc
  shift
  echo "== $name (at $((begin - START)) s)"
  "$@"
  rc=$?
  echo "-- $name: $((SECONDS - begin)) s, exit $rc"
  return "$rc"
}

sanitizer_lane() {
  renice -n 19 -p "$BASHPID" >/dev/null
  local status=0
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    step "unit tests under AddressSanitizer + UndefinedBehaviorSanitizer ($SAN_DIR)" \
    ctest --test-dir "$SAN_DIR" -L unit -j "$JOBS" --output-on-failure || status=1
  FUZZ_JOBS="${FUZZ_JOBS:-2}" step "fuzz targets, ${FUZZ_SECONDS:-60} s each ($SAN_DIR)" \
    "$HACK/fuzz.sh" "$SAN_DIR" "${FUZZ_SECONDS:-60}" || status=1
  return "$status"
}

for dir in "$BUILD_DIR" "$SAN_DIR"; do
  rm -f "$dir/Testing/Temporary/LastTestsFailed.log"
done
lane_log="$SAN_DIR/sanitizer-lane.log"
sanitizer_lane >"$lane_log" 2>&1 &
lane=$!
trap 'kill -TERM -- "-$lane" 2>/dev/null' EXIT INT TERM

status=0
step "unit, integration, e2e and fault tests ($BUILD_DIR)" \
  ctest --test-dir "$BUILD_DIR" -L 'unit|integration|e2e|fault' -j "$TEST_JOBS" --output-on-failure ||
  status=1

echo "== waiting for the sanitizer lane (at $((SECONDS - START)) s)"
wait "$lane" || status=1
trap - EXIT INT TERM
echo "== sanitizer lane's log ($lane_log)"
cat "$lane_log"

# ctest's own lists of what failed, repeated at the end: CI shows only the tail
# of a long log.
failed=()
for dir in "$BUILD_DIR" "$SAN_DIR"; do
  log="$dir/Testing/Temporary/LastTestsFailed.log"
  [ -s "$log" ] || continue
  while IFS= read -r line; do failed+=("$dir: ${line#*:}"); done <"$log"
done
echo "make test: tests ran in $((SECONDS - START)) s"
if [ "$status" -ne 0 ]; then
  for f in "${failed[@]}"; do echo "failed in $f" >&2; done
  echo "make test: FAILED" >&2
else
  echo "make test: all suites passed"
fi
exit "$status"
