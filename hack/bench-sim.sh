#!/usr/bin/env bash
# hybridjob-sim at scale: a fresh local cluster, then build/bin/bench_simulator
# (5,000 nodes and 50,000 pods by default), then the cluster is removed.
#
#   hack/bench-sim.sh [BUILD_DIR] [-- bench_simulator flags]
# Environment: SIM_NODES (5000), SIM_PODS (50000), SIM_DURATION (60s).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$ROOT/build"
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  BUILD_DIR="$1"
  shift
fi
[ "${1:-}" = "--" ] && shift
BUILD_DIR="$(cd "$BUILD_DIR" && pwd)"
CLUSTER="$(mktemp -d "${TMPDIR:-/tmp}/hybridjob-bench-sim.XXXXXX")"
rmdir "$CLUSTER"
trap '"$ROOT/hack/local-cluster.sh" down --dir "$CLUSTER" >/dev/null 2>&1 || true' EXIT

"$ROOT/hack/local-cluster.sh" up --dir "$CLUSTER" >/dev/null
echo "Machine: $(nproc) cores ($(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1)), $(free -g | awk '/Mem:/ {print $2}') GiB RAM; $(date -u +%Y-%m-%d)."
"$BUILD_DIR/bin/bench_simulator" --cluster-dir "$CLUSTER" --nodes "${SIM_NODES:-5000}" \
  --pods "${SIM_PODS:-50000}" --duration "${SIM_DURATION:-60s}" "$@"
