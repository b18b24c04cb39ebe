#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kube-scheduler from Debian
# bookworm's `kubernetes` source package, takes kubectl from its
# `kubernetes-client` binary package (unpacked, not installed: the same
# v1.20.2 build, without replacing any kubectl the machine has), and caches
# them outside the clone, keyed by version. Prints the cache's bin directory
# on stdout.
#
#   hack/k8s-binaries.sh [BINARY...]          the named binaries (default: all
#                                             four) if not cached; print the bin dir
#   hack/k8s-binaries.sh --check [BINARY...]  exit 0 if cached, 1 if not (no build)
#
# A caller may ask only for what it runs; the build tree and Go cache are
# kept until every server binary is built, so a later request for the rest
# compiles only what is new.
set -euo pipefail

K8S_VERSION="1.20.2"
CACHE_ROOT="${HYBRIDJOB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hybridjob}"
CACHE_DIR="$CACHE_ROOT/k8s-v$K8S_VERSION"
BIN_DIR="$CACHE_DIR/bin"
ALL_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl)
SERVER_BINARIES=(kube-apiserver kube-controller-manager kube-scheduler)
# Identifies how the cache was built; a cache from another recipe is rebuilt.
# reflect2: v1.20's vendored github.com/modern-go/reflect2 1.0.1 crashes under
# Go >= 1.18 when encoding maps (every custom resource write); Debian's 1.0.2
# replaces it.
BUILD_ID="debian-src+reflect2-1.0.2"
# providerless: Kubernetes' own build tag that leaves the in-tree cloud
# providers (AWS, Azure, GCE, OpenStack, vSphere and their volume plugins) out.
# A local cluster has no cloud, so the binaries behave the same for this
# project and build faster; caches built before the tag stay valid.
K8S_BUILD_TAGS="providerless"
REFLECT2_SRC="/usr/share/gocode/src/github.com/modern-go/reflect2"

log() { echo "k8s-binaries: $*" >&2; }

# Whether every binary named is in the cache, built by this recipe.
cached() {
  local b
  [ "$(cat "$CACHE_DIR/BUILD_ID" 2>/dev/null)" = "$BUILD_ID" ] || return 1
  for b in "$@"; do
    [ -x "$BIN_DIR/$b" ] && [ -s "$BIN_DIR/$b" ] || return 1
  done
}

CHECK_ONLY=0
if [ "${1:-}" = "--check" ]; then
  CHECK_ONLY=1
  shift
fi
BINARIES=("$@")
if [ "${#BINARIES[@]}" -eq 0 ]; then
  BINARIES=("${ALL_BINARIES[@]}")
fi
for b in "${BINARIES[@]}"; do
  case " ${ALL_BINARIES[*]} " in
    *" $b "*) ;;
    *) log "unknown binary \"$b\"; known: ${ALL_BINARIES[*]}"; exit 2 ;;
  esac
done

if [ "$CHECK_ONLY" -eq 1 ]; then
  cached "${BINARIES[@]}"
  exit $?
fi

if cached "${BINARIES[@]}"; then
  echo "$BIN_DIR"
  exit 0
fi

# A cache made by another recipe is rebuilt whole.
if [ "$(cat "$CACHE_DIR/BUILD_ID" 2>/dev/null)" != "$BUILD_ID" ]; then
  rm -rf "$BIN_DIR"
  rm -f "$CACHE_DIR/BUILD_ID"
fi
mkdir -p "$BIN_DIR"

# What is asked for and missing, split by where it comes from.
TO_BUILD=()
WANT_KUBECTL=0
for b in "${BINARIES[@]}"; do
  cached "$b" && continue
  if [ "$b" = kubectl ]; then
    WANT_KUBECTL=1
  else
    TO_BUILD+=("$b")
  fi
done

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

WORK="$CACHE_DIR/work"

# kubectl from the kubernetes-client package, unpacked; built from source as
# the others when the package cannot be had.
fetch_kubectl() {
  local dir="$WORK/kubectl"
  rm -rf "$dir"
  mkdir -p "$dir"
  (cd "$dir" && apt-get download kubernetes-client >/dev/null 2>&1) ||
    { $SUDO apt-get update -qq >/dev/null 2>&1 &&
        (cd "$dir" && apt-get download kubernetes-client >/dev/null 2>&1); } ||
    return 1
  dpkg-deb -x "$dir"/kubernetes-client_*.deb "$dir/root" || return 1
  "$dir/root/usr/bin/kubectl" version --client 2>/dev/null | grep -q "v$K8S_VERSION" || return 1
  install -m 0755 "$dir/root/usr/bin/kubectl" "$BIN_DIR/kubectl"
}

if [ "$WANT_KUBECTL" -eq 1 ]; then
  log "unpacking kubectl from the kubernetes-client package"
  if fetch_kubectl; then
    echo "$BUILD_ID" >"$CACHE_DIR/BUILD_ID"
  else
    log "no kubectl v$K8S_VERSION from the kubernetes-client package: building it"
    TO_BUILD+=(kubectl)
  fi
  rm -rf "$WORK/kubectl"
  rmdir "$WORK" 2>/dev/null || true
fi

if [ "${#TO_BUILD[@]}" -eq 0 ]; then
  cached "${BINARIES[@]}" || { log "kubectl was not cached"; exit 1; }
  echo "$BIN_DIR"
  exit 0
fi

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

log "building ${TO_BUILD[*]} (several minutes)"
(
  cd "$GOPATH_DIR/src/k8s.io/kubernetes"
  export GOPATH="$GOPATH_DIR" GO111MODULE=off GOFLAGS="-mod=vendor -tags=$K8S_BUILD_TAGS" CGO_ENABLED=0
  export GOCACHE="$WORK/gocache"
  export KUBE_GIT_VERSION="v$K8S_VERSION" KUBE_GIT_TREE_STATE=clean
  export KUBE_GIT_MAJOR=1 KUBE_GIT_MINOR="$(echo "$K8S_VERSION" | cut -d. -f2)"
  # The source package carries the generated deepcopy, conversion and
  # defaulting code; only the OpenAPI definitions the servers serve are
  # missing. `make WHAT=...` would rebuild every generator and regenerate all
  # of it (95 s against 41 s on 2 cores), so only the OpenAPI code is generated.
  make gen_openapi >&2
  hack/make-rules/build.sh "${TO_BUILD[@]/#/cmd/}" >&2
)

for b in "${TO_BUILD[@]}"; do
  built="$(find "$SRC_DIR/_output" -type f -name "$b" -perm -u+x | head -n1)"
  if [ -z "$built" ]; then
    log "build produced no $b"
    exit 1
  fi
  install -m 0755 "$built" "$BIN_DIR/$b"
done
echo "$K8S_VERSION" >"$CACHE_DIR/VERSION"
echo "$BUILD_ID" >"$CACHE_DIR/BUILD_ID"
# Once every server binary is built, keep only the binaries: the source tree
# and Go cache are large. Until then they stay, so the rest builds on them.
if cached "${SERVER_BINARIES[@]}"; then
  rm -rf "$WORK"
fi
log "cached in $BIN_DIR"
echo "$BIN_DIR"
