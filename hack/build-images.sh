#!/usr/bin/env bash
# Builds the two images without a container engine or daemon, from Debian's
# archive only, into OCI archives:
#   1. the binaries, in the Release flavour the Dockerfiles build and
#      `make test` tests (deploy/docker/*.Dockerfile), stripped;
#   2. a runtime root file system made by mmdebstrap from this machine's apt
#      sources: Debian's essential packages and the shared libraries the
#      binaries link (what the Dockerfiles install on bookworm-slim);
#   3. each binary run once in a chroot of its root file system (--help), so
#      a missing library fails here, not in a pod;
#   4. the image, by buildah from scratch: that root file system, the binary,
#      user 65532, the entrypoint and ports of its Dockerfile, committed to
#      OUT/<binary>.tar (load it with `podman load` or `skopeo copy
#      oci-archive:...`, or push it from there to your registry).
#
#   hack/build-images.sh [OUT]      (root; default OUT build-images/)
#
# Installs buildah and mmdebstrap when missing. HYBRIDJOB_IMAGE_TAG (default
# 0.1.0) tags the images hybridjob/controller:TAG and
# hybridjob/gang-scheduler:TAG, as the chart and the kustomize base name them.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$(mkdir -p "${1:-$ROOT/build-images}" && cd "${1:-$ROOT/build-images}" && pwd)"
TAG="${HYBRIDJOB_IMAGE_TAG:-0.1.0}"
RUNTIME_PACKAGES="ca-certificates,libcpprest2.10,libyaml-cpp0.7,libspdlog1.10"

log() { echo "build-images: $*" >&2; }
die() { log "$*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "run as root: mmdebstrap builds the root file system in a chroot"
missing=()
for tool in buildah mmdebstrap; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${missing[@]}" >&2
fi
# No daemon and no overlay mounts: plain directories as buildah's storage.
export STORAGE_DRIVER=vfs
# The platform's policy.json may be missing on a build machine: accept what
# this script builds locally (there is no pull).
if [ ! -f /etc/containers/policy.json ]; then
  mkdir -p /etc/containers
  echo '{"default": [{"type": "insecureAcceptAnything"}]}' >/etc/containers/policy.json
fi

log "building the Release binaries in $OUT/build"
# Unity batches, as `make test` compiles: half the CPU of file by file.
cmake -S "$ROOT" -B "$OUT/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_UNITY_BUILD=ON -DHYBRIDJOB_BUILD_TESTS=OFF -DHYBRIDJOB_BUILD_BENCH=OFF >/dev/null
cmake --build "$OUT/build" -j "$(nproc)" --target gang-scheduler hybridjob-controller >&2

log "making the runtime root file system from Debian's archive"
rm -rf "$OUT/rootfs"
# The machine's own apt sources name the mirror: its deb822 files, else its
# one-line lists (mmdebstrap reads one format at a time).
sources() {
  local file
  if compgen -G '/etc/apt/sources.list.d/*.sources' >/dev/null; then
    for file in /etc/apt/sources.list.d/*.sources; do
      cat "$file"
      echo
    done
  else
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true
  fi
}
sources | mmdebstrap --variant=essential --include="$RUNTIME_PACKAGES" \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --skip=output/mknod bookworm "$OUT/rootfs" - >&2

sizes="$OUT/sizes.txt"
: >"$sizes"
for binary in gang-scheduler hybridjob-controller; do
  dockerfile="$ROOT/deploy/docker/$binary.Dockerfile"
  ports="$(sed -n 's/^EXPOSE //p' "$dockerfile")"
  # The names the chart and the kustomize base use.
  image="hybridjob/${binary#hybridjob-}:$TAG"
  tree="$OUT/rootfs-$binary"
  rm -rf "$tree"
  cp -a "$OUT/rootfs" "$tree"
  install -m 0755 -s "$OUT/build/bin/$binary" "$tree/usr/local/bin/$binary"
  # Every library resolves, and the binary starts, in the image's own tree.
  chroot "$tree" "/usr/local/bin/$binary" --help >/dev/null ||
    die "$binary does not start in its root file system"

  log "committing $image"
  container="$(buildah from scratch)"
  buildah add --quiet "$container" "$tree" / >/dev/null
  config=(--user 65532:65532 --entrypoint "[\"/usr/local/bin/$binary\"]"
    --label org.opencontainers.image.title="$binary" --label org.opencontainers.image.version="$TAG")
  for port in $ports; do
    config+=(--port "$port")
  done
  buildah config "${config[@]}" "$container"
  rm -f "$OUT/$binary.tar"
  buildah commit --quiet --rm --disable-compression=false "$container" \
    "oci-archive:$OUT/$binary.tar:$image" >/dev/null
  printf '%s\t%s\t%s\t%s\n' "$image" "$(du -sm "$tree" | cut -f1) MiB unpacked" \
    "$(du -m "$OUT/$binary.tar" | cut -f1) MiB archive" \
    "$(du -m "$tree/usr/local/bin/$binary" | cut -f1) MiB binary" | tee -a "$sizes"
  rm -rf "$tree"
done
rm -rf "$OUT/rootfs"
log "images in $OUT: $(cd "$OUT" && echo ./*.tar); sizes in $sizes"
