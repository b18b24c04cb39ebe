#include <algorithm>
#include <vector>

#include <spdlog/spdlog.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/time.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/scheduler/cycle.h>
#include <hybridjob/scheduler/gang_scheduler.h>

namespace hybridjob::scheduler {
namespace {

using SteadyClock = std::chrono::steady_clock;

// How long a rolled-back gang waits at most to see its deleted members go.
constexpr std::chrono::seconds kRollbackHoldLimit{30};

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
  std::string queue;
  PlanOutcome outcome = PlanOutcome::kWait;
  WaitCause cause = WaitCause::kNone;
  std::string reason;
  bool started = false;    // members were bound before this cycle: it grows or heals
  bool untrusted = false;  // a pod claiming a job it does not belong to (tenancy.h)
  std::vector<Member> assignments;
  std::vector<Member> surplus;
  std::vector<Member> pending;
  std::string summary;  // "ps 1 (min 1, max 1), worker 3 (min 2, max 4)"
  Timestamp creation_time{};
};

// Whether a member whose bind answer was uncertain may be bound after all.
bool MayBeOnANode(k8s::ApiClient& client, const Member& member) {
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
  if (!member.uid.empty() && object["metadata"].value("uid", "") != member.uid) {
    return false;  // another pod of that name: ours is gone
  }
  const std::string node = object["spec"].value("nodeName", "");
  if (node.empty()) {
    spdlog::info("pod {}/{}: its binding did not take; it stays pending", member.namespace_name,
                 member.name);
  }
  return !node.empty();
}

// A pod that claims a job's membership without belonging to the job.
constexpr std::string_view kUntrustedMemberReason = "UntrustedMember";

// The PodScheduled=False reason written on a waiting group's pods: the
// Kubernetes one for lack of capacity, the policy's cause otherwise.
std::string WaitingReason(const DecisionCopy& decision) {
  switch (decision.cause) {
    case WaitCause::kNoCapacity:
      return std::string(api::kWaitingReason);
    case WaitCause::kInvalid:
      return decision.untrusted ? std::string(kUntrustedMemberReason) : "InvalidGroup";
    default:
      return std::string(WaitCauseName(decision.cause));
  }
}

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
  bool grows = false;  // a running group given more members
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
  std::vector<Member> maybe_bound;  // failed, but the binding may have taken
  Status first_error;
};

struct GangScheduler::BindTask {
  std::shared_ptr<GroupBind> group;
  Member member;
};

GangScheduler::GangScheduler(k8s::ApiClient& client, SchedulerConfig config, BindFunction bind)
    : client_(client),
      config_(std::move(config)),
      gpu_resources_(config_.gpu_resources),
      bind_(bind ? std::move(bind)
                 : BindFunction([](k8s::ApiClient& c, const std::string& ns, const std::string& pod,
                                   const std::string& uid, const std::string& node) {
                     return k8s::BindPod(c, ns, pod, uid, node);
                   })),
      cache_(config_.scheduler_name) {
  Reconfigure(config_);
}

std::vector<std::string> GangScheduler::Reconfigure(const SchedulerConfig& config) {
  std::vector<std::string> need_restart;
  auto compare = [&](const char* field, bool same) {
    if (!same) {
      need_restart.emplace_back(field);
    }
  };
  compare("schedulerName", config.scheduler_name == config_.scheduler_name);
  compare("gpuResources", config.gpu_resources == config_.gpu_resources);
  compare("clientQPS", config.client_qps == config_.client_qps);
  compare("clientBurst", config.client_burst == config_.client_burst);
  compare("bindConcurrency", config.bind_concurrency == config_.bind_concurrency);
  compare("metricsAddr", config.metrics_addr == config_.metrics_addr);
  compare("healthAddr", config.health_addr == config_.health_addr);
  const auto& a = config.leader_election;
  const auto& b = config_.leader_election;
  compare("leaderElection",
          a.enabled == b.enabled && a.lease_name == b.lease_name &&
              a.lease_namespace == b.lease_namespace && a.lease_duration == b.lease_duration &&
              a.renew_deadline == b.renew_deadline && a.retry_period == b.retry_period);
  PlannerConfig planner;
  planner.packing = config.scoring;
  planner.gpu_resource_names = config_.gpu_resources;
  planner.percentage_of_nodes_to_score = config.percentage_of_nodes_to_score;
  PolicyConfig policy = PolicyConfigFrom(config);
  policy.scheduler_name = config_.scheduler_name;
  {
    std::lock_guard lock(mu_);
    planner_config_ = std::move(planner);
    policy_config_ = std::move(policy);
    cycle_interval_ = std::chrono::seconds(std::max<int64_t>(1, config.gang_backoff_seconds));
  }
  cache_.Wake();
  return need_restart;
}

