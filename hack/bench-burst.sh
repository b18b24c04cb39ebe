#!/usr/bin/env bash
# The whole pipeline under a burst of submissions, side by side with
# kube-scheduler, in one cluster and one run:
#
#   hack/bench-burst.sh [BUILD_DIR]
#
# Environment: BURST_JOBS (500), BURST_GROUP (10), BURST_NODES (200),
# BURST_CONCURRENCY (16), BURST_LEGS ("1 2 3 4 5 6 7": which of the legs below run),
# BURST_KEEP_LOGS (a directory to copy the binaries' logs into), BURST_API_PROFILE (1: after
# each leg, the requests the API server served during it, by verb and resource, with the
# seconds it spent on them, from its own apiserver_request_* metrics), BURST_API_PPROF (a
# directory: the API server's Go CPU profile of each leg's first BURST_API_PPROF_SECONDS
# (default 15), as LEG-NAMESPACE.pprof; read with `go tool pprof -top`), BURST_API_AUDIT (a
# directory: the API server's audit log, and after each leg the requests it served during it
# by client (user agent), verb and resource), BURST_TRACE_STATUS (N: each status the first N
# HybridJobs of a leg were written with, on stderr), BURST_CONTROLLER_FLAGS (more flags for
# hybridjob-controller in every leg, e.g. "--status-batch-period 0").
#
# One local cluster with BURST_NODES simulated nodes (128 CPUs each). In turn:
#   0. (not by default) kube-scheduler, client QPS/burst 5000: small plain pods
#      (identity labels and a group-spec annotation, nothing else), the pods a
#      user would create for it, BURST_CONCURRENCY in flight;
#   1. kube-scheduler v1.20.2, client QPS/burst 5000: BURST_JOBS x BURST_GROUP
#      one-CPU pods created directly, BURST_CONCURRENCY in flight (the very pods
#      hybridjob-controller makes for those jobs: the harness creates the
#      HybridJobs before the clock and their pods from the controller's planner);
#   2. kube-scheduler with its default client limits (QPS 50, burst 100);
#   3. hybridjob-controller (--workers 16 --qps 1000 --burst 2000) and
#      gang-scheduler (clientQPS/clientBurst 5000): BURST_JOBS HybridJobs of
#      BURST_GROUP one-CPU members created BURST_CONCURRENCY in flight, the
#      controller creating the pods;
#   4. the same two binaries with their default flags;
# and the create rate alone, nothing binding (pods are timed until the harness's
# watch has seen every one created):
#   5. the API server's create ceiling: BURST_JOBS x BURST_GROUP pods created
#      directly, BURST_CONCURRENCY in flight;
#   6. hybridjob-controller (--workers 16 --qps 1000 --burst 2000) creating the
#      pods of BURST_JOBS HybridJobs, no scheduler running;
#   7. the controller with its default flags.
# Each leg runs in its own namespace; earlier legs' pods stay bound (the nodes
# have room for all four). Every time runs from the first create to the last
# member bound. Prints a Markdown table and the ratios.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$(cd "${1:-$ROOT/build}" && pwd)"
BIN="$BUILD_DIR/bin"
JOBS="${BURST_JOBS:-500}"
GROUP="${BURST_GROUP:-10}"
NODES="${BURST_NODES:-200}"
CONCURRENCY="${BURST_CONCURRENCY:-16}"
LEGS=" ${BURST_LEGS:-1 2 3 4 5 6 7} "
PODS=$((JOBS * GROUP))
WORK="$(mktemp -d "${TMPDIR:-/tmp}/hybridjob-burst.XXXXXX")"
CLUSTER="$WORK/cluster"
PIDS=()

log() { echo "bench-burst: $*" >&2; }

