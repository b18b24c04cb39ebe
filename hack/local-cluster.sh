#!/usr/bin/env bash
# A real, throwaway Kubernetes control plane on loopback: etcd, kube-apiserver
# (TLS, RBAC, static admin token, service-account keys) and a
# kube-controller-manager running only the serviceaccount, serviceaccount-token,
# garbagecollector, namespace, persistentvolume-binder, pvc-protection,
# pv-protection, podgc (it only deletes the pods of nodes that are gone),
# resourcequota, deployment and replicaset controllers (the last two give a
# job's TensorBoard Deployment its pod) and the endpointslice controller (a
# Service's endpoints, as kube-proxy reads them). No kubelet: hybridjob-sim
# plays it. No endpoint controller: pod IPs here are loopback addresses
# (127.1.x.y), which the API server refuses in Endpoints; EndpointSlices take
# them.
#
#   hack/local-cluster.sh up   [--dir DIR]   start; prints `export ...` lines
#   hack/local-cluster.sh env  [--dir DIR]   print the `export ...` lines again
#   hack/local-cluster.sh down [--dir DIR | --all]
#   hack/local-cluster.sh restart|stop COMPONENT [--dir DIR]
#                                  COMPONENT: etcd, apiserver, controller-manager
#
# Without --dir, `up` makes a fresh directory, so several clusters can run at
# once; `env` and `down` then use $HYBRIDJOB_CLUSTER_DIR, or the only cluster
# running. Every process is started by `up` and stopped by `down`, which also
# removes the directory. HYBRIDJOB_CLUSTER_PROFILING=1 serves the API server's
# Go profiles at /debug/pprof; HYBRIDJOB_CLUSTER_AUDIT_LOG=FILE writes its audit
# log (every request's verb, resource and user agent) to FILE (benchmarks only).
# HYBRIDJOB_CLUSTER_ENDPOINTSLICES=0 leaves the endpointslice controller out
# (hack/bench-burst.sh, whose API server figures predate it).
set -euo pipefail

HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CLUSTERS_ROOT="${TMPDIR:-/tmp}/hybridjob-clusters"
START_TIMEOUT="${HYBRIDJOB_CLUSTER_START_TIMEOUT:-120}"

log() { echo "local-cluster: $*" >&2; }
die() { log "$*"; exit 1; }

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

free_port() {
  python3 "$HACK_DIR/free-port.py"
}

print_env() {
  local dir="$1"
  echo "export KUBECONFIG=$dir/kubeconfig"
  echo "export HYBRIDJOB_CLUSTER_DIR=$dir"
}

