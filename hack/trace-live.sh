#!/usr/bin/env bash
# Live-versus-replay fidelity: one synthetic trace replayed twice with the same
# policy and the same scheduler configuration.
#
#  - In virtual time, by `hybridjob-sim trace` (the scheduler's core in the
#    engine).
#  - Live: a local control plane, hybridjob-sim's simulated nodes, the real
#    gang-scheduler and hybridjob-controller; each job applied with kubectl at
#    its submit time divided by --compress, its members running the trace's
#    duration divided by --compress.
#
# Jobs are rigid (min = max): a simulated member runs for a fixed time
# whatever its gang's size, so an elastic job's speed-up has nothing to show
# live. The scheduler configuration's times (starvation wait, promotion, the
# attained-service thresholds) are divided by --compress for the live run.
#
# Writes DIR/replay/ (the replay's reports and trace.csv), DIR/live-jobs.csv
# and DIR/fidelity.csv, prints the comparison, and exits 1 when the average
# JCT or a queue's GPU-hours differ by more than --tolerance.
#
# usage: hack/trace-live.sh [--jobs 60] [--seed 3] [--gpus 16] [--gpus-per-node 4]
#          [--compress 60] [--policy attained-service] [--tolerance 0.15] [--out DIR]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
BIN="$BUILD_DIR/bin"
JOBS=60
SEED=3
GPUS=16
GPUS_PER_NODE=4
COMPRESS=60
POLICY=attained-service
TOLERANCE=0.15
OUT="$ROOT/trace-live-results"
MEDIAN_DURATION=900
MIN_DURATION=600
MAX_DURATION=5400
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) JOBS="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --gpus) GPUS="$2"; shift 2 ;;
    --gpus-per-node) GPUS_PER_NODE="$2"; shift 2 ;;
    --compress) COMPRESS="$2"; shift 2 ;;
    --policy) POLICY="$2"; shift 2 ;;
    --tolerance) TOLERANCE="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "trace-live: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$POLICY" in
  attained-service) ORDER=AttainedService ;;
  elastic-reclaim) ORDER=BestEffortFIFO ;;
  *) echo "trace-live: --policy must be attained-service or elastic-reclaim" >&2; exit 2 ;;
esac
for binary in hybridjob-sim gang-scheduler hybridjob-controller; do
  [ -x "$BIN/$binary" ] || { echo "trace-live: $BIN/$binary missing: make build first" >&2; exit 2; }
done
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/hybridjob-trace-live.XXXXXX")"
PIDS=()
START=$SECONDS
say() { printf '[%4ds] %s\n' "$((SECONDS - START))" "$*"; }

