#!/usr/bin/env bash
# The whole system on this machine, to try HybridJob by hand or to follow the
# user guide: a local control plane (hack/local-cluster.sh) with the CRDs
# applied and established, hybridjob-sim's nodes, gang-scheduler,
# hybridjob-controller, and kube-scheduler as the default scheduler of the
# pods that are not gang members (a job's TensorBoard). It keeps running until
# `down`.
#
#   hack/local-system.sh up   [--dir DIR] [--bin DIR] [--nodes N] [--gpus-per-node G] [--exec]
#                                  start; prints `export ...` lines to eval
#   hack/local-system.sh env  [--dir DIR]   print the `export ...` lines again
#   hack/local-system.sh down [--dir DIR]   stop everything and remove DIR
#
#   eval "$(hack/local-system.sh up)"      # or, building first: eval "$(make -s local-up)"
#   kubectl apply -f examples/generic-two-role.yaml
#   hack/local-system.sh down              # or: make local-down
#
# Defaults: DIR $HYBRIDJOB_LOCAL_DIR, else $TMPDIR/hybridjob-local (pass --dir
# for more than one system), binaries from $HYBRIDJOB_LOCAL_BIN, else
# build/bin, 4 nodes of 4 GPUs, storage class
# `standard` (the default class, node-local). --exec runs the members'
# commands as real processes (root only). Every port is on 127.0.0.1 and
# picked free: the dashboard's is printed (HTTPS, self-signed, with the local
# admin's token in the address); metrics and health are off.
# Logs are in DIR/logs. The gang-scheduler reads DIR/scheduler-config.yaml
# (edits apply at once); the plugin reads the ConfigMap
# hybridjob-system/gang-scheduler-config made from it at start.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEFAULT_DIR="${TMPDIR:-/tmp}/hybridjob-local"
START_TIMEOUT="${HYBRIDJOB_LOCAL_START_TIMEOUT:-120}"

log() { echo "local-system: $*" >&2; }
die() { log "$*"; exit 1; }

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2
  exit 2
}

free_port() {
  python3 "$ROOT/hack/free-port.py"
}

print_env() {
  local dir="$1"
  echo "export KUBECONFIG=$dir/cluster/kubeconfig"
  # The cluster's own kubectl (v1.20.2, as the API server) and the plugin
  # kubectl-hybridjob come first.
  echo "export PATH=$(cat "$dir/k8s-bin-dir"):$(cat "$dir/bin-dir"):\$PATH"
  echo "export HYBRIDJOB_LOCAL_DIR=$dir"
}

# Starts a long-running process in its own session, logging to DIR/logs.
start() {
  local dir="$1" name="$2"
  shift 2
  setsid "$@" >>"$dir/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/$name.pid"
}

# The process must still run; else its log's tail explains why.
check_running() {
  local dir="$1" name="$2"
  if ! kill -0 "$(cat "$dir/$name.pid")" 2>/dev/null; then
    tail -n 20 "$dir/logs/$name.log" >&2 || true
    die "$name exited; its log: $dir/logs/$name.log"
  fi
}

wait_until() {
  local what="$1"
  shift
  local deadline=$((SECONDS + START_TIMEOUT))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || die "timed out after ${START_TIMEOUT}s waiting for $what"
    sleep 0.3
  done
}

cmd_down() {
  local dir="$1" name pid pids=()
  [ -d "$dir" ] || { log "nothing at $dir"; return 0; }
  for name in hybridjob-controller gang-scheduler kube-scheduler hybridjob-sim; do
    [ -f "$dir/$name.pid" ] || continue
    pid="$(cat "$dir/$name.pid")"
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
    rm -f "$dir/$name.pid"
  done
  # A graceful stop lets the simulator delete its nodes; then make sure.
  local i
  for i in $(seq 1 100); do
    [ "${#pids[@]}" -eq 0 ] && break
    kill -0 "${pids[0]}" 2>/dev/null || { pids=("${pids[@]:1}"); continue; }
    sleep 0.1
  done
  for pid in "${pids[@]}"; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  "$ROOT/hack/local-cluster.sh" down --dir "$dir/cluster" >/dev/null 2>&1 || true
  rm -rf "$dir"
  log "stopped and removed $dir"
}

