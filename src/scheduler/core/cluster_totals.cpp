#include <algorithm>

#include <hybridjob/scheduler/core/cluster_totals.h>

namespace hybridjob::scheduler {
namespace {

std::vector<ResourceTotal> EmptyTotals(const GpuResources& gpus) {
  std::vector<ResourceTotal> totals = {{"cpu", 0, 0}, {"memory", 0, 0}};
  for (const GpuResource& gpu : gpus.entries()) {
    totals.push_back({gpu.name, 0, 0});
  }
  return totals;
}

// What one slot adds: allocatable then requested per resource of `totals`
// (nothing for a free slot or a placeholder).
void SlotAmounts(const NodeState& node, const std::vector<ResourceTotal>& totals, int64_t* out) {
  for (size_t i = 0; i < totals.size(); ++i) {
    out[2 * i] = 0;
    out[2 * i + 1] = 0;
  }
  if (!node.schedulable_slot()) {
    return;
  }
  out[0] = node.info.allocatable.milli_cpu;
  out[1] = node.requested.milli_cpu;
  out[2] = node.info.allocatable.memory;
  out[3] = node.requested.memory;
  for (size_t i = 2; i < totals.size(); ++i) {
    out[2 * i] = node.info.allocatable.Scalar(totals[i].resource);
    out[2 * i + 1] = node.requested.Scalar(totals[i].resource);
  }
}

}  // namespace

std::vector<ResourceTotal> SumResourceTotals(const Snapshot& snapshot, const GpuResources& gpus) {
  std::vector<ResourceTotal> totals = EmptyTotals(gpus);
  std::vector<int64_t> amounts(2 * totals.size());
  for (const NodeState& node : snapshot.slots()) {
    SlotAmounts(node, totals, amounts.data());
    for (size_t i = 0; i < totals.size(); ++i) {
      totals[i].allocatable += amounts[2 * i];
      totals[i].requested += amounts[2 * i + 1];
    }
  }
  return totals;
}

const std::vector<ResourceTotal>& ResourceTotalsMemo::Update(const Snapshot& snapshot,
                                                             const GpuResources& gpus) {
  const std::vector<GpuResource>& entries = gpus.entries();
  const bool same_gpus = entries.size() + 2 == totals_.size() &&
                         std::equal(entries.begin(), entries.end(), totals_.begin() + 2,
                                    [](const GpuResource& gpu, const ResourceTotal& total) {
                                      return gpu.name == total.resource;
                                    });
  if (snapshot.identity() != snapshot_identity_ || !same_gpus) {
    snapshot_identity_ = snapshot.identity();
    totals_ = EmptyTotals(gpus);
    seen_.clear();
    added_.clear();
  }
  const size_t width = 2 * totals_.size();
  const std::vector<NodeState>& slots = snapshot.slots();
  seen_.resize(slots.size());
  added_.resize(slots.size() * width, 0);
  std::vector<int64_t> amounts(width);
  for (size_t slot = 0; slot < slots.size(); ++slot) {
    const NodeState& node = slots[slot];
    Seen& seen = seen_[slot];
    if (seen.pods_version == node.pods_version && seen.node_version == node.node_version) {
      continue;
    }
    seen = {node.pods_version, node.node_version};
    SlotAmounts(node, totals_, amounts.data());
    int64_t* added = &added_[slot * width];
    for (size_t i = 0; i < totals_.size(); ++i) {
      totals_[i].allocatable += amounts[2 * i] - added[2 * i];
      totals_[i].requested += amounts[2 * i + 1] - added[2 * i + 1];
    }
    std::copy(amounts.begin(), amounts.end(), added);
  }
  return totals_;
}

}  // namespace hybridjob::scheduler
