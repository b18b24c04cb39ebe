#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler and kubectl from
# Debian bookworm's `kubernetes` source package and caches them outside the
# clone, keyed by version. Prints the cache's bin directory on stdout.
#
#   hack/k8s-binaries.sh          build if not cached, print the bin dir
#   hack/k8s-binaries.sh --check  exit 0 if cached, 1 if not (no build)
set -euo pipefail

K8S_VERSION="1.20.2"
CACHE_ROOT="${HYBRIDJOB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hybridjob}"
CACHE_DIR="$CACHE_ROOT/k8s-v$K8S_VERSION"
BIN_DIR="$CACHE_DIR/bin"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
# Identifies how the cache was built; a cache from another recipe is rebuilt.
# reflect2: v1.20's vendored github.com/modern-go/reflect2 1.0.1 crashes under
# Go >= 1.18 when encoding maps (every custom resource write); Debian's 1.0.2
# replaces it.
BUILD_ID="debian-src+reflect2-1.0.2"
REFLECT2_SRC="/usr/share/gocode/src/github.com/modern-go/reflect2"

log() { echo "k8s-binaries: $*" >&2; }

cached() {
  local b
  [ "$(cat "$CACHE_DIR/BUILD_ID" 2>/dev/null)" = "$BUILD_ID" ] || return 1
  for b in "${BINARIES[@]}"; do
    [ -x "$BIN_DIR/$b" ] && [ -s "$BIN_DIR/$b" ] || return 1
  done
}

if [ "${1:-}" = "--check" ]; then
  cached
  exit $?
fi

if cached; then
  echo "$BIN_DIR"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# apt-get source needs deb-src entries; derive them from the machine's own deb
# entries so the same mirrors serve the source.
ensure_deb_src() {
  if grep -rqsE '^(deb-src|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
    return
  fi
  log "adding deb-src entries mirroring the configured deb entries"
  local tmp
  tmp="$(mktemp)"
  if ls /etc/apt/sources.list.d/*.sources >/dev/null 2>&1; then
    # deb822 stanzas: keep them, with Types set to deb-src.
    for f in /etc/apt/sources.list.d/*.sources; do
      sed -E 's/^Types:.*/Types: deb-src/' "$f" >>"$tmp"
      echo >>"$tmp"
    done
    $SUDO install -m 0644 "$tmp" /etc/apt/sources.list.d/hybridjob-deb-src.sources
  else
    grep -hE '^deb ' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      sed -E 's/^deb /deb-src /' >"$tmp"
    $SUDO install -m 0644 "$tmp" /etc/apt/sources.list.d/hybridjob-deb-src.list
  fi
  rm -f "$tmp"
  $SUDO apt-get update -qq
}

if [ ! -f "$REFLECT2_SRC/go_above_118.go" ]; then
  log "missing golang-github-modern-go-reflect2-dev: run hack/install-deps.sh first"
  exit 1
fi

for tool in go rsync jq dpkg-source; do
  if ! command -v "$tool" >/dev/null; then
    log "missing $tool: run hack/install-deps.sh first"
    exit 1
  fi
done

ensure_deb_src

WORK="$CACHE_DIR/work"
mkdir -p "$WORK"
cd "$WORK"
SRC_DIR="$(find "$WORK" -maxdepth 1 -type d -name "kubernetes-*" | head -n1 || true)"
if [ -z "$SRC_DIR" ]; then
  log "downloading the kubernetes source package"
  apt-get source --download-only kubernetes >/dev/null
  dsc="$(ls kubernetes_*.dsc | head -n1)"
  dpkg-source --no-check -x "$dsc" >/dev/null
  SRC_DIR="$(find "$WORK" -maxdepth 1 -type d -name "kubernetes-*" | head -n1)"
fi
if ! grep -q "$K8S_VERSION" "$SRC_DIR/debian/changelog"; then
  log "source package in $SRC_DIR is not $K8S_VERSION"
  exit 1
fi

# Swap in the Go >= 1.18 compatible reflect2 (same API, fixed map iteration).
rm -rf "$SRC_DIR/vendor/github.com/modern-go/reflect2"
mkdir -p "$SRC_DIR/vendor/github.com/modern-go/reflect2"
cp "$REFLECT2_SRC"/*.go "$REFLECT2_SRC"/*.s "$SRC_DIR/vendor/github.com/modern-go/reflect2/"

# A build that ran without rsync leaves a zero-byte generator behind; start clean.
if find "$SRC_DIR/_output" -type f -size 0 -name "*-gen" 2>/dev/null | grep -q .; then
  rm -rf "$SRC_DIR/_output"
fi

GOPATH_DIR="$WORK/gopath"
mkdir -p "$GOPATH_DIR/src/k8s.io"
ln -sfn "$SRC_DIR" "$GOPATH_DIR/src/k8s.io/kubernetes"

log "building ${BINARIES[*]} (a few minutes)"
(
  cd "$GOPATH_DIR/src/k8s.io/kubernetes"
  export GOPATH="$GOPATH_DIR" GO111MODULE=off GOFLAGS=-mod=vendor CGO_ENABLED=0
  export GOCACHE="$WORK/gocache"
  export KUBE_GIT_VERSION="v$K8S_VERSION" KUBE_GIT_TREE_STATE=clean
  export KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR="$(echo "$K8S_VERSION" | cut -d. -f2)"
  make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler cmd/kubectl" >&2
)

mkdir -p "$BIN_DIR"
for b in "${BINARIES[@]}"; do
  built="$(find "$SRC_DIR/_output" -type f -name "$b" -perm -u+x | head -n1)"
  if [ -z "$built" ]; then
    log "build produced no $b"
    exit 1
  fi
  install -m 0755 "$built" "$BIN_DIR/$b"
done
echo "$K8S_VERSION" >"$CACHE_DIR/VERSION"
echo "$BUILD_ID" >"$CACHE_DIR/BUILD_ID"
# Keep only the binaries; the source tree and Go cache are large.
rm -rf "$WORK"
log "cached in $BIN_DIR"
echo "$BIN_DIR"