cmd_up() {
  local dir="$1" bin="$2" nodes="$3" gpus="$4" exec="$5"
  [ -d "$dir" ] && [ -f "$dir/bin-dir" ] &&
    die "a system already runs at $dir (stop it with: $0 down --dir $dir)"
  local name
  for name in hybridjob-sim gang-scheduler hybridjob-controller; do
    [ -x "$bin/$name" ] || die "$bin/$name not found: build it first (make demo-build)"
  done
  if [ -n "$exec" ] && [ "$(id -u)" -ne 0 ]; then
    die "--exec runs members as real processes in their own mount namespaces: run as root"
  fi
  mkdir -p "$dir/logs"
  dir="$(cd "$dir" && pwd)"
  echo "$bin" >"$dir/bin-dir"
  # Whatever fails from here leaves nothing running.
  trap 'cmd_down "$dir" >/dev/null 2>&1' EXIT
  trap 'exit 130' INT TERM

  "$ROOT/hack/local-cluster.sh" up --dir "$dir/cluster" >/dev/null
  cp "$dir/cluster/k8s-bin-dir" "$dir/k8s-bin-dir"
  export KUBECONFIG="$dir/cluster/kubeconfig"
  local kubectl
  kubectl="$(cat "$dir/k8s-bin-dir")/kubectl"

  "$kubectl" apply -f "$ROOT/crds/" >/dev/null
  # Until the CRD is established its resources are not served: the next
  # `kubectl apply` of a HybridJob would fail with "could not find the
  # requested resource".
  "$kubectl" wait --for condition=established --timeout=60s \
    crd/hybridjobs.batch.hybridjob.io >/dev/null

  local exec_args=()
  [ -n "$exec" ] && exec_args=(--exec)
  start "$dir" hybridjob-sim "$bin/hybridjob-sim" --nodes "$nodes" --gpus-per-node "$gpus" \
    --cpu 32 --memory 256Gi --storage-class standard "${exec_args[@]}"
  ready_nodes() {
    [ "$("$kubectl" get nodes --no-headers 2>/dev/null | grep -c ' Ready')" -eq "$nodes" ]
  }
  wait_until "$nodes Ready nodes" ready_nodes
  check_running "$dir" hybridjob-sim

  # The default scheduler, as every cluster has one, for pods that are not
  # gang members (a job's TensorBoard Deployment). With --config it ignores
  # --port 0: its health and metrics address is set here, on a free port.
  local health
  health="127.0.0.1:$(free_port)"
  printf '%s\n' "apiVersion: kubescheduler.config.k8s.io/v1beta1" \
    "kind: KubeSchedulerConfiguration" "clientConnection:" "  kubeconfig: $KUBECONFIG" \
    "leaderElection:" "  leaderElect: false" "healthzBindAddress: $health" \
    "metricsBindAddress: $health" >"$dir/kube-scheduler.yaml"
  # Built now if this cache was made for the control plane alone.
  local k8s_bin
  k8s_bin="$("$ROOT/hack/k8s-binaries.sh" kube-scheduler)"
  start "$dir" kube-scheduler "$k8s_bin/kube-scheduler" \
    --config "$dir/kube-scheduler.yaml" --port 0 --secure-port 0

  # The scheduler's configuration, also as the ConfigMap an installation
  # has (deploy/scheduler-config.yaml), which `kubectl hybridjob queues` and
  # `nodes` read.
  printf '%s\n' "schedulerName: gang-scheduler" "gpuResources: [nvidia.com/gpu]" \
    >"$dir/scheduler-config.yaml"
  "$kubectl" create namespace hybridjob-system >/dev/null
  "$kubectl" create configmap gang-scheduler-config -n hybridjob-system \
    --from-file=config.yaml="$dir/scheduler-config.yaml" >/dev/null

  local dashboard_port
  dashboard_port="$(free_port)"
  # The key the controller signs members with and the scheduler checks, as
  # an installation's Secret hybridjob-member-key holds.
  (umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/member-key")
  start "$dir" gang-scheduler "$bin/gang-scheduler" --config "$dir/scheduler-config.yaml" \
    --metrics-addr 0 --health-addr 0 --dashboard-addr "127.0.0.1:$dashboard_port" \
    --member-key-file "$dir/member-key"
  start "$dir" hybridjob-controller "$bin/hybridjob-controller" --metrics-addr 0 --health-addr 0 \
    --member-key-file "$dir/member-key"
  echo "$dashboard_port" >"$dir/dashboard.port"
  sleep 1
  check_running "$dir" gang-scheduler
  check_running "$dir" hybridjob-controller
  check_running "$dir" kube-scheduler
  trap - EXIT INT TERM

  log "ready: $nodes nodes x $gpus GPUs$([ -n "$exec" ] && echo ', members run as processes')"
  # HTTPS with a self-signed certificate; the page reads the admin's token
  # from the address (and drops it from there), as any bearer token.
  local token
  token="$("$kubectl" config view --raw -o 'jsonpath={.users[0].user.token}')"
  log "dashboard: https://127.0.0.1:$dashboard_port/#token=$token   logs: $dir/logs"
  log "stop with: $0 down --dir $dir"
  print_env "$dir"
}

main() {
  [ $# -ge 1 ] || usage
  local cmd="$1"
  shift
  local dir="${HYBRIDJOB_LOCAL_DIR:-$DEFAULT_DIR}" bin="${HYBRIDJOB_LOCAL_BIN:-$ROOT/build/bin}" nodes=4 gpus=4 exec=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) dir="$2"; shift 2 ;;
      --bin) bin="$(cd "$2" && pwd)"; shift 2 ;;
      --nodes) nodes="$2"; shift 2 ;;
      --gpus-per-node) gpus="$2"; shift 2 ;;
      --exec) exec=1; shift ;;
      -h | --help) usage ;;
      *) die "unknown argument: $1" ;;
    esac
  done
  case "$cmd" in
    up) cmd_up "$dir" "$bin" "$nodes" "$gpus" "$exec" ;;
    env)
      [ -f "$dir/bin-dir" ] || die "no system runs at $dir (start one with: $0 up)"
      print_env "$dir"
      ;;
    down) cmd_down "$dir" ;;
    *) usage ;;
  esac
}

main "$@"
