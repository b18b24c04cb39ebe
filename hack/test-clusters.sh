#!/usr/bin/env bash
# The clusters of a build tree's tests, for ctest's local_cluster fixture:
# DIR, the integration tests' shared cluster; DIR-<binary>, the control plane
# the tests of one binary share (SHARED_CLUSTER in cmake/HybridJob.cmake),
# started by the first of them; DIR-private-*, a test's own.
#
#   hack/test-clusters.sh up DIR     stops what an interrupted run left, starts DIR
#   hack/test-clusters.sh down DIR   stops them all
set -euo pipefail

HACK="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ "$#" -eq 2 ] || { echo "usage: $0 up|down DIR" >&2; exit 2; }
cmd="$1"
dir="$2"

down_all() {
  local each
  for each in "$dir" "$dir"-*; do
    [ -d "$each" ] && "$HACK/local-cluster.sh" down --dir "$each"
  done
  return 0
}

case "$cmd" in
  up)
    down_all
    exec "$HACK/local-cluster.sh" up --dir "$dir"
    ;;
  down) down_all ;;
  *) echo "usage: $0 up|down DIR" >&2; exit 2 ;;
esac
