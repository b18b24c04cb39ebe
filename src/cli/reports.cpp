#include <algorithm>
#include <map>
#include <tuple>

#include <hybridjob/api/json.h>
#include <hybridjob/api/labels.h>
#include <hybridjob/api/waiting.h>
#include <hybridjob/cli/reports.h>
#include <hybridjob/controller/observed.h>
#include <hybridjob/scheduler/core/fair_share.h>
#include <hybridjob/scheduler/core/tenancy.h>
#include <hybridjob/scheduler/objects/objects.h>
#include <hybridjob/scheduler/shell/cache.h>
#include <hybridjob/scheduler/shell/deltas.h>

namespace hybridjob::cli {
namespace {

using nlohmann::json;

std::string PodPhaseName(controller::PodPhase phase) {
  switch (phase) {
    case controller::PodPhase::kPending:
      return "Pending";
    case controller::PodPhase::kRunning:
      return "Running";
    case controller::PodPhase::kSucceeded:
      return "Succeeded";
    case controller::PodPhase::kFailed:
      return "Failed";
    case controller::PodPhase::kUnknown:
      return "Unknown";
  }
  return "Unknown";
}

// The objects of one kind that parse; the others are left out, as the
// scheduler's informers leave them out.
template <class T, class Parse>
std::vector<T> ParseAll(const std::vector<json>& objects, Parse parse) {
  std::vector<T> out;
  for (const json& object : objects) {
    Result<T> parsed = parse(object);
    if (parsed.ok()) {
      out.push_back(std::move(*parsed));
    }
  }
  return out;
}

// The scheduler's cache, fed what the plugin listed, in the order its
// informers sync: who may claim what first, then nodes, then pods.
std::unique_ptr<scheduler::SchedulerCache> CacheOf(const ClusterObjects& objects,
                                                   const scheduler::SchedulerConfig& config) {
  using namespace scheduler;
  auto cache = std::make_unique<SchedulerCache>(config.scheduler_name);
  cache->Apply(Relist<TrustedJob>{ParseAll<TrustedJob>(objects.jobs, ParseTrustedJob)});
  cache->Apply(
      Relist<NamespaceInfo>{ParseAll<NamespaceInfo>(objects.namespaces, ParseNamespaceInfo)});
  cache->Apply(Relist<PriorityClassInfo>{
      ParseAll<PriorityClassInfo>(objects.priority_classes, ParsePriorityClassInfo)});
  cache->Apply(Relist<NodeInfo>{
      ParseAll<NodeInfo>(objects.nodes, [](const json& node) { return ParseNode(node); })});
  cache->Apply(Relist<PodInfo>{
      ParseAll<PodInfo>(objects.pods, [](const json& pod) { return ParsePod(pod); })});
  return cache;
}

}  // namespace

std::string_view QueueOriginName(QueueOrigin origin) {
  switch (origin) {
    case QueueOrigin::kStanding:
      return "status";
    case QueueOrigin::kJob:
      return "spec";
    case QueueOrigin::kNamespaceDefault:
      return "namespaceDefault";
    case QueueOrigin::kDefault:
      return "default";
    case QueueOrigin::kDefaultUnlessNamespace:
      return "defaultUnlessNamespace";
  }
  return "default";
}

JobQueue ResolveJobQueue(const api::HybridJob& job,
                         const std::optional<std::string>& namespace_default_queue) {
  if (job.status.queue && !job.status.queue->name.empty()) {
    return {job.status.queue->name, QueueOrigin::kStanding};
  }
  // A started run is scheduled with the queue it started with (the scheduler
  // reads status.runSpec; spec.queue edits wait for the next run).
  const std::string named =
      job.status.run_spec ? job.status.run_spec->group.queue : job.spec.queue.value_or("");
  if (!named.empty()) {
    return {named, QueueOrigin::kJob};
  }
  if (!namespace_default_queue) {
    return {std::string(api::kDefaultQueue), QueueOrigin::kDefaultUnlessNamespace};
  }
  if (!namespace_default_queue->empty()) {
    return {*namespace_default_queue, QueueOrigin::kNamespaceDefault};
  }
  return {std::string(api::kDefaultQueue), QueueOrigin::kDefault};
}

std::string MemberWaiting(const controller::ObservedPod& pod) {
  if (pod.bound()) {
    return "";
  }
  // ObservePod keeps GangSurplus apart (the controller acts on it): it is
  // the scheduler's reason all the same.
  return pod.surplus ? std::string(api::kSurplusReason) : pod.waiting_reason;
}

Result<JobStatusReport> BuildJobStatus(const json& object, const std::vector<json>& pods,
                                       const scheduler::GpuResources& gpus,
                                       const std::optional<std::string>& namespace_default_queue,
                                       std::optional<int64_t> members_of_run) {
  Result<api::HybridJob> parsed = api::ParseHybridJob(object);
  api::HybridJob job;
  if (parsed.ok()) {
    job = std::move(*parsed);
  } else if (object.is_object() && object.contains("metadata")) {
    // An invalid job still has a name and a status to show.
    job.metadata = api::ParseObjectMeta(object);
    if (object.contains("status")) {
      job.status = api::ParseHybridJobStatus(object["status"]);
    }
  } else {
    return parsed.status();
  }
  JobStatusReport report;
  report.name = job.metadata.name;
  report.namespace_name = job.metadata.namespace_name;
  report.phase = job.status.phase ? std::string(api::ToString(*job.status.phase)) : "";
  report.ready = job.status.ready_members;
  report.run = job.status.run;
  report.members_run = members_of_run.value_or(job.status.run);
  report.restarts = job.status.restart_count;
  report.placement = job.status.placement;
  report.attained_service = job.status.attained_service;
  const JobQueue queue = ResolveJobQueue(job, namespace_default_queue);
  report.queue = queue.name;
  report.queue_origin = queue.origin;
  if (job.status.queue) {
    report.position = job.status.queue->position;
    report.reason = job.status.queue->reason;
  }
  if (const api::Condition* queued = job.status.FindCondition(api::kConditionQueued);
      queued != nullptr && queued->status == "True") {
    report.reason = report.reason.empty() ? queued->reason : report.reason;
    report.message = queued->message;
  }
  std::map<std::string, size_t> role_order;
  for (const api::ReplicaSpec& role : job.spec.replica_specs) {
    RoleRow row;
    row.name = role.name;
    row.min_replicas = role.min_replicas;
    row.max_replicas = role.EffectiveMaxReplicas();
    if (const api::ReplicaStatus* status = job.status.FindReplicaStatus(role.name)) {
      row.members = status->members;
      row.active = status->active;
      row.succeeded = status->succeeded;
      row.failed = status->failed;
      row.restarts = status->restarts;
    }
    role_order.emplace(role.name, report.roles.size());
    report.roles.push_back(std::move(row));
  }
  for (const api::PreviousRun& previous : job.status.previous_runs) {
    report.earlier_runs.push_back({.run = previous.run,
                                   .phase = std::string(api::ToString(previous.phase)),
                                   .reason = previous.reason,
                                   .completion_time = previous.completion_time.value_or(""),
                                   .kept_members = 0});
  }
  for (const json& pod : pods) {
    const controller::ObservedPod observed = controller::ObservePod(pod);
    if (observed.job_name != report.name) {
      continue;
    }
    for (EarlierRunRow& earlier : report.earlier_runs) {
      const bool member = !observed.role.empty() && observed.index >= 0;
      earlier.kept_members +=
          member && earlier.run == observed.run && !observed.terminating ? 1 : 0;
    }
    if (observed.run != report.members_run) {
      continue;
    }
    MemberRow member;
    member.name = observed.name;
    member.role = observed.role;
    member.index = observed.index;
    member.phase = observed.terminating ? "Terminating" : PodPhaseName(observed.phase);
    member.node = observed.node_name;
    member.restarts = observed.restarts;
    member.waiting = MemberWaiting(observed);
    if (Result<scheduler::ResourceList> requests = scheduler::ParsePodRequests(pod);
        requests.ok()) {
      member.milli_gpus = gpus.MilliGpus(*requests);
    }
    if (observed.active() && !observed.terminating) {
      report.milli_gpus += member.milli_gpus;
      report.bound_milli_gpus += observed.bound() ? member.milli_gpus : 0;
    }
    report.members.push_back(std::move(member));
  }
  auto rank = [&role_order](const MemberRow& row) {
    auto it = role_order.find(row.role);
    return std::make_tuple(it == role_order.end() ? role_order.size() : it->second, row.index,
                           row.name);
  };
  std::sort(report.members.begin(), report.members.end(),
            [&](const MemberRow& a, const MemberRow& b) { return rank(a) < rank(b); });
  return report;
}

QueuesReport BuildQueuesReport(const ClusterObjects& objects,
                               const scheduler::SchedulerConfig& config) {
  using namespace scheduler;
  std::unique_ptr<SchedulerCache> cache = CacheOf(objects, config);
  const PolicyConfig policy = PolicyConfigFrom(config);
  const QueueTable table(policy.queues);
  const FairShare share =
      FairShare::FromSnapshot(cache->snapshot(), table, policy, config.gpu_resources);
  QueuesReport report;
  report.capacity = share.capacity();
  report.gpus = config.gpu_resources;
  report.queues = BuildQueueViews(share, cache->Pending());
  for (const json& object : objects.jobs) {
    Result<api::HybridJob> job = api::ParseHybridJob(object);
    if (job.ok() && job->status.attained_service &&
        !(job->status.phase && api::IsTerminal(*job->status.phase))) {
      const api::AttainedService& service = *job->status.attained_service;
      AddServed(report.queues, service.queue,
                ServedJob{job->metadata.namespace_name, job->metadata.name, service.gpu_seconds,
                          service.level});
    }
    if (!job.ok() || !job->status.queue || job->status.queue->name.empty()) {
      continue;
    }
    const api::QueueStanding& standing = *job->status.queue;
    std::string message;
    if (const api::Condition* queued = job->status.FindCondition(api::kConditionQueued)) {
      message = queued->message;
    }
    AddWaiting(report.queues, standing.name,
               WaitingJob{job->metadata.namespace_name, job->metadata.name, standing.position,
                          standing.reason, std::move(message)});
  }
  return report;
}

NodesReport BuildNodesReport(const ClusterObjects& objects,
                             const scheduler::SchedulerConfig& config) {
  std::unique_ptr<scheduler::SchedulerCache> cache = CacheOf(objects, config);
  return scheduler::BuildGpuMap(cache->snapshot(), config.gpu_resources, config.topology.levels);
}

}  // namespace hybridjob::cli
