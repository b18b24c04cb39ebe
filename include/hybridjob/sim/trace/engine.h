// Trace replay in virtual time. Jobs arrive as the trace says; every batch of
// events at one instant (arrivals, completions, evicted members leaving) is
// followed by one scheduling cycle of the scheduler's own pure core
// (BuildGroups and PlanCycleWithPolicies over a Snapshot of simulated nodes),
// and the engine carries out what the cycle decides: placed members start
// working, evicted members leave after a grace period. A job runs once every
// role has its minimum; its work drains at a rate that grows with the GPUs it
// holds, so elastic growth and reclaim change when it finishes. Pure: no I/O.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/core/queues.h>
#include <hybridjob/sim/trace/inventory.h>
#include <hybridjob/sim/trace/trace.h>

namespace hybridjob::sim::trace {

// The policies a trace is replayed under (docs/trace-format.md).
enum class Policy : uint8_t {
  kPodGreedy,       // pods placed one by one (kube-scheduler); partial gangs hold GPUs
  kStaticGang,      // all-or-nothing at every role's maximum, one StrictFIFO queue
  kElasticGang,     // gang at the minimum, growth to the maximum when idle
  kElasticReclaim,  // plus queues with fair share, reclaim and starvation control
  // All-or-nothing at every role's maximum, later jobs backfilling past a
  // waiting one (what Volcano and kube-batch do by default). Listed after
  // static-gang.
  kGangBackfill,
  // Discretized least attained service (Tiresias): gangs at every role's
  // maximum, ranked by the GPU-seconds they have held (ReplayOptions::las_*);
  // a waiting gang of a less-served level preempts whole gangs of more-served
  // levels.
  kLas,
  // elastic-reclaim with every leaf queue ordered by AttainedService: within
  // a queue the least-served gang starts first, grows first and gives back
  // last (ReplayOptions::attained_service).
  kAttainedService,
};

std::string_view PolicyName(Policy policy);
Result<Policy> ParsePolicy(std::string_view name);
// pod-greedy, static-gang, gang-backfill, elastic-gang, elastic-reclaim, las,
// attained-service.
const std::vector<Policy>& AllPolicies();

// How fast a job drains its work with `gpus` of its `max_gpus`: in GPU-seconds
// per second, max_gpus * (gpus / max_gpus)^exponent. Exponent 1 is linear
// scaling (rate = gpus); below 1, every GPU added helps less.
double DrainRate(int64_t gpus, int64_t max_gpus, double exponent);

// The remaining work of one job over virtual time.
class JobWork {
 public:
  JobWork() = default;
  // A job that never loses work to a restart.
  JobWork(double work_gpu_seconds, int64_t max_gpus, double exponent);

  // `checkpoint_interval_seconds` of working time apart, the job saves a
  // checkpoint (0: it never loses work).
  JobWork(double work_gpu_seconds, int64_t max_gpus, double exponent,
          double checkpoint_interval_seconds);

  // Drains from the last update to `now` at the current rate; nothing drains
  // before the end of a pause.
  void AdvanceTo(double now);
  // Drains up to `now`, then works with `gpus` from `pause_until` on, without
  // losing work (a first start; 0 GPUs stops it, as at the finish).
  void Resize(double now, int64_t gpus, double pause_until);
  // Drains up to `now`, rolls back the work done since the last checkpoint
  // (the workers restart from it), then works with `gpus` from `pause_until`
  // on (0 GPUs: the job lost its gang). Returns the work lost, in
  // GPU-seconds of work.
  double Restart(double now, int64_t gpus, double pause_until);
  // Drains up to `now`, then at the rate divided by `factor` (>= 1): a gang
  // spread over domains all-reduces slower.
  void SetSlowdown(double now, double factor);

  double remaining() const { return remaining_; }
  int64_t gpus() const { return gpus_; }
  double pause_until() const { return pause_until_; }
  // Work done since the last checkpoint (what a restart now would lose).
  double since_checkpoint() const { return since_checkpoint_; }
  double rate() const;
  // When the work runs out at the current rate; +inf without GPUs.
  double FinishTime() const;