cleanup() {
  trap - EXIT INT TERM HUP
  set +e
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
  "$ROOT/hack/local-cluster.sh" down --dir "$WORK/cluster" >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# The same configuration twice: in trace seconds for the replay, divided by
# the compression for the live run.
write_config() {
  local divide="$1" file="$2"
  python3 - "$divide" "$ORDER" >"$file" <<'EOF'
import sys
divide, order = float(sys.argv[1]), sys.argv[2]
print("gangBackoffSeconds: 1")
print("queues:")
for queue in ("team-a", "team-b"):
    print(f"  - name: {queue}\n    order: {order}")
print("starvation:")
print(f"  maxWaitSeconds: {max(1, round(600 / divide))}")
print("reclaim:")
print(f"  minResizeIntervalSeconds: {round(30 / divide)}")
print("attainedService:")
print(f"  firstThresholdGpuHours: {1 / divide}")
print(f"  promoteAfterSeconds: {max(1, round(3600 / divide))}")
EOF
}
write_config 1 "$OUT/replay-config.yaml"
write_config "$COMPRESS" "$OUT/live-config.yaml"

say "replaying $JOBS jobs (seed $SEED) on $GPUS GPUs in virtual time under $POLICY"
"$BIN/hybridjob-sim" trace --synthetic --jobs "$JOBS" --seed "$SEED" --gpus "$GPUS" \
  --gpus-per-node "$GPUS_PER_NODE" --queues 2 --elastic-fraction 0 \
  --median-duration "$MEDIAN_DURATION" --min-duration "$MIN_DURATION" \
  --max-duration "$MAX_DURATION" \
  --scheduler-config "$OUT/replay-config.yaml" --policy "$POLICY" --out "$OUT/replay" >/dev/null

say "starting a local control plane, $((GPUS / GPUS_PER_NODE)) simulated nodes and both binaries"
eval "$("$ROOT/hack/local-cluster.sh" up --dir "$WORK/cluster")"
KUBECTL="$(cat "$WORK/cluster/k8s-bin-dir")/kubectl"
"$KUBECTL" apply -f "$ROOT/crds/" >/dev/null
"$KUBECTL" wait --for condition=established --timeout=60s crd/hybridjobs.batch.hybridjob.io >/dev/null
"$BIN/hybridjob-sim" --nodes "$((GPUS / GPUS_PER_NODE))" --gpus-per-node "$GPUS_PER_NODE" \
  --cpu 64 --memory 512Gi >"$OUT/hybridjob-sim.log" 2>&1 &
PIDS+=($!)
"$BIN/gang-scheduler" --config "$OUT/live-config.yaml" --metrics-addr 0 --health-addr 0 \
  >"$OUT/gang-scheduler.log" 2>&1 &
PIDS+=($!)
"$BIN/hybridjob-controller" --metrics-addr 0 --health-addr 0 >"$OUT/hybridjob-controller.log" 2>&1 &
PIDS+=($!)
until [ "$("$KUBECTL" get nodes --no-headers 2>/dev/null | grep -c ' Ready')" -eq "$((GPUS / GPUS_PER_NODE))" ]; do
  sleep 0.5
done

say "applying each job at its submit time / $COMPRESS"
# Jobs are applied by argument lists, never through a shell; the submitter
# waits for every job to end (or for a bound on the whole run).
python3 - "$KUBECTL" "$OUT/replay/trace.csv" "$COMPRESS" "$OUT/live-jobs.csv" <<'EOF'
import csv, json, subprocess, sys, time

kubectl, trace_path, compress, out_path = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
jobs = list(csv.DictReader(open(trace_path)))

def manifest(job):
    roles = []
    for text in job["roles"].split(";"):
        name, low, high, gpus = text.split(":")
        roles.append((name, int(low), int(high), int(gpus)))
    max_gpus = sum(high * gpus for _, _, high, gpus in roles)
    seconds = float(job["work_gpu_s"]) / max(1, max_gpus) / compress
    lines = ["apiVersion: batch.hybridjob.io/v1alpha1", "kind: HybridJob",
             f"metadata:\n  name: {job['id']}",
             f"spec:\n  framework: pytorch\n  queue: {job['queue']}\n  replicaSpecs:"]
    for name, low, high, gpus in roles:
        lines.append(f"    - name: {name}\n      minReplicas: {low}\n      maxReplicas: {high}\n"
                     f"      restartPolicy: OnFailure\n      template:\n        metadata:\n"
                     f"          annotations:\n            sim.hybridjob.io/duration: \"{seconds:.3f}s\"\n"
                     f"        spec:\n          containers:\n            - name: main\n"
                     f"              image: trainer:latest\n              resources:\n"
                     f"                limits:\n                  nvidia.com/gpu: {gpus}")
    return "\n".join(lines) + "\n", max_gpus

start = time.time()
gpus_of = {}
for job in jobs:
    due = start + float(job["submit_s"]) / compress
    time.sleep(max(0.0, due - time.time()))
    text, gpus_of[job["id"]] = manifest(job)
    subprocess.run([kubectl, "apply", "-f", "-"], input=text.encode(), check=True,
                   stdout=subprocess.DEVNULL)

deadline = time.time() + 3600
while True:
    listed = json.loads(subprocess.run([kubectl, "get", "hybridjobs", "-o", "json"],
                                       check=True, capture_output=True).stdout)
    done = [j for j in listed["items"] if j.get("status", {}).get("phase") in ("Succeeded", "Failed")]
    if len(done) == len(jobs) or time.time() > deadline:
        break
    time.sleep(2)

def seconds(stamp):
    return time.mktime(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")) if stamp else None

def scheduled(status):
    # When its gang was placed: the Scheduled condition's transition to True.
    for condition in status.get("conditions", []):
        if condition.get("type") == "Scheduled" and condition.get("status") == "True":
            return condition.get("lastTransitionTime")
    return None

with open(out_path, "w") as out:
    out.write("job,queue,gpus,phase,created,started,completed\n")
    for job in listed["items"]:
        meta, status = job["metadata"], job.get("status", {})
        out.write(",".join(str(x) for x in (
            meta["name"], job["spec"].get("queue", ""), gpus_of.get(meta["name"], 0),
            status.get("phase", ""), seconds(meta.get("creationTimestamp")),
            seconds(scheduled(status)), seconds(status.get("completionTime")))) + "\n")
EOF

say "comparing"
python3 - "$OUT" "$POLICY" "$COMPRESS" "$TOLERANCE" <<'EOF'
import csv, sys
out, policy, compress, tolerance = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
replay = [r for r in csv.DictReader(open(f"{out}/replay/jobs.csv")) if r["policy"] == policy]
live = list(csv.DictReader(open(f"{out}/live-jobs.csv")))
unfinished = [r["job"] for r in live if r["phase"] != "Succeeded"]
if unfinished:
    print(f"live: {len(unfinished)} jobs did not succeed: {' '.join(unfinished[:5])}")
    sys.exit(1)
replay_jct = sum(float(r["jct_s"]) for r in replay) / len(replay)
live_jct = sum((float(r["completed"]) - float(r["created"])) * compress for r in live) / len(live)
rows = [("avg_jct_s", replay_jct, live_jct)]
queues = sorted({r["queue"] for r in replay})
replay_queues = {r["queue"]: float(r["gpu_hours"]) for r in csv.DictReader(open(f"{out}/replay/queues.csv"))
                 if r["policy"] == policy}
for queue in queues:
    held = sum(int(r["gpus"]) * (float(r["completed"]) - float(r["started"])) * compress / 3600
               for r in live if r["queue"] == queue)
    rows.append((f"gpu_hours:{queue}", replay_queues[queue], held))
worst = 0.0
with open(f"{out}/fidelity.csv", "w") as f:
    f.write("measure,replay,live,live_over_replay\n")
    for name, a, b in rows:
        ratio = b / a if a else float("nan")
        worst = max(worst, abs(ratio - 1))
        f.write(f"{name},{a:.1f},{b:.1f},{ratio:.3f}\n")
        print(f"{name:24s} replay {a:10.1f}   live {b:10.1f}   live/replay {ratio:.3f}")
print(f"largest difference {worst:.1%} (tolerance {tolerance:.0%})")
sys.exit(0 if worst <= tolerance else 1)
EOF
