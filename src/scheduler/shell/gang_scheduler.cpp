#include <algorithm>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/time.h>
#include <hybridjob/api/waiting.h>
#include <hybridjob/common/strings.h>
#include <hybridjob/scheduler/core/cluster_view.h>
#include <hybridjob/scheduler/core/cycle.h>
#include <hybridjob/scheduler/core/fair_share.h>
#include <hybridjob/scheduler/shell/gang_scheduler.h>

namespace hybridjob::scheduler {

// A decision copied out of the plan: its PodInfo pointers are only valid
// until the loop applies the next deltas.
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
  std::vector<PodRef> assignments;
  std::vector<PodRef> surplus;
  std::vector<PodRef> pending;
  std::vector<ClaimDecision> claim_decisions;  // to be written before any bind
  std::vector<ClaimDecision> awaited_claims;   // to be Bound before any bind
  std::string summary;                         // "ps 1 (min 1, max 1), worker 3 (min 2, max 4)"
  std::string placement;                       // GroupPlan::placement
  Timestamp creation_time{};
  std::string waiting_reason;  // api/waiting.h code, for a gang waiting to start
  int32_t queue_position = 0;
  std::optional<PodRef> carrier;  // the member that carries its standing
  // Whom a NeverFits Event is about: the job when the members' controller is
  // a HybridJob, else the carrier.
  k8s::ObjectReference owner;
};