 private:
  double remaining_ = 0;
  int64_t max_gpus_ = 1;
  double exponent_ = 1.0;
  int64_t gpus_ = 0;
  double slowdown_ = 1.0;
  double last_update_ = 0;
  double pause_until_ = 0;
  double checkpoint_interval_ = 0;
  double since_checkpoint_ = 0;
  double next_checkpoint_ = 0;  // working time of the next checkpoint
};

struct ReplayOptions {
  Policy policy = Policy::kElasticReclaim;
  int64_t gpus = 64;  // cluster size: gpus / gpus_per_node nodes
  int32_t gpus_per_node = 8;
  // When set, the cluster is these nodes (with their CPU, memory and
  // labels) and gpus/gpus_per_node are not used.
  std::vector<InventoryNode> inventory;
  double speedup_exponent = 1.0;  // see DrainRate
  // The costs every policy pays alike. An evicted member leaves after the
  // eviction grace (its pod's termination grace period) and works until
  // then. Whenever a running job's size changes (members evicted or added)
  // or it loses its gang, its workers restart: the work done since its last
  // checkpoint (one every checkpoint_interval_seconds of working time; 0:
  // none is lost) is lost, and it makes no progress for
  // restart_delay_seconds once it has its gang again.
  double eviction_grace_seconds = 30;
  double restart_delay_seconds = 60;
  double checkpoint_interval_seconds = 1800;
  // elastic-reclaim: starvation.maxWaitSeconds.
  int64_t starvation_seconds = 600;
  // elastic-reclaim: reclaim.rebalance, reclaim.shareTolerance and
  // reclaim.minResizeIntervalSeconds (the scheduler's defaults).
  bool rebalance = true;
  double share_tolerance = 0.1;
  int64_t min_resize_interval_seconds = 30;
  // The queues (the `queues` of a scheduler configuration, parents included).
  // Empty: one top-level queue per trace queue, weight 1, no bounds. When set,
  // every job must name a leaf queue of it; elastic-reclaim schedules with
  // it, and every policy reports per queue along its tree. Namespace
  // restrictions are left out: a trace has no namespaces.
  std::vector<scheduler::QueueSpec> queues;
  // The scheduler configuration's topology.levels: jobs' topology is
  // planned against them (a job naming another level is refused).
  std::vector<std::string> topology_levels;
  // The level whose domains a gang's spread is measured in: the innermost
  // of topology_levels other than kubernetes.io/hostname when empty; no
  // level at all turns the measure and the slowdown off.
  std::string domain_level;
  // A running job whose members span more than one domain of the domain
  // level drains this many times slower (1: no cost).
  double cross_domain_slowdown = 1.0;
  // The node label naming a node's GPU model, matched by a job's gpu_model.
  std::string gpu_model_label = "nvidia.com/gpu.product";
  // las: a job's level is the number of thresholds its attained service (the
  // GPU-seconds it has held while running) has reached, at most las_levels-1;
  // the first threshold is las_first_threshold_gpu_hours, each next one
  // las_threshold_factor times the last. The defaults (1, 10 and 100
  // GPU-hours) sit between the synthetic traces' median jobs: about 1/3
  // GPU-hour at 1 GPU, 5 at 8 GPUs, 75 at 64 GPUs.
  int32_t las_levels = 4;
  double las_first_threshold_gpu_hours = 1;
  double las_threshold_factor = 10;
  // attained-service: the scheduler configuration's attainedService.
  scheduler::AttainedServiceSettings attained_service;
};

Status ValidateReplayOptions(const ReplayOptions& options);
// The level gangs' spread is measured in (see ReplayOptions::domain_level);
// empty when none.
std::string DomainLevel(const ReplayOptions& options);
// GPUs of the replayed cluster: the inventory's, else whole nodes of gpus.
int64_t ClusterGpus(const ReplayOptions& options);
// The las thresholds in GPU-seconds (las_levels - 1 of them, ascending).
std::vector<double> LasThresholds(const ReplayOptions& options);
// The las level of a job that has held `attained_gpu_seconds`: 0 (the least
// served, first in line) to las_levels - 1. A job within a millisecond of
// GPU time of a threshold has reached it.
int32_t LasLevel(double attained_gpu_seconds, const std::vector<double>& thresholds);

struct JobRecord {
  std::string id;
  std::string queue;
  int64_t min_gpus = 0;
  int64_t max_gpus = 0;
  double submit = 0;
  double start = -1;    // first time every role had its minimum; -1: never
  double finish = -1;   // -1: never
  int64_t resizes = 0;  // size changes while running
  int64_t evicted_members = 0;
  // Cycles that evicted members of the job; restarts from a checkpoint (a
  // resize while running, or a start after losing its gang).
  int64_t preemptions = 0;
  int64_t restarts = 0;
  // Work rolled back to a checkpoint plus GPUs held through restart delays,
  // in GPU-seconds.
  double lost_gpu_seconds = 0;
  // Submitted, unfinished and not running (queued, or off the cluster after
  // losing its gang), until it finished or the replay ended.
  double not_running_seconds = 0;
  // Its JCT alone on the cluster at its maximum from submit, with no cost:
  // no policy can do better for it.
  double alone_jct_seconds = 0;
  double gpu_seconds_held = 0;     // while running
  double partial_gpu_seconds = 0;  // held while below a role's minimum
  double mean_gpus_running = 0;    // time-weighted while running
  // When it started: its members, and the domains of the domain level they
  // spanned (0 without a domain level; a node without the label is a domain
  // of its own).
  int32_t start_members = 0;
  int32_t start_domains = 0;

