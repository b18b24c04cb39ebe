#!/usr/bin/env bash
# Runs every libFuzzer target of a fuzz build tree (cmake -DHYBRIDJOB_FUZZ=ON,
# Clang) for SECONDS each, starting from its seed corpus in test/fuzz/<name>/;
# fails if any target finds a crash, a leak, undefined behaviour, a hang or a
# broken contract, after running them all.
#
#   hack/fuzz.sh [FUZZ_BUILD_DIR] [SECONDS] [TARGET...]
#
# FUZZ_JOBS=N runs N targets at a time (default 1).
#
# New inputs a run discovers go to FUZZ_BUILD_DIR/fuzz-work/<name>/corpus (so a
# later run continues from them), never into the source tree. A failing input
# is saved in FUZZ_BUILD_DIR/fuzz-work/<name>/artifacts/; reproduce it with
#   FUZZ_BUILD_DIR/fuzz/fuzz_<name> FILE
# and, once fixed, add it to test/fuzz/<name>/corpus/ so every run replays it.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ_DIR="${1:-build-fuzz}"
SECONDS_EACH="${2:-60}"
shift $(($# < 2 ? $# : 2))

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  targets=()
  for dir in "$ROOT"/test/fuzz/*/; do
    name="$(basename "$dir")"
    [ -f "$dir/fuzz_$name.cpp" ] && targets+=("$name")
  done
fi

# Leaks count as failures; a single input may take at most 10 s and 2 GB.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# Runs one target and reports it; returns non-zero when it failed.
fuzz_one() {
  local name="$1"
  local binary="$FUZZ_DIR/fuzz/fuzz_$name"
  local seeds="$ROOT/test/fuzz/$name/corpus"
  local work="$FUZZ_DIR/fuzz-work/$name"
  if [ ! -x "$binary" ]; then
    echo "fuzz $name: $binary is missing (build the hybridjob_fuzzers target)" >&2
    return 1
  fi
  mkdir -p "$work/corpus" "$work/artifacts"
  rm -f "$work/artifacts"/*  # what an earlier run found is in its log
  local dict=()
  [ -f "$ROOT/test/fuzz/$name/$name.dict" ] && dict=("-dict=$ROOT/test/fuzz/$name/$name.dict")
  local log="$work/last-run.log" rc runs coverage
  "$binary" "$work/corpus" "$seeds" "${dict[@]}" \
    -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
    -artifact_prefix="$work/artifacts/" -print_final_stats=1 >"$log" 2>&1
  rc=$?
  runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
  coverage="$(grep -o 'cov: [0-9]*' "$log" | tail -1)"
  if [ "$rc" -ne 0 ]; then
    echo "fuzz $name: FAILED after ${runs:-?} inputs (exit $rc); log: $log" >&2
    grep -E '^(==[0-9]+==|SUMMARY|contract broken|.*runtime error)' "$log" | head -20 >&2
    ls "$work/artifacts" | sed 's|^|  input: '"$work"'/artifacts/|' >&2
    return 1
  fi
  echo "fuzz $name: ok, ${runs:-?} inputs in ${SECONDS_EACH}s, ${coverage:-cov: ?} edges"
}

# FUZZ_JOBS targets at a time (default 1); each reports when it ends.
status=0
running=0
for name in "${targets[@]}"; do
  if [ "$running" -ge "${FUZZ_JOBS:-1}" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
  fuzz_one "$name" &
  running=$((running + 1))
done
while [ "$running" -gt 0 ]; do
  wait -n || status=1
  running=$((running - 1))
done
exit "$status"
