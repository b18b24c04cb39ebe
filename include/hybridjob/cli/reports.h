// What `kubectl hybridjob` shows, built from the API objects it read: pure
// functions, so the plugin's views are tested without a server. The queue and
// node views go through the gang-scheduler's own cache and fair-share core,
// so they count what the scheduler counts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/api/types.h>
#include <hybridjob/common/status.h>
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

struct JobStatusReport {
  std::string name;
  std::string namespace_name;
  std::string phase;
  std::string ready;  // status.readyMembers
  int64_t run = 0;
  int32_t restarts = 0;
  std::string queue;             // status.queue.name, else spec.queue
  int32_t position = 0;          // status.queue.position
  std::string reason;            // while Queued: the waiting reason code
  std::string message;           // the Queued condition's message
  std::string placement;         // status.placement
  std::optional<api::AttainedService> attained_service;
  int64_t milli_gpus = 0;        // asked for by its active members
  int64_t bound_milli_gpus = 0;  // of those, on nodes
  std::vector<RoleRow> roles;
  std::vector<MemberRow> members;  // by role order, then index
};

// `pods` are those labelled with the job's name; pods of another run are
// left out.
Result<JobStatusReport> BuildJobStatus(const nlohmann::json& job,
                                       const std::vector<nlohmann::json>& pods,
                                       const scheduler::GpuResources& gpus);

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
