// What `kubectl hybridjob` shows, built from the API objects it read: pure
// functions, so the plugin's views are tested without a server. The queue and
// node views go through the gang-scheduler's own cache and fair-share core,
// so they count what the scheduler counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/config.h>
#include <hybridjob/scheduler/gpu_resources.h>
#include <hybridjob/scheduler/queues.h>
#include <hybridjob/scheduler/resources.h>

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

// --- kubectl hybridjob queues -------------------------------------------------

struct WaitingJob {
  std::string namespace_name;
  std::string name;
  int32_t position = 0;  // 0: not in line
  std::string reason;
};

struct QueueRow {
  std::string name;
  std::string parent;
  bool leaf = true;
  bool configured = true;  // named by pods, absent from the configuration
  std::string order;       // BestEffortFIFO / StrictFIFO
  double weight = 1.0;
  scheduler::ResourceList guaranteed;
  scheduler::ResourceCeiling max;
  scheduler::ResourceList used;  // bound members of the queue (its subtree for a parent)
  int64_t pods = 0;
  std::vector<WaitingJob> waiting;  // in line order, then those not in line
};

struct QueuesReport {
  std::vector<QueueRow> queues;  // by name
  scheduler::ResourceList capacity;
  scheduler::GpuResources gpus;
};

QueuesReport BuildQueuesReport(const ClusterObjects& objects,
                               const scheduler::SchedulerConfig& config);

// --- kubectl hybridjob nodes --------------------------------------------------

struct GpuHolder {
  std::string job;  // namespace/name, or namespace/pod for a pod of no job
  int64_t milli_gpus = 0;
};

struct NodeRow {
  std::string name;
  std::vector<std::string> domains;  // the node's value per topology level ("" if unlabelled)
  bool ready = true;
  bool schedulable = true;
  int64_t milli_gpus = 0;  // allocatable
  int64_t used_milli_gpus = 0;
  std::vector<GpuHolder> holders;  // most GPUs first
};

struct DomainRow {
  std::string level;
  std::string value;
  int32_t nodes = 0;
  int64_t milli_gpus = 0;
  int64_t used_milli_gpus = 0;
  int64_t largest_free = 0;  // on one node
};

struct NodesReport {
  std::vector<std::string> levels;  // topology levels, outermost first
  std::vector<NodeRow> nodes;       // by domains, then name
  std::vector<DomainRow> domains;   // per level, by value
  int64_t milli_gpus = 0;
  int64_t used_milli_gpus = 0;
  // Free GPUs on nodes some pod already uses part of: free, but in pieces.
  int64_t fragmented_free = 0;
  int64_t largest_free = 0;
};

NodesReport BuildNodesReport(const ClusterObjects& objects,
                             const scheduler::SchedulerConfig& config);

}  // namespace hybridjob::cli