namespace {

using SteadyClock = std::chrono::steady_clock;

// A waiting gang's place in its queue is written again at most this often
// (StandingNeedsWrite).
constexpr auto kPositionRefresh = std::chrono::seconds{10};
// The dashboard's state is published at most this often.
constexpr auto kDashboardInterval = std::chrono::seconds{1};
// Events waiting to be written at most: the Scheduled Events of a burst of
// this many binds are all kept (about half a KiB each); beyond, Events are
// dropped, counted and logged.
constexpr size_t kSchedulerEventBacklog = 16384;

// The member that carries a waiting gang's standing: the lowest index, then
// the name, so it stays the same while the gang waits.
const PodInfo* StandingCarrier(const std::vector<const PodInfo*>& pending) {
  const PodInfo* carrier = nullptr;
  auto rank = [](const PodInfo* pod) {
    return pod->index < 0 ? std::numeric_limits<int64_t>::max() : int64_t{pod->index};
  };
  for (const PodInfo* pod : pending) {
    if (carrier == nullptr || rank(pod) < rank(carrier) ||
        (rank(pod) == rank(carrier) && pod->name < carrier->name)) {
      carrier = pod;
    }
  }
  return carrier;
}

k8s::ObjectReference OwnerReference(const PodInfo& member) {
  if (member.controller && member.controller->kind == api::kKind &&
      member.controller->api_version == api::kApiVersion) {
    return k8s::ObjectReference{std::string(api::kApiVersion),
                                std::string(api::kKind),
                                member.namespace_name,
                                member.controller->name,
                                member.controller->uid,
                                "",
                                ""};
  }
  return PodReference(PodRefOf(member));
}

// The PodScheduled=False reason written on a waiting group's pods: the
// Kubernetes one for lack of capacity, the policy's cause otherwise.
std::string WaitingReason(const DecisionCopy& decision) {
  switch (decision.cause) {
    case WaitCause::kNoCapacity:
      return std::string(api::kWaitingReason);
    case WaitCause::kInvalid:
      return std::string(decision.untrusted ? api::kUntrustedMemberReason
                                            : api::kInvalidGroupReason);
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
  if (!plan.placement.empty()) {
    out += " in " + plan.placement;
  }
  return out;
}

// Whether the members a rollback deleted are gone from the cache.
bool RollbackDone(const RollbackHold& hold, const SchedulerCache& cache) {
  if (SteadyClock::now() >= hold.until) {
    return true;  // a member stuck in deletion must not hold its gang forever
  }
  for (const PodRef& member : hold.deleted) {
    const PodInfo* seen = cache.FindPod(member.namespace_name, member.name);
    if (seen != nullptr && seen->uid == member.uid) {
      return false;
    }
  }
  return true;
}

}  // namespace

GangScheduler::GangScheduler(k8s::ApiClient& client, SchedulerConfig config, BindFunction bind)
    : client_(client),
      config_(std::move(config)),
      bind_(bind ? std::move(bind)
                 : BindFunction([](k8s::ApiClient& c, const std::string& ns, const std::string& pod,
                                   const std::string& uid, const std::string& node,
                                   const BindAnnotations& annotations) {
                     return k8s::BindPod(c, ns, pod, uid, node, annotations);
                   })),
      cache_(config_.scheduler_name) {
  Reconfigure(config_);
}

GangScheduler::~GangScheduler() {
  Stop();
}

std::vector<std::string> GangScheduler::Reconfigure(const SchedulerConfig& config) {
  // What the binary reads once, at start: a change needs a restart.
  std::vector<std::string> need_restart;
  auto needs_restart = [&](const char* field, auto SchedulerConfig::*member) {
    if (!(config.*member == config_.*member)) {
      need_restart.emplace_back(field);
    }
  };
  needs_restart("schedulerName", &SchedulerConfig::scheduler_name);
  needs_restart("gpuResources", &SchedulerConfig::gpu_resources);
  needs_restart("clientQPS", &SchedulerConfig::client_qps);
  needs_restart("clientBurst", &SchedulerConfig::client_burst);
  needs_restart("bindConcurrency", &SchedulerConfig::bind_concurrency);
  needs_restart("metricsAddr", &SchedulerConfig::metrics_addr);
  needs_restart("healthAddr", &SchedulerConfig::health_addr);
  needs_restart("dashboardAddr", &SchedulerConfig::dashboard_addr);
  needs_restart("leaderElection", &SchedulerConfig::leader_election);
  PlannerConfig planner;
  planner.packing = config.scoring;
  planner.gpu_resources = config_.gpu_resources;
  planner.gpu_model_label = config.gpu_model_label;
  planner.percentage_of_nodes_to_score = config.percentage_of_nodes_to_score;
  planner.topology_levels = config.topology.levels;
  PolicyConfig policy = PolicyConfigFrom(config);
  policy.scheduler_name = config_.scheduler_name;
  {
    MutexLock lock(mu_);
    planner_config_ = std::move(planner);
    policy_config_ = std::move(policy);
    cycle_interval_ = std::chrono::seconds(std::max<int64_t>(1, config.gang_backoff_seconds));
    volume_bind_timeout_ = std::chrono::seconds(config.volume_bind_timeout_seconds);
    cycle_requested_ = true;  // waiting groups see the new queues at once
  }
  feed_.Wake();
  return need_restart;
}

std::vector<QueueReport> GangScheduler::QueueReports() const {
  std::vector<QueueReport> reports;
  {
    MutexLock lock(mu_);
    reports = queue_reports_;
  }
  if (evictor_ == nullptr) {
    return reports;
  }
  const auto evicted = evictor_->EvictedPerQueue();
  for (auto& report : reports) {
    auto it = evicted.find(report.status.name);
    if (it != evicted.end()) {
      report.reclaimed_pods = it->second.first;
      report.preempted_pods = it->second.second;
    }
  }
  return reports;
}

void GangScheduler::SetGangLatencyObserver(GangLatencyObserver observer) {
  MutexLock lock(mu_);
  if (binder_ != nullptr) {
    binder_->SetLatencyObserver(std::move(observer));
  } else {
    latency_observer_ = std::move(observer);
  }
}

std::map<std::string, std::pair<double, double>> GangScheduler::ResourceTotals() const {
  MutexLock lock(mu_);
  return resource_totals_;
}

size_t GangScheduler::PendingPods() const {
  MutexLock lock(mu_);
  return pending_pods_;
}

void GangScheduler::PublishCacheFigures() {
  // Every pass: metrics must see a placement the moment it is assumed. The
  // memo reads only the nodes that changed since the last pass.
  std::map<std::string, std::pair<double, double>> totals;
  if (!cache_.snapshot().slots().empty()) {
    for (const ResourceTotal& total :
         resource_totals_memo_.Update(cache_.snapshot(), config_.gpu_resources)) {
      const double scale = total.resource == "cpu" ? 1000.0 : 1.0;
      totals[total.resource] = {static_cast<double>(total.allocatable) / scale,
                                static_cast<double>(total.requested) / scale};
    }
  }
  MutexLock lock(mu_);
  resource_totals_ = std::move(totals);
  pending_pods_ = cache_.PendingCount();
  synced_ = cache_.HasSynced();
}

void GangScheduler::Start() {
  // One Scheduled Event per pod bound: room for the Events of a burst of
  // binds, which the API server takes as fast as the binds themselves.
  events_ =
      std::make_unique<k8s::EventRecorder>(event_client_ != nullptr ? *event_client_ : client_,
                                           config_.scheduler_name, kSchedulerEventBacklog);
  reporter_ = std::make_unique<PodStatusReporter>(client_);
  service_writer_ = std::make_unique<ServiceWriter>(client_);
  evictor_ = std::make_unique<Evictor>(client_, *events_, stats_);
  {
    MutexLock lock(mu_);
    binder_ = std::make_unique<GangBinder>(client_, bind_, *events_, *reporter_, stats_,
                                           [this](BindOutcome outcome) {
                                             {
                                               MutexLock lock(mu_);
                                               bind_outcomes_.push_back(std::move(outcome));
                                             }
                                             feed_.Wake();
                                           });
    binder_->SetLatencyObserver(std::move(latency_observer_));
  }
  binder_->Start(static_cast<int>(config_.bind_concurrency));
  claim_writer_ = std::make_unique<ClaimWriter>(client_, [this](ClaimWriteOutcome outcome) {
    {
      MutexLock lock(mu_);
      claim_outcomes_.push_back(std::move(outcome));
    }
    feed_.Wake();
  });
  claim_writer_->Start();

  k8s::ReflectorOptions nodes;
  nodes.resource = k8s::resources::Nodes();
  k8s::ReflectorOptions pods;
  pods.resource = k8s::resources::Pods();
  // Every pod that is bound (any scheduler: it holds capacity) or that is ours.
  pods.field_selector = "status.phase!=Succeeded,status.phase!=Failed";
  node_reflector_ = std::make_unique<k8s::Reflector>(client_, nodes, feed_.node_sink());
  pod_reflector_ = std::make_unique<k8s::Reflector>(client_, pods, feed_.pod_sink());
  // What pods' claims are checked against (tenancy.h).
  k8s::ReflectorOptions jobs;
  jobs.resource = k8s::resources::HybridJobs();
  jobs.absent_collection_is_empty = true;  // the CRD may be installed later
  k8s::ReflectorOptions namespaces;
  namespaces.resource = k8s::resources::Namespaces();
  k8s::ReflectorOptions priority_classes;
  priority_classes.resource = k8s::resources::PriorityClasses();
  // What pods' volumes are checked against (volumes.h).
  k8s::ReflectorOptions claims;
  claims.resource = k8s::resources::PersistentVolumeClaims();
  k8s::ReflectorOptions volumes;
  volumes.resource = k8s::resources::PersistentVolumes();
  k8s::ReflectorOptions storage_classes;
  storage_classes.resource = k8s::resources::StorageClasses();
  for (auto [options, sink] :
       {std::pair{jobs, &feed_.job_sink()}, std::pair{namespaces, &feed_.namespace_sink()},
        std::pair{priority_classes, &feed_.priority_class_sink()},
        std::pair{claims, &feed_.claim_sink()}, std::pair{volumes, &feed_.volume_sink()},
        std::pair{storage_classes, &feed_.storage_class_sink()}}) {
    lookup_reflectors_.push_back(std::make_unique<k8s::Reflector>(client_, options, *sink));
  }
  for (k8s::Reflector* reflector : {node_reflector_.get(), pod_reflector_.get()}) {
    reflector_threads_.emplace_back([reflector] { reflector->Run(); });
  }
  for (auto& reflector : lookup_reflectors_) {
    reflector_threads_.emplace_back([r = reflector.get()] { r->Run(); });
  }
  loop_thread_ = std::thread([this] { Loop(); });
}

void GangScheduler::SetActive(bool active) {
  {
    MutexLock lock(mu_);
    active_ = active;
    cycle_requested_ = active;
  }
  feed_.Wake();
}

void GangScheduler::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
  }
  feed_.Wake();
  if (loop_thread_.joinable()) {
    loop_thread_.join();
  }
  if (claim_writer_) {
    claim_writer_->Stop();
  }
  if (binder_) {
    binder_->Stop();
  }
  for (k8s::Reflector* reflector : {node_reflector_.get(), pod_reflector_.get()}) {
    if (reflector != nullptr) {
      reflector->Stop();
    }
  }
  for (auto& reflector : lookup_reflectors_) {
    reflector->Stop();
  }
  for (std::thread& thread : reflector_threads_) {
    thread.join();
  }
  reflector_threads_.clear();
  if (reporter_) {
    reporter_->Stop();
  }
  if (service_writer_) {
    service_writer_->Stop();
  }
  if (events_) {
    events_->Flush(std::chrono::seconds(2));
    events_->Stop();
  }
}

