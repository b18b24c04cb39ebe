#!/usr/bin/env bash
# `make bench`: every benchmark, in one run on this machine, written into
# docs/benchmarks.md (between the generated-section markers) and printed.
#
#   hack/bench.sh [BUILD_DIR]
# Environment: BENCH_PODS (10000), BENCH_NODES (1000), BENCH_GROUP (10),
# BENCH_CONCURRENCY (16), BENCH_INFORMER_PODS (5000), BENCH_JOBS (1000; 0 skips the controller),
# BENCH_ROUNDS (4: rounds of the scheduling legs, their order alternating),
# BURST_JOBS (500; 0 skips the burst, see hack/bench-burst.sh), BENCH_PARTS (which parts
# run: "planner cache informer scheduling controller burst", all by default; a run of some
# parts prints its report and leaves docs/benchmarks.md alone).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="$(cd "${1:-$ROOT/build}" && pwd)"
BIN="$BUILD_DIR/bin"
PODS="${BENCH_PODS:-10000}"
NODES="${BENCH_NODES:-1000}"
GROUP="${BENCH_GROUP:-10}"
CONCURRENCY="${BENCH_CONCURRENCY:-16}"
INFORMER_PODS="${BENCH_INFORMER_PODS:-5000}"
JOBS="${BENCH_JOBS:-1000}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/hybridjob-bench.XXXXXX")"
OUT="$WORK/report.md"
PARTS=" ${BENCH_PARTS:-planner cache informer scheduling controller burst} "
part() { [[ "$PARTS" == *" $1 "* ]]; }
CLUSTER=""
PIDS=()

log() { echo "bench: $*" >&2; }

stop_all() {
  local pid
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  PIDS=()
  if [ -n "$CLUSTER" ]; then
    "$ROOT/hack/local-cluster.sh" down --dir "$CLUSTER" >/dev/null 2>&1 || true
    CLUSTER=""
  fi
}
trap 'stop_all; rm -rf "$WORK"' EXIT

fresh_cluster() {
  stop_all
  CLUSTER="$WORK/cluster-$1"
  eval "$("$ROOT/hack/local-cluster.sh" up --dir "$CLUSTER")"
  KUBECTL="$(cat "$CLUSTER/k8s-bin-dir")/kubectl"
  # The gang scheduler trusts a member only through its HybridJob.
  "$KUBECTL" apply -f "$ROOT/crds/" >/dev/null
  "$KUBECTL" wait --for=condition=Established crd/hybridjobs.batch.hybridjob.io --timeout=60s >/dev/null
}

# Registers the simulated nodes, then stops the simulator but keeps them: the
# scheduling runs measure binding alone, with no kubelet traffic.
register_nodes() {
  "$BIN/hybridjob-sim" --nodes "$NODES" --gpus-per-node 16 --cpu 128 --memory 1Ti --keep-nodes \
    --workers 32 --qps 0 >"$WORK/sim-$1.log" 2>&1 &
  local sim=$!
  until [ "$("$KUBECTL" get nodes --no-headers 2>/dev/null | wc -l)" -ge "$NODES" ]; do sleep 1; done
  sleep 1
  kill -TERM "$sim"
  wait "$sim" 2>/dev/null || true
}

{
  echo "Machine: $(nproc) cores ($(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -n1)), $(free -g | awk '/Mem:/ {print $2}') GiB RAM; $(date -u +%Y-%m-%d)."
  echo
  echo "Command: \`make bench\` (BENCH_PODS=$PODS BENCH_NODES=$NODES BENCH_GROUP=$GROUP BENCH_CONCURRENCY=$CONCURRENCY)."
  echo
} >"$OUT"

part planner && log "planner micro-benchmarks" && {
  echo "### Gang planner, in memory (\`build/bin/bench_scheduler_planner\`)"
  echo
  echo '```'
  "$BIN/bench_scheduler_planner" --benchmark_min_time=0.5 2>/dev/null | grep -vE '^\*\*\*|^-+$' || true
  echo '```'
  echo
} >>"$OUT"

