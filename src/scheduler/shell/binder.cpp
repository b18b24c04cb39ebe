#include <algorithm>
#include <atomic>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/time.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/object_meta.h>
#include <hybridjob/scheduler/shell/binder.h>

namespace hybridjob::scheduler {
namespace {

// How long a rolled-back gang waits at most to see its deleted members go.
constexpr std::chrono::seconds kRollbackHoldLimit{30};

// Whether a member whose bind answer was uncertain may be bound after all.
bool MayBeOnANode(k8s::ApiClient& client, const PodRef& member) {
  // The pod read back settles an uncertain answer: a 409 from a pod that is
  // still unbound is a refusal (its scheduling gates, say) and the pod must
  // stay; deleting it would set off a delete/recreate loop. Only when the pod
  // cannot be read is it assumed bound.
  auto pod = client.Get(k8s::resources::Pods(), member.namespace_name, member.name);
  if (!pod) {
    return !k8s::IsNotFound(pod.status());
  }
  const nlohmann::json& object = *pod;
  if (!object.is_object() || !object.contains("metadata") || !object.contains("spec") ||
      !object["metadata"].is_object() || !object["spec"].is_object()) {
    return true;
  }
  if (!member.uid.empty() && k8s::UidOf(object) != member.uid) {
    return false;  // another pod of that name: ours is gone
  }
  const std::string node = object["spec"].value("nodeName", "");
  if (node.empty()) {
    spdlog::info("pod {}/{}: its binding did not take; it stays pending", member.namespace_name,
                 member.name);
  }
  return !node.empty();
}

}  // namespace

std::string ScheduledMessage(const GangBind& gang, const PodRef& member) {
  return "Successfully assigned " + member.namespace_name + "/" + member.name + " to " +
         member.node + " (gang " + gang.group_name + (gang.grows ? " grew: " : " placed: ") +
         gang.summary + ")";
}

bool BindMayHaveTaken(const Status& bind_status) {
  if (bind_status.ok()) {
    return true;
  }
  const int http = bind_status.http_status();
  return http == 0 || http == 409 || http >= 500;
}

// A gang being bound: what its workers found, filled in as they finish.
struct GangBinder::Progress {
  GangBind gang;
  std::atomic<size_t> remaining{0};
  Mutex mu;
  std::vector<PodRef> bound HJ_GUARDED_BY(mu);
  std::vector<PodRef> failed HJ_GUARDED_BY(mu);
  std::vector<PodRef> maybe_bound HJ_GUARDED_BY(mu);  // failed, but the binding may have taken
  Status first_error HJ_GUARDED_BY(mu);
};

GangBinder::GangBinder(k8s::ApiClient& client, BindFunction bind, k8s::EventRecorder& events,
                       PodStatusReporter& reporter, SchedulerStats& stats, OutcomeSink outcomes)
    : client_(client),
      bind_(std::move(bind)),
      events_(events),
      reporter_(reporter),
      stats_(stats),
      outcomes_(std::move(outcomes)) {}

GangBinder::~GangBinder() {
  Stop();
}

void GangBinder::Start(int workers) {
  for (int i = 0; i < std::max(1, workers); ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

void GangBinder::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& worker : workers_) {
    worker.join();
  }
  workers_.clear();
}

void GangBinder::SetLatencyObserver(GangLatencyObserver observer) {
  MutexLock lock(mu_);
  latency_observer_ = std::move(observer);
}

void GangBinder::Submit(GangBind gang) {
  auto progress = std::make_shared<Progress>();
  progress->remaining = gang.members.size();
  progress->gang = std::move(gang);
  {
    MutexLock lock(mu_);
    for (const PodRef& member : progress->gang.members) {
      queue_.push_back({progress, member});
    }
  }
  cv_.notify_all();
}

void GangBinder::Work() {
  while (true) {
    Task task;
    {
      MutexLock lock(mu_);
      lock.Wait(cv_, [this]() HJ_REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;
      }
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    const PodRef& member = task.member;
    BindAnnotations annotations;
    if (!task.gang->gang.placement.empty()) {
      annotations.emplace(api::kPlacementAnnotation, task.gang->gang.placement);
    }
    Status status =
        bind_(client_, member.namespace_name, member.name, member.uid, member.node, annotations);
    {
      MutexLock lock(task.gang->mu);
      if (status.ok()) {
        task.gang->bound.push_back(member);
      } else {
        task.gang->failed.push_back(member);
        if (BindMayHaveTaken(status)) {
          task.gang->maybe_bound.push_back(member);
        }
        if (task.gang->first_error.ok()) {
          task.gang->first_error = status;
        }
      }
    }
    if (status.ok()) {
      ++stats_.pods_bound;
    } else {
      ++stats_.bind_errors;
    }
    if (--task.gang->remaining == 0) {
      Finish(*task.gang);
    }
  }
}

void GangBinder::Finish(const Progress& progress) {
  const GangBind& gang = progress.gang;
  // One Scheduled Event per member bound, as kube-scheduler records them:
  // `kubectl describe pod` of any member says where it went. A new gang's
  // members only once all bound (a failed one is rolled back); a growing
  // gang keeps what bound.
  auto record_scheduled = [&](const std::vector<PodRef>& bound) {
    for (const PodRef& member : bound) {
      events_.Record(PodReference(member), k8s::EventType::kNormal, "Scheduled",
                     ScheduledMessage(gang, member));
    }
  };
  if (progress.failed.empty()) {
    if (gang.grows) {
      ++stats_.groups_grown;
      record_scheduled(gang.members);
      return;
    }
    ++stats_.groups_scheduled;
    for (const PodRef& member : gang.surplus) {
      // What makes the controller delete the member; the reporter retries it.
      reporter_.Mark(
          member.namespace_name, member.name,
          {{"PodScheduled", false, std::string(api::kSurplusReason),
            "gang " + gang.group_name + " was placed without this member: " + gang.summary}});
      ++stats_.surplus_marked;
    }
    record_scheduled(gang.members);
    GangLatencyObserver observer;
    {
      MutexLock lock(mu_);
      observer = latency_observer_;
    }
    if (observer && gang.creation_time != Timestamp{}) {
      observer(api::Clock::now() - gang.creation_time);
    }
    return;
  }
  BindOutcome outcome;
  outcome.key = gang.key;
  // Not placed after all: its left-out members are candidates again.
  for (const PodRef& member : gang.surplus) {
    outcome.released_surplus.push_back(PodKey(member.namespace_name, member.name));
  }
  if (gang.grows) {
    // Growth is elastic: the members that bound stay; the others are planned
    // again.
    spdlog::warn("gang {}: {} of {} new members failed to bind ({})", gang.key,
                 progress.failed.size(), gang.members.size(), progress.first_error.ToString());
    record_scheduled(progress.bound);
  } else {
    outcome.hold = RollBack(progress);
  }
  outcome.failed = progress.failed;
  outcomes_(std::move(outcome));
}

std::optional<RollbackHold> GangBinder::RollBack(const Progress& progress) {
  // Never a partial gang: delete what did bind, and what may have (a binding
  // whose answer was lost), so the controller recreates it unbound; the group
  // is then planned afresh. The failed members stay assumed until the loop
  // has the outcome, hold included: a cycle in between would bind them
  // beside the members about to be deleted, and a read-back would then find
  // them bound and delete them too.
  const GangBind& gang = progress.gang;
  ++stats_.groups_rolled_back;
  spdlog::warn("gang {}: {} of {} binds failed ({}); rolling the group back", gang.key,
               progress.failed.size(), gang.members.size(), progress.first_error.ToString());
  std::vector<PodRef> to_delete = progress.bound;
  for (const PodRef& member : progress.maybe_bound) {
    if (MayBeOnANode(client_, member)) {
      to_delete.push_back(member);
    }
  }
  RollbackHold hold;
  hold.until = std::chrono::steady_clock::now() + kRollbackHoldLimit;
  for (const PodRef& member : to_delete) {
    k8s::DeleteOptions options;
    options.precondition_uid = member.uid;
    options.grace_period_seconds = 0;
    Status deleted =
        client_.Delete(k8s::resources::Pods(), member.namespace_name, member.name, options);
    if (!deleted.ok() && !k8s::IsNotFound(deleted)) {
      spdlog::error("gang {}: could not roll back member {}: {}", gang.key, member.name,
                    deleted.ToString());
    }
    hold.deleted.push_back(member);
  }
  events_.Record(PodReference(gang.members.front()), k8s::EventType::kWarning, "FailedBinding",
                 "gang " + gang.group_name + " rolled back: " + progress.first_error.ToString());
  if (hold.deleted.empty()) {
    return std::nullopt;
  }
  return hold;
}

}  // namespace hybridjob::scheduler
