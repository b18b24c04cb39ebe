// Scorers: which feasible node is best? Raw scores are "higher is better"; the
// planner rescales each scorer to 0..100 over the candidates and weighs them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <hybridjob/scheduler/core/gpu_resources.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {

inline constexpr int64_t kMaxNodeScore = 100;

enum class PackingPolicy : uint8_t {
  // Fill GPU nodes before starting new ones, keeping whole nodes free for large
  // pods; pods without GPUs stay off GPU nodes when they can.
  kGpuBinPacking,
  // Least allocated first: spread load, as kube-scheduler does by default.
  kSpread,
};

// GPU bin-packing. A GPU pod scores higher the fewer weighted GPUs it leaves
// free on the node (the negated count, in thousandths of a GPU). A pod without GPUs scores 200..300
// on a node without GPUs (packing cpu and memory) and 0..100 on a GPU node, higher the more of its
// GPUs are already taken, since that node's cpu is least needed by GPU pods.
int64_t GpuBinPackingScore(const PodInfo& pod, const NodeState& node,
                           const GpuResources& gpu_resources);

// Least allocated: the mean share of cpu, memory (and GPUs, for a GPU pod) left
// free after placing the pod, 0..100.
int64_t SpreadScore(const PodInfo& pod, const NodeState& node, const GpuResources& gpu_resources);

int64_t PackingScore(PackingPolicy policy, const PodInfo& pod, const NodeState& node,
                     const GpuResources& gpu_resources);

// Sum of the weights of the pod's preferred node affinity terms the node matches.
int64_t PreferredNodeAffinityScore(const PodInfo& pod, const NodeInfo& node);

// Rescales raw scores to 0..kMaxNodeScore (lowest -> 0, highest -> 100); all
// equal scores become kMaxNodeScore.
void NormalizeScores(std::span<int64_t> scores);

// How many feasible nodes to find before choosing, as kube-scheduler's
// percentageOfNodesToScore: percentage 0 adapts to the cluster (50% minus 1%
// per 125 nodes, at least 5%); never fewer than `min_feasible_nodes` (nor
// more than the cluster has).
size_t NumFeasibleNodesToFind(size_t num_nodes, int32_t percentage, size_t min_feasible_nodes);

}  // namespace hybridjob::scheduler
