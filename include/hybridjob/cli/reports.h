// What `kubectl hybridjob` shows, built from the API objects it read: pure
// functions, so the plugin's views are tested without a server. The queue and
// node views go through the gang-scheduler's own cache and fair-share core,
// so they count what the scheduler counts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/api/types.h>
#include <hybridjob/common/status.h>
#include <hybridjob/controller/observed.h>
#include <hybridjob/scheduler/core/cluster_view.h>
#include <hybridjob/scheduler/core/gpu_resources.h>
#include <hybridjob/scheduler/core/queues.h>
#include <hybridjob/scheduler/objects/resources.h>
#include <hybridjob/scheduler/shell/config.h>

namespace hybridjob::cli {

// The objects a cluster-wide view reads, as the API server listed them.
struct ClusterObjects {
  std::vector<nlohmann::json> nodes;
  std::vector<nlohmann::json> pods;
  std::vector<nlohmann::json> jobs;  // HybridJobs
  std::vector<nlohmann::json> namespaces;
  std::vector<nlohmann::json> priority_classes;
};

// --- kubectl hybridjob status JOB ---------------------------------------------

// Where the queue `status` shows comes from. It is the queue the
// gang-scheduler puts the job in, resolved as it resolves it
// (scheduler/core/tenancy.h): the one the job names, else its namespace's
// default queue, else `default`.
enum class QueueOrigin {
  kStanding,          // status.queue: where the scheduler says the job waits
  kJob,               // the run's spec.queue
  kNamespaceDefault,  // none named: the namespace's batch.hybridjob.io/default-queue
  kDefault,           // none named, and the namespace names no default: `default`
  // None named, and the namespace could not be read: `default`, unless the
  // namespace names another.
  kDefaultUnlessNamespace,
};

// "status", "spec", "namespaceDefault", "default", "defaultUnlessNamespace".
std::string_view QueueOriginName(QueueOrigin origin);

struct JobQueue {
  std::string name;
  QueueOrigin origin = QueueOrigin::kDefault;
};

// The job's queue. `namespace_default_queue`: the namespace's default queue
// ("" when it names none), or nullopt when the namespace could not be read.
JobQueue ResolveJobQueue(const api::HybridJob& job,
                         const std::optional<std::string>& namespace_default_queue);

// The WAITING column of a member: why the scheduler leaves it unbound, as its
// PodScheduled=False reason says (GangSurplus included); empty once bound.
std::string MemberWaiting(const controller::ObservedPod& pod);

struct MemberRow {
  std::string name;
  std::string role;
  int32_t index = -1;
  std::string phase;  // the pod's phase
  std::string node;   // empty while pending
  int64_t milli_gpus = 0;
  int32_t restarts = 0;  // container restarts
  std::string waiting;   // PodScheduled=False reason, while it waits
};

struct RoleRow {
  std::string name;
  int32_t min_replicas = 0;
  int32_t max_replicas = 0;
  int32_t members = 0;  // status.replicaStatuses: placed members
  int32_t active = 0;
  int32_t succeeded = 0;
  int32_t failed = 0;
  int32_t restarts = 0;
};

// A finished run of a re-run job (status.previousRuns), and how many of its
// member pods are still there, with their logs.
struct EarlierRunRow {
  int64_t run = 0;
  std::string phase;  // how it ended: Succeeded or Failed
  std::string reason;
  std::string completion_time;
  int32_t kept_members = 0;
};

struct JobStatusReport {
  std::string name;
  std::string namespace_name;
  std::string phase;
  std::string ready;  // status.readyMembers
  int64_t run = 0;
  int32_t restarts = 0;
  std::string queue;  // ResolveJobQueue
  QueueOrigin queue_origin = QueueOrigin::kDefault;
  int32_t position = 0;          // status.queue.position
  std::string reason;            // while Queued: the waiting reason code
  std::string message;           // the Queued condition's message
  std::string placement;         // status.placement
  std::optional<api::AttainedService> attained_service;
  int64_t milli_gpus = 0;        // asked for by its active members
  int64_t bound_milli_gpus = 0;  // of those, on nodes
  std::vector<RoleRow> roles;
  std::vector<MemberRow> members;  // by role order, then index
  // Of `members_run`, which is `run` unless another was asked for.
  int64_t members_run = 0;
  std::vector<EarlierRunRow> earlier_runs;  // oldest first
};

// `pods` are those labelled with the job's name; the members are those of
// `members_of_run`, else of the run the status describes.
// `namespace_default_queue`: as for ResolveJobQueue.
Result<JobStatusReport> BuildJobStatus(const nlohmann::json& job,
                                       const std::vector<nlohmann::json>& pods,
                                       const scheduler::GpuResources& gpus,
                                       const std::optional<std::string>& namespace_default_queue,
                                       std::optional<int64_t> members_of_run = std::nullopt);

// --- kubectl hybridjob queues and nodes: the scheduler's views -----------------

using QueueRow = scheduler::QueueView;
using WaitingJob = scheduler::WaitingJob;
using NodesReport = scheduler::GpuMap;

struct QueuesReport {
  std::vector<QueueRow> queues;  // by name
  scheduler::ResourceList capacity;
  scheduler::GpuResources gpus;
};

// The queues as the scheduler's fair share counts them, with the jobs whose
// status says they wait in each (status.queue).
QueuesReport BuildQueuesReport(const ClusterObjects& objects,
                               const scheduler::SchedulerConfig& config);

NodesReport BuildNodesReport(const ClusterObjects& objects,
                             const scheduler::SchedulerConfig& config);

}  // namespace hybridjob::cli
