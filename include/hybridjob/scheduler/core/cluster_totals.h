// Allocatable and requested cpu, memory and GPU resources over the nodes the
// scheduler can place on, as its metrics export them after every pass. Kept
// from one pass to the next: a pass reads again only the nodes whose object or
// pods changed (NodeState::node_version, pods_version), so it costs the
// changes, not the cluster.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <hybridjob/scheduler/core/gpu_resources.h>
#include <hybridjob/scheduler/core/snapshot.h>

namespace hybridjob::scheduler {

struct ResourceTotal {
  std::string resource;  // "cpu" (in millicores), "memory" (bytes), then each GPU resource
  int64_t allocatable = 0;
  int64_t requested = 0;  // by every pod on those nodes, any scheduler, tentative ones too
  friend bool operator==(const ResourceTotal&, const ResourceTotal&) = default;
};

// From scratch: cpu, memory, then `gpus`' resources in their order.
std::vector<ResourceTotal> SumResourceTotals(const Snapshot& snapshot, const GpuResources& gpus);

class ResourceTotalsMemo {
 public:
  // SumResourceTotals(snapshot, gpus), exactly. Given another snapshot or
  // other GPU resources, it starts over.
  const std::vector<ResourceTotal>& Update(const Snapshot& snapshot, const GpuResources& gpus);

 private:
  struct Seen {
    uint64_t pods_version = 0;
    uint64_t node_version = 0;
  };
  std::vector<Seen> seen_;
  // Per slot, what it added to totals_: allocatable and requested per resource.
  std::vector<int64_t> added_;
  std::vector<ResourceTotal> totals_;
  uint64_t snapshot_identity_ = 0;
};

}  // namespace hybridjob::scheduler
