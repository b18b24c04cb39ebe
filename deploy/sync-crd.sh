#!/usr/bin/env bash
# Copies crds/batch.hybridjob.io_hybridjobs.yaml, the one CRD source, into the
# kustomize base (deploy/crd/, since kustomize reads no file outside deploy/)
# and into the chart (wrapped in the crds.install switch). The unit test
# deploy_manifests_test fails while a copy differs.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
crd="$root/crds/batch.hybridjob.io_hybridjobs.yaml"
cp "$crd" "$root/deploy/crd/batch.hybridjob.io_hybridjobs.yaml"
{
  printf '{{- if .Values.crds.install }}\n'
  cat "$crd"
  printf '{{- end }}\n'
} >"$root/deploy/chart/hybridjob/templates/crd.yaml"
echo "synced deploy/crd/ and deploy/chart/hybridjob/templates/crd.yaml from crds/"
