#include <spdlog/spdlog.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/time.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/scheduler/gang_scheduler.h>

namespace hybridjob::scheduler {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct Member {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string node;
};

Member MemberOf(const PodInfo& pod, std::string node = {}) {
  return {pod.namespace_name, pod.name, pod.uid, std::move(node)};
}

k8s::ObjectReference PodReference(const Member& member) {
  k8s::ObjectReference ref;
  ref.api_version = "v1";
  ref.kind = "Pod";
  ref.namespace_name = member.namespace_name;
  ref.name = member.name;
  ref.uid = member.uid;
  return ref;
}

std::string NowRfc3339() {
  return api::FormatTime(std::chrono::time_point_cast<std::chrono::seconds>(api::Clock::now()));
}

// A decision copied out of the cache lock: the PodInfo pointers of the plan
// are only valid under it.
struct DecisionCopy {
  std::string key;
  std::string namespace_name;
  std::string group_name;
  PlanOutcome outcome = PlanOutcome::kWait;
  std::string reason;
  std::vector<Member> assignments;
  std::vector<Member> surplus;
  std::vector<Member> pending;
  std::string summary;  // "ps 1 (min 1, max 1), worker 3 (min 2, max 4)"
  bool still_assembling = false;
  size_t members = 0;
  Timestamp creation_time{};
};

std::string Summary(const GroupPlan& plan) {
  std::string out;
  for (const auto& role : plan.roles) {
    if (!out.empty()) {
      out += ", ";
    }
    out += role.name + " " + std::to_string(role.bound + role.placed) + " (min " +
           std::to_string(role.min_replicas) + ", max " + std::to_string(role.max_replicas) + ")";
  }
  return out;
}

}  // namespace

struct GangScheduler::GroupBind {
  std::string key;
  std::string namespace_name;
  std::string group_name;
  std::string summary;
  std::vector<Member> members;
  std::vector<Member> surplus;
  Timestamp creation_time{};
  std::atomic<size_t> remaining{0};
  std::mutex mu;
  std::vector<Member> bound;
  std::vector<Member> failed;
  Status first_error;
};

struct GangScheduler::BindTask {
  std::shared_ptr<GroupBind> group;
  Member member;
};

GangScheduler::GangScheduler(k8s::ApiClient& client, SchedulerConfig config, BindFunction bind)
    : client_(client),
      config_(std::move(config)),
      bind_(bind ? std::move(bind)
                 : BindFunction([](k8s::ApiClient& c, const std::string& ns, const std::string& pod,
                                   const std::string& uid, const std::string& node) {
                     return k8s::BindPod(c, ns, pod, uid, node);
                   })),
      cache_(config_.scheduler_name) {
  planner_config_.packing = config_.scoring;
  planner_config_.gpu_resource_names = config_.gpu_resources;
  planner_config_.percentage_of_nodes_to_score = config_.percentage_of_nodes_to_score;
}

GangScheduler::~GangScheduler() {
  Stop();
}

void GangScheduler::SetGangLatencyObserver(GangLatencyObserver observer) {
  std::lock_guard lock(mu_);
  latency_observer_ = std::move(observer);
}

std::map<std::string, std::pair<double, double>> GangScheduler::ResourceTotals() {
  std::map<std::string, std::pair<double, double>> totals;
  cache_.ReadSnapshot([&](const Snapshot& snapshot) {
    for (const auto& slot : snapshot.slots()) {
      if (!slot.schedulable_slot()) {
        continue;
      }
      const auto& allocatable = slot.info.allocatable;
      totals["cpu"].first += static_cast<double>(allocatable.milli_cpu) / 1000.0;
      totals["cpu"].second += static_cast<double>(slot.requested.milli_cpu) / 1000.0;
      totals["memory"].first += static_cast<double>(allocatable.memory);
      totals["memory"].second += static_cast<double>(slot.requested.memory);
      for (const auto& gpu : config_.gpu_resources) {
        totals[gpu].first += static_cast<double>(allocatable.Scalar(gpu));
        totals[gpu].second += static_cast<double>(slot.requested.Scalar(gpu));
      }
    }
  });
  return totals;
}

void GangScheduler::Start() {
  events_ = std::make_unique<k8s::EventRecorder>(client_, config_.scheduler_name);
  k8s::ReflectorOptions nodes;
  nodes.resource = k8s::resources::Nodes();
  node_reflector_ = std::make_unique<k8s::Reflector>(client_, nodes, cache_.node_sink());
  k8s::ReflectorOptions pods;
  pods.resource = k8s::resources::Pods();
  // Every pod that is bound (any scheduler: it holds capacity) or that is ours.
  pods.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  pod_reflector_ = std::make_unique<k8s::Reflector>(client_, pods, cache_.pod_sink());
  node_thread_ = std::thread([this] { node_reflector_->Run(); });
  pod_thread_ = std::thread([this] { pod_reflector_->Run(); });
  for (int64_t i = 0; i < config_.bind_concurrency; ++i) {
    binders_.emplace_back([this] { BinderWorker(); });
  }
  loop_thread_ = std::thread([this] { Loop(); });
}

