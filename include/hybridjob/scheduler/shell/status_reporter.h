// Pod conditions the scheduler writes, and the writer that keeps the loop
// from waiting on them: writes are queued by pod and coalesced (a newer
// condition of a type replaces one not yet written), a few at a time, and
// tried again with back-off when they fail for any reason but the pod being
// gone.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <hybridjob/api/waiting.h>
#include <hybridjob/common/mutex.h>
#include <hybridjob/common/status.h>
#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/workqueue.h>

namespace hybridjob::scheduler {

struct PodConditionWrite {
  std::string type;
  bool value = false;
  std::string reason;
  std::string message;
};

// What the loop last wrote of a waiting gang's standing (api/waiting.h).
struct StandingWritten {
  api::QueueStanding standing;
  std::string pod;  // the member that carries it
  std::chrono::steady_clock::time_point at;
};

// Whether a gang's standing must be written again. A new reason, queue or
// carrier at once; a new position at most every `refresh`: a queue's line
// moves with every start ahead in it, and writing each move would cost a
// write per waiting gang per start.
bool StandingNeedsWrite(const StandingWritten* last, const api::QueueStanding& standing,
                        std::string_view pod, std::chrono::steady_clock::time_point now,
                        std::chrono::steady_clock::duration refresh);
// The GangWaiting condition of a gang that waits with `standing`, and of one
// that no longer waits (placed).
PodConditionWrite GangWaitingCondition(const api::QueueStanding& standing);
PodConditionWrite GangPlacedCondition();

// One strategic merge patch of the pod's status: conditions merge by type,
// so these are set together and others are left alone.
Status PatchPodConditions(k8s::ApiClient& client, const std::string& namespace_name,
                          const std::string& name,
                          const std::vector<PodConditionWrite>& conditions);

class PodStatusReporter {
 public:
  explicit PodStatusReporter(k8s::ApiClient& client, int workers = 2);
  ~PodStatusReporter();
  PodStatusReporter(const PodStatusReporter&) = delete;
  PodStatusReporter& operator=(const PodStatusReporter&) = delete;

  // Queues the conditions; returns at once.
  void Mark(const std::string& namespace_name, const std::string& name,
            std::vector<PodConditionWrite> conditions);
  // Writes what is queued (once each, no more retries), then ends the workers.
  void Stop();

  uint64_t written() const { return written_.load(); }
  uint64_t given_up() const { return given_up_.load(); }

 private:
  struct Queued {
    std::string namespace_name;
    std::string name;
    std::vector<PodConditionWrite> conditions;  // one per type, newest
  };
  static void Merge(std::vector<PodConditionWrite>& into, std::vector<PodConditionWrite> newer);
  void Work();

  k8s::ApiClient& client_;
  k8s::WorkQueue queue_;
  Mutex mu_;
  std::unordered_map<std::string, Queued> queued_ HJ_GUARDED_BY(mu_);  // by pod key
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> written_{0};
  std::atomic<uint64_t> given_up_{0};
  std::vector<std::thread> workers_;
};

}  // namespace hybridjob::scheduler
