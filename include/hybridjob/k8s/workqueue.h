// A rate-limited work queue of object keys, with client-go's guarantees:
// a key is queued at most once however often it is added (dirty set), is
// never processed by two workers at once (processing set; an add while it is
// processed is replayed after Done), and retries back off per key.
// Delayed adds need no extra thread: waiting workers wake when one is due.
// Two lanes: keys added urgently, and delayed keys once due, are handed out
// before the others, each lane in the order its keys were added (as
// controller-runtime's priority queue puts live changes ahead of a backlog of
// first passes). So that a steady stream of urgent keys cannot starve the
// other lane, every kUrgentRun-th key handed out while both lanes wait comes
// from the other lane.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/rate_limiter.h>

namespace hybridjob::k8s {

// Optional instrumentation (metrics): called with the queue's lock released.
struct WorkQueueObserver {
  std::function<void(size_t depth)> on_depth;
  std::function<void(Duration waited)> on_queue_latency;  // add -> get
  std::function<void(Duration worked)> on_work_duration;  // get -> done
  std::function<void()> on_retry;
};

class WorkQueue {
 public:
  static constexpr int kUrgentRun = 8;

  explicit WorkQueue(std::unique_ptr<WorkqueueRateLimiter> limiter = nullptr,
                     WorkQueueObserver observer = {});
  ~WorkQueue();
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);
  // Adds the key ahead of every key of Add's lane, behind other urgent ones;
  // a key already queued there moves up, and one being processed comes back
  // urgent after Done. Delays and a server's pause still apply.
  void AddUrgent(const std::string& key);
  // Adds after `delay`, in the urgent lane once due; a key already waiting
  // keeps the earlier of the two times.
  void AddAfter(const std::string& key, Duration delay);
  // Adds after the rate limiter's delay for this key (backoff grows per retry),
  // or after `at_least` when that is longer. A positive `at_least` (a server's
  // Retry-After) also holds the key: adds of it before that time, by events or
  // by Done, are deferred to it.
  void AddRateLimited(const std::string& key, Duration at_least = Duration::zero());
  // Resets the key's backoff and hold: call when it was processed successfully.
  void Forget(const std::string& key);
  int NumRequeues(const std::string& key);

  // Blocks until a key is ready; nullopt once shut down and empty.
  std::optional<std::string> Get();
  // Marks the key processed; if it was added meanwhile, it is queued again.
  void Done(const std::string& key);

  // Stops accepting adds and wakes every waiter. Keys already queued are still
  // handed out, so workers drain; delayed keys are dropped.
  void ShutDown();
  bool ShuttingDown();

  size_t Len();         // ready keys
  size_t DelayedLen();  // keys waiting for their time

 private:
  using Time = std::chrono::steady_clock::time_point;

  enum class Lane { kNormal, kUrgent };
  void AddInLane(const std::string& key, Lane lane) HJ_EXCLUDES(mu_);
  void AddLocked(const std::string& key, Time now, Lane lane = Lane::kNormal) HJ_REQUIRES(mu_);
  void PushLocked(const std::string& key, Lane lane) HJ_REQUIRES(mu_);
  // Into the delayed set at `ready`, unless already due sooner.
  void AddAtLocked(const std::string& key, Time ready) HJ_REQUIRES(mu_);
  // The end of the key's hold, if it is held at `now` (an expired hold is dropped).
  std::optional<Time> HeldUntilLocked(const std::string& key, Time now) HJ_REQUIRES(mu_);
  void PromoteDueLocked(Time now) HJ_REQUIRES(mu_);
  // The lane Get takes its key from; at least one holds a key.
  std::list<std::string>& NextLaneLocked() HJ_REQUIRES(mu_);
  void NotifyDepth(size_t depth);

  Mutex mu_;
  std::condition_variable cv_;
  // Ready keys, each in one lane, and where it sits so that it can move up.
  std::list<std::string> urgent_ HJ_GUARDED_BY(mu_);
  std::list<std::string> normal_ HJ_GUARDED_BY(mu_);
  struct Queued {
    Lane lane;
    std::list<std::string>::iterator at;
  };
  std::unordered_map<std::string, Queued> queued_ HJ_GUARDED_BY(mu_);
  std::unordered_set<std::string> dirty_ HJ_GUARDED_BY(mu_);
  std::unordered_set<std::string> processing_ HJ_GUARDED_BY(mu_);
  // Keys added urgently while processed: Done queues them in the urgent lane.
  std::unordered_set<std::string> urgent_after_done_ HJ_GUARDED_BY(mu_);
  std::unordered_map<std::string, Time> added_at_ HJ_GUARDED_BY(mu_);
  std::unordered_map<std::string, Time> started_at_ HJ_GUARDED_BY(mu_);
  // Delayed keys by ready time, plus each key's entry for de-duplication.
  std::multimap<Time, std::string> delayed_ HJ_GUARDED_BY(mu_);
  // Keys a server asked to wait for (AddRateLimited's at_least), until when.
  std::unordered_map<std::string, Time> hold_until_ HJ_GUARDED_BY(mu_);
  std::unordered_map<std::string, std::multimap<Time, std::string>::iterator> delayed_index_
      HJ_GUARDED_BY(mu_);
  bool shutting_down_ HJ_GUARDED_BY(mu_) = false;
  // Urgent keys handed out in a row while plain keys waited.
  int urgent_run_ HJ_GUARDED_BY(mu_) = 0;
  std::unique_ptr<WorkqueueRateLimiter> limiter_ HJ_PT_GUARDED_BY(mu_);
  WorkQueueObserver observer_;
};

}  // namespace hybridjob::k8s
