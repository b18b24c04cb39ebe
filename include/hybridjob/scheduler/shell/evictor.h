// Carries out a cycle's evictions, on the loop's thread. Every victim's
// conditions are written first, then the evictions are asked for: the
// controller never sees a member terminating without knowing why, and sees a
// cycle's victims together (a job that restarts on a new membership restarts
// once). GangEviction is what the controller acts on (the job shrinks);
// DisruptionTarget is for people and tools, as a 1.26+ server writes it
// (whose Eviction handler then rewrites its reason). An eviction the API
// refuses (a PodDisruptionBudget, say) leaves the pod running and its group
// alone for a back-off.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/event_recorder.h>
#include <hybridjob/scheduler/core/policy_cycle.h>
#include <hybridjob/scheduler/shell/shell.h>

namespace hybridjob::scheduler {

class Evictor {
 public:
  Evictor(k8s::ApiClient& client, k8s::EventRecorder& events, SchedulerStats& stats);

  // A refusal is recorded in `state` (RecordRefusedEviction).
  void CarryOut(const std::vector<Eviction>& evictions, const PolicyConfig& policy, Timestamp now,
                PolicyState& state);

  // Per queue, the members evicted from it: (by reclaim, by preemption), ever.
  std::map<std::string, std::pair<uint64_t, uint64_t>> EvictedPerQueue() const;

 private:
  void Evict(const Eviction& eviction, const PolicyConfig& policy, Timestamp now,
             PolicyState& state);
  // policy/v1 or policy/v1beta1, discovered at the first eviction.
  const std::string& EvictionApiVersion();

  k8s::ApiClient& client_;
  k8s::EventRecorder& events_;
  SchedulerStats& stats_;
  std::string eviction_api_version_;  // loop thread only

  mutable Mutex mu_;  // metrics read the counts
  std::map<std::string, std::pair<uint64_t, uint64_t>> evicted_per_queue_ HJ_GUARDED_BY(mu_);
};

}  // namespace hybridjob::scheduler
