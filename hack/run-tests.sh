#!/usr/bin/env bash
# `make test`'s runs, once both trees are built: the normal tree's labels (the
# integration, e2e and fault ones, and the unit one when the tree has unit
# tests), then the sanitizer tree's unit tests under AddressSanitizer +
# UndefinedBehaviorSanitizer and each fuzz target for $FUZZ_SECONDS (default
# 60), two at a time. One after the other: run beside the end-to-end tests, even
# at the lowest CPU priority, the sanitizer lane's load made
# EndToEndTest.FailedWorkerIsRestartedWithTheSameIndex hit a known race (see
# test/e2e/CMakeLists.txt). Fails if any run fails, after running them all;
# says how long each step took.
#
#   hack/run-tests.sh [BUILD_DIR] [SANITIZER_DIR] [CTEST_JOBS]
set -uo pipefail

HACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BUILD_DIR="${1:-build}"
SAN_DIR="${2:-build-fuzz}"
JOBS="${3:-2}"
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
status=0
step "unit, integration, e2e and fault tests ($BUILD_DIR)" \
  ctest --test-dir "$BUILD_DIR" -L 'unit|integration|e2e|fault' -j "$JOBS" --output-on-failure ||
  status=1
sanitizer_lane || status=1

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