part cache && log "scheduler cache memory" && {
  echo "### Scheduler cache memory (\`build/bin/bench_scheduler_cache_memory\`, target <= 200 MiB)"
  echo
  "$BIN/bench_scheduler_cache_memory" || echo "(failed)"
  echo
} >>"$OUT"

part informer && log "informer throughput and memory ($INFORMER_PODS pods)" && fresh_cluster informer && {
  echo "### Informer (\`build/bin/bench_k8s_informer --pods $INFORMER_PODS\`)"
  echo
  "$BIN/bench_k8s_informer" --kubeconfig "$CLUSTER/kubeconfig" --pods "$INFORMER_PODS" || echo "(failed)"
  echo
} >>"$OUT"

SCHED_HEADER="| scheduler | bound | groups | creates/s | binds/s | gang p50 s | gang p99 s | CPU s | peak RSS |
|---|---|---|---|---|---|---|---|---|"
ROWS=""

# One leg of the scheduling part: a fresh cluster, the nodes, then one scheduler
# (or none: the harness binds) over BENCH_PODS pods. Writes its table row to
# $WORK/row-LEG (runs in this shell, so that the exit trap stops what it starts).
scheduling_leg() {
  local leg="$1" round="$2" name label
  local extra=()
  fresh_cluster "$leg-$round"
  register_nodes "$leg-$round"
  log "round $round: $leg"
  case "$leg" in
    ceiling)
      name=nobody label="raw bind ceiling (harness binds)"
      extra=(--bind-self)
      ;;
    kube-scheduler)
      name=default-scheduler label="kube-scheduler v1.20.2 (no groups)"
      cat >"$WORK/kube-scheduler.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1beta1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: $CLUSTER/kubeconfig
  qps: 5000
  burst: 5000
leaderElection:
  leaderElect: false
YAML
      "$(cat "$CLUSTER/k8s-bin-dir")/kube-scheduler" --config "$WORK/kube-scheduler.yaml" --port 0 \
        --secure-port 0 >"$WORK/kube-scheduler-$round.log" 2>&1 &
      PIDS+=("$!")
      extra=(--scheduler-pid "$!")
      ;;
    gang-scheduler)
      name=gang-scheduler label="gang-scheduler (groups of $GROUP)"
      cat >"$WORK/gang-scheduler.yaml" <<YAML
clientQPS: 5000
clientBurst: 5000
bindConcurrency: $CONCURRENCY
metricsAddr: "0"
healthAddr: "0"
YAML
      "$BIN/gang-scheduler" --kubeconfig "$CLUSTER/kubeconfig" --config "$WORK/gang-scheduler.yaml" \
        --log-level warn >"$WORK/gang-scheduler-$round.log" 2>&1 &
      PIDS+=("$!")
      extra=(--scheduler-pid "$!")
      ;;
  esac
  [ "$leg" = ceiling ] || sleep 2  # the scheduler's informers sync first
  "$BIN/bench_scheduling" --kubeconfig "$CLUSTER/kubeconfig" --scheduler-name "$name" \
    --label "$label" "${extra[@]}" --pods "$PODS" --group-size "$GROUP" \
    --concurrency "$CONCURRENCY" >"$WORK/row-$leg" || true
  stop_all
}

# The binds/s column of a bench_scheduling row ("" if the row is missing).
binds_per_second() { awk -F'|' 'NF > 6 { gsub(/ /, "", $6); print $6 }' <<<"$1"; }

