#include <algorithm>
#include <future>
#include <map>
#include <set>
#include <system_error>

#include <spdlog/spdlog.h>

#include <hybridjob/api/json.h>
#include <hybridjob/api/labels.h>
#include <hybridjob/api/spec_edits.h>
#include <hybridjob/api/time.h>
#include <hybridjob/controller/children.h>
#include <hybridjob/controller/job_controller.h>
#include <hybridjob/controller/planner.h>
#include <hybridjob/controller/ssh_keys.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/base64.h>
#include <hybridjob/k8s/object_meta.h>

namespace hybridjob::controller {
namespace {

constexpr const char* kByJob = "job";

// The job a pod or other child belongs to, from its job-name label.
std::string JobKeyOfLabels(const nlohmann::json& object) {
  const std::string job = k8s::LabelOf(object, api::kJobNameLabel);
  return job.empty() ? std::string() : k8s::NamespaceOf(object) + "/" + job;
}

k8s::ReflectorOptions Reflect(k8s::Resource resource, const std::string& ns,
                              const std::string& label_selector = "") {
  k8s::ReflectorOptions options;
  options.resource = std::move(resource);
  options.namespace_name = ns;
  options.label_selector = label_selector;
  return options;
}

std::vector<nlohmann::json> Copies(
    const std::vector<std::shared_ptr<const nlohmann::json>>& items) {
  std::vector<nlohmann::json> out;
  out.reserve(items.size());
  for (const auto& item : items) {
    out.push_back(*item);
  }
  return out;
}

std::string JobKeyOf(const CachedPod& pod) {
  return pod.pod.job_name.empty() ? std::string() : pod.namespace_name + "/" + pod.pod.job_name;
}

using k8s::ResourceVersionOf;
using ChildKind = Expectations::ChildKind;

// Pod creates (or deletes) of one plan in flight at once, at most.
constexpr size_t kMaxConcurrentPodWrites = 16;

bool IsPodWrite(const Action& action) {
  return std::holds_alternative<CreatePod>(action) || std::holds_alternative<DeletePod>(action) ||
         std::holds_alternative<PatchPodGroupSpec>(action);
}

// How soon a job waiting for its expectations is looked at again when no
// event wakes it earlier.
constexpr std::chrono::milliseconds kExpectationRecheck{1000};

Status IgnoreAlreadyExists(const Result<nlohmann::json>& result) {
  if (result.ok() || k8s::IsAlreadyExists(result.status())) {
    return Status::Ok();
  }
  return result.status();
}

}  // namespace

JobController::JobController(k8s::ApiClient& client, ControllerOptions options,
                             k8s::WorkQueueObserver queue_observer)
    : client_(client),
      options_(std::move(options)),
      expectations_(
          std::chrono::duration_cast<Expectations::Clock::duration>(options_.expectations_timeout)),
      pending_statuses_(std::chrono::duration_cast<PendingStatusWrites::Clock::duration>(
          options_.status_batch_period)) {
  queue_ = std::make_unique<k8s::WorkQueue>(nullptr, std::move(queue_observer));
  events_ = std::make_unique<k8s::EventRecorder>(client_, "hybridjob-controller");
  const std::string ns = options_.namespace_name;
  const std::string owned = std::string(api::kJobNameLabel);  // "has the label"

  k8s::InformerOptions<nlohmann::json> jobs;
  jobs.reflector = Reflect(k8s::resources::HybridJobs(), ns);
  jobs_ = std::make_unique<k8s::Informer<nlohmann::json>>(client_, jobs);
  k8s::EventHandler<nlohmann::json> on_job;
  auto enqueue_job = [this](const std::shared_ptr<const nlohmann::json>& job) {
    queue_->Add(k8s::ObjectKeyOf(*job));
  };
  on_job.on_add = enqueue_job;
  on_job.on_update = [enqueue_job](const auto&, const auto& job) { enqueue_job(job); };
  on_job.on_delete = [enqueue_job](const auto& job, bool) { enqueue_job(job); };
  jobs_->AddEventHandler(on_job);

  k8s::InformerOptions<CachedPod> pods;
  pods.reflector = Reflect(k8s::resources::Pods(), ns, owned);
  pods.decode = [](nlohmann::json&& pod) -> Result<CachedPod> {
    CachedPod cached;
    cached.namespace_name = k8s::NamespaceOf(pod);
    cached.pod = ObservePod(pod);
    return cached;
  };
  pods_ = std::make_unique<k8s::Informer<CachedPod>>(client_, pods);
  pods_->AddIndexer(kByJob, [](const CachedPod& pod) -> std::vector<std::string> {
    if (pod.pod.job_name.empty()) {
      return {};
    }
    return {pod.namespace_name + "/" + pod.pod.job_name};
  });
  // Pod events meet the expectations of the reconciler's own writes before
  // they wake the job, so the reconcile they cause sees them met.
  k8s::EventHandler<CachedPod> on_pod;
  on_pod.on_add = [this](const std::shared_ptr<const CachedPod>& pod) {
    const std::string key = JobKeyOf(*pod);
    if (!key.empty()) {
      expectations_.PodSeen(key, pod->pod);
      queue_->Add(key);
    }
  };
  on_pod.on_update = [this](const std::shared_ptr<const CachedPod>& old,
                            const std::shared_ptr<const CachedPod>& pod) {
    const std::string old_key = JobKeyOf(*old);
    const std::string key = JobKeyOf(*pod);
    if (old->pod.uid != pod->pod.uid && !old_key.empty()) {
      // A new pod took the name: the old one is gone.
      expectations_.PodGone(old_key, old->pod);
    }
    if (old_key != key && !old_key.empty()) {
      queue_->Add(old_key);
    }
    if (!key.empty()) {
      expectations_.PodSeen(key, pod->pod);
      // A job whose members moved on (bound: its cluster spec is due) goes
      // ahead of jobs a burst queued for their first pass.
      if (MemberProgressed(old->pod, pod->pod)) {
        queue_->AddUrgent(key);
      } else {
        queue_->Add(key);
      }
    }
  };
  on_pod.on_delete = [this](const std::shared_ptr<const CachedPod>& pod, bool) {
    const std::string key = JobKeyOf(*pod);
    if (!key.empty()) {
      departed_.PodDeleted(key, pod->pod, DepartedMembers::Clock::now());
      expectations_.PodGone(key, pod->pod);
      queue_->AddUrgent(key);
    }
  };
  pods_->AddEventHandler(on_pod);

  auto child_informer = [&](k8s::Resource resource) {
    k8s::InformerOptions<nlohmann::json> child;
    child.reflector = Reflect(std::move(resource), ns, owned);
    auto informer = std::make_unique<k8s::Informer<nlohmann::json>>(client_, child);
    informer->AddIndexer(kByJob, [](const nlohmann::json& object) -> std::vector<std::string> {
      std::string key = JobKeyOfLabels(object);
      if (key.empty()) {
        return {};
      }
      return {std::move(key)};
    });
    k8s::EventHandler<nlohmann::json> handler;
    auto enqueue = [this](const std::shared_ptr<const nlohmann::json>& object) {
      const std::string key = JobKeyOfLabels(*object);
      if (!key.empty()) {
        queue_->Add(key);
      }
    };
    handler.on_add = enqueue;
    handler.on_update = [enqueue](const auto&, const auto& object) { enqueue(object); };
    handler.on_delete = [enqueue](const auto& object, bool) { enqueue(object); };
    informer->AddEventHandler(handler);
    return informer;
  };
  services_ = child_informer(k8s::resources::Services());
  config_maps_ = child_informer(k8s::resources::ConfigMaps());
  claims_ = child_informer(k8s::resources::PersistentVolumeClaims());
  deployments_ = child_informer(k8s::resources::Deployments());
}

JobController::~JobController() {
  Stop();
}

void JobController::Start() {
  jobs_->Start();
  pods_->Start();
  services_->Start();
  config_maps_->Start();
  claims_->Start();
  deployments_->Start();
}

bool JobController::WaitForCacheSync(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto remaining = [&] {
    return std::chrono::duration_cast<k8s::Duration>(deadline - std::chrono::steady_clock::now());
  };
  return jobs_->WaitForSync(remaining()) && pods_->WaitForSync(remaining()) &&
         services_->WaitForSync(remaining()) && config_maps_->WaitForSync(remaining()) &&
         claims_->WaitForSync(remaining()) && deployments_->WaitForSync(remaining());
}

void JobController::StartWorkers() {
  MutexLock lock(mu_);
  if (active_ || stopping_) {
    return;
  }
  active_ = true;
  {
    // Level-based: every job is looked at once on becoming the leader.
    for (const auto& key : jobs_->store().Keys()) {
      queue_->Add(key);
    }
    if (workers_.empty()) {
      for (int i = 0; i < std::max(1, options_.workers); ++i) {
        workers_.emplace_back([this] { Worker(); });
      }
    }
  }
}

void JobController::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
    active_ = false;
  }
  // Workers finish the reconcile they are in (up to its next write) and
  // skip the keys still queued: a stopping controller, which may have lost
  // its leadership, must not go on writing.
  halting_ = true;
  queue_->ShutDown();
  for (auto& worker : workers_) {
    worker.join();
  }
  workers_.clear();
  for (auto* informer :
       {jobs_.get(), services_.get(), config_maps_.get(), claims_.get(), deployments_.get()}) {
    informer->Stop();
  }
  pods_->Stop();
  events_->Flush(std::chrono::seconds(2));
  events_->Stop();
}

