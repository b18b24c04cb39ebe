// Status writes that only report progress, batched.
//
// A job's status changes many times on its way to running: its first pass
// records it Queued, each binding the gang scheduler makes moves the counts of
// scheduled members, the waiting line moves its position. Written one by one,
// that is two or three writes of the whole object per job under a burst, each
// sent to every watcher. As kube-controller-manager's Job controller folds the
// pod updates of a second into one sync, a status that only reports progress
// waits up to a batch period for the next change that matters and goes out with
// it; whatever is still pending when the period ends is written then. A job's
// first record waits up to kFirstRecordPeriods periods while the gang
// scheduler has not said where the job stands (status.queue): most gangs of a
// burst are placed within that, and one that waits gets its standing, and so
// its Queued, written within a period. A change
// that matters (Running, Restarting, Suspended, a terminal phase, a condition
// that is not progress, the run's record) is written at once.
//
// Pure bookkeeping: no I/O, time passed in; safe to call from any thread.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>

#include <hybridjob/api/types.h>
#include <hybridjob/common/mutex.h>

namespace hybridjob::controller {

// True when `next` differs from `written` (the status the API server has)
// only in progress while the job waits or runs: the first record of a waiting
// job (Pending or Queued), the counts of pods bound, active, succeeded and
// failed (replicaStatuses, readyMembers), its place in the queue, and the
// Created and Queued conditions' bookkeeping while it waits. A role's
// committed members change with the membership: written at once.
bool ReportsProgressOnly(const api::HybridJobStatus& written, const api::HybridJobStatus& next);

class PendingStatusWrites {
 public:
  using Clock = std::chrono::steady_clock;

  // What to do with the status a pass planned for job `key` (uid `uid`),
  // given the status the API server has (`written`).
  struct Decision {
    bool write = false;  // write `status` now
    api::HybridJobStatus status;
    // Not written: plan the job again after this long, to write it when due.
    std::optional<Clock::duration> recheck;
  };

  static constexpr int kFirstRecordPeriods = 5;

  explicit PendingStatusWrites(Clock::duration period) : period_(period) {}

  // The status a pass of job `key` (uid `uid`) starts from: the one waiting
  // to be written, if any, so that a later pass builds on it.
  std::optional<api::HybridJobStatus> Pending(const std::string& key, const std::string& uid) const;

  // `planned` is the status the pass computed, or nullopt when it changed
  // nothing relative to what the pass started from.
  Decision Decide(const std::string& key, const std::string& uid,
                  const api::HybridJobStatus& written,
                  const std::optional<api::HybridJobStatus>& planned, Clock::time_point now);

  // The write of job `key`'s status failed: the pending status stays, due now.
  void WriteFailed(const std::string& key, const std::string& uid, api::HybridJobStatus status,
                   Clock::time_point now);
  void Forget(const std::string& key);
  size_t Size() const;

 private:
  struct Entry {
    std::string uid;
    api::HybridJobStatus status;
    Clock::time_point since;    // when the oldest unwritten change was planned
    bool first_record = false;  // the server has no status of the job yet
  };

  // Whether `entry`'s status is due: taken out to write, or when it will be.
  Decision Due(std::map<std::string, Entry>::iterator entry, Clock::time_point now)
      HJ_REQUIRES(mu_);

  const Clock::duration period_;
  mutable Mutex mu_;
  std::map<std::string, Entry> pending_ HJ_GUARDED_BY(mu_);  // by job key
};

}  // namespace hybridjob::controller
