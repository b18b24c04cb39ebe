// Members that were deleted while marked by the gang scheduler (GangEviction=True:
// the gang scheduler evicts them to reclaim or preempt), remembered for a
// while after their pods are gone.
//
// The planner tells a shrink from a lost member by that condition on the pod.
// A pod evicted with no grace period can vanish from the informer cache
// before the job is next planned; without this memory its index would look
// like a member lost for no reason, and the job would restart it instead of
// shrinking. A record ends when a newer pod takes the index, when the job is
// gone, or `ttl` after the pod was deleted.
//
// Pure bookkeeping: no I/O, time passed in; safe to call from any thread.
#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include <hybridjob/common/mutex.h>
#include <hybridjob/controller/observed.h>

namespace hybridjob::controller {

class DepartedMembers {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kDefaultTtl = std::chrono::minutes(2);

  explicit DepartedMembers(Clock::duration ttl = kDefaultTtl) : ttl_(ttl) {}

  // Pod `pod` of job `key` was deleted; its last state is kept if it was
  // marked for disruption.
  void PodDeleted(const std::string& key, const ObservedPod& pod, Clock::time_point now);

  // The departed members of job `key` that still stand for their index, given
  // the job's pods as cached now. Drops the records that ended.
  std::vector<ObservedPod> For(const std::string& key, const std::vector<ObservedPod>& pods,
                               Clock::time_point now);

  void Forget(const std::string& key);
  size_t JobCount() const;

 private:
  struct Record {
    ObservedPod pod;
    Clock::time_point deleted;
  };

  const Clock::duration ttl_;
  mutable Mutex mu_;
  std::map<std::string, std::vector<Record>> records_ HJ_GUARDED_BY(mu_);  // by job key
};

}  // namespace hybridjob::controller