  bool finished() const { return finish >= 0; }
};

// One queue of the replay's queue tree, with its whole subtree's jobs: a
// parent's numbers add up its children's.
struct QueueRecord {
  std::string name;
  std::string parent;  // empty for a top-level queue
  bool leaf = true;
  int32_t depth = 0;  // 0 for a top-level queue
  int64_t jobs = 0;
  int64_t started = 0;
  int64_t finished = 0;
  double wait_seconds = 0;         // summed over jobs: JobRecord::not_running_seconds
  double first_wait_seconds = 0;   // summed over started jobs: start - submit
  double jct_seconds = 0;          // summed over finished jobs: finish - submit
  double gpu_seconds_held = 0;     // while running
  double partial_gpu_seconds = 0;  // held while below a role's minimum
  int64_t evicted_members = 0;
  double lost_gpu_seconds = 0;
  // While the queue has work waiting (a job waiting to start, or one that
  // could grow): how long, and |GPUs held - fair share in GPUs| over that
  // time. The fair share is the queue tree's (fair_targets.h) for what every
  // queue holds and asks for, whatever the policy.
  double seconds_with_work_waiting = 0;
  double share_distance_gpu_seconds = 0;
  // The time-averaged distance, in GPUs; 0 when no work ever waited.
  double ShareDistanceGpus() const {
    return seconds_with_work_waiting > 0 ? share_distance_gpu_seconds / seconds_with_work_waiting
                                         : 0;
  }
};

// The cluster after a cycle, until the next event.
struct TimelinePoint {
  double time = 0;
  int64_t busy_gpus = 0;     // held by jobs that run
  int64_t partial_gpus = 0;  // held by jobs below a role's minimum
  int64_t waiting_jobs = 0;  // submitted, not running, not finished
  int64_t running_jobs = 0;
};

struct ReplayResult {
  Policy policy = Policy::kElasticReclaim;
  int64_t cluster_gpus = 0;
  std::vector<JobRecord> jobs;  // in trace order
  // Every queue of the tree, each parent before its children, siblings by
  // name; the implicit `default` queue only when a job names it.
  std::vector<QueueRecord> queues;
  std::vector<TimelinePoint> timeline;
  double end_time = 0;  // the last event
  double busy_gpu_seconds = 0;
  double partial_gpu_seconds = 0;
  // While at least one job waits: how long, and the busy GPU-seconds then.
  double waiting_seconds = 0;
  double busy_gpu_seconds_while_waiting = 0;
  // While at least one job waits: the GPUs free on nodes where some GPU is
  // held (by any member pod, running or not), over time. Capacity a waiting
  // gang could not use because it is scattered over partly used nodes.
  double fragmented_gpu_seconds = 0;
  int64_t cycles = 0;
  int64_t decisions = 0;  // group decisions returned by the cycles
  int64_t evictions = 0;
  double planning_wall_seconds = 0;  // wall clock spent in the scheduler's core
  // Jobs left waiting when no event remained (e.g. deadlocked partial gangs).
  int64_t stuck_jobs = 0;
};

// Replays `jobs` (validated, sorted by submit time, unique ids).
Result<ReplayResult> Replay(const std::vector<TraceJob>& jobs, const ReplayOptions& options);

}  // namespace hybridjob::sim::trace