if part scheduling; then
# The machine's speed drifts by a third within an hour, more than the ratio
# measured, so the legs run in rounds, alternating their order (ceiling first,
# then gang-scheduler first): each round's ratio compares legs run minutes
# apart, and the median over rounds is the figure.
ROUNDS="${BENCH_ROUNDS:-4}"
RATIOS=()
SUMMARY=""
for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) -eq 1 ]; then
    order=(ceiling kube-scheduler gang-scheduler)
  else
    order=(gang-scheduler kube-scheduler ceiling)
  fi
  declare -A row=()
  for leg in "${order[@]}"; do
    scheduling_leg "$leg" "$round"
    row[$leg]="$(cat "$WORK/row-$leg")"
  done
  for leg in ceiling kube-scheduler gang-scheduler; do
    [ -n "${row[$leg]}" ] && ROWS+="${row[$leg]/#| /| round $round: }"$'\n'
  done
  ceiling_rate="$(binds_per_second "${row[ceiling]}")"
  gang_rate="$(binds_per_second "${row[gang-scheduler]}")"
  ks_rate="$(binds_per_second "${row[kube-scheduler]}")"
  ratio="$(awk -v g="$gang_rate" -v c="$ceiling_rate" 'BEGIN { if (c > 0 && g != "") printf "%.0f", 100 * g / c }')"
  [ -n "$ratio" ] && RATIOS+=("$ratio")
  SUMMARY+="| $round | ${order[*]} | ${ceiling_rate:-?} | ${ks_rate:-?} | ${gang_rate:-?} | ${ratio:-?} % |"$'\n'
  unset row
done
MEDIAN="$(printf '%s\n' "${RATIOS[@]}" | sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "?"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.0f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')"

{
  echo "### Scheduling on the real API server: $PODS pods in groups of $GROUP on $NODES simulated nodes (\`build/bin/bench_scheduling\`, $ROUNDS rounds)"
  echo
  echo "$SCHED_HEADER"
  printf '%s' "$ROWS"
  echo
  echo "| round | legs in order | ceiling binds/s | kube-scheduler binds/s | gang-scheduler binds/s | gang / ceiling |"
  echo "|---|---|---|---|---|---|"
  printf '%s' "$SUMMARY"
  echo
  echo "gang-scheduler against the raw bind ceiling of the same round, median of $ROUNDS rounds: **$MEDIAN %**."
  echo
  echo "binds/s counts from the first pod created to the last bound, so it cannot exceed the"
  echo "creation rate; gang latency runs from a group's first member created to its last bound."
  echo "Each leg has a fresh cluster; rounds alternate the order of the legs, since the machine's"
  echo "speed drifts between legs run minutes apart."
  echo
} >>"$OUT"
fi

if part controller && [ -x "$BIN/bench_controller" ] && [ "$JOBS" -gt 0 ]; then
  log "controller ($JOBS jobs x 10 members)"
  fresh_cluster controller
  {
    echo "### Controller (\`build/bin/bench_controller --jobs $JOBS\`)"
    echo
    "$BIN/bench_controller" --kubeconfig "$CLUSTER/kubeconfig" --jobs "$JOBS" || echo "(failed)"
    echo
  } >>"$OUT"
  stop_all
fi

if part burst && [ "${BURST_JOBS:-500}" -gt 0 ]; then
  log "end to end under a burst (hack/bench-burst.sh)"
  stop_all
  {
    echo "### End to end under a burst, side by side with kube-scheduler (\`hack/bench-burst.sh\`)"
    echo
    "$ROOT/hack/bench-burst.sh" "$BUILD_DIR" || echo "(failed)"
    echo
  } >>"$OUT"
fi

cat "$OUT"
[ -z "${BENCH_PARTS:-}" ] || exit 0
DOC="$ROOT/docs/benchmarks.md"
BEGIN="<!-- BEGIN generated by make bench -->"
END="<!-- END generated by make bench -->"
if [ ! -f "$DOC" ]; then
  printf '# Benchmarks\n\n%s\n%s\n' "$BEGIN" "$END" >"$DOC"
fi
if ! grep -qF "$BEGIN" "$DOC"; then
  printf '\n## Latest `make bench`\n\n%s\n%s\n' "$BEGIN" "$END" >>"$DOC"
fi
python3 - "$DOC" "$OUT" "$BEGIN" "$END" <<'PY'
import sys
doc, out, begin, end = sys.argv[1:]
text = open(doc).read()
report = open(out).read()
head, rest = text.split(begin, 1)
_, tail = rest.split(end, 1)
open(doc, "w").write(head + begin + "\n" + report + end + tail)
PY
log "written to docs/benchmarks.md"