size_t JobController::QueueDepth() const {
  return queue_->Len();
}

std::vector<std::pair<std::string, int>> JobController::JobsByPhase() const {
  std::map<std::string, int> counts;
  for (const auto& job : jobs_->store().List()) {
    std::string phase;
    if (job->contains("status") && (*job)["status"].is_object()) {
      phase = (*job)["status"].value("phase", "");
    }
    ++counts[phase];
  }
  return {counts.begin(), counts.end()};
}

void JobController::Worker() {
  while (auto key = queue_->Get()) {
    if (halting_) {
      queue_->Done(*key);
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    Status status = Reconcile(*key);
    ++stats_.reconciles;
    if (reconcile_observer_) {
      reconcile_observer_(status.ok(), std::chrono::steady_clock::now() - start);
    }
    if (!status.ok()) {
      ++stats_.reconcile_errors;
      if (status.code() == StatusCode::kCancelled) {
        spdlog::debug("job {}: {}", *key, status.ToString());
      } else if (k8s::IsConflict(status)) {
        ++stats_.conflicts;
        spdlog::debug("job {}: {} (requeued)", *key, status.ToString());
      } else {
        spdlog::warn("job {}: {} (requeued)", *key, status.ToString());
      }
      // A server that said when to come back (429 Retry-After) is not asked
      // sooner; the key's back-off grows either way.
      queue_->AddRateLimited(*key, status.retry_after().value_or(std::chrono::seconds{0}));
    }
    queue_->Done(*key);
  }
}

Status JobController::Reconcile(const std::string& key) {
  auto job = jobs_->store().Get(key);
  if (job == nullptr) {
    expectations_.Forget(key);
    departed_.Forget(key);
    pending_statuses_.Forget(key);
    refused_.Forget(key);
    {
      MutexLock lock(mu_);
      config_maps_found_.erase(key);
      ssh_secrets_made_.erase(key);
      started_specs_.erase(key);
    }
    queue_->Forget(key);
    return Status::Ok();  // deleted: its children go with it by ownerReferences
  }
  auto read_caches = [&] {
    Observed read;
    for (const auto& pod : pods_->store().ByIndex(kByJob, key)) {
      read.pods.push_back(pod->pod);
    }
    read.services = Copies(services_->store().ByIndex(kByJob, key));
    read.config_maps = Copies(config_maps_->store().ByIndex(kByJob, key));
    read.claims = Copies(claims_->store().ByIndex(kByJob, key));
    read.deployments = Copies(deployments_->store().ByIndex(kByJob, key));
    return read;
  };
  Observed observed = read_caches();
  // Never plan from caches that have not yet shown this controller's own
  // writes: a failed member already deleted would be restarted twice.
  const auto clock_now = Expectations::Clock::now();
  switch (expectations_.Check(key, observed.pods, ResourceVersionOf(*job), clock_now, &observed)) {
    case Expectations::State::kPending: {
      ++stats_.expectation_waits;
      spdlog::debug("job {}: waiting for the caches to show {}", key, expectations_.Describe(key));
      const auto recheck = std::min<Expectations::Clock::duration>(
          kExpectationRecheck,
          expectations_.TimeToExpiry(key, clock_now) + std::chrono::milliseconds(1));
      queue_->AddAfter(key, std::chrono::duration_cast<k8s::Duration>(recheck));
      return Status::Ok();
    }
    case Expectations::State::kExpired:
      ++stats_.expectations_expired;
      spdlog::warn(
          "job {}: the caches did not show the controller's own writes within {} ms; "
          "planning anyway",
          key, options_.expectations_timeout.count());
      break;
    case Expectations::State::kSatisfied:
      break;
  }
  // The informers' handlers may have met expectations after the caches were
  // read (a pod created by the last pass arrived in between): read them again,
  // so the plan sees at least every write the expectations saw.
  observed = read_caches();
  observed.departed = departed_.For(key, observed.pods, clock_now);
  observed.refused = refused_.For(key, k8s::UidOf(*job));
  // A pass builds on the status still waiting to be written, if any.
  nlohmann::json planned = *job;
  if (std::optional<api::HybridJobStatus> unwritten =
          pending_statuses_.Pending(key, k8s::UidOf(*job))) {
    planned["status"] = api::ToJson(*unwritten);
  }
  // Parsed once for the run's spec and the planner.
  const Result<api::HybridJob> parsed = api::ParseHybridJob(planned);
  if (parsed.ok()) {
    if (Status read = ReadStartedSpec(key, *parsed, observed); !read.ok()) {
      return read;
    }
  }
  observed.missing = MissingConfigMaps(key, planned, observed);

  const auto now = std::chrono::time_point_cast<std::chrono::seconds>(api::Clock::now());
  Plan plan = parsed.ok() ? PlanJob(*parsed, observed, now, options_.planner)
                          : PlanJob(planned, observed, now, options_.planner);
  const std::optional<PendingStatusWrites::Clock::duration> status_due =
      BatchStatusWrite(key, *job, plan);
  std::set<std::string> created_pods;  // by this pass, for the Created Event
  for (size_t i = 0; i < plan.actions.size();) {
    if (halting_) {
      return Cancelled("the controller is stopping");
    }
    if (const auto* event = std::get_if<RecordEvent>(&plan.actions[i]);
        event != nullptr && event->created) {
      RecordCreatedEvent(*job, *event, created_pods);
      ++i;
      continue;
    }
    // A run of pod creates or of pod deletes holds independent writes: they
    // go out together. Everything else is applied one by one, in order.
    size_t end = i + 1;
    if (IsPodWrite(plan.actions[i])) {
      while (end < plan.actions.size() && plan.actions[end].index() == plan.actions[i].index()) {
        ++end;
      }
    }
    if (Status status = ApplyRun(key, *job, plan.actions, i, end, &created_pods); !status.ok()) {
      // A refused create stops the plan; the Created Event after the creates
      // still says which members exist.
      for (size_t rest = end; rest < plan.actions.size(); ++rest) {
        if (const auto* event = std::get_if<RecordEvent>(&plan.actions[rest]);
            event != nullptr && event->created) {
          RecordCreatedEvent(*job, *event, created_pods);
        }
      }
      return status;
    }
    i = end;
  }
  queue_->Forget(key);
  if (plan.requeue_after) {
    queue_->AddAfter(key, std::chrono::duration_cast<k8s::Duration>(*plan.requeue_after));
  }
  if (status_due) {
    queue_->AddAfter(
        key, std::chrono::duration_cast<k8s::Duration>(*status_due) + std::chrono::milliseconds(1));
  }
  return Status::Ok();
}

std::optional<PendingStatusWrites::Clock::duration> JobController::BatchStatusWrite(
    const std::string& key, const nlohmann::json& job, Plan& plan) {
  std::optional<api::HybridJobStatus> planned;
  size_t at = 0;
  for (size_t i = 0; i < plan.actions.size(); ++i) {
    if (auto* update = std::get_if<UpdateStatus>(&plan.actions[i])) {
      planned = std::move(update->status);
      plan.actions.erase(plan.actions.begin() + static_cast<std::ptrdiff_t>(i));
      at = i;
      break;
    }
  }
  auto status = job.find("status");
  const api::HybridJobStatus written = status != job.end() && status->is_object()
                                           ? api::ParseHybridJobStatus(*status)
                                           : api::HybridJobStatus{};
  PendingStatusWrites::Decision decision = pending_statuses_.Decide(
      key, k8s::UidOf(job), written, planned, PendingStatusWrites::Clock::now());
  if (decision.write) {
    plan.actions.insert(plan.actions.begin() + static_cast<std::ptrdiff_t>(at),
                        UpdateStatus{std::move(decision.status)});
  } else if (planned) {
    ++stats_.status_writes_batched;
  }
  return decision.recheck;
}

void JobController::RecordCreatedEvent(const nlohmann::json& job, const RecordEvent& planned,
                                       const std::set<std::string>& created_pods) {
  if (std::optional<RecordEvent> event = CreatedEventOnceApplied(planned, created_pods)) {
    events_->Record(
        k8s::ReferenceTo(job),
        event->type == EventType::kWarning ? k8s::EventType::kWarning : k8s::EventType::kNormal,
        event->reason, event->message);
  }
}

Status JobController::ApplyRun(const std::string& key, const nlohmann::json& job,
                               const std::vector<Action>& actions, size_t begin, size_t end,
                               std::set<std::string>* created_pods) {
  auto apply = [&](size_t i) {
    spdlog::debug("job {}: {}", key, Describe(actions[i]));
    Status status = Apply(key, job, actions[i]);
    if (!status.ok()) {
      return status.WithContext(Describe(actions[i]));
    }
    ++stats_.actions_applied;
    return status;
  };
  // Called on this thread only, once a write's outcome is known.
  auto took = [&](size_t i) {
    if (const auto* create = std::get_if<CreatePod>(&actions[i])) {
      created_pods->insert(k8s::NameOf(create->pod));
    }
  };
  // Batches double from one, as client-go's slow start: a run that cannot
  // succeed (quota, admission) fails after one write, not after all of them.
  size_t batch = 1;
  for (size_t i = begin; i < end;) {
    const size_t n = std::min(batch, end - i);
    if (n == 1) {
      if (Status status = apply(i); !status.ok()) {
        return status;
      }
      took(i);
    } else {
      std::vector<std::pair<size_t, std::future<Status>>> writes;
      writes.reserve(n);
      Status first_error;
      for (size_t j = i; j < i + n; ++j) {
        try {
          writes.emplace_back(j, std::async(std::launch::async, apply, j));
        } catch (const std::system_error&) {
          // No thread to be had: write this one here and now.
          if (Status status = apply(j); status.ok()) {
            took(j);
          } else if (first_error.ok()) {
            first_error = std::move(status);
          }
        }
      }
      for (auto& [j, write] : writes) {
        if (Status status = write.get(); status.ok()) {
          took(j);
        } else if (first_error.ok()) {
          first_error = std::move(status);
        }
      }
      if (!first_error.ok()) {
        return first_error;
      }
    }
    i += n;
    batch = std::min(batch * 2, kMaxConcurrentPodWrites);
  }
  return Status::Ok();
}

Status JobController::ReadStartedSpec(const std::string& key, const api::HybridJob& job,
                                      Observed& observed) {
  if (!api::NeedsStartedSpec(job)) {
    return Status::Ok();
  }
  const std::string& revision = job.status.run_spec->revision;
  {
    // A revision never changes: read once per job and run.
    MutexLock lock(mu_);
    auto it = started_specs_.find(key);
    if (it != started_specs_.end() && it->second.uid == job.metadata.uid &&
        it->second.revision == revision) {
      observed.run_spec = it->second.spec;
      return Status::Ok();
    }
  }
  Result<api::HybridJobSpec> spec = NotFound("the run's record names no ControllerRevision");
  if (!revision.empty()) {
    Result<nlohmann::json> found =
        client_.Get(k8s::resources::ControllerRevisions(), JobNamespace(job), revision);
    if (!found.ok() && !k8s::IsNotFound(found.status())) {
      return found.status().WithContext("reading the run's ControllerRevision " + revision);
    }
    spec = found.ok() ? StartedSpecOf(*found, job) : Result<api::HybridJobSpec>(found.status());
  }
  if (!spec.ok()) {
    spdlog::warn("job {}: the spec its run started with: {}", key, spec.status().ToString());
    observed.run_spec_lost = true;
    return Status::Ok();
  }
  observed.run_spec = *spec;
  MutexLock lock(mu_);
  started_specs_[key] =
      StartedSpec{.uid = job.metadata.uid, .revision = revision, .spec = std::move(*spec)};
  return Status::Ok();
}

std::vector<RequiredConfigMap> JobController::MissingConfigMaps(const std::string& key,
                                                                const nlohmann::json& job,
                                                                const Observed& observed) {
  const std::string uid = k8s::UidOf(job);
  {
    MutexLock lock(mu_);
    auto it = config_maps_found_.find(key);
    if (it != config_maps_found_.end() && it->second == uid) {
      return {};
    }
  }
  Result<api::HybridJob> parsed = api::ParseHybridJob(job);
  if (!parsed.ok()) {
    return {};
  }
  // The templates the run's members are built from, as the planner sees them.
  parsed->spec =
      api::EffectiveSpec(*parsed, observed.run_spec ? &*observed.run_spec : nullptr).spec;
  std::vector<RequiredConfigMap> missing;
  bool unknown = false;
  if ((!parsed->status.phase || !api::IsTerminal(*parsed->status.phase)) &&
      !parsed->status.HasTrueCondition(api::kConditionScheduled)) {
    for (const RequiredConfigMap& config_map : RequiredConfigMaps(*parsed)) {
      auto found =
          client_.Get(k8s::resources::ConfigMaps(), k8s::NamespaceOf(job), config_map.name);
      if (k8s::IsNotFound(found.status())) {
        missing.push_back(config_map);
      } else if (!found.ok()) {
        // Asked again next pass; meanwhile the members are not held back.
        spdlog::debug("job {}: checking {}: {}", key, Describe(config_map),
                      found.status().ToString());
        unknown = true;
      }
    }
  }
  // Once placed or finished, no member waits for its first placement.
  if (missing.empty() && !unknown) {
    MutexLock lock(mu_);
    config_maps_found_[key] = uid;
  }
  return missing;
}

Status JobController::CreateSshKeySecretOnce(const std::string& key, const nlohmann::json& job,
                                             nlohmann::json secret,
                                             const k8s::WriteOptions& write) {
  const std::string uid = k8s::UidOf(job);
  {
    MutexLock lock(mu_);
    auto it = ssh_secrets_made_.find(key);
    if (it != ssh_secrets_made_.end() && it->second == uid) {
      return Status::Ok();
    }
  }
  Result<SshKeyPair> pair = GenerateSshKeyPair(k8s::NameOf(secret));
  if (!pair.ok()) {
    return pair.status();
  }
  secret["data"] = {{std::string(kSshPrivateKeyKey), k8s::Base64Encode(pair->private_key_pem)},
                    {std::string(kSshPublicKeyKey), k8s::Base64Encode(pair->public_key)}};
  auto created = client_.Create(k8s::resources::Secrets(), k8s::NamespaceOf(job), secret, write);
  // AlreadyExists: made by an earlier pass or controller, which this one
  // cannot read (no Secret is ever read); its pods mount whatever is there.
  if (!created.ok() && !k8s::IsAlreadyExists(created.status())) {
    return created.status();
  }
  MutexLock lock(mu_);
  ssh_secrets_made_[key] = uid;
  return Status::Ok();
}

Status JobController::CreateChild(const std::string& key, Expectations::ChildKind kind,
                                  const k8s::Resource& resource, const std::string& ns,
                                  const nlohmann::json& object, const k8s::WriteOptions& write) {
  auto created = client_.Create(resource, ns, object, write);
  if (created.ok()) {
    // Until the cache shows it, the next pass would create it again.
    // AlreadyExists expects nothing: that object may be one the cache never
    // shows (without the job-name label).
    expectations_.ExpectChild(key, kind, k8s::NameOf(object), "", Expectations::Clock::now());
  }
  return IgnoreAlreadyExists(created);
}

nlohmann::json JobController::SignedMember(const nlohmann::json& job,
                                          const nlohmann::json& pod) const {
  if (options_.member_keys.empty()) {
    return pod;
  }
  // Signed now, as it is sent: the scheduler wants the signature close to
  // the creationTimestamp the API server gives the pod.
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  nlohmann::json signed_pod = pod;
  signed_pod["metadata"]["annotations"][std::string(api::kMemberSignatureAnnotation)] =
      api::SignMember(options_.member_keys,
                      {k8s::NamespaceOf(job), k8s::NameOf(pod), k8s::UidOf(job)}, now,
                      api::NewMemberNonce());
  return signed_pod;
}

Status JobController::Apply(const std::string& key, const nlohmann::json& job,
                            const Action& action) {
  const std::string ns = k8s::NamespaceOf(job);
  k8s::WriteOptions write;
  write.field_manager = options_.field_manager;
  return std::visit(
      [&](const auto& a) -> Status {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, CreatePod>) {
          auto created = client_.Create(k8s::resources::Pods(), ns, SignedMember(job, a.pod), write);
          if (created.ok()) {
            // AlreadyExists expects nothing: that pod may be one the cache
            // never shows (without the job-name label).
            expectations_.ExpectCreation(key, k8s::NameOf(a.pod), k8s::UidOf(*created),
                                         Expectations::Clock::now());
          }
          const StatusCode code = created.status().code();
          if (created.ok() || code == StatusCode::kAlreadyExists) {
            refused_.Created(key, k8s::NameOf(a.pod));
          } else if (code == StatusCode::kInvalid || code == StatusCode::kBadRequest ||
                     code == StatusCode::kForbidden) {
            // Refused by the API server (admission, quota, a template it will
            // not take): retrying will not help until something changes, so
            // say it where the user looks, as the ReplicaSet controller does,
            // and let the planner decide whether the job goes on without it.
            const ObservedPod pod = ObservePod(a.pod);
            refused_.Refused(key, k8s::UidOf(job),
                             {pod.name, pod.role, pod.index, created.status().message()});
            events_->Record(
                k8s::ReferenceTo(job), k8s::EventType::kWarning,
                std::string(api::kReasonFailedCreate),
                "creating pod " + k8s::NameOf(a.pod) + ": " + created.status().message());
          }
          return IgnoreAlreadyExists(created);
        } else if constexpr (std::is_same_v<T, CreateService>) {
          return CreateChild(key, ChildKind::kService, k8s::resources::Services(), ns, a.service,
                             write);
        } else if constexpr (std::is_same_v<T, CreateSshKeySecret>) {
          return CreateSshKeySecretOnce(key, job, a.secret, write);
        } else if constexpr (std::is_same_v<T, CreateRunRevision>) {
          // Named by a hash of the spec it holds: one that exists is the same.
          return IgnoreAlreadyExists(
              client_.Create(k8s::resources::ControllerRevisions(), ns, a.revision, write));
        } else if constexpr (std::is_same_v<T, DeleteRunRevision>) {
          Status deleted = client_.Delete(k8s::resources::ControllerRevisions(), ns, a.name, {});
          return k8s::IsNotFound(deleted) ? Status::Ok() : deleted;
        } else if constexpr (std::is_same_v<T, CreateConfigMap>) {
          return CreateChild(key, ChildKind::kConfigMap, k8s::resources::ConfigMaps(), ns,
                             a.config_map, write);
        } else if constexpr (std::is_same_v<T, UpdateConfigMap>) {
          auto updated = client_.Update(k8s::resources::ConfigMaps(), a.config_map, {}, write);
          if (!updated) {
            return updated.status();
          }
          const std::string before = ResourceVersionOf(a.config_map);
          if (ResourceVersionOf(*updated) != before) {
            expectations_.ExpectChild(key, ChildKind::kConfigMap, k8s::NameOf(a.config_map), before,
                                      Expectations::Clock::now());
          }
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, DeleteConfigMap>) {
          k8s::DeleteOptions options;
          options.precondition_uid = a.uid;
          Status deleted = client_.Delete(k8s::resources::ConfigMaps(), ns, a.name, options);
          // Gone already, or a newer one took the name: either way this one
          // is gone once the cache shows it so.
          if (deleted.ok() || k8s::IsNotFound(deleted) || k8s::IsConflict(deleted)) {
            expectations_.ExpectChildGone(key, ChildKind::kConfigMap, a.name, a.uid,
                                          Expectations::Clock::now());
            return Status::Ok();
          }
          return deleted;
        } else if constexpr (std::is_same_v<T, CreatePVC>) {
          return CreateChild(key, ChildKind::kClaim, k8s::resources::PersistentVolumeClaims(), ns,
                             a.claim, write);
        } else if constexpr (std::is_same_v<T, CreateDeployment>) {
          return CreateChild(key, ChildKind::kDeployment, k8s::resources::Deployments(), ns,
                             a.deployment, write);
        } else if constexpr (std::is_same_v<T, DeletePod>) {
          k8s::DeleteOptions options;
          options.precondition_uid = a.uid;
          Status deleted = client_.Delete(k8s::resources::Pods(), ns, a.name, options);
          // Gone already, or a newer pod took the name: nothing to delete, but
          // the cache still has to show the pod gone.
          if (deleted.ok() || k8s::IsNotFound(deleted) || k8s::IsConflict(deleted)) {
            expectations_.ExpectDeletion(key, a.uid, Expectations::Clock::now());
            return Status::Ok();
          }
          return deleted;
        } else if constexpr (std::is_same_v<T, PatchPodGroupSpec>) {
          // The uid in the patch is the precondition: the API server refuses
          // to change it, so a newer pod of that name is left alone.
          const nlohmann::json patch = {
              {"metadata",
               {{"uid", a.uid},
                {"annotations", {{std::string(api::kGroupSpecAnnotation), a.group_spec}}}}}};
          k8s::PatchOptions options;
          options.field_manager = options_.field_manager;
          auto patched = client_.Patch(k8s::resources::Pods(), ns, a.name, k8s::PatchType::kMerge,
                                       patch.dump(), options);
          return patched.ok() || k8s::IsNotFound(patched.status()) ? Status::Ok()
                                                                   : patched.status();
        } else if constexpr (std::is_same_v<T, UpdateStatus>) {
          nlohmann::json updated = job;
          updated["status"] = api::ToJson(a.status);
          auto written = client_.Update(k8s::resources::HybridJobs(), updated, "status", write);
          if (!written) {
            // Planned on the status it would have written; kept for the retry.
            pending_statuses_.WriteFailed(key, k8s::UidOf(job), a.status,
                                          PendingStatusWrites::Clock::now());
            return written.status();
          }
          // A write that changed nothing keeps the version: expect no change.
          const std::string before = ResourceVersionOf(job);
          if (ResourceVersionOf(*written) != before) {
            expectations_.ExpectJobChange(key, before, Expectations::Clock::now());
          }
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, RecordEvent>) {
          events_->Record(
              k8s::ReferenceTo(job),
              a.type == EventType::kWarning ? k8s::EventType::kWarning : k8s::EventType::kNormal,
              a.reason, a.message);
          return Status::Ok();
        } else if constexpr (std::is_same_v<T, DeleteJob>) {
          k8s::DeleteOptions options;
          options.precondition_uid = a.uid;
          options.propagation_policy = "Background";
          Status deleted =
              client_.Delete(k8s::resources::HybridJobs(), ns, k8s::NameOf(job), options);
          return k8s::IsNotFound(deleted) ? Status::Ok() : deleted;
        } else {
          return Internal("unknown action");
        }
      },
      action);
}

}  // namespace hybridjob::controller