std::vector<QueueReport> GangScheduler::QueueReports() const {
  std::lock_guard lock(mu_);
  std::vector<QueueReport> reports = queue_reports_;
  for (auto& report : reports) {
    auto it = evicted_per_queue_.find(report.status.name);
    if (it != evicted_per_queue_.end()) {
      report.reclaimed_pods = it->second.first;
      report.preempted_pods = it->second.second;
    }
  }
  return reports;
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
      for (const auto& gpu : gpu_resources_) {
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
  // What pods' claims are checked against (tenancy.h).
  k8s::ReflectorOptions jobs;
  jobs.resource = k8s::resources::HybridJobs();
  jobs.absent_collection_is_empty = true;  // the CRD may be installed later
  k8s::ReflectorOptions namespaces;
  namespaces.resource = k8s::resources::Namespaces();
  k8s::ReflectorOptions priority_classes;
  priority_classes.resource = k8s::resources::PriorityClasses();
  for (auto [options, sink] :
       {std::pair{jobs, &cache_.job_sink()}, std::pair{namespaces, &cache_.namespace_sink()},
        std::pair{priority_classes, &cache_.priority_class_sink()}}) {
    tenancy_reflectors_.push_back(std::make_unique<k8s::Reflector>(client_, options, *sink));
    k8s::Reflector* reflector = tenancy_reflectors_.back().get();
    tenancy_threads_.emplace_back([reflector] { reflector->Run(); });
  }
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
  for (auto& reflector : tenancy_reflectors_) {
    reflector->Stop();
  }
  for (auto& thread : tenancy_threads_) {
    thread.join();
  }
  tenancy_threads_.clear();
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
    std::chrono::milliseconds interval;
    {
      std::lock_guard lock(mu_);
      interval = cycle_interval_;
    }
    // A cycle on every change, and at least every interval for the decisions
    // that time alone makes (schedule timeouts, starvation, stale evictions).
    const uint64_t current = cache_.WaitForChange(seen, interval);
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

void GangScheduler::RunOneCycle() {
  const auto started = SteadyClock::now();
  const Timestamp now = std::chrono::time_point_cast<std::chrono::seconds>(api::Clock::now());
  PlannerConfig planner;
  PolicyConfig policy;
  {
    std::lock_guard lock(mu_);
    planner = planner_config_;
    policy = policy_config_;
  }
  std::unordered_map<std::string, RollbackHold> holds;
  {
    std::lock_guard lock(mu_);
    holds = rolling_back_;
  }
  std::vector<std::string> released;
  std::unordered_set<std::string> still_pending;
  std::vector<DecisionCopy> decisions;
  std::vector<Eviction> evictions;
  std::vector<QueueReport> queues;
  bool planned = false;
  cache_.RunLocked([&](Snapshot& snapshot, const std::vector<const PodInfo*>& all_pending) {
    std::vector<std::string> assumed;
    std::unordered_map<std::string, std::string_view> pending_uids;
    for (const PodInfo* pod : all_pending) {
      pending_uids.emplace(pod->Key(), pod->uid);
    }
    for (auto& [key, hold] : holds) {
      if (RollbackDone(hold, snapshot, pending_uids)) {
        released.push_back(key);
      }
    }
    std::vector<const PodInfo*> pending;
    pending.reserve(all_pending.size());
    for (const PodInfo* pod : all_pending) {
      still_pending.insert(pod->Key());
      const bool held =
          !pod->job_name.empty() && holds.contains(PodKey(pod->namespace_name, pod->job_name)) &&
          std::find(released.begin(), released.end(), PodKey(pod->namespace_name, pod->job_name)) ==
              released.end();
      if (!held) {
        pending.push_back(pod);
      }
    }
    if (pending.empty()) {
      return assumed;
    }
    planned = true;
    // Every pending group goes in, so reservations and evictions in flight
    // follow the groups they are for.
    PolicyCycleResult result =
        PlanCycleWithPolicies(snapshot, BuildGroups(pending, snapshot), policy, planner, now,
                              policy_state_, next_start_slot_);
    policy_state_ = std::move(result.state);
    next_start_slot_ = result.next_start_slot;
    evictions = std::move(result.evictions);
    std::map<std::string, Timestamp> oldest_waiting;
    for (const auto& decision : result.decisions) {
      DecisionCopy copy;
      copy.namespace_name = decision.group.namespace_name;
      copy.group_name = decision.group.name;
      copy.key = GroupKey(decision.group);
      copy.queue = decision.queue;
      copy.outcome = decision.plan.outcome;
      copy.cause = decision.cause;
      copy.reason = decision.plan.reason;
      copy.started = !decision.group.bound.empty();
      copy.untrusted = !decision.group.pending.empty() &&
                       !decision.group.pending.front()->untrusted_reason.empty();
      copy.summary = Summary(decision.plan);
      copy.creation_time = decision.group.creation_time;
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
      if (copy.outcome != PlanOutcome::kPlaced && !copy.started &&
          copy.cause != WaitCause::kAssembling) {
        auto [it, inserted] = oldest_waiting.emplace(copy.queue, copy.creation_time);
        if (!inserted) {
          it->second = std::min(it->second, copy.creation_time);
        }
      }
      decisions.push_back(std::move(copy));
    }
    for (auto& status : result.queues) {
      QueueReport report;
      auto it = oldest_waiting.find(status.name);
      if (it != oldest_waiting.end()) {
        report.oldest_waiting_seconds =
            std::max(0.0, std::chrono::duration<double>(now - it->second).count());
      }
      report.status = std::move(status);
      queues.push_back(std::move(report));
    }
    return assumed;
  });
  {
    std::lock_guard lock(mu_);
    if (planned) {
      queue_reports_ = std::move(queues);
    }
    for (const std::string& key : released) {
      auto it = rolling_back_.find(key);
      if (it != rolling_back_.end() && it->second.until == holds[key].until) {
        rolling_back_.erase(it);  // the same rollback, not a newer one
      }
    }
  }

  std::unordered_set<std::string> surplus;
  {
    std::lock_guard lock(mu_);
    surplus = surplus_;
  }
  uint64_t waiting = 0;
  for (auto& decision : decisions) {
    std::erase_if(decision.pending, [&surplus](const Member& member) {
      return surplus.contains(PodKey(member.namespace_name, member.name));
    });
    if (decision.pending.empty() && decision.outcome != PlanOutcome::kPlaced) {
      continue;  // only surplus members wait: they are being deleted
    }
    if (decision.outcome == PlanOutcome::kPlaced && !decision.assignments.empty()) {
      auto group = std::make_shared<GroupBind>();
      group->key = decision.key;
      group->namespace_name = decision.namespace_name;
      group->group_name = decision.group_name;
      group->summary = decision.summary;
      group->grows = decision.started;
      group->members = std::move(decision.assignments);
      group->surplus = std::move(decision.surplus);
      {
        // Recorded now, so the next cycle never reports them as waiting,
        // whichever finishes first: it or the binds that mark them.
        std::lock_guard lock(mu_);
        for (const auto& member : group->surplus) {
          surplus_.insert(PodKey(member.namespace_name, member.name));
        }
      }
      group->creation_time = decision.creation_time;
      group->remaining = group->members.size();
      reported_.erase(group->key);
      std::lock_guard lock(mu_);
      for (const auto& member : group->members) {
        bind_queue_.push_back({group, member});
      }
      cv_.notify_all();
      continue;
    }
    if (decision.outcome == PlanOutcome::kPlaced) {
      reported_.erase(decision.key);
      continue;
    }
    if (!decision.started) {
      ++waiting;
    }
    if (decision.cause == WaitCause::kAssembling) {
      continue;  // not every member pod exists yet: nothing to report
    }
    const std::string reason = WaitingReason(decision);
    std::string& said = reported_[decision.key];
    if (said == reason + ": " + decision.reason) {
      continue;  // said already
    }
    said = reason + ": " + decision.reason;
    for (const auto& member : decision.pending) {
      MarkPodCondition(member.namespace_name, member.name, "PodScheduled", false, reason,
                       decision.reason);
    }
    // A running group whose extra members wait is not news worth an Event,
    // nor a gang held by scheduling gates (kube-scheduler says nothing either).
    if (!decision.pending.empty() && !decision.started &&
        decision.cause != WaitCause::kSchedulingGated) {
      if (decision.untrusted) {
        events_->Record(PodReference(decision.pending.front()), k8s::EventType::kWarning,
                        std::string(kUntrustedMemberReason), decision.reason);
      } else {
        events_->Record(PodReference(decision.pending.front()), k8s::EventType::kWarning,
                        "FailedScheduling",
                        "gang " + decision.group_name + " waits: " + decision.reason);
      }
    }
  }
  CarryOut(evictions, policy, now);
  {
    // Forget surplus pods that are gone (deleted, or bound after all).
    std::lock_guard lock(mu_);
    std::erase_if(surplus_, [&still_pending](const std::string& key) {
      return !still_pending.contains(key);
    });
  }
  // Forget what was said of groups that are gone.
  if (reported_.size() > decisions.size()) {
    std::unordered_map<std::string, std::string> kept;
    for (const auto& decision : decisions) {
      auto it = reported_.find(decision.key);
      if (it != reported_.end()) {
        kept.emplace(it->first, std::move(it->second));
      }
    }
    reported_ = std::move(kept);
  }
  stats_.groups_waiting = waiting;
  ++stats_.cycles;
  stats_.last_cycle_micros =
      std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - started).count();
}

void GangScheduler::CarryOut(const std::vector<Eviction>& evictions, const PolicyConfig& policy,
                             Timestamp now) {
  // Every victim's conditions first, then the evictions: the controller must
  // never see a member terminating without knowing why, and sees a cycle's
  // victims together (a job that restarts on a new membership restarts once).
  // GangEviction is what the controller acts on (the job shrinks);
  // DisruptionTarget is for people and tools, as a 1.26+ server writes it
  // (whose Eviction handler then rewrites its reason).
  std::vector<Eviction> marking = evictions;
  OrderForMarking(marking);
  for (const auto& eviction : marking) {
    const std::string reason(eviction.cause == EvictionCause::kReclaim ? api::kReclaimedReason
                                                                       : api::kPreemptedReason);
    (void)MarkPodConditions(
        eviction.namespace_name, eviction.name,
        {{std::string(api::kGangEvictionCondition), true, reason, eviction.message},
         {std::string(api::kDisruptionTargetCondition), true, reason + "ByGangScheduler",
          eviction.message}});
  }
  for (const auto& eviction : evictions) {
    Evict(eviction, policy, now);
  }
}

void GangScheduler::Evict(const Eviction& eviction, const PolicyConfig& policy, Timestamp now) {
  const std::string cause(EvictionCauseName(eviction.cause));
  Status status = k8s::EvictPod(client_, eviction.namespace_name, eviction.name, eviction.uid,
                                EvictionApiVersion());
  Member victim{eviction.namespace_name, eviction.name, eviction.uid, eviction.node_name};
  if (status.ok() || k8s::IsNotFound(status)) {
    ++stats_.evictions;
    {
      std::lock_guard lock(mu_);
      auto& counts = evicted_per_queue_[eviction.victim_queue];
      (eviction.cause == EvictionCause::kReclaim ? counts.first : counts.second) += 1;
    }
    spdlog::info("evicted {}/{} ({}): {}", eviction.namespace_name, eviction.name, cause,
                 eviction.message);
    events_->Record(PodReference(victim), k8s::EventType::kWarning,
                    eviction.cause == EvictionCause::kReclaim ? "Reclaimed" : "Preempted",
                    eviction.message);
    return;
  }
  // Refused (a PodDisruptionBudget, say): the pod stays, and its group is
  // left alone for a back-off; the group it was for keeps waiting.
  ++stats_.evictions_refused;
  spdlog::warn("eviction of {}/{} ({}) refused: {}", eviction.namespace_name, eviction.name, cause,
               status.ToString());
  RecordRefusedEviction(policy_state_, eviction, policy, now);
  const std::string refused(api::kEvictionRefusedReason);
  (void)MarkPodConditions(
      eviction.namespace_name, eviction.name,
      {{std::string(api::kGangEvictionCondition), false, refused, status.message()},
       {std::string(api::kDisruptionTargetCondition), false, refused, status.message()}});
  events_->Record(PodReference(victim), k8s::EventType::kWarning, "EvictionRefused",
                  cause + " for " + eviction.for_group + " refused: " + status.message());
}

const std::string& GangScheduler::EvictionApiVersion() {
  if (eviction_api_version_.empty()) {
    Result<std::string> discovered = k8s::DiscoverEvictionApiVersion(client_);
    if (!discovered) {
      // Every server so far accepts v1beta1 bodies; ask again next time.
      spdlog::warn("could not discover the Eviction API version ({}); using {}",
                   discovered.status().ToString(), k8s::kEvictionV1beta1);
      static const std::string kFallback(k8s::kEvictionV1beta1);
      return kFallback;
    }
    eviction_api_version_ = *discovered;
    spdlog::info("evictions use {}", eviction_api_version_);
  }
  return eviction_api_version_;
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
        if (BindMayHaveTaken(status)) {
          task.group->maybe_bound.push_back(member);
        }
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
    if (group->grows) {
      ++stats_.groups_grown;
      events_->Record(PodReference(group->members.front()), k8s::EventType::kNormal, "Scheduled",
                      "gang " + group->group_name + " grew by " +
                          std::to_string(group->members.size()) + ": " + group->summary);
      return;
    }
    ++stats_.groups_scheduled;
    for (const auto& member : group->surplus) {
      // The mark is what makes the controller delete the member, and no
      // later cycle writes it: a failed write is tried again.
      const std::vector<PodConditionWrite> mark = {
          {"PodScheduled", false, std::string(api::kSurplusReason),
           "gang " + group->group_name + " was placed without this member: " + group->summary}};
      Status marked = MarkPodConditions(member.namespace_name, member.name, mark);
      for (int attempt = 1; !marked.ok() && !k8s::IsNotFound(marked) && attempt < 3; ++attempt) {
        std::this_thread::sleep_for(std::chrono::seconds(attempt));
        marked = MarkPodConditions(member.namespace_name, member.name, mark);
      }
      if (marked.ok()) {
        ++stats_.surplus_marked;
      }
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
  {
    // Not placed after all: its left-out members are candidates again.
    std::lock_guard lock(mu_);
    for (const auto& member : group->surplus) {
      surplus_.erase(PodKey(member.namespace_name, member.name));
    }
  }
  if (group->grows) {
    // Growth is elastic: the members that bound stay; the others are planned
    // again.
    for (const auto& member : group->failed) {
      cache_.ForgetAssumed(member.namespace_name, member.name);
    }
    spdlog::warn("gang {}: {} of {} new members failed to bind ({})", group->key,
                 group->failed.size(), group->members.size(), group->first_error.ToString());
    return;
  }
  RollBack(group);
}

void GangScheduler::RollBack(const std::shared_ptr<GroupBind>& group) {
  // Never a partial gang: delete what did bind, and what may have (a binding
  // whose answer was lost), so the controller recreates it unbound; the group
  // is then planned afresh. The failed members stay assumed until the
  // read-backs are done and the hold is in place: a cycle in between would
  // bind them beside the members about to be deleted, and a read-back would
  // then find them bound and delete them too.
  ++stats_.groups_rolled_back;
  spdlog::warn("gang {}: {} of {} binds failed ({}); rolling the group back", group->key,
               group->failed.size(), group->members.size(), group->first_error.ToString());
  std::vector<Member> to_delete = group->bound;
  for (const Member& member : group->maybe_bound) {
    if (MayBeOnANode(client_, member)) {
      to_delete.push_back(member);
    }
  }
  RollbackHold hold;
  hold.until = SteadyClock::now() + kRollbackHoldLimit;
  for (const auto& member : to_delete) {
    k8s::DeleteOptions options;
    options.precondition_uid = member.uid;
    options.grace_period_seconds = 0;
    Status deleted =
        client_.Delete(k8s::resources::Pods(), member.namespace_name, member.name, options);
    if (!deleted.ok() && !k8s::IsNotFound(deleted)) {
      spdlog::error("gang {}: could not roll back member {}: {}", group->key, member.name,
                    deleted.ToString());
    }
    hold.deleted.push_back({member.namespace_name, member.name, member.uid});
  }
  if (!hold.deleted.empty()) {
    std::lock_guard lock(mu_);
    rolling_back_[group->key] = std::move(hold);
  }
  for (const auto& member : group->failed) {
    cache_.ForgetAssumed(member.namespace_name, member.name);
  }
  events_->Record(PodReference(group->members.front()), k8s::EventType::kWarning, "FailedBinding",
                  "gang " + group->group_name + " rolled back: " + group->first_error.ToString());
}

bool GangScheduler::RollbackDone(
    const RollbackHold& hold, const Snapshot& snapshot,
    const std::unordered_map<std::string, std::string_view>& pending_uids) {
  if (SteadyClock::now() >= hold.until) {
    return true;  // a member stuck in deletion must not hold its gang forever
  }
  for (const auto& member : hold.deleted) {
    const PodInfo* on_node = snapshot.FindPod(member.namespace_name, member.name);
    if (on_node != nullptr && on_node->uid == member.uid) {
      return false;
    }
    auto it = pending_uids.find(PodKey(member.namespace_name, member.name));
    if (it != pending_uids.end() && it->second == member.uid) {
      return false;
    }
  }
  return true;
}

void GangScheduler::MarkPodCondition(const std::string& ns, const std::string& name,
                                     const std::string& type, bool value, const std::string& reason,
                                     const std::string& message) {
  (void)MarkPodConditions(ns, name, {{type, value, reason, message}});
}

Status GangScheduler::MarkPodConditions(const std::string& ns, const std::string& name,
                                        const std::vector<PodConditionWrite>& conditions) {
  // One strategic merge patch (conditions merge by type): set together.
  nlohmann::json list = nlohmann::json::array();
  const std::string now = NowRfc3339();
  for (const PodConditionWrite& condition : conditions) {
    list.push_back({{"type", condition.type},
                    {"status", condition.value ? "True" : "False"},
                    {"reason", condition.reason},
                    {"message", condition.message},
                    {"lastTransitionTime", now}});
  }
  const std::string& type = conditions.front().type;
  const std::string& reason = conditions.front().reason;
  const nlohmann::json patch = {{"status", {{"conditions", std::move(list)}}}};
  k8s::PatchOptions options;
  options.subresource = "status";
  auto patched = client_.Patch(k8s::resources::Pods(), ns, name, k8s::PatchType::kStrategicMerge,
                               patch.dump(), options);
  if (!patched && !k8s::IsNotFound(patched.status())) {
    spdlog::warn("pod {}/{}: could not set {} ({}): {}", ns, name, type, reason,
                 patched.status().ToString());
  }
  return patched.status();
}

}  // namespace hybridjob::scheduler
