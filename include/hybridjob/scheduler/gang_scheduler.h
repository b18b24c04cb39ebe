// gang-scheduler's shell: the scheduling loop over the cache, the binder, the
// evictions, and the pod conditions and Events that say what happened.
// Decisions come from the pure core (policy_cycle.h); this only applies them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/event_recorder.h>
#include <hybridjob/k8s/reflector.h>
#include <hybridjob/scheduler/cache.h>
#include <hybridjob/scheduler/config.h>
#include <hybridjob/scheduler/cycle.h>
#include <hybridjob/scheduler/policy_cycle.h>

namespace hybridjob::scheduler {

struct SchedulerStats {
  std::atomic<uint64_t> cycles{0};
  std::atomic<uint64_t> groups_scheduled{0};
  std::atomic<uint64_t> pods_bound{0};
  std::atomic<uint64_t> bind_errors{0};
  std::atomic<uint64_t> groups_rolled_back{0};
  std::atomic<uint64_t> surplus_marked{0};
  std::atomic<uint64_t> groups_waiting{0};  // in the last cycle
  std::atomic<uint64_t> groups_grown{0};    // running groups given more members
  std::atomic<uint64_t> evictions{0};       // accepted by the Eviction API
  std::atomic<uint64_t> evictions_refused{0};
  std::atomic<int64_t> last_cycle_micros{0};
};

// A queue as the last cycle left it, with the evictions made for and from it.
struct QueueReport {
  QueueStatus status;
  // Age of the queue's oldest group waiting to start (0 when none waits).
  double oldest_waiting_seconds = 0;
  uint64_t reclaimed_pods = 0;  // members evicted from the queue by reclaim, ever
  uint64_t preempted_pods = 0;  // members evicted from the queue by preemption, ever
};

// Observes each placed group from its first member's creation to its last bind.
using GangLatencyObserver = std::function<void(std::chrono::duration<double> latency)>;

// Binds one pod to a node (pods/binding). Replaceable for fault-injection
// tests of the rollback path; the default is k8s::BindPod.
using BindFunction =
    std::function<Status(k8s::ApiClient& client, const std::string& ns, const std::string& pod,
                         const std::string& uid, const std::string& node)>;

class GangScheduler {
 public:
  GangScheduler(k8s::ApiClient& client, SchedulerConfig config, BindFunction bind = nullptr);
  ~GangScheduler();
  GangScheduler(const GangScheduler&) = delete;
  GangScheduler& operator=(const GangScheduler&) = delete;

  // Starts the cache's reflectors (always) and the binder.
  void Start();
  // Scheduling runs only while active (the leader); caches stay warm.
  void SetActive(bool active);
  void Stop();

  bool WaitForCacheSync(std::chrono::milliseconds timeout);
  const SchedulerStats& stats() const { return stats_; }
  SchedulerCache& cache() { return cache_; }
  void SetGangLatencyObserver(GangLatencyObserver observer);
  // resource -> (allocatable on schedulable nodes, requested by pods on them):
  // cpu in cores, memory in bytes, and every configured GPU resource.
  std::map<std::string, std::pair<double, double>> ResourceTotals();
  // Per queue, sorted by name: configured queues and those named by pods.
  std::vector<QueueReport> QueueReports() const;
  const std::vector<std::string>& gpu_resources() const { return gpu_resources_; }

  // Takes the parts of a changed configuration file that apply without a
  // restart: queues, reclaim, preemption, starvation, scoring, node sampling
  // and the cycle interval. Returns which other changed fields still need a
  // restart (empty when none).
  std::vector<std::string> Reconfigure(const SchedulerConfig& config);

 private:
  struct BindTask;
  struct GroupBind;
  struct RollbackHold;

  void Loop();
  void RunOneCycle();
  void SubmitGroup(const GroupDecision& decision);
  void BinderWorker();
  void FinishGroup(const std::shared_ptr<GroupBind>& group);
  void RollBack(const std::shared_ptr<GroupBind>& group);
  static bool RollbackDone(const RollbackHold& hold, const Snapshot& snapshot,
                           const std::unordered_map<std::string, std::string_view>& pending_uids);
  void CarryOut(const std::vector<Eviction>& evictions, const PolicyConfig& policy, Timestamp now);
  void Evict(const Eviction& eviction, const PolicyConfig& policy, Timestamp now);
  // policy/v1 or policy/v1beta1, discovered at the first eviction.
  const std::string& EvictionApiVersion();
  void MarkPodCondition(const std::string& ns, const std::string& name, const std::string& type,
                        bool value, const std::string& reason, const std::string& message);
  struct PodConditionWrite {
    std::string type;
    bool value = false;
    std::string reason;
    std::string message;
  };
  Status MarkPodConditions(const std::string& ns, const std::string& name,
                           const std::vector<PodConditionWrite>& conditions);

  k8s::ApiClient& client_;
  const SchedulerConfig config_;  // as started; Reconfigure changes the copies below
  const std::vector<std::string> gpu_resources_;
  BindFunction bind_;
  SchedulerCache cache_;
  SchedulerStats stats_;
  std::unique_ptr<k8s::Reflector> node_reflector_;
  std::unique_ptr<k8s::Reflector> pod_reflector_;
  std::vector<std::unique_ptr<k8s::Reflector>> tenancy_reflectors_;  // jobs, namespaces, classes
  std::vector<std::thread> tenancy_threads_;
  std::unique_ptr<k8s::EventRecorder> events_;
  std::thread node_thread_;
  std::thread pod_thread_;
  std::thread loop_thread_;
  std::vector<std::thread> binders_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool active_ = false;
  std::deque<BindTask> bind_queue_;
  // What Reconfigure may change; read by the loop at the start of each cycle.
  PlannerConfig planner_config_;
  PolicyConfig policy_config_;
  std::chrono::seconds cycle_interval_{5};
  std::vector<QueueReport> queue_reports_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> evicted_per_queue_;  // reclaim, preemption
  GangLatencyObserver latency_observer_;
  // Pods left out of a gang's placement, marked GangSurplus once it is bound
  // (their controller deletes them): a later cycle does not report them as
  // waiting to grow, which would overwrite the mark.
  std::unordered_set<std::string> surplus_;
  // Gangs being rolled back, by group key: not planned again until the
  // members the rollback deleted are gone from the cache. Until then the
  // cache still shows them bound, and a cycle would take the gang for a
  // running one and bind the refused members beside them: a partial gang.
  struct RollbackHold {
    struct Deleted {
      std::string namespace_name;
      std::string name;
      std::string uid;
    };
    std::vector<Deleted> deleted;
    std::chrono::steady_clock::time_point until;  // a bound on the wait
  };
  std::unordered_map<std::string, RollbackHold> rolling_back_;

  // Loop thread only.
  uint32_t next_start_slot_ = 0;
  std::string eviction_api_version_;
  PolicyState policy_state_;
  std::unordered_map<std::string, std::string> reported_;  // group key -> last reason said
};

}  // namespace hybridjob::scheduler
