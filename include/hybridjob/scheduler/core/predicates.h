// Filters: can this pod go on this node? Each is a pure function returning a
// small result, like kube-scheduler's Filter plugins with their Status codes:
// a rejection is an expected outcome, not an error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {

enum class FilterCode : uint8_t {
  kFits = 0,
  kNodeUnknown,  // a placeholder slot: pods name a node we have no object for
  kNodeNotReady,
  kNodeUnschedulable,
  kUntoleratedTaint,
  kNodeSelectorMismatch,
  kNodeAffinityMismatch,
  kInsufficientResource,
  kHostPortConflict,
  kPodAffinityUnsatisfied,
  kPodAntiAffinityConflict,          // the pod's own anti-affinity
  kExistingPodAntiAffinityConflict,  // anti-affinity of a pod already there
};

inline constexpr size_t kFilterCodeCount = 12;
static_assert(static_cast<size_t>(FilterCode::kExistingPodAntiAffinityConflict) + 1 ==
              kFilterCodeCount);

std::string_view FilterCodeName(FilterCode code);

struct FilterResult {
  FilterCode code = FilterCode::kFits;
  // The resource that ran short, or the key of the untolerated taint: a view
  // into the pod or node examined, valid as long as they are.
  std::string_view detail;

  bool ok() const { return code == FilterCode::kFits; }
  // kube-scheduler's wording: "Insufficient nvidia.com/gpu",
  // "node(s) had untolerated taint {dedicated}", ...
  std::string Message() const;
};

// Taint keys the scheduler and node lifecycle controller use for conditions.
inline constexpr std::string_view kTaintNodeUnschedulable = "node.kubernetes.io/unschedulable";
inline constexpr std::string_view kTaintNodeNotReady = "node.kubernetes.io/not-ready";

bool NodeSelectorTermMatches(const NodeSelectorTerm& term, const NodeInfo& node);

// Predicates that depend only on the pod's spec and the Node object, so their
// verdict per node can be cached for pods of the same shape.
FilterResult CheckNodeReady(const PodInfo& pod, const NodeInfo& node);
FilterResult CheckNodeUnschedulable(const PodInfo& pod, const NodeInfo& node);
FilterResult CheckTaints(const PodInfo& pod, const NodeInfo& node);
FilterResult CheckNodeSelector(const PodInfo& pod, const NodeInfo& node);
FilterResult CheckRequiredNodeAffinity(const PodInfo& pod, const NodeInfo& node);
FilterResult RunStaticFilters(const PodInfo& pod, const NodeState& node);
// The static filters whose verdict lasts while the node exists: taints (but
// those the node lifecycle sets and lifts: node.kubernetes.io/not-ready,
// unreachable, unschedulable, memory-, disk- and pid-pressure,
// network-unavailable), the node selector and required node affinity. A
// cordoned or NotReady node may take the pod again later.
FilterResult RunLastingFilters(const PodInfo& pod, const NodeInfo& node);

// Predicates that depend on what already runs on the node.
FilterResult CheckResources(const PodInfo& pod, const NodeState& node);
FilterResult CheckHostPorts(const PodInfo& pod, const NodeState& node);

// Required inter-pod affinity and anti-affinity for one incoming pod, counted
// once over the snapshot and then kept up to date as pods are placed, as
// kube-scheduler's PreFilter state does.
class InterPodAffinityState {
 public:
  // Counts over every pod in `snapshot`, tentative placements included. The
  // state refers to `pod`, which must outlive it.
  static InterPodAffinityState Build(const PodInfo& pod, const Snapshot& snapshot);

  // Accounts for `placed` having been put on `node` after Build.
  void AddPod(const PodInfo& placed, const NodeInfo& node);

  FilterResult Check(const NodeInfo& node) const;

 private:
  using Counts = std::unordered_map<std::string, int>;  // topology value -> pods
  struct KeyedCounts {
    std::string topology_key;
    Counts counts;
  };

  void CountExistingAntiAffinity(const PodInfo& existing, const NodeInfo& node);
  void CountIncomingTerms(const PodInfo& existing, const NodeInfo& node);
  static void Increment(std::vector<KeyedCounts>& keyed, const std::string& topology_key,
                        const std::string& value);

  const PodInfo* pod_ = nullptr;
  std::vector<Counts> affinity_counts_;       // per required affinity term
  std::vector<Counts> anti_affinity_counts_;  // per required anti-affinity term
  // Existing pods whose anti-affinity terms select the incoming pod, by the
  // topology domain they forbid.
  std::vector<KeyedCounts> existing_anti_affinity_;
  bool any_affinity_match_ = false;
  bool pod_matches_own_affinity_ = false;
};

FilterResult CheckInterPodAffinity(const NodeState& node, const InterPodAffinityState& state);

// Every filter in kube-scheduler's order; the first rejection wins.
FilterResult RunFilters(const PodInfo& pod, const NodeState& node,
                        const InterPodAffinityState& affinity);

}  // namespace hybridjob::scheduler
