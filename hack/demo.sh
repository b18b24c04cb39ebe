#!/usr/bin/env bash
# `make demo`: the whole system on one machine. A local control plane, four
# simulated nodes with 4 GPUs each, gang-scheduler, hybridjob-controller, and
# two elastic jobs competing for the GPUs — shown as it happens, then torn down.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$(cd "${1:-$ROOT/build}" && pwd)"
BIN="$BUILD_DIR/bin"
LOG_DIR="$ROOT/demo-logs/$(date +%Y%m%d-%H%M%S)"
CLUSTER_DIR="$(mktemp -d "${TMPDIR:-/tmp}/hybridjob-demo.XXXXXX")"
TIMEOUT="${HYBRIDJOB_DEMO_TIMEOUT:-300}"
mkdir -p "$LOG_DIR"
PIDS=()
START=$SECONDS

say() { printf '[%3ds] %s\n' "$((SECONDS - START))" "$*" 2>/dev/null || true; }

cleanup() {
  trap - EXIT INT TERM HUP
  trap '' PIPE
  set +e  # tear down everything even if a step fails
  say "tearing down"
  local pid
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  "$ROOT/hack/local-cluster.sh" down --dir "$CLUSTER_DIR/cluster" >/dev/null 2>&1 || true
  rm -rf "$CLUSTER_DIR"
  say "done; logs are in $LOG_DIR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
# Output closed (e.g. piped into head): still tear everything down.
trap 'trap "" PIPE; exit 141' PIPE

say "starting a local Kubernetes v1.20.2 control plane (etcd, kube-apiserver, kube-controller-manager)"
eval "$("$ROOT/hack/local-cluster.sh" up --dir "$CLUSTER_DIR/cluster")"
KUBECTL="$(cat "$CLUSTER_DIR/cluster/k8s-bin-dir")/kubectl"
k() { "$KUBECTL" "$@"; }

show_placement() {
  local job="$1"
  say "$job placed — members bound to nodes:"
  k get pods -l "batch.hybridjob.io/job-name=$job" --sort-by=.metadata.name \
    -o custom-columns='POD:.metadata.name,ROLE:.metadata.labels.batch\.hybridjob\.io/role,NODE:.spec.nodeName,GPUS:.spec.containers[0].resources.limits.nvidia\.com/gpu,PHASE:.status.phase' |
    sed 's/^/        /'
}

# The kubectl plugin (build/bin/kubectl-hybridjob) as a user runs it. The demo's
# scheduler runs with its defaults, not a ConfigMap: the plugin's note on that
# is left out.
show_plugin() {
  say "kubectl hybridjob queues"
  PATH="$BIN:$PATH" k hybridjob queues 2>/dev/null | sed 's/^/        /'
  say "kubectl hybridjob nodes"
  PATH="$BIN:$PATH" k hybridjob nodes 2>/dev/null | sed 's/^/        /'
}

k apply -f "$ROOT/crds/" >/dev/null
k wait --for condition=established --timeout=60s crd/hybridjobs.batch.hybridjob.io >/dev/null

# DEMO_EXEC=1: the simulated kubelet runs the members' commands for real
# (root only), and the story is a real PyTorch job's training.
EXEC_ARGS=()
if [ "${DEMO_EXEC:-}" = 1 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    say "DEMO_EXEC=1 runs members as real processes in their own mount namespaces: run as root"
    exit 1
  fi
  EXEC_ARGS=(--exec)
fi
"$BIN/hybridjob-sim" --nodes 4 --gpus-per-node 4 --cpu 32 --memory 256Gi --storage-class standard \
  "${EXEC_ARGS[@]}" >"$LOG_DIR/hybridjob-sim.log" 2>&1 &
PIDS+=($!)
until [ "$(k get nodes --no-headers 2>/dev/null | grep -c ' Ready')" -eq 4 ]; do sleep 0.5; done
say "4 simulated nodes ready, 4 GPUs each (16 GPUs):"
k get nodes -o custom-columns='NODE:.metadata.name,GPUS:.status.allocatable.nvidia\.com/gpu,STATUS:.status.conditions[?(@.type=="Ready")].type' | sed 's/^/        /'

# The scheduler's dashboard on a free loopback port.
DASHBOARD_PORT="$(python3 "$ROOT/hack/free-port.py")"
# The key members are signed with and checked against.
(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$LOG_DIR/member-key")
"$BIN/gang-scheduler" --metrics-addr 0 --health-addr 0 \
  --dashboard-addr "127.0.0.1:$DASHBOARD_PORT" --member-key-file "$LOG_DIR/member-key" \
  >"$LOG_DIR/gang-scheduler.log" 2>&1 &
PIDS+=($!)
"$BIN/hybridjob-controller" --metrics-addr 0 --health-addr 0 --member-key-file "$LOG_DIR/member-key" \
  >"$LOG_DIR/hybridjob-controller.log" 2>&1 &
PIDS+=($!)
say "gang-scheduler and hybridjob-controller started"
# HTTPS with a self-signed certificate; the page takes the local admin's
# bearer token from the address.
DASHBOARD_TOKEN="$(k config view --raw -o 'jsonpath={.users[0].user.token}')"
say "dashboard: https://127.0.0.1:$DASHBOARD_PORT/#token=$DASHBOARD_TOKEN"
say "   (queues, jobs and why they wait, the GPU map; self-signed: the browser asks once; open it while the demo runs)"

if [ "${DEMO_EXEC:-}" = 1 ]; then
  say "kubectl apply -f examples/exec/pytorch-ddp.yaml   (master + 3 workers, real PyTorch DDP on CPU)"
  k apply -f "$ROOT/examples/exec/pytorch-ddp.yaml" | sed 's/^/        /'
  until [ "$(k get pod pytorch-ddp-master-0 -o jsonpath='{.status.phase}' 2>/dev/null)" = Running ] ||
    [ "$(k get hj pytorch-ddp -o jsonpath='{.status.phase}' 2>/dev/null)" = Succeeded ]; do
    [ $((SECONDS - START)) -lt "$TIMEOUT" ] || { say "timed out; see $LOG_DIR"; exit 1; }
    sleep 0.5
  done
  show_placement pytorch-ddp
  say "kubectl logs -f pytorch-ddp-master-0   (the master's own output, through the API server)"
  k logs -f pytorch-ddp-master-0 | sed 's/^/        /'
  until [ "$(k get hj pytorch-ddp -o jsonpath='{.status.phase}' 2>/dev/null)" = Succeeded ]; do
    phase="$(k get hj pytorch-ddp -o jsonpath='{.status.phase}' 2>/dev/null)"
    if [ "$phase" = Failed ] || [ $((SECONDS - START)) -ge "$TIMEOUT" ]; then
      say "pytorch-ddp is $phase; see $LOG_DIR"
      exit 1
    fi
    sleep 0.5
  done
  say "pytorch-ddp succeeded: the loss fell while the ranks trained together."
  k get hj pytorch-ddp | sed 's/^/        /'
  show_plugin
  exit 0
fi

say "kubectl apply -f examples/demo/tf-elastic.yaml   (chief + 2 ps + 4..16 workers, 1 GPU each)"
k apply -f "$ROOT/examples/demo/tf-elastic.yaml" | sed 's/^/        /'
SUBMITTED_AT=$SECONDS
SECOND_SUBMITTED=""

declare -A PHASE SHOWN_PLACEMENT KNOWN_PODS MEMBERS
show_surplus() {
  local job="$1" role max bound i
  while read -r role max; do
    [ -n "$role" ] || continue
    bound="$(k get pods -l "batch.hybridjob.io/job-name=$job,batch.hybridjob.io/role=$role" \
      --field-selector spec.nodeName!= --no-headers 2>/dev/null | wc -l)"
    for ((i = bound; i < max; i++)); do
      say "$job: member $job-$role-$i left out (no GPU free); it waits, pending, to grow the job"
    done
  done < <(k get hj "$job" -o jsonpath='{range .spec.replicaSpecs[*]}{.name} {.maxReplicas}{"\n"}{end}')
}

show_cluster_spec() {
  local job="$1"
  say "cluster spec published for $job (ConfigMap $job-cluster, cluster.json):"
  k get configmap "$job-cluster" -o jsonpath='{.data.cluster\.json}' |
    python3 -m json.tool 2>/dev/null | sed 's/^/        /' || true
  echo
}

while [ $((SECONDS - START)) -lt "$TIMEOUT" ]; do
  if [ -z "$SECOND_SUBMITTED" ] && [ $((SECONDS - SUBMITTED_AT)) -ge 4 ]; then
    say "kubectl apply -f examples/demo/pytorch-elastic.yaml   (2-GPU master + 3..6 workers)"
    k apply -f "$ROOT/examples/demo/pytorch-elastic.yaml" | sed 's/^/        /'
    SECOND_SUBMITTED=1
  fi
  for job in tf-mnist resnet-ddp; do
    phase="$(k get hj "$job" -o jsonpath='{.status.phase}' 2>/dev/null || true)"
    ready="$(k get hj "$job" -o jsonpath='{.status.readyMembers}' 2>/dev/null || true)"
    if [ "${PHASE[$job]:-}" != "$phase" ] && [ -n "$phase" ]; then
      say "$job: ${PHASE[$job]:-(new)} -> $phase${ready:+ (ready $ready)}"
      PHASE[$job]="$phase"
      if [ "$phase" = Pending ] || [ "$phase" = Queued ]; then
        why="$(k get pods -l "batch.hybridjob.io/job-name=$job" \
          -o jsonpath='{.items[0].status.conditions[?(@.type=="PodScheduled")].message}' 2>/dev/null || true)"
        [ -n "$why" ] && say "        waiting: $why"
      fi
    fi
    # Pods that vanish without ever being bound are surplus the controller removed.
    pods="$(k get pods -l "batch.hybridjob.io/job-name=$job" --no-headers \
      -o custom-columns=N:.metadata.name,NODE:.spec.nodeName 2>/dev/null || true)"
    while read -r name node; do
      [ -n "$name" ] || continue
      [ -n "${KNOWN_PODS[$job/$name]:-}" ] || KNOWN_PODS[$job/$name]="$node"
      [ "$node" = "<none>" ] || KNOWN_PODS[$job/$name]="$node"
    done <<<"$pods"
    for key in "${!KNOWN_PODS[@]}"; do
      [[ "$key" == "$job/"* ]] || continue
      name="${key#*/}"
      if ! grep -q "^$name " <<<"$pods"; then
        if [ "${PHASE[$job]}" = Succeeded ] && [[ "$name" == *-ps-* ]]; then
          say "$job: parameter server $name deleted after the job succeeded"
        elif [ "${KNOWN_PODS[$key]}" = "<none>" ]; then
          say "$job: surplus pod $name removed (never bound)"
        fi
        unset "KNOWN_PODS[$key]"
      fi
    done
    members="$(k get hj "$job" -o jsonpath='{range .status.replicaStatuses[*]}{.name}={.members} {end}' 2>/dev/null || true)"
    if [ -n "${SHOWN_PLACEMENT[$job]:-}" ] && [ "${MEMBERS[$job]:-}" != "$members" ]; then
      say "$job: membership now ${members% } (the scheduler reclaimed or grew it; cluster spec republished)"
    fi
    MEMBERS[$job]="$members"
    if [ "$phase" = Running ] && [ -z "${SHOWN_PLACEMENT[$job]:-}" ]; then
      SHOWN_PLACEMENT[$job]=1
      show_placement "$job"
      show_surplus "$job"
      [ "$job" = tf-mnist ] && show_cluster_spec "$job"
      if [ "$job" = resnet-ddp ]; then
        say "kubectl hybridjob nodes   (who holds which GPUs now)"
        PATH="$BIN:$PATH" k hybridjob nodes 2>/dev/null | sed 's/^/        /'
        say "kubectl hybridjob queues"
        PATH="$BIN:$PATH" k hybridjob queues 2>/dev/null | sed 's/^/        /'
      fi
    fi
  done
  if [ "${PHASE[tf-mnist]:-}" = Succeeded ] && [ "${PHASE[resnet-ddp]:-}" = Succeeded ]; then
    sleep 2
    say "both jobs succeeded. Final state:"
    k get hj | sed 's/^/        /'
    left="$(k get pods -l batch.hybridjob.io/job-name=tf-mnist,batch.hybridjob.io/role=ps --no-headers 2>/dev/null | wc -l)"
    say "tf-mnist parameter servers left: $left"
    k get events --field-selector involvedObject.kind=HybridJob --sort-by=.lastTimestamp \
      -o custom-columns='JOB:.involvedObject.name,REASON:.reason,MESSAGE:.message' | sed 's/^/        /'
    show_plugin
    exit 0
  fi
  sleep 0.5
done
say "timed out after ${TIMEOUT}s; see $LOG_DIR"
exit 1