running_clusters() {
  local d
  for d in "$CLUSTERS_ROOT"/*/; do
    [ -f "$d/kubeconfig" ] && echo "${d%/}"
  done 2>/dev/null || true
}

resolve_dir() {
  local dir="$1"
  if [ -n "$dir" ]; then echo "$dir"; return; fi
  if [ -n "${HYBRIDJOB_CLUSTER_DIR:-}" ]; then echo "$HYBRIDJOB_CLUSTER_DIR"; return; fi
  local all
  mapfile -t all < <(running_clusters)
  case "${#all[@]}" in
    0) die "no cluster is running (start one with: $0 up)" ;;
    1) echo "${all[0]}" ;;
    *) die "several clusters are running; name one with --dir: ${all[*]}" ;;
  esac
}

# Kills the named components (etcd, apiserver, controller-manager) at once, as
# a crash would, and waits until every one is gone. Nothing needs a graceful
# stop: `down` deletes the state with them, and `restart`/`stop` stand for a
# crash. One after the other with SIGTERM, the three took 6-7 s per cluster.
kill_components() {
  local dir="$1" name pid pids=() i
  shift
  for name in "$@"; do
    [ -f "$dir/$name.pid" ] || continue
    pid="$(cat "$dir/$name.pid")"
    kill -KILL "$pid" 2>/dev/null && pids+=("$pid")
    rm -f "$dir/$name.pid"
  done
  for i in $(seq 1 200); do
    [ "${#pids[@]}" -eq 0 ] && return 0
    kill -0 "${pids[0]}" 2>/dev/null || { pids=("${pids[@]:1}"); continue; }
    sleep 0.05
  done
}

cmd_down() {
  local dir="$1"
  [ -d "$dir" ] || { log "nothing at $dir"; return 0; }
  kill_components "$dir" controller-manager apiserver etcd
  rm -rf "$dir"
  log "stopped and removed $dir"
}

make_certs() {
  local pki="$1"
  mkdir -p "$pki"
  (
    cd "$pki"
    # P-256 keys: every test cluster makes three, and an RSA key took a third
    # of a CPU second to generate where these take a millisecond.
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
      -subj "/CN=hybridjob-local-ca" -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -subj "/CN=kube-apiserver" -keyout apiserver.key -out apiserver.csr 2>/dev/null
    cat >apiserver.ext <<EXT
subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local
extendedKeyUsage=serverAuth
EXT
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 \
      -extfile apiserver.ext -out apiserver.crt 2>/dev/null
    # The service-account token signing key (ES256).
    openssl ecparam -name prime256v1 -genkey -noout -out sa.key 2>/dev/null
    openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
    chmod 600 ./*.key
  )
}

write_kubeconfig() {
  local file="$1" server="$2" ca="$3" token="$4" user="$5"
  local ca_data
  ca_data="$(base64 -w0 <"$ca")"
  umask 077
  cat >"$file" <<KC
apiVersion: v1
kind: Config
clusters:
- name: hybridjob-local
  cluster:
    server: $server
    certificate-authority-data: $ca_data
users:
- name: $user
  user:
    token: $token
contexts:
- name: hybridjob-local
  context:
    cluster: hybridjob-local
    user: $user
    namespace: default
current-context: hybridjob-local
KC
}

wait_for() {
  local what="$1" deadline=$((SECONDS + START_TIMEOUT))
  shift
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      return 1
    fi
    sleep 0.3
  done
}

start_daemon() {
  local dir="$1" name="$2"
  shift 2
  printf '%s\0' "$@" >"$dir/$name.args"
  setsid "$@" >>"$dir/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$dir/$name.pid"
}

# Kills one component (as a crash would) and starts it again with the same
# arguments: tests of API server restarts and outages use this.
cmd_restart() {
  local dir="$1" name="$2"
  [ -f "$dir/$name.args" ] || die "no component \"$name\" in $dir (etcd, apiserver, controller-manager)"
  local args
  mapfile -d '' args <"$dir/$name.args"
  kill_components "$dir" "$name"
  start_daemon "$dir" "$name" "${args[@]}"
  if [ "$name" = apiserver ]; then
    local token
    token="$(cut -d, -f1 "$dir/tokens.csv")"
    wait_for apiserver curl -fsS --cacert "$dir/pki/ca.crt" -H "Authorization: Bearer $token" \
      "https://127.0.0.1:$(cat "$dir/apiserver.port")/readyz" ||
      die "kube-apiserver did not become ready again (log: $dir/logs/apiserver.log)"
  fi
  log "restarted $name"
}

# Kills one component and leaves it stopped (outage tests); `restart` brings it back.
cmd_stop() {
  local dir="$1" name="$2"
  [ -f "$dir/$name.args" ] || die "no component \"$name\" in $dir"
  kill_components "$dir" "$name"
  log "stopped $name"
}

try_up() {
  local dir="$1" bin="$2"
  local etcd_client etcd_peer api_port token
  etcd_client="$(free_port)"
  etcd_peer="$(free_port)"
  api_port="$(free_port)"
  token="$(head -c 24 /dev/urandom | base64 | tr -d '/+=' | head -c 32)"
  mkdir -p "$dir/logs" "$dir/etcd"
  echo "$api_port" >"$dir/apiserver.port"

  start_daemon "$dir" etcd etcd --name local --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_client" \
    --advertise-client-urls "http://127.0.0.1:$etcd_client" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "local=http://127.0.0.1:$etcd_peer" \
    --listen-metrics-urls "" \
    --quota-backend-bytes 4294967296 --snapshot-count 100000
  echo "http://127.0.0.1:$etcd_client" >"$dir/etcd.endpoint"
  if ! wait_for etcd curl -fsS "http://127.0.0.1:$etcd_client/health"; then
    log "etcd did not become healthy (log: $dir/logs/etcd.log)"
    return 1
  fi

  umask 077
  echo "$token,hybridjob-admin,hybridjob-admin,\"system:masters\"" >"$dir/tokens.csv"
  local audit=()
  if [ -n "${HYBRIDJOB_CLUSTER_AUDIT_LOG:-}" ]; then
    printf '%s\n' 'apiVersion: audit.k8s.io/v1' 'kind: Policy' 'omitStages: ["RequestReceived"]' \
      'rules:' '- level: Metadata' >"$dir/audit-policy.yaml"
    audit=(--audit-policy-file "$dir/audit-policy.yaml"
      --audit-log-path "$HYBRIDJOB_CLUSTER_AUDIT_LOG" --audit-log-format json)
  fi
  # Logs are read from hybridjob-sim's kubelet endpoint at the node's InternalIP:
  # the Hostname address (the node's name) does not resolve. Without
  # --kubelet-certificate-authority the kubelet's self-signed cert is accepted.
  start_daemon "$dir" apiserver "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_client" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 \
    --secure-port "$api_port" --insecure-port 0 \
    --tls-cert-file "$dir/pki/apiserver.crt" --tls-private-key-file "$dir/pki/apiserver.key" \
    --client-ca-file "$dir/pki/ca.crt" \
    --token-auth-file "$dir/tokens.csv" \
    --authorization-mode RBAC \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$dir/pki/sa.pub" \
    --service-account-signing-key-file "$dir/pki/sa.key" \
    --service-cluster-ip-range 10.96.0.0/16 \
    --allow-privileged=true \
    --endpoint-reconciler-type none \
    --kubelet-preferred-address-types InternalIP,Hostname,InternalDNS,ExternalDNS,ExternalIP \
    --profiling="$([ "${HYBRIDJOB_CLUSTER_PROFILING:-}" = 1 ] && echo true || echo false)" \
    --max-requests-inflight 2000 --max-mutating-requests-inflight 1000 \
    --watch-cache=true "${audit[@]}"
  local server="https://127.0.0.1:$api_port"
  if ! wait_for apiserver curl -fsS --cacert "$dir/pki/ca.crt" \
      -H "Authorization: Bearer $token" "$server/readyz"; then
    log "kube-apiserver did not become ready (log: $dir/logs/apiserver.log)"
    return 1
  fi

  write_kubeconfig "$dir/kubeconfig" "$server" "$dir/pki/ca.crt" "$token" hybridjob-admin
  local controllers=serviceaccount,serviceaccount-token,garbagecollector,namespace
  controllers+=,persistentvolume-binder,pvc-protection,pv-protection,podgc,resourcequota
  controllers+=,deployment,replicaset
  if [ "${HYBRIDJOB_CLUSTER_ENDPOINTSLICES:-1}" != 0 ]; then
    controllers+=,endpointslice
  fi
  start_daemon "$dir" controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$dir/kubeconfig" \
    --controllers "$controllers" \
    --pvclaimbinder-sync-period 5s \
    --terminated-pod-gc-threshold 0 \
    --service-account-private-key-file "$dir/pki/sa.key" \
    --root-ca-file "$dir/pki/ca.crt" \
    --use-service-account-credentials=false \
    --leader-elect=false --port 0 --secure-port 0 \
    --kube-api-qps 200 --kube-api-burst 400 \
    --concurrent-gc-syncs 20 --concurrent-namespace-syncs 10
  # Pods cannot be created until a namespace's default ServiceAccount exists.
  if ! wait_for serviceaccount "$bin/kubectl" --kubeconfig "$dir/kubeconfig" \
      get serviceaccount default -n default; then
    log "the default ServiceAccount did not appear (log: $dir/logs/controller-manager.log)"
    return 1
  fi
}

cmd_up() {
  local dir="$1"
  local bin
  # What the control plane runs; tests and benchmarks that start
  # kube-scheduler get it from `make k8s`.
  bin="$("$HACK_DIR/k8s-binaries.sh" kube-apiserver kube-controller-manager kubectl)"
  command -v etcd >/dev/null || die "etcd not found: run hack/install-deps.sh"
  if [ -z "$dir" ]; then
    mkdir -p "$CLUSTERS_ROOT"
    dir="$(mktemp -d "$CLUSTERS_ROOT/cluster.XXXXXX")"
  elif [ -f "$dir/kubeconfig" ]; then
    die "a cluster already runs at $dir (stop it with: $0 down --dir $dir)"
  fi
  dir="$(cd "$(dirname "$dir")" 2>/dev/null && pwd)/$(basename "$dir")" || true
  mkdir -p "$dir"
  make_certs "$dir/pki"
  # A port picked as free can be taken before the server binds it: retry.
  local attempt
  for attempt in 1 2 3; do
    if try_up "$dir" "$bin"; then
      echo "$bin" >"$dir/k8s-bin-dir"
      log "cluster ready at $(cat "$dir/apiserver.port") (state: $dir)"
      print_env "$dir"
      return 0
    fi
    log "attempt $attempt failed; retrying"
    kill_components "$dir" controller-manager apiserver etcd
    mkdir -p "$dir/failed-$attempt"
    mv "$dir/logs" "$dir/failed-$attempt/" 2>/dev/null || true
    rm -rf "$dir/etcd" "$dir/kubeconfig"
  done
  tail -n 20 "$dir"/failed-3/logs/*.log >&2 || true
  cmd_down "$dir"
  die "could not start a cluster"
}

main() {
  local cmd="${1:-}" dir="" all=0 component=""
  [ -n "$cmd" ] || usage
  shift
  if [ "$cmd" = restart ] || [ "$cmd" = stop ]; then
    component="${1:-}"
    [ -n "$component" ] || die "$cmd needs a component: etcd, apiserver or controller-manager"
    shift
  fi
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) dir="$2"; shift 2 ;;
      --dir=*) dir="${1#--dir=}"; shift ;;
      --all) all=1; shift ;;
      -h|--help) usage ;;
      *) die "unknown argument: $1" ;;
    esac
  done
  case "$cmd" in
    up) cmd_up "$dir" ;;
    env)
      dir="$(resolve_dir "$dir")"
      print_env "$dir"
      ;;
    down)
      if [ "$all" = 1 ]; then
        local d
        for d in $(running_clusters); do cmd_down "$d"; done
      else
        dir="$(resolve_dir "$dir")"
        cmd_down "$dir"
      fi
      ;;
    restart|stop)
      dir="$(resolve_dir "$dir")"
      "cmd_$cmd" "$dir" "$component"
      ;;
    -h|--help|help) usage ;;
    *) die "unknown command: $cmd" ;;
  esac
}

main "$@"
