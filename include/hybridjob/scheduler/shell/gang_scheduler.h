// gang-scheduler's shell around the pure core (policy_cycle.h), which makes
// every decision; this applies them.
//
// Threads and queues:
//
//   reflectors (nodes, pods, HybridJobs, namespaces, PriorityClasses,
//               claims, volumes, StorageClasses)
//        | parse, queue deltas                        DeltaFeed
//        v
//   loop: takes every delta and bind outcome, applies them to the cache it
//         owns, plans a cycle with no lock held, assumes what it placed
//        | placed gangs           | evictions (inline)   | waiting reasons
//        v                        v                      v
//   GangBinder workers        Evictor               PodStatusReporter workers
//   (bind, roll back)         (conditions, then     (keyed, coalesced,
//        | outcomes            the Eviction API)     retried pod conditions)
//        +--> back to the loop through the feed's wake-up
//
// A placed gang with unbound claims goes to the ClaimWriter first (pre-bind
// volumes, select nodes for provisioning); the loop keeps it until its cache
// shows every claim Bound, then hands it to the binder, or gives it up.
//
// Only the feed, the bind queue, the reporter's queue and the figures the
// loop publishes for metrics are shared between threads.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/event_recorder.h>
#include <hybridjob/k8s/reflector.h>
#include <hybridjob/scheduler/core/cluster_totals.h>
#include <hybridjob/scheduler/core/fair_share.h>
#include <hybridjob/scheduler/core/policy_cycle.h>
#include <hybridjob/scheduler/shell/binder.h>
#include <hybridjob/scheduler/shell/cache.h>
#include <hybridjob/scheduler/shell/claim_writer.h>
#include <hybridjob/scheduler/shell/config.h>
#include <hybridjob/scheduler/shell/dashboard.h>
#include <hybridjob/scheduler/shell/delta_feed.h>
#include <hybridjob/scheduler/shell/evictor.h>
#include <hybridjob/scheduler/shell/service_writer.h>
#include <hybridjob/scheduler/shell/shell.h>
#include <hybridjob/scheduler/shell/status_reporter.h>

namespace hybridjob::scheduler {

struct DecisionCopy;  // a cycle's decision for one group, as the loop keeps it

// A queue as the last cycle left it, with the evictions made for and from it.
struct QueueReport {
  QueueStatus status;
  // Age of the queue's oldest group waiting to start (0 when none waits).
  double oldest_waiting_seconds = 0;
  uint64_t reclaimed_pods = 0;  // members evicted from the queue by reclaim, ever
  uint64_t preempted_pods = 0;  // members evicted from the queue by preemption, ever
};

class GangScheduler {
 public:
  GangScheduler(k8s::ApiClient& client, SchedulerConfig config, BindFunction bind = nullptr);
  ~GangScheduler();
  GangScheduler(const GangScheduler&) = delete;
  GangScheduler& operator=(const GangScheduler&) = delete;

  // Events go through `client` when set (before Start): a client of their
  // own, with its own rate limit, as kube-scheduler's, so that a burst of
  // Scheduled Events (one per pod bound) never holds back a bind. Without
  // one, through the scheduler's client.
  void SetEventClient(k8s::ApiClient& client) { event_client_ = &client; }
  // Before Start(): a pending member is placed only with
  // hybridjob-controller's signature by one of these keys.
  void SetMemberKeys(api::MemberKeys keys) { cache_.SetMemberKeys(std::move(keys)); }

  // Starts the reflectors (always), the loop, the binder and the reporter.
  void Start();
  // Scheduling runs only while active (the leader); the cache stays warm.
  void SetActive(bool active);
  void Stop();

  bool WaitForCacheSync(std::chrono::milliseconds timeout);
  const SchedulerStats& stats() const { return stats_; }
  // This scheduler's pods not yet bound, as the loop last saw them.
  size_t PendingPods() const;
  // Events dropped because too many were waiting to be written (after Start).
  uint64_t EventsDropped() const { return events_ ? events_->dropped() : 0; }
  void SetGangLatencyObserver(GangLatencyObserver observer);
  // resource -> (allocatable on schedulable nodes, requested by pods on them):
  // cpu in cores, memory in bytes, and every configured GPU resource; as the
  // loop left them after its last pass (placements it assumed included).
  std::map<std::string, std::pair<double, double>> ResourceTotals() const;
  // Per queue, sorted by name: configured queues and those named by pods.
  std::vector<QueueReport> QueueReports() const;
  // The dashboard's state: published by the loop, at most once a second,
  // once EnableDashboard was called (before Start); null until the first.
  void EnableDashboard() { dashboard_enabled_ = true; }
  std::shared_ptr<const DashboardState> Dashboard() const;
  const GpuResources& gpu_resources() const { return config_.gpu_resources; }

  // Takes the parts of a changed configuration file that apply without a
  // restart: queues, reclaim, preemption, starvation, scoring, node sampling
  // and the cycle interval. Returns which other changed fields still need a
  // restart (empty when none).
  std::vector<std::string> Reconfigure(const SchedulerConfig& config);

