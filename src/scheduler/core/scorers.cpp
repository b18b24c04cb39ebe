#include <algorithm>

#include <hybridjob/scheduler/core/predicates.h>
#include <hybridjob/scheduler/core/scorers.h>

namespace hybridjob::scheduler {
namespace {

// Share of `allocatable` in use after adding `request`, 0..100.
int64_t UsedPercent(int64_t used, int64_t request, int64_t allocatable) {
  if (allocatable <= 0) {
    return 0;
  }
  int64_t after = std::clamp<int64_t>(used + request, 0, allocatable);
  return after * kMaxNodeScore / allocatable;
}

int64_t CpuMemoryUsedPercent(const PodInfo& pod, const NodeState& node) {
  const ResourceList& allocatable = node.info.allocatable;
  return (UsedPercent(node.requested.milli_cpu, pod.requests.milli_cpu, allocatable.milli_cpu) +
          UsedPercent(node.requested.memory, pod.requests.memory, allocatable.memory)) /
         2;
}

}  // namespace

int64_t GpuBinPackingScore(const PodInfo& pod, const NodeState& node,
                           const GpuResources& gpu_resources) {
  int64_t pod_gpus = gpu_resources.MilliGpus(pod.requests);
  int64_t node_gpus = gpu_resources.MilliGpus(node.info.allocatable);
  int64_t used_gpus = gpu_resources.MilliGpus(node.requested);
  if (pod_gpus > 0) {
    return -std::max<int64_t>(0, node_gpus - used_gpus - pod_gpus);
  }
  if (node_gpus == 0) {
    return 2 * kMaxNodeScore + CpuMemoryUsedPercent(pod, node);
  }
  return UsedPercent(used_gpus, 0, node_gpus);
}

int64_t SpreadScore(const PodInfo& pod, const NodeState& node, const GpuResources& gpu_resources) {
  const ResourceList& allocatable = node.info.allocatable;
  int64_t free_sum =
      (kMaxNodeScore -
       UsedPercent(node.requested.milli_cpu, pod.requests.milli_cpu, allocatable.milli_cpu)) +
      (kMaxNodeScore - UsedPercent(node.requested.memory, pod.requests.memory, allocatable.memory));
  int64_t parts = 2;
  int64_t pod_gpus = gpu_resources.MilliGpus(pod.requests);
  if (pod_gpus > 0) {
    free_sum += kMaxNodeScore - UsedPercent(gpu_resources.MilliGpus(node.requested), pod_gpus,
                                            gpu_resources.MilliGpus(allocatable));
    ++parts;
  }
  return free_sum / parts;
}

int64_t PackingScore(PackingPolicy policy, const PodInfo& pod, const NodeState& node,
                     const GpuResources& gpu_resources) {
  switch (policy) {
    case PackingPolicy::kGpuBinPacking:
      return GpuBinPackingScore(pod, node, gpu_resources);
    case PackingPolicy::kSpread:
      return SpreadScore(pod, node, gpu_resources);
  }
  return 0;
}

int64_t PreferredNodeAffinityScore(const PodInfo& pod, const NodeInfo& node) {
  int64_t total = 0;
  for (const PreferredSchedulingTerm& term : pod.preferred_node_affinity) {
    if (term.weight != 0 && NodeSelectorTermMatches(term.preference, node)) {
      total += term.weight;
    }
  }
  return total;
}

void NormalizeScores(std::span<int64_t> scores) {
  if (scores.empty()) {
    return;
  }
  auto [lowest, highest] = std::minmax_element(scores.begin(), scores.end());
  int64_t low = *lowest;
  int64_t range = *highest - low;
  for (int64_t& score : scores) {
    score = range == 0 ? kMaxNodeScore : (score - low) * kMaxNodeScore / range;
  }
}

size_t NumFeasibleNodesToFind(size_t num_nodes, int32_t percentage, size_t min_feasible_nodes) {
  if (num_nodes <= min_feasible_nodes || percentage >= 100) {
    return num_nodes;
  }
  int64_t effective = percentage;
  if (effective <= 0) {
    effective = 50 - static_cast<int64_t>(num_nodes / 125);
    effective = std::max<int64_t>(effective, 5);
  }
  size_t wanted = num_nodes * static_cast<size_t>(effective) / 100;
  return std::clamp(wanted, min_feasible_nodes, num_nodes);
}

}  // namespace hybridjob::scheduler