bool GangScheduler::WaitForCacheSync(std::chrono::milliseconds timeout) {
  const auto deadline = SteadyClock::now() + timeout;
  while (true) {
    {
      MutexLock lock(mu_);
      if (synced_) {
        return true;
      }
    }
    if (SteadyClock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void GangScheduler::Loop() {
  auto next_cycle = SteadyClock::now();
  while (true) {
    // A cycle on every change, and at least every interval for the decisions
    // that time alone makes (schedule timeouts, starvation, stale evictions).
    auto wake_at = next_cycle;
    for (const auto& [key, wait] : volume_waits_) {
      wake_at = std::min(wake_at, wait.deadline);  // to give it up on time
    }
    if (dashboard_pending_) {
      wake_at = std::min(wake_at, dashboard_published_ + kDashboardInterval);
    }
    const bool changed = TakeInbox(wake_at);
    bool requested = false;
    bool active = false;
    std::chrono::seconds interval;
    {
      MutexLock lock(mu_);
      if (stopping_) {
        return;
      }
      requested = std::exchange(cycle_requested_, false);
      active = active_;
      interval = cycle_interval_;
    }
    PublishCacheFigures();
    PublishDashboard();
    if (!active || !cache_.HasSynced()) {
      next_cycle = SteadyClock::now() + interval;
      continue;
    }
    const bool given_up = AdvanceVolumeWaits();
    if (!changed && !given_up && !requested && SteadyClock::now() < next_cycle) {
      continue;  // a status update that changes no plan
    }
    RunOneCycle();
    PublishCacheFigures();
    PublishDashboard();
    next_cycle = SteadyClock::now() + interval;
  }
}

bool GangScheduler::TakeInbox(SteadyClock::time_point deadline) {
  bool changed = false;
  for (Delta& delta : feed_.Take(deadline)) {
    changed = cache_.Apply(std::move(delta)) || changed;
  }
  std::vector<BindOutcome> outcomes;
  std::vector<ClaimWriteOutcome> claim_outcomes;
  {
    MutexLock lock(mu_);
    outcomes.swap(bind_outcomes_);
    claim_outcomes.swap(claim_outcomes_);
  }
  for (ClaimWriteOutcome& outcome : claim_outcomes) {
    auto wait = volume_waits_.find(outcome.key);
    if (wait == volume_waits_.end()) {
      continue;
    }
    wait->second.written = true;
    wait->second.write_error = std::move(outcome.status);
  }
  for (BindOutcome& outcome : outcomes) {
    changed = changed || !outcome.failed.empty();
    ApplyBindOutcome(std::move(outcome));
  }
  return changed;
}

bool GangScheduler::AdvanceVolumeWaits() {
  const auto now = SteadyClock::now();
  bool given_up = false;
  for (auto it = volume_waits_.begin(); it != volume_waits_.end();) {
    VolumeWait& wait = it->second;
    Status failure = wait.write_error;
    bool ready = false;
    if (failure.ok()) {
      const AwaitedClaims claims = CheckAwaitedClaims(cache_.snapshot().storage(), wait.awaited);
      failure = claims.failure;
      ready = wait.written && claims.AllBound();
      if (failure.ok() && !ready && now >= wait.deadline) {
        failure = Status(StatusCode::kTimeout,
                         "claims not bound within the volume bind timeout: " +
                             (wait.written ? Join(claims.unbound) : "(writes unfinished)"));
      }
    }
    if (failure.ok() && !ready) {
      ++it;
      continue;
    }
    if (ready) {
      binder_->Submit(std::move(wait.gang));
      it = volume_waits_.erase(it);
      continue;
    }
    // Given up, as a failed bind of a gang none of whose members bound: the
    // members are pending again, the claims' assumptions go, what was written
    // stays (a pre-bound volume, a selected node) and the next plan honours it.
    const GangBind& gang = wait.gang;
    spdlog::warn("gang {}: volumes not bound ({}); planning it again", gang.key,
                 failure.ToString());
    // Counted before the reporter may write what anyone can see.
    ++stats_.groups_rolled_back;
    for (const PodRef& member : gang.members) {
      (void)cache_.ForgetAssumed(member.namespace_name, member.name);
      reporter_->Mark(member.namespace_name, member.name,
                      {{"PodScheduled", false, std::string(api::kVolumeBindingReason),
                        "gang " + gang.group_name + ": " + failure.message()}});
    }
    for (const PodRef& member : gang.surplus) {
      surplus_.erase(PodKey(member.namespace_name, member.name));
    }
    RestoreClaimDecisions(cache_.snapshot().storage(), wait.decisions);
    events_->Record(PodReference(gang.members.front()), k8s::EventType::kWarning, "FailedBinding",
                    "gang " + gang.group_name + " placed, but its volumes were not bound: " +
                        failure.message() + "; it is planned again");
    it = volume_waits_.erase(it);
    given_up = true;
  }
  return given_up;
}

void GangScheduler::ApplyBindOutcome(BindOutcome outcome) {
  for (const std::string& key : outcome.released_surplus) {
    surplus_.erase(key);
  }
  // The hold before the members are forgotten: no cycle may see them
  // pending beside members that are being deleted.
  if (outcome.hold) {
    rolling_back_[outcome.key] = std::move(*outcome.hold);
  }
  for (const PodRef& member : outcome.failed) {
    (void)cache_.ForgetAssumed(member.namespace_name, member.name);
  }
}

std::optional<PodConditionWrite> GangScheduler::NextStanding(const DecisionCopy& decision) {
  if (decision.started || decision.waiting_reason.empty() || !decision.carrier) {
    return std::nullopt;
  }
  const PodRef& carrier = *decision.carrier;
  const bool still_pending =
      std::any_of(decision.pending.begin(), decision.pending.end(),
                  [&](const PodRef& member) { return member.name == carrier.name; });
  if (!still_pending) {
    return std::nullopt;
  }
  const api::QueueStanding standing{decision.queue, decision.queue_position,
                                    decision.waiting_reason};
  const auto now = SteadyClock::now();
  auto it = standings_.find(decision.key);
  const StandingWritten* last = it == standings_.end() ? nullptr : &it->second;
  if (!StandingNeedsWrite(last, standing, carrier.name, now, kPositionRefresh)) {
    return std::nullopt;
  }
  if (standing.reason == api::kReasonNeverFits &&
      (last == nullptr || last->standing.reason != api::kReasonNeverFits)) {
    events_->Record(decision.owner, k8s::EventType::kWarning, std::string(api::kReasonNeverFits),
                    "gang " + decision.group_name +
                        " can never start on this cluster's nodes: " + decision.reason);
  }
  if (last != nullptr && last->pod != carrier.name) {
    reporter_->Mark(decision.namespace_name, last->pod, {GangPlacedCondition()});
  }
  standings_[decision.key] = StandingWritten{standing, carrier.name, now};
  return GangWaitingCondition(standing);
}

void GangScheduler::ClearStanding(const std::string& key) {
  auto it = standings_.find(key);
  if (it == standings_.end()) {
    return;
  }
  const size_t slash = key.find('/');
  reporter_->Mark(key.substr(0, slash), it->second.pod, {GangPlacedCondition()});
  standings_.erase(it);
}

std::shared_ptr<const DashboardState> GangScheduler::Dashboard() const {
  MutexLock lock(mu_);
  return dashboard_;
}

void GangScheduler::PublishDashboard() {
  const auto now = SteadyClock::now();
  if (!dashboard_enabled_ || !cache_.HasSynced()) {
    return;
  }
  if (now - dashboard_published_ < kDashboardInterval) {
    dashboard_pending_ = true;  // the loop wakes to publish it
    return;
  }
  dashboard_published_ = now;
  dashboard_pending_ = false;
  PolicyConfig policy;
  std::vector<std::string> levels;
  bool leading = false;
  {
    MutexLock lock(mu_);
    policy = policy_config_;
    levels = planner_config_.topology_levels;
    leading = active_;
  }
  auto state = std::make_shared<DashboardState>();
  state->at =
      api::FormatTime(std::chrono::time_point_cast<std::chrono::seconds>(api::Clock::now()));
  state->leading = leading;
  state->gpus = config_.gpu_resources;
  const Snapshot& snapshot = cache_.snapshot();
  state->map = BuildGpuMap(snapshot, config_.gpu_resources, levels);
  const QueueTable table(policy.queues);
  state->queues = BuildQueueViews(
      FairShare::FromSnapshot(snapshot, table, policy, config_.gpu_resources, &queue_usage_),
      cache_.Pending());
  if (leading) {
    for (const auto& [queue, waiting] : last_waiting_) {
      AddWaiting(state->queues, queue, waiting);
    }
  }
  state->running = BuildRunningJobs(snapshot, config_.gpu_resources);
  MutexLock lock(mu_);
  dashboard_ = std::move(state);
}

void GangScheduler::SeedServiceFromJobs(const std::vector<const PodInfo*>& pending,
                                        Timestamp now) {
  const TenancyDirectory& directory = cache_.directory();
  std::unordered_set<std::string> recorded;
  for (ServiceRecord& record : policy_state_.service) {
    recorded.insert(record.Key());
    const TrustedJob* job = directory.FindJob(record.namespace_name, record.name);
    if (job != nullptr && job->attained_gpu_seconds) {
      record.gpu_seconds =
          std::max(record.gpu_seconds, static_cast<double>(*job->attained_gpu_seconds));
    }
  }
  auto seed = [&](const std::string& namespace_name, const std::string& name,
                  const std::string& queue) {
    const TrustedJob* job = directory.FindJob(namespace_name, name);
    if (job == nullptr || job->ended || job->attained_gpu_seconds.value_or(0) <= 0 ||
        !recorded.insert(PodKey(namespace_name, name)).second) {
      return;
    }
    SeedService(policy_state_.service, namespace_name, name, queue,
                static_cast<double>(*job->attained_gpu_seconds), now);
  };
  if (!service_seeded_ && cache_.HasSynced()) {
    // Once: running gangs never seen waiting again go on from what they had.
    service_seeded_ = true;
    for (const auto& [key, job] : directory.jobs()) {
      seed(job.namespace_name, job.name, job.spec.queue);
    }
  }
  for (const PodInfo* pod : pending) {
    if (!pod->job_name.empty()) {
      seed(pod->namespace_name, pod->job_name, std::string(QueueOfPod(*pod)));
    }
  }
}

void GangScheduler::RunOneCycle() {
  const auto started = SteadyClock::now();
  const Timestamp now = std::chrono::time_point_cast<std::chrono::seconds>(api::Clock::now());
  PlannerConfig planner;
  PolicyConfig policy;
  {
    MutexLock lock(mu_);
    planner = planner_config_;
    policy = policy_config_;
  }
  // Restarting gangs keep the nodes they just left from others' growth.
  for (const SchedulerCache::Vacated& vacated : cache_.TakeVacated()) {
    HoldForRestart(policy_state_, vacated.group_key, vacated.namespace_name, vacated.job_name,
                   vacated.node_name, now);
  }
  // Gangs whose rolled-back members are gone may be planned again.
  std::erase_if(rolling_back_,
                [this](const auto& entry) { return RollbackDone(entry.second, cache_); });
  std::unordered_set<std::string> still_pending;
  std::vector<const PodInfo*> pending;
  for (const PodInfo* pod : cache_.Pending()) {
    still_pending.insert(pod->Key());
    // A gang being rolled back, or whose volumes are being bound, is not
    // planned again until that is over.
    if (pod->job_name.empty() || (rolling_back_.empty() && volume_waits_.empty())) {
      pending.push_back(pod);
      continue;
    }
    const std::string group_key = PodKey(pod->namespace_name, pod->job_name);
    if (!rolling_back_.contains(group_key) && !volume_waits_.contains(group_key)) {
      pending.push_back(pod);
    }
  }
  const bool service_on = OrdersByService(policy);
  if (service_on) {
    SeedServiceFromJobs(pending, now);
  } else {
    policy_state_.service.clear();
  }
  std::vector<DecisionCopy> decisions;
  std::vector<Eviction> evictions;
  std::vector<PolicyCycleResult::Rebalanced> rebalanced;
  if (!pending.empty()) {
    // Every pending group goes in, so reservations and evictions in flight
    // follow the groups they are for.
    Snapshot& snapshot = cache_.snapshot();
    PolicyCycleResult result =
        PlanCycleWithPolicies(snapshot, BuildGroups(pending, snapshot), policy, planner, now,
                              policy_state_, next_start_slot_, &queue_usage_);
    policy_state_ = std::move(result.state);
    next_start_slot_ = result.next_start_slot;
    evictions = std::move(result.evictions);
    rebalanced = std::move(result.rebalanced);
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
      copy.placement = decision.plan.placement;
      copy.claim_decisions = decision.plan.claim_decisions;
      copy.creation_time = decision.group.creation_time;
      copy.waiting_reason = std::string(decision.waiting_reason);
      copy.queue_position = decision.queue_position;
      if (const PodInfo* carrier = StandingCarrier(decision.group.pending)) {
        copy.carrier = PodRefOf(*carrier);
        copy.owner = OwnerReference(*carrier);
      }
      copy.awaited_claims = copy.claim_decisions;
      for (const auto& assignment : decision.plan.assignments) {
        copy.assignments.push_back(PodRefOf(*assignment.pod, assignment.node_name));
        AddClaimsToAwait(snapshot.storage(), *assignment.pod, assignment.node_name,
                         copy.awaited_claims);
        cache_.Assume(assignment.pod->Key());
      }
      for (const PodInfo* pod : decision.plan.surplus) {
        copy.surplus.push_back(PodRefOf(*pod));
      }
      for (const PodInfo* pod : decision.group.pending) {
        copy.pending.push_back(PodRefOf(*pod));
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
    std::vector<QueueReport> queues;
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
    MutexLock lock(mu_);
    queue_reports_ = std::move(queues);
  } else if (service_on && !policy_state_.service.empty()) {
    // No cycle: the ledger is kept current all the same.
    RefreshService(policy_state_.service, cache_.snapshot(), planner.gpu_resources, now);
  }
  if (service_on && service_writer_) {
    for (ServiceWrite& write :
         ServiceWrites(policy_state_.service, ServiceThresholds(policy.attained_service),
                       cache_.directory(), service_written_, SteadyClock::now())) {
      service_writer_->Write(std::move(write));
    }
  }

  if (dashboard_enabled_) {
    last_waiting_.clear();
    for (const DecisionCopy& decision : decisions) {
      if (decision.outcome != PlanOutcome::kPlaced && !decision.started &&
          !decision.waiting_reason.empty()) {
        last_waiting_.emplace_back(
            decision.queue,
            WaitingJob{decision.namespace_name, decision.group_name, decision.queue_position,
                       decision.waiting_reason, decision.reason});
      }
    }
  }
  uint64_t waiting = 0;
  for (auto& decision : decisions) {
    std::erase_if(decision.pending, [this](const PodRef& member) {
      return surplus_.contains(PodKey(member.namespace_name, member.name));
    });
    if (decision.pending.empty() && decision.outcome != PlanOutcome::kPlaced) {
      continue;  // only surplus members wait: they are being deleted
    }
    if (decision.outcome == PlanOutcome::kPlaced && !decision.assignments.empty()) {
      GangBind gang;
      gang.key = decision.key;
      gang.namespace_name = decision.namespace_name;
      gang.group_name = decision.group_name;
      gang.summary = decision.summary;
      gang.placement = decision.placement;
      gang.grows = decision.started;
      gang.members = std::move(decision.assignments);
      gang.surplus = std::move(decision.surplus);
      gang.creation_time = decision.creation_time;
      // Recorded now, so the next cycle never reports them as waiting,
      // whichever finishes first: it or the binds that mark them.
      for (const PodRef& member : gang.surplus) {
        surplus_.insert(PodKey(member.namespace_name, member.name));
      }
      reported_.erase(gang.key);
      ClearStanding(gang.key);
      if (!decision.awaited_claims.empty()) {
        VolumeWait wait;
        {
          MutexLock lock(mu_);
          wait.deadline = SteadyClock::now() + volume_bind_timeout_;
        }
        wait.written = decision.claim_decisions.empty();
        if (!wait.written) {
          claim_writer_->Submit(gang.key, decision.claim_decisions);
        }
        wait.gang = std::move(gang);
        wait.decisions = std::move(decision.claim_decisions);
        wait.awaited = std::move(decision.awaited_claims);
        volume_waits_[wait.gang.key] = std::move(wait);
        continue;
      }
      binder_->Submit(std::move(gang));
      continue;
    }
    if (decision.outcome == PlanOutcome::kPlaced) {
      reported_.erase(decision.key);
      ClearStanding(decision.key);
      continue;
    }
    if (!decision.started) {
      ++waiting;
    }
    if (decision.cause == WaitCause::kAssembling) {
      continue;  // not every member pod exists yet: nothing to report
    }
    // The standing goes in the carrier's PodScheduled write when there is
    // one: one patch, not two.
    std::optional<PodConditionWrite> standing = NextStanding(decision);
    const std::string reason = WaitingReason(decision);
    std::string& said = reported_[decision.key];
    if (said == reason + ": " + decision.reason) {
      if (standing) {
        reporter_->Mark(decision.namespace_name, decision.carrier->name, {std::move(*standing)});
      }
      continue;  // said already
    }
    said = reason + ": " + decision.reason;
    for (const PodRef& member : decision.pending) {
      std::vector<PodConditionWrite> conditions = {
          {"PodScheduled", false, reason, decision.reason}};
      if (standing && member.name == decision.carrier->name) {
        conditions.push_back(std::move(*standing));
        standing.reset();
      }
      reporter_->Mark(member.namespace_name, member.name, std::move(conditions));
    }
    // A running group whose extra members wait is not news worth an Event,
    // nor a gang held by scheduling gates (kube-scheduler says nothing either).
    if (!decision.pending.empty() && !decision.started &&
        decision.cause != WaitCause::kSchedulingGated) {
      if (decision.untrusted) {
        events_->Record(PodReference(decision.pending.front()), k8s::EventType::kWarning,
                        std::string(api::kUntrustedMemberReason), decision.reason);
      } else {
        events_->Record(PodReference(decision.pending.front()), k8s::EventType::kWarning,
                        "FailedScheduling",
                        "gang " + decision.group_name + " waits: " + decision.reason);
      }
    }
  }
  evictor_->CarryOut(evictions, policy, now, policy_state_);
  // Why a job shrank, on the job: its pods' Reclaimed Events name the
  // receiver, this one the shares.
  for (const PolicyCycleResult::Rebalanced& shrunk : rebalanced) {
    if (!shrunk.job_uid.empty()) {
      events_->Record(k8s::ObjectReference{std::string(api::kApiVersion), std::string(api::kKind),
                                           shrunk.namespace_name, shrunk.job_name, shrunk.job_uid,
                                           "", ""},
                      k8s::EventType::kNormal, "Rebalanced", shrunk.message);
    }
  }
  // Forget surplus pods that are gone (deleted, or bound after all).
  std::erase_if(surplus_,
                [&still_pending](const std::string& key) { return !still_pending.contains(key); });
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
  if (standings_.size() > decisions.size()) {
    std::unordered_map<std::string, StandingWritten> kept;
    for (const auto& decision : decisions) {
      auto it = standings_.find(decision.key);
      if (it != standings_.end()) {
        kept.emplace(it->first, std::move(it->second));
      }
    }
    standings_ = std::move(kept);
  }
  stats_.groups_waiting = waiting;
  ++stats_.cycles;
  stats_.last_cycle_micros =
      std::chrono::duration_cast<std::chrono::microseconds>(SteadyClock::now() - started).count();
}

}  // namespace hybridjob::scheduler