 private:
  void Loop();
  // Applies what the informers and the binder reported, waiting for it until
  // `deadline`; whether a plan may have changed.
  bool TakeInbox(std::chrono::steady_clock::time_point deadline);
  void ApplyBindOutcome(BindOutcome outcome);
  // Placed gangs waiting for their claims: bound now, given up, or waiting on.
  // Whether any was given up (its members are pending again).
  bool AdvanceVolumeWaits();
  void PublishCacheFigures();
  void PublishDashboard();
  void RunOneCycle();
  // The attained service jobs' status holds, for groups whose ledger record
  // has less or is missing (after a restart or failover).
  void SeedServiceFromJobs(const std::vector<const PodInfo*>& pending, Timestamp now);
  // The GangWaiting condition to write on a waiting gang's carrier, when
  // StandingNeedsWrite says so (recorded as written); a Warning Event on
  // entering NeverFits.
  std::optional<PodConditionWrite> NextStanding(const DecisionCopy& decision);
  // The gang no longer waits: its carrier's GangWaiting condition goes False.
  void ClearStanding(const std::string& key);

  k8s::ApiClient& client_;
  k8s::ApiClient* event_client_ = nullptr;  // SetEventClient
  const SchedulerConfig config_;  // as started; Reconfigure changes the copies below
  BindFunction bind_;
  DeltaFeed feed_;
  SchedulerStats stats_;
  std::unique_ptr<k8s::EventRecorder> events_;
  std::unique_ptr<PodStatusReporter> reporter_;
  std::unique_ptr<ServiceWriter> service_writer_;
  std::unique_ptr<GangBinder> binder_;
  std::unique_ptr<ClaimWriter> claim_writer_;
  std::unique_ptr<Evictor> evictor_;
  std::unique_ptr<k8s::Reflector> node_reflector_;
  std::unique_ptr<k8s::Reflector> pod_reflector_;
  // HybridJobs, namespaces, PriorityClasses; claims, volumes, StorageClasses.
  std::vector<std::unique_ptr<k8s::Reflector>> lookup_reflectors_;
  std::vector<std::thread> reflector_threads_;
  std::thread loop_thread_;

  mutable Mutex mu_;
  bool stopping_ HJ_GUARDED_BY(mu_) = false;
  bool active_ HJ_GUARDED_BY(mu_) = false;
  // What Reconfigure may change; read by the loop at the start of each cycle.
  PlannerConfig planner_config_ HJ_GUARDED_BY(mu_);
  PolicyConfig policy_config_ HJ_GUARDED_BY(mu_);
  std::chrono::seconds cycle_interval_ HJ_GUARDED_BY(mu_){5};
  std::chrono::seconds volume_bind_timeout_ HJ_GUARDED_BY(mu_){600};
  // A reconfiguration or a new leader: plan now.
  bool cycle_requested_ HJ_GUARDED_BY(mu_) = false;
  std::vector<BindOutcome> bind_outcomes_ HJ_GUARDED_BY(mu_);         // binder -> loop
  std::vector<ClaimWriteOutcome> claim_outcomes_ HJ_GUARDED_BY(mu_);  // claim writer -> loop
  // Until Start hands it to the binder.
  GangLatencyObserver latency_observer_ HJ_GUARDED_BY(mu_);
  // Published by the loop.
  std::vector<QueueReport> queue_reports_ HJ_GUARDED_BY(mu_);
  bool synced_ HJ_GUARDED_BY(mu_) = false;
  size_t pending_pods_ HJ_GUARDED_BY(mu_) = 0;
  std::map<std::string, std::pair<double, double>> resource_totals_ HJ_GUARDED_BY(mu_);
  std::shared_ptr<const DashboardState> dashboard_ HJ_GUARDED_BY(mu_);

  // Loop thread only.
  SchedulerCache cache_;
  // Pods left out of a gang's placement, marked GangSurplus once it is bound
  // (their controller deletes them): a later cycle does not report them as
  // waiting to grow, which would overwrite the mark.
  std::unordered_set<std::string> surplus_;
  std::unordered_map<std::string, RollbackHold> rolling_back_;  // by group key
  // A placed gang whose claims the PV controller must bind first.
  struct VolumeWait {
    GangBind gang;
    std::vector<ClaimDecision> decisions;  // written and assumed for this plan
    std::vector<ClaimDecision> awaited;    // those, and the members' other unbound claims
    std::chrono::steady_clock::time_point deadline;
    bool written = false;  // the claim writer is done
    Status write_error;    // what it could not write
  };
  std::unordered_map<std::string, VolumeWait> volume_waits_;  // by group key
  uint32_t next_start_slot_ = 0;
  PolicyState policy_state_;
  // Attained service last written to each job's status (by group key).
  std::unordered_map<std::string, ServiceWritten> service_written_;
  bool service_seeded_ = false;  // every job's persisted service read once
  QueueUsageMemo queue_usage_;                             // per node, from one cycle to the next
  ResourceTotalsMemo resource_totals_memo_;                // PublishCacheFigures's, likewise
  std::unordered_map<std::string, std::string> reported_;  // group key -> last reason said
  std::unordered_map<std::string, StandingWritten> standings_;  // by group key
  bool dashboard_enabled_ = false;                              // set before Start
  // What the last cycle said of the groups waiting to start, by queue.
  std::vector<std::pair<std::string, WaitingJob>> last_waiting_;
  std::chrono::steady_clock::time_point dashboard_published_{};
  bool dashboard_pending_ = false;  // changed since, not published yet
};

}  // namespace hybridjob::scheduler