void GangScheduler::SetActive(bool active) {
  {
    std::lock_guard lock(mu_);
    active_ = active;
  }
  cache_.Wake();
}

void GangScheduler::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
    cv_.notify_all();
  }
  cache_.Wake();
  if (loop_thread_.joinable()) {
    loop_thread_.join();
  }
  for (auto& binder : binders_) {
    binder.join();
  }
  binders_.clear();
  if (node_reflector_) {
    node_reflector_->Stop();
  }
  if (pod_reflector_) {
    pod_reflector_->Stop();
  }
  if (node_thread_.joinable()) {
    node_thread_.join();
  }
  if (pod_thread_.joinable()) {
    pod_thread_.join();
  }
  if (events_) {
    events_->Flush(std::chrono::seconds(2));
    events_->Stop();
  }
}

bool GangScheduler::WaitForCacheSync(std::chrono::milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  while (SteadyClock::now() < deadline) {
    if (cache_.HasSynced()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return cache_.HasSynced();
}

void GangScheduler::Loop() {
  uint64_t seen = 0;
  while (true) {
    const uint64_t current = cache_.WaitForChange(seen, std::chrono::milliseconds(1000));
    {
      std::lock_guard lock(mu_);
      if (stopping_) {
        return;
      }
      if (!active_) {
        continue;
      }
    }
    if (!cache_.HasSynced()) {
      continue;
    }
    seen = current;
    RunOneCycle();
  }
}

bool GangScheduler::InBackoff(const std::string& group_key, size_t member_count,
                              uint64_t generation) const {
  auto it = backoff_.find(group_key);
  if (it == backoff_.end()) {
    return false;
  }
  // Retry early when the cluster or the group changed since the last try.
  return SteadyClock::now() < it->second.until && it->second.members == member_count &&
         it->second.generation == generation;
}

void GangScheduler::RunOneCycle() {
  const auto started = SteadyClock::now();
  const uint64_t generation = cache_.generation();
  const Timestamp now = std::chrono::time_point_cast<std::chrono::seconds>(api::Clock::now());
  std::vector<DecisionCopy> decisions;
  {
    std::lock_guard lock(mu_);  // guards backoff_ and next_start_slot_
    cache_.RunLocked([&](Snapshot& snapshot, const std::vector<const PodInfo*>& pending) {
      std::vector<std::string> assumed;
      if (pending.empty()) {
        return assumed;
      }
      std::vector<PodGroup> groups = BuildGroups(pending, snapshot);
      std::vector<PodGroup> eligible;
      eligible.reserve(groups.size());
      for (auto& group : groups) {
        const std::string key = group.namespace_name + "/" + group.name;
        if (!InBackoff(key, group.pending.size() + group.bound.size(), generation)) {
          eligible.push_back(std::move(group));
        }
      }
      CycleResult result =
          RunCycle(snapshot, std::move(eligible), now, planner_config_, next_start_slot_);
      next_start_slot_ = result.next_start_slot;
      for (const auto& decision : result.decisions) {
        DecisionCopy copy;
        copy.namespace_name = decision.group.namespace_name;
        copy.group_name = decision.group.name;
        copy.key = copy.namespace_name + "/" + copy.group_name;
        copy.outcome = decision.plan.outcome;
        copy.reason = decision.plan.reason;
        copy.summary = Summary(decision.plan);
        copy.members = decision.group.pending.size() + decision.group.bound.size();
        copy.creation_time = decision.group.creation_time;
        const bool missing = !MissingMembers(decision.group).empty();
        const auto timeout = std::chrono::seconds(decision.group.spec.schedule_timeout_seconds);
        copy.still_assembling = missing && now - decision.group.creation_time < timeout;
        for (const auto& assignment : decision.plan.assignments) {
          copy.assignments.push_back(MemberOf(*assignment.pod, assignment.node_name));
          assumed.push_back(assignment.pod->Key());
        }
        for (const PodInfo* pod : decision.plan.surplus) {
          copy.surplus.push_back(MemberOf(*pod));
        }
        for (const PodInfo* pod : decision.group.pending) {
          copy.pending.push_back(MemberOf(*pod));
        }
        decisions.push_back(std::move(copy));
      }
      return assumed;
    });
  }

  uint64_t waiting = 0;
  for (auto& decision : decisions) {
    if (decision.outcome == PlanOutcome::kPlaced) {
      auto group = std::make_shared<GroupBind>();
      group->key = decision.key;
      group->namespace_name = decision.namespace_name;
      group->group_name = decision.group_name;
      group->summary = decision.summary;
      group->members = std::move(decision.assignments);
      group->surplus = std::move(decision.surplus);
      group->creation_time = decision.creation_time;
      group->remaining = group->members.size();
      std::lock_guard lock(mu_);
      backoff_.erase(group->key);
      reported_.erase(group->key);
      if (group->members.empty()) {
        continue;
      }
      for (const auto& member : group->members) {
        bind_queue_.push_back({group, member});
      }
      cv_.notify_all();
      continue;
    }
    ++waiting;
    {
      std::lock_guard lock(mu_);
      backoff_[decision.key] = {
          SteadyClock::now() + std::chrono::seconds(config_.gang_backoff_seconds), decision.members,
          generation};
    }
    if (decision.still_assembling) {
      continue;  // not every member pod exists yet: nothing to report
    }
    const std::string reason = decision.outcome == PlanOutcome::kInvalid
                                   ? "InvalidGroup"
                                   : std::string(api::kWaitingReason);
    if (reported_[decision.key] == decision.reason) {
      continue;  // said already
    }
    reported_[decision.key] = decision.reason;
    for (const auto& member : decision.pending) {
      MarkPodCondition(member.namespace_name, member.name, reason, decision.reason);
    }
    if (!decision.pending.empty()) {
      events_->Record(PodReference(decision.pending.front()), k8s::EventType::kWarning,
                      "FailedScheduling",
                      "gang " + decision.group_name + " waits: " + decision.reason);
    }
  }
  stats_.groups_waiting = waiting;
  ++stats_.cycles;
  stats_.last_cycle_micros =
      std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - started).count();
}

void GangScheduler::BinderWorker() {
  while (true) {
    BindTask task;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !bind_queue_.empty(); });
      if (bind_queue_.empty()) {
        return;
      }
      task = std::move(bind_queue_.front());
      bind_queue_.pop_front();
    }
    const Member& member = task.member;
    Status status = bind_(client_, member.namespace_name, member.name, member.uid, member.node);
    {
      std::lock_guard lock(task.group->mu);
      if (status.ok()) {
        task.group->bound.push_back(member);
      } else {
        task.group->failed.push_back(member);
        if (task.group->first_error.ok()) {
          task.group->first_error = status;
        }
      }
    }
    if (status.ok()) {
      ++stats_.pods_bound;
    } else {
      ++stats_.bind_errors;
    }
    if (--task.group->remaining == 0) {
      FinishGroup(task.group);
    }
  }
}