stop_binaries() {
  CONTROLLER=""
  local pid
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}
cleanup() {
  stop_binaries
  "$ROOT/hack/local-cluster.sh" down --dir "$CLUSTER" >/dev/null 2>&1 || true
  if [ -n "${BURST_KEEP_LOGS:-}" ]; then
    mkdir -p "$BURST_KEEP_LOGS" && cp "$WORK"/*.log "$BURST_KEEP_LOGS"/ 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

for b in hybridjob-sim gang-scheduler hybridjob-controller bench_scheduling; do
  [ -x "$BIN/$b" ] || { log "missing $BIN/$b: build it first"; exit 1; }
done
"$ROOT/hack/k8s-binaries.sh" >/dev/null  # kube-scheduler too

log "cluster with $NODES simulated nodes"
[ -z "${BURST_API_PPROF:-}" ] || export HYBRIDJOB_CLUSTER_PROFILING=1
if [ -n "${BURST_API_AUDIT:-}" ]; then
  mkdir -p "$BURST_API_AUDIT"
  BURST_API_AUDIT="$(cd "$BURST_API_AUDIT" && pwd)"
  rm -f "$BURST_API_AUDIT/audit.log" "$BURST_API_AUDIT/legs.tsv"
  export HYBRIDJOB_CLUSTER_AUDIT_LOG="$BURST_API_AUDIT/audit.log"
fi
# Without the endpointslice controller, as when the recorded figures were made.
eval "$(HYBRIDJOB_CLUSTER_ENDPOINTSLICES=0 "$ROOT/hack/local-cluster.sh" up --dir "$CLUSTER")"
K8S_BIN="$(cat "$CLUSTER/k8s-bin-dir")"
KUBECTL="$K8S_BIN/kubectl"
"$KUBECTL" apply -f "$ROOT/crds/" >/dev/null
"$KUBECTL" wait --for=condition=Established crd/hybridjobs.batch.hybridjob.io --timeout=60s >/dev/null
# Registered, then the simulator stops and the nodes stay (this cluster runs
# no node lifecycle controller): the legs measure creation and binding, with
# no kubelet traffic.
"$BIN/hybridjob-sim" --nodes "$NODES" --gpus-per-node 8 --cpu 128 --memory 1Ti --keep-nodes \
  --workers 32 --qps 0 >"$WORK/sim.log" 2>&1 &
SIM=$!
until [ "$("$KUBECTL" get nodes --no-headers 2>/dev/null | wc -l)" -ge "$NODES" ]; do sleep 1; done
sleep 1
kill -TERM "$SIM"
wait "$SIM" 2>/dev/null || true

ROWS=""
CREATE_ROWS=""
CPU_ROWS=""
TICKS="$(getconf CLK_TCK)"
# CPU seconds (user + system) a process has used; 0 when it is gone.
cpu_of() {
  awk -v t="$TICKS" '{ sub(/^.*\) /, ""); printf "%.1f", ($12 + $13) / t }' "/proc/$1/stat" \
    2>/dev/null || echo 0
}
APISERVER="$(cat "$CLUSTER/apiserver.pid")"
API_SERVER_URL="$(awk '/server:/ { print $2; exit }' "$KUBECONFIG")"
API_TOKEN="$(cut -d, -f1 "$CLUSTER/tokens.csv")"
PROFILES=""
STATUS_WRITES=""
# The API server's request counts and seconds by verb, resource and subresource
# (watches left out: their duration is how long they stay open).
api_requests() {
  curl -fsS --cacert "$CLUSTER/pki/ca.crt" -H "Authorization: Bearer $API_TOKEN" \
    "$API_SERVER_URL/metrics" 2>/dev/null | awk '
    /^apiserver_request_duration_seconds_(sum|count)\{/ {
      kind = ($0 ~ /_sum\{/) ? "s" : "n"
      line = $0; key = ""
      n = split("verb resource subresource", names, " ")
      for (i = 1; i <= n; i++) {
        v = ""
        if (match(line, names[i] "=\"[^\"]*\"")) { v = substr(line, RSTART, RLENGTH); sub(/^[^"]*"/, "", v); sub(/"$/, "", v) }
        key = key (i > 1 ? " " : "") (v == "" ? "-" : v)
      }
      split(key, parts, " ")
      if (parts[1] == "WATCH" || parts[1] == "CONNECT") next
      total[key " " kind] += $NF
    }
    END { for (k in total) print k, total[k] }'
}
# profile_diff BEFORE AFTER LABEL: the leg's requests, costliest first.
profile_diff() {
  awk -v label="$3" '
    FNR == NR { before[$1 " " $2 " " $3 " " $4] = $5; next }
    { key = $1 " " $2 " " $3; d = $5 - before[$1 " " $2 " " $3 " " $4]; if ($4 == "s") sec[key] += d; else cnt[key] += d }
    END {
      printf "\nAPI server requests during: %s\n\n| verb | resource | subresource | requests | server seconds |\n|---|---|---|---|---|\n", label
      for (k in cnt) if (cnt[k] > 0) { split(k, p, " "); printf "| %s | %s | %s | %d | %.1f |\n", p[1], p[2], p[3], cnt[k], sec[k] | "sort -t\"|\" -k6 -rn" }
      close("sort -t\"|\" -k6 -rn")
    }' "$1" "$2"
}
ETCD="$(cat "$CLUSTER/etcd.pid")"
CONTROLLER=""

# run_leg NAMESPACE LABEL PID [bench_scheduling flags...]: one row, and one
# row of CPU seconds the API server, etcd, the scheduler and the controller
# used during it.
run_leg() {
  local ns="$1" label="$2" pid="$3"
  shift 3
  log "$label"
  local api0 etcd0 sched0 ctrl0="-"
  api0="$(cpu_of "$APISERVER")"
  etcd0="$(cpu_of "$ETCD")"
  sched0="$(cpu_of "$pid")"
  [ -n "$CONTROLLER" ] && ctrl0="$(cpu_of "$CONTROLLER")"
  [ -n "${BURST_API_PROFILE:-}" ] && api_requests >"$WORK/requests-before"
  local pprof_pid=""
  if [ -n "${BURST_API_PPROF:-}" ]; then
    mkdir -p "$BURST_API_PPROF"
    curl -fsS --cacert "$CLUSTER/pki/ca.crt" -H "Authorization: Bearer $API_TOKEN" \
      -o "$BURST_API_PPROF/$ns.pprof" \
      "$API_SERVER_URL/debug/pprof/profile?seconds=${BURST_API_PPROF_SECONDS:-15}" &
    pprof_pid=$!
  fi
  local row started
  started="$(date -u +%s.%N)"
  row="$("$BIN/bench_scheduling" --kubeconfig "$KUBECONFIG" --namespace "$ns" --label "$label" \
    --scheduler-pid "$pid" --pods "$PODS" --group-size "$GROUP" --gpus-per-pod 0 \
    --concurrency "$CONCURRENCY" ${BURST_TRACE_STATUS:+--trace-status "$BURST_TRACE_STATUS"} "$@" 2> >(tee "$WORK/leg.err" >&2) || true)"$'\n'
  # The job status writes the harness's watch saw (legs with --via-controller).
  local writes
  writes="$(sed -n 's/^bench_scheduling: \([0-9]* job status writes.*\)/\1/p' "$WORK/leg.err" || true)"
  [ -z "$writes" ] || STATUS_WRITES+="- $label: $writes"$'\n'
  if [[ " $* " == *" --created-only "* ]]; then CREATE_ROWS+="$row"; else ROWS+="$row"; fi
  [ -z "${BURST_API_AUDIT:-}" ] ||
    printf '%s\t%s\t%s\n' "$started" "$(date -u +%s.%N)" "$label" >>"$BURST_API_AUDIT/legs.tsv"
  [ -z "$pprof_pid" ] || wait "$pprof_pid" || log "no CPU profile of the API server for $ns"
  local ctrl="-"
  [ -n "$CONTROLLER" ] && ctrl="$(awk -v a="$(cpu_of "$CONTROLLER")" -v b="$ctrl0" 'BEGIN { printf "%.1f", a - b }')"
  # A leg whose measured process is the controller runs no scheduler.
  local sched="-"
  [ "$pid" != 0 ] && [ "$pid" != "$CONTROLLER" ] &&
    sched="$(awk -v a="$(cpu_of "$pid")" -v b="$sched0" 'BEGIN { printf "%.1f", a - b }')"
  CPU_ROWS+="$(awk -v l="$label" -v a1="$(cpu_of "$APISERVER")" -v a0="$api0" \
    -v e1="$(cpu_of "$ETCD")" -v e0="$etcd0" -v s="$sched" -v c="$ctrl" \
    'BEGIN { printf "| %s | %.1f | %.1f | %s | %s |", l, a1 - a0, e1 - e0, s, c }')"$'\n'
  if [ -n "${BURST_API_PROFILE:-}" ]; then
    api_requests >"$WORK/requests-after"
    PROFILES+="$(profile_diff "$WORK/requests-before" "$WORK/requests-after" "$label")"$'\n'
  fi
}

start_kube_scheduler() {  # QPS BURST
  # With --config, --port 0 is ignored: health and metrics go to a free port.
  local health
  health="127.0.0.1:$(python3 "$(dirname "${BASH_SOURCE[0]}")/free-port.py")"
  cat >"$WORK/kube-scheduler.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $KUBECONFIG
  qps: $1
  burst: $2
leaderElection:
  leaderElect: false
healthzBindAddress: $health
metricsBindAddress: $health
YAML
  "$K8S_BIN/kube-scheduler" --config "$WORK/kube-scheduler.yaml" --port 0 --secure-port 0 \
    >>"$WORK/kube-scheduler.log" 2>&1 &
  KS=$!
  PIDS+=("$KS")
  sleep 2
}

# start_controller NAMESPACE [controller flags...]: the controller watches the
# leg's namespace only (the kube-scheduler legs left HybridJobs of their own
# elsewhere).
start_controller() {
  local ns="$1"
  shift
  "$BIN/hybridjob-controller" --kubeconfig "$KUBECONFIG" --namespace "$ns" --metrics-addr 0 \
    --health-addr 0 --log-level warn "$@" ${BURST_CONTROLLER_FLAGS:-} >>"$WORK/controller.log" 2>&1 &
  CONTROLLER=$!
  PIDS+=("$CONTROLLER")
  sleep 2
}

# start_ours NAMESPACE SCHEDULER_CONFIG_LINES [controller flags...]
start_ours() {
  local ns="$1"
  printf 'metricsAddr: "0"\nhealthAddr: "0"\n%s' "$2" >"$WORK/gang-scheduler.yaml"
  shift 2
  "$BIN/gang-scheduler" --kubeconfig "$KUBECONFIG" --config "$WORK/gang-scheduler.yaml" \
    --log-level warn >>"$WORK/gang-scheduler.log" 2>&1 &
  GS=$!
  PIDS+=("$GS")
  start_controller "$ns" "$@"
}

leg() { [[ "$LEGS" == *" $1 "* ]]; }

if leg 0; then
  start_kube_scheduler 5000 5000
  run_leg burst-kube-plain "kube-scheduler v1.20.2, small plain pods created directly (QPS/burst 5000)" \
    "$KS" --scheduler-name default-scheduler --plain-pods
  stop_binaries
fi
if leg 1; then
  start_kube_scheduler 5000 5000
  run_leg burst-kube-raised "kube-scheduler v1.20.2, pods created directly (QPS/burst 5000)" \
    "$KS" --scheduler-name default-scheduler
  stop_binaries
fi
if leg 2; then
  start_kube_scheduler 50 100
  run_leg burst-kube-default \
    "kube-scheduler v1.20.2, pods created directly (default QPS 50, burst 100)" "$KS" \
    --scheduler-name default-scheduler
  stop_binaries
fi
if leg 3; then
  start_ours burst-ours-raised "clientQPS: 5000
clientBurst: 5000
bindConcurrency: $CONCURRENCY
" --workers 16 --qps 1000 --burst 2000
  run_leg burst-ours-raised "HybridJobs: hybridjob-controller --workers 16 --qps 1000 --burst 2000 + gang-scheduler (clientQPS/burst 5000)" \
    "$GS" --scheduler-name gang-scheduler --via-controller
  stop_binaries
fi
if leg 4; then
  start_ours burst-ours-default ""
  run_leg burst-ours-default "HybridJobs: hybridjob-controller + gang-scheduler, default flags" \
    "$GS" --scheduler-name gang-scheduler --via-controller
  stop_binaries
fi

if leg 5; then
  run_leg create-ceiling "pods created directly (16 writers), nothing binds them" 0 \
    --scheduler-name nobody --created-only
fi
if leg 6; then
  start_controller create-ours-raised --workers 16 --qps 1000 --burst 2000
  run_leg create-ours-raised "hybridjob-controller --workers 16 --qps 1000 --burst 2000 creating the pods" \
    "$CONTROLLER" --scheduler-name nobody --via-controller --created-only
  stop_binaries
fi
if leg 7; then
  start_controller create-ours-default
  run_leg create-ours-default "hybridjob-controller, default flags, creating the pods" \
    "$CONTROLLER" --scheduler-name nobody --via-controller --created-only
  stop_binaries
fi

echo "| run | bound | groups | creates/s | binds/s | gang p50 s | gang p99 s | scheduler CPU s | scheduler peak RSS |"
echo "|---|---|---|---|---|---|---|---|---|"
printf '%s' "$ROWS"
echo
if [ -n "$CREATE_ROWS" ]; then
  echo "Pods created, nothing binding them (from the first create until the watch saw the last pod):"
  echo
  echo "| run | pods created | seconds | pods created/s | process CPU s | process peak RSS |"
  echo "|---|---|---|---|---|---|"
  printf '%s' "$CREATE_ROWS"
  echo
fi
echo "CPU seconds used during each run (2 cores shared by all):"
echo
echo "| run | kube-apiserver | etcd | scheduler | hybridjob-controller |"
echo "|---|---|---|---|---|"
printf '%s' "$CPU_ROWS"
echo
if [ -n "$STATUS_WRITES" ]; then
  echo "HybridJob status writes (each status the harness's watch saw):"
  echo
  printf '%s' "$STATUS_WRITES"
  echo
fi
[ -z "$PROFILES" ] || printf '%s\n' "$PROFILES"
# The audit log's requests within each leg's window, by client, verb and resource
# (a watch counts once, when it starts).
if [ -n "${BURST_API_AUDIT:-}" ]; then
  python3 - "$BURST_API_AUDIT/audit.log" "$BURST_API_AUDIT/legs.tsv" <<'PY'
import collections, datetime, json, sys

def seconds(stamp):
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()

def client(agent):
    # e.g. "kube-controller-manager/v1.20.2 (linux/amd64) kubernetes/abc/generic-garbage-collector"
    program = agent.split("/", 1)[0]
    tail = agent.rsplit("/", 1)[-1] if ")" in agent else ""
    return program + ("/" + tail if tail and not tail.startswith(("v", "kubernetes")) else "")

legs = [line.rstrip("\n").split("\t") for line in open(sys.argv[2])]
counts = [collections.Counter() for _ in legs]
for line in open(sys.argv[1]):
    event = json.loads(line)
    verb = event.get("verb", "")
    if event.get("stage") != ("ResponseStarted" if verb == "watch" else "ResponseComplete"):
        continue
    at = seconds(event["requestReceivedTimestamp"])
    ref = event.get("objectRef", {})
    resource = ref.get("resource", event.get("requestURI", "").split("?")[0])
    if ref.get("subresource"):
        resource += "/" + ref["subresource"]
    for i, (start, end, _) in enumerate(legs):
        if float(start) <= at <= float(end):
            counts[i][(client(event.get("userAgent", "")), verb, resource)] += 1
for (start, end, label), count in zip(legs, counts):
    print(f"\nAPI requests during: {label} ({float(end) - float(start):.1f} s, audit log)\n")
    print("| client | verb | resource | requests |\n|---|---|---|---|")
    for (who, verb, resource), n in count.most_common():
        print(f"| {who} | {verb} | {resource} | {n} |")
PY
fi
# pods created/s is the fifth column of the create rows: the controller against
# the ceiling.
if leg 5 && { leg 6 || leg 7; }; then
  printf '%s' "$CREATE_ROWS" | awk -F'|' '
    NR == 1 { ceiling = $5 + 0; next }
    $2 ~ /default flags/ { standard = $5 + 0; next }
    { raised = $5 + 0 }
    END {
      if (ceiling > 0 && raised > 0)
        printf "Controller pod creates, raised limits / the ceiling: %.2f\n", raised / ceiling
      if (ceiling > 0 && standard > 0)
        printf "Controller pod creates, default flags / the ceiling: %.2f\n", standard / ceiling
    }'
fi
# binds/s is the fifth column: pods over the time from first create to last bind.
{ leg 1 && leg 2 && leg 3 && leg 4; } || exit 0
printf '%s' "$ROWS" | awk -F'|' '
  { rate[NR] = $6 + 0 }
  END {
    if (rate[1] > 0 && rate[3] > 0)
      printf "Ratio, raised limits (ours / kube-scheduler, binds per second): %.2f\n", rate[3] / rate[1]
    if (rate[2] > 0 && rate[4] > 0)
      printf "Ratio, default limits (ours / kube-scheduler): %.2f\n", rate[4] / rate[2]
  }'
