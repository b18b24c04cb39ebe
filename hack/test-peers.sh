#!/usr/bin/env bash
# Installs the real peers the e2e tests talk to that Debian does not package,
# from the npm registry, pinned by test/peers/package-lock.json: s3rver, an
# S3-compatible server. Installs into the cache beside the Kubernetes
# binaries, once per lock file, and prints the directory of their programs.
#
#   hack/test-peers.sh        # prints e.g. <cache>/peers/node_modules/.bin
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE_ROOT="${HYBRIDJOB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/hybridjob}"
DIR="$CACHE_ROOT/peers"
SOURCE="$ROOT/test/peers"

log() { echo "test-peers: $*" >&2; }

stamp="$(cat "$SOURCE/package.json" "$SOURCE/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$DIR/.stamp" 2>/dev/null)" != "$stamp" ] || [ ! -x "$DIR/node_modules/.bin/s3rver" ]; then
  command -v npm >/dev/null || { log "npm is missing: install Node.js and npm"; exit 1; }
  log "installing $(cd "$SOURCE" && node -p 'Object.entries(require("./package.json").dependencies).map(([n, v]) => n + "@" + v).join(" ")') into $DIR"
  rm -rf "$DIR"
  mkdir -p "$DIR"
  cp "$SOURCE/package.json" "$SOURCE/package-lock.json" "$SOURCE/.npmrc" "$DIR/"
  # --ignore-scripts: nothing from the registry runs at install time.
  (cd "$DIR" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2) || {
    log "npm ci failed"
    exit 1
  }
  echo "$stamp" >"$DIR/.stamp"
fi
echo "$DIR/node_modules/.bin"
