// The cluster as people read it: the GPU map (per node and topology domain,
// and who holds the GPUs), each queue's usage against its guarantee and
// ceiling, and the jobs. Pure, from the scheduler's snapshot and fair share;
// the gang-scheduler's dashboard and `kubectl hybridjob` both show these, in
// the JSON shapes below.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/scheduler/core/fair_share.h>
#include <hybridjob/scheduler/core/gpu_resources.h>
#include <hybridjob/scheduler/core/queues.h>
#include <hybridjob/scheduler/core/snapshot.h>

namespace hybridjob::scheduler {

struct GpuHolder {
  std::string job;  // namespace/name, or namespace/pod for a pod of no job
  int64_t milli_gpus = 0;
};

struct NodeView {
  std::string name;
  std::vector<std::string> domains;  // the node's value per topology level ("" if unlabelled)
  bool ready = true;
  bool schedulable = true;
  int64_t milli_gpus = 0;  // allocatable
  int64_t used_milli_gpus = 0;
  std::vector<GpuHolder> holders;  // most GPUs first
};

struct DomainView {
  std::string level;
  std::string value;
  int32_t nodes = 0;
  int64_t milli_gpus = 0;
  int64_t used_milli_gpus = 0;
  int64_t largest_free = 0;  // on one node
};

struct GpuMap {
  std::vector<std::string> levels;  // topology levels, outermost first
  std::vector<NodeView> nodes;      // by domains, then name
  std::vector<DomainView> domains;  // per level, by value
  int64_t milli_gpus = 0;
  int64_t used_milli_gpus = 0;
  // Free GPUs on nodes some pod already uses part of: free, but in pieces.
  int64_t fragmented_free = 0;
  int64_t largest_free = 0;  // on one Ready, schedulable node
};

GpuMap BuildGpuMap(const Snapshot& snapshot, const GpuResources& gpus,
                   const std::vector<std::string>& levels);

struct WaitingJob {
  std::string namespace_name;
  std::string name;
  int32_t position = 0;  // 0: not in line
  std::string reason;    // the waiting reason code
  std::string message;   // the numbers, when known
};

// A job of an AttainedService queue and the service it attained (its
// status.attainedService).
struct ServedJob {
  std::string namespace_name;
  std::string name;
  int64_t gpu_seconds = 0;
  int32_t level = 0;
};

struct QueueView {
  std::string name;
  std::string parent;
  bool leaf = true;
  bool configured = true;  // false: named by pods, absent from the configuration
  std::string order;       // BestEffortFIFO / StrictFIFO / AttainedService
  double weight = 1.0;
  ResourceList guaranteed;
  ResourceCeiling max;
  ResourceList used;  // bound members of the queue (its subtree for a parent)
  int64_t pods = 0;
  // The dominant share it is entitled to for what every queue asks for now
  // (fair_targets.h), and that share of the cluster's weighted GPUs.
  double fair_share = 0;
  int64_t fair_milli_gpus = 0;
  std::vector<WaitingJob> waiting;  // in line order, then those not in line
  std::vector<ServedJob> served;    // least served level first, then least service
};

// Every account of the fair share, by name, with nobody waiting yet; the fair
// shares for the usage and the `pending` pods' requests.
std::vector<QueueView> BuildQueueViews(const FairShare& share,
                                       const std::vector<const PodInfo*>& pending);
// Adds a waiting job to its queue's view (a view, unconfigured, is made for a
// queue that has none), then keeps each queue's list in line order.
void AddWaiting(std::vector<QueueView>& queues, const std::string& queue, WaitingJob job);
// Adds a job's attained service to its queue's view (a configured queue's
// only), in the queue's order.
void AddServed(std::vector<QueueView>& queues, const std::string& queue, ServedJob job);

// A job with members on nodes: what it holds.
struct RunningJob {
  std::string namespace_name;
  std::string name;
  std::string queue;
  int32_t members = 0;
  int64_t milli_gpus = 0;
};

// Groups with bound (or assumed) members in the snapshot, by namespace/name.
std::vector<RunningJob> BuildRunningJobs(const Snapshot& snapshot, const GpuResources& gpus);

nlohmann::json ToJson(const GpuMap& map);
nlohmann::json ToJson(const QueueView& queue, const GpuResources& gpus);
nlohmann::json ToJson(const RunningJob& job);
nlohmann::json ToJson(const WaitingJob& job);
// {"cpu": "1500m", "memory": "17179869184", "nvidia.com/gpu": "8"}: what is set.
nlohmann::json ResourcesJson(const ResourceList& list);

}  // namespace hybridjob::scheduler
