#!/usr/bin/env bash
# Installs the Debian packages HybridJob builds, tests and runs with, when any is missing.
# Works as root; otherwise uses sudo.
set -euo pipefail

BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config git
  libcpprest-dev nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang-format
  # The fuzz tree: Clang, and the libFuzzer and sanitizer runtimes it links.
  clang libclang-rt-14-dev
)
# What the local Kubernetes cluster needs: etcd, a Go toolchain to build the
# control plane from Debian's source package, and the tools its build uses.
CLUSTER_PACKAGES=(
  etcd-server golang-go golang-github-modern-go-reflect2-dev rsync jq openssl curl dpkg-dev procps iproute2 python3
)
# What the workloads hybridjob-sim --exec runs as local processes use (examples/exec/):
# PyTorch (gloo on CPU), Open MPI with mpi4py for MPI launcher/worker jobs, an SSH
# server and client for mpirun's remote starts, curl for readiness checks, and
# Jupyter for the notebook that `kubectl hybridjob notebook` starts.
WORKLOAD_PACKAGES=(
  python3-torch openmpi-bin python3-mpi4py openssh-server openssh-client curl jupyter-notebook
)

# The e2e test of the gang-scheduler's dashboard loads it in a headless browser.
UI_PACKAGES=(
  chromium
)

# Real peers the integration and e2e tests talk to: an HTTP proxy (the binary
# only, tinyproxy-bin, not the package that runs it as a system service), and
# the aws CLI the S3 e2e runs as a job's fetcher and uploader (the S3 server
# itself comes from the npm registry: hack/test-peers.sh).
PEER_PACKAGES=(
  tinyproxy-bin awscli
)

missing=()
for pkg in "${BUILD_PACKAGES[@]}" "${CLUSTER_PACKAGES[@]}" "${WORKLOAD_PACKAGES[@]}" "${UI_PACKAGES[@]}" \
  "${PEER_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi

echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