void GangScheduler::FinishGroup(const std::shared_ptr<GroupBind>& group) {
  if (group->failed.empty()) {
    ++stats_.groups_scheduled;
    for (const auto& member : group->surplus) {
      MarkPodCondition(
          member.namespace_name, member.name, std::string(api::kSurplusReason),
          "gang " + group->group_name + " was placed without this member: " + group->summary);
      ++stats_.surplus_marked;
    }
    events_->Record(PodReference(group->members.front()), k8s::EventType::kNormal, "Scheduled",
                    "gang " + group->group_name + " placed: " + group->summary);
    GangLatencyObserver observer;
    {
      std::lock_guard lock(mu_);
      observer = latency_observer_;
    }
    if (observer && group->creation_time != Timestamp{}) {
      observer(api::Clock::now() - group->creation_time);
    }
    return;
  }
  // Never a partial gang: forget what did not bind, and delete what did so the
  // controller recreates it unbound; the group is then planned afresh.
  ++stats_.groups_rolled_back;
  spdlog::warn("gang {}: {} of {} binds failed ({}); rolling the group back", group->key,
               group->failed.size(), group->members.size(), group->first_error.ToString());
  for (const auto& member : group->failed) {
    cache_.ForgetAssumed(member.namespace_name, member.name);
  }
  for (const auto& member : group->bound) {
    k8s::DeleteOptions options;
    options.precondition_uid = member.uid;
    options.grace_period_seconds = 0;
    Status deleted =
        client_.Delete(k8s::resources::Pods(), member.namespace_name, member.name, options);
    if (!deleted.ok() && !k8s::IsNotFound(deleted)) {
      spdlog::error("gang {}: could not roll back member {}: {}", group->key, member.name,
                    deleted.ToString());
    }
  }
  events_->Record(PodReference(group->members.front()), k8s::EventType::kWarning, "FailedBinding",
                  "gang " + group->group_name + " rolled back: " + group->first_error.ToString());
}

void GangScheduler::MarkPodCondition(const std::string& ns, const std::string& name,
                                     const std::string& reason, const std::string& message) {
  const nlohmann::json patch = {
      {"status",
       {{"conditions", nlohmann::json::array({{{"type", "PodScheduled"},
                                               {"status", "False"},
                                               {"reason", reason},
                                               {"message", message},
                                               {"lastTransitionTime", NowRfc3339()}}})}}}};
  k8s::PatchOptions options;
  options.subresource = "status";
  auto patched = client_.Patch(k8s::resources::Pods(), ns, name, k8s::PatchType::kStrategicMerge,
                               patch.dump(), options);
  if (!patched && !k8s::IsNotFound(patched.status())) {
    spdlog::warn("pod {}/{}: could not set PodScheduled={}: {}", ns, name, reason,
                 patched.status().ToString());
  }
}

}  // namespace hybridjob::scheduler
