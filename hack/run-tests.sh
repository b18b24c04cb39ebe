#!/usr/bin/env bash
# Runs every test label in the normal tree, the unit tests in the sanitizer
# tree and, when a fuzz tree is given, each fuzz target for $FUZZ_SECONDS
# (default 60); fails if any run fails, after running them all.
set -uo pipefail
BUILD_DIR="${1:-build}"
ASAN_DIR="${2:-build-asan}"
JOBS="${3:-2}"
FUZZ_DIR="${4:-}"

status=0
failed=()
# ctest's own list of what failed in its last run, kept for the summary at the
# end: CI shows only the tail of a long log.
record_failures() {
  local log="$1/Testing/Temporary/LastTestsFailed.log"
  [ -s "$log" ] || return 0
  while IFS= read -r line; do failed+=("$1: ${line#*:}"); done <"$log"
}

rm -f "$BUILD_DIR/Testing/Temporary/LastTestsFailed.log" "$ASAN_DIR/Testing/Temporary/LastTestsFailed.log"
echo "== unit, integration, e2e and fault tests ($BUILD_DIR)"
ctest --test-dir "$BUILD_DIR" -L 'unit|integration|e2e|fault' -j "$JOBS" --output-on-failure || status=1
record_failures "$BUILD_DIR"

echo "== unit tests under AddressSanitizer + UndefinedBehaviorSanitizer ($ASAN_DIR)"
ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  ctest --test-dir "$ASAN_DIR" -L unit -j "$JOBS" --output-on-failure || status=1
record_failures "$ASAN_DIR"

if [ -n "$FUZZ_DIR" ]; then
  echo "== fuzz targets, ${FUZZ_SECONDS:-60}s each ($FUZZ_DIR)"
  "$(dirname "${BASH_SOURCE[0]}")/fuzz.sh" "$FUZZ_DIR" "${FUZZ_SECONDS:-60}" || status=1
fi

if [ "$status" -ne 0 ]; then
  for f in "${failed[@]}"; do echo "failed in $f" >&2; done
  echo "make test: FAILED" >&2
else
  echo "make test: all suites passed"
fi
exit "$status"
