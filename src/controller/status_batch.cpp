#include <algorithm>
#include <utility>

#include <hybridjob/controller/status_batch.h>

namespace hybridjob::controller {
namespace {

bool Waiting(const std::optional<api::JobPhase>& phase) {
  return !phase || *phase == api::JobPhase::kPending || *phase == api::JobPhase::kQueued;
}

// The counts pods move as they are bound, start and end. A role's committed
// members and restarts are not among them: they change with the membership.
void DropCounts(api::HybridJobStatus& status) {
  for (api::ReplicaStatus& role : status.replica_statuses) {
    role.scheduled = 0;
    role.active = 0;
    role.succeeded = 0;
    role.failed = 0;
  }
  status.ready_members.clear();
  status.queue.reset();
}

void DropWaitingConditions(api::HybridJobStatus& status) {
  std::erase_if(status.conditions, [](const api::Condition& condition) {
    return condition.type == api::kConditionCreated || condition.type == api::kConditionQueued;
  });
}

}  // namespace

bool ReportsProgressOnly(const api::HybridJobStatus& written, const api::HybridJobStatus& next) {
  if (next.phase && api::IsTerminal(*next.phase)) {
    return false;
  }
  const bool waiting = Waiting(next.phase);
  if (written.phase != next.phase && !(waiting && Waiting(written.phase))) {
    return false;
  }
  api::HybridJobStatus before = written;
  api::HybridJobStatus after = next;
  DropCounts(before);
  DropCounts(after);
  if (waiting) {
    DropWaitingConditions(before);
    DropWaitingConditions(after);
    after.phase = before.phase;
    if (!written.phase) {
      // The first record of a job that waits: when it started and the run's
      // record go out with whatever comes next.
      after.start_time = before.start_time;
      after.run_spec = before.run_spec;
      after.observed_generation = before.observed_generation;
      after.run = before.run;
      after.replica_statuses = before.replica_statuses;
    }
  }
  return before == after;
}

std::optional<api::HybridJobStatus> PendingStatusWrites::Pending(const std::string& key,
                                                                 const std::string& uid) const {
  MutexLock lock(mu_);
  auto it = pending_.find(key);
  if (it == pending_.end() || it->second.uid != uid) {
    return std::nullopt;
  }
  return it->second.status;
}

PendingStatusWrites::Decision PendingStatusWrites::Decide(
    const std::string& key, const std::string& uid, const api::HybridJobStatus& written,
    const std::optional<api::HybridJobStatus>& planned, Clock::time_point now) {
  MutexLock lock(mu_);
  auto it = pending_.find(key);
  if (it != pending_.end() && it->second.uid != uid) {
    pending_.erase(it);  // a job of the same name before this one
    it = pending_.end();
  }

  if (!planned) {
    return it == pending_.end() ? Decision{} : Due(it, now);
  }
  if (*planned == written) {
    if (it != pending_.end()) {
      pending_.erase(it);  // back to what the server has: nothing to write
    }
    return {};
  }
  if (period_ <= Clock::duration::zero() || !ReportsProgressOnly(written, *planned)) {
    if (it != pending_.end()) {
      pending_.erase(it);
    }
    return {.write = true, .status = *planned, .recheck = {}};
  }
  if (it == pending_.end()) {
    it = pending_.emplace(key, Entry{.uid = uid, .status = *planned, .since = now}).first;
  } else {
    it->second.status = *planned;
  }
  it->second.first_record = !written.phase.has_value();
  return Due(it, now);
}

PendingStatusWrites::Decision PendingStatusWrites::Due(std::map<std::string, Entry>::iterator entry,
                                                       Clock::time_point now) {
  // A job's first record waits longer while the gang scheduler has not said
  // where it stands: most gangs of a burst are placed within it, and one that
  // waits gets its standing, and so its Queued, written at once.
  const Entry& pending = entry->second;
  const bool unplaced_first =
      pending.first_record && !pending.status.queue && Waiting(pending.status.phase);
  const Clock::time_point at =
      pending.since + (unplaced_first ? period_ * kFirstRecordPeriods : period_);
  if (now < at) {
    return Decision{.write = false, .status = {}, .recheck = at - now};
  }
  Decision out{.write = true, .status = std::move(entry->second.status), .recheck = {}};
  pending_.erase(entry);
  return out;
}

void PendingStatusWrites::WriteFailed(const std::string& key, const std::string& uid,
                                      api::HybridJobStatus status, Clock::time_point now) {
  MutexLock lock(mu_);
  pending_.insert_or_assign(key,
                            Entry{.uid = uid, .status = std::move(status), .since = now - period_});
}

void PendingStatusWrites::Forget(const std::string& key) {
  MutexLock lock(mu_);
  pending_.erase(key);
}

size_t PendingStatusWrites::Size() const {
  MutexLock lock(mu_);
  return pending_.size();
}

}  // namespace hybridjob::controller
