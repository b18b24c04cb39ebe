// gang-scheduler's shell: the scheduling loop over the cache, the binder, and
// the pod conditions and Events that say what happened. Decisions come from
// the pure core (cycle.h, planner.h); this only applies them.
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
#include <thread>
#include <unordered_map>
#include <vector>

#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/event_recorder.h>
#include <hybridjob/k8s/reflector.h>
#include <hybridjob/scheduler/cache.h>
#include <hybridjob/scheduler/config.h>
#include <hybridjob/scheduler/cycle.h>

namespace hybridjob::scheduler {

struct SchedulerStats {
  std::atomic<uint64_t> cycles{0};
  std::atomic<uint64_t> groups_scheduled{0};
  std::atomic<uint64_t> pods_bound{0};
  std::atomic<uint64_t> bind_errors{0};
  std::atomic<uint64_t> groups_rolled_back{0};
  std::atomic<uint64_t> surplus_marked{0};
  std::atomic<uint64_t> groups_waiting{0};  // in the last cycle
  std::atomic<int64_t> last_cycle_micros{0};
};

// Observes each placed group from its first member's creation to its last bind.
using GangLatencyObserver = std::function<void(std::chrono::duration<double> latency)>;

// Binds one pod to a node (pods/binding). Replaceable for fault-injection
// tests of the rollback path; the default is k8s::BindPod.
using BindFunction = std::function<Status(k8s::ApiClient& client, const std::string& ns,
                                          const std::string& pod, const std::string& uid,
                                          const std::string& node)>;

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

 private:
  struct BindTask;
  struct GroupBind;

  void Loop();
  void RunOneCycle();
  void SubmitGroup(const GroupDecision& decision);
  void BinderWorker();
  void FinishGroup(const std::shared_ptr<GroupBind>& group);
  void ReportWaiting(const GroupDecision& decision);
  void MarkPodCondition(const std::string& ns, const std::string& name, const std::string& reason,
                        const std::string& message);
  bool InBackoff(const std::string& group_key, size_t member_count, uint64_t generation) const;

  k8s::ApiClient& client_;
  SchedulerConfig config_;
  BindFunction bind_;
  PlannerConfig planner_config_;
  SchedulerCache cache_;
  SchedulerStats stats_;
  std::unique_ptr<k8s::Reflector> node_reflector_;
  std::unique_ptr<k8s::Reflector> pod_reflector_;
  std::unique_ptr<k8s::EventRecorder> events_;
  std::thread node_thread_;
  std::thread pod_thread_;
  std::thread loop_thread_;
  std::vector<std::thread> binders_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool active_ = false;
  std::deque<BindTask> bind_queue_;
  uint32_t next_start_slot_ = 0;

  struct Backoff {
    std::chrono::steady_clock::time_point until;
    size_t members = 0;
    uint64_t generation = 0;
  };
  std::unordered_map<std::string, Backoff> backoff_;       // loop thread only
  std::unordered_map<std::string, std::string> reported_;  // loop thread only: last reason
  GangLatencyObserver latency_observer_;
};

}  // namespace hybridjob::scheduler
