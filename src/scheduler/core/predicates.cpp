#include <algorithm>

#include <hybridjob/scheduler/core/predicates.h>

namespace hybridjob::scheduler {
namespace {

FilterResult Reject(FilterCode code, std::string_view detail = {}) {
  return {code, detail};
}

bool ToleratesAll(const std::vector<Toleration>& tolerations, const Taint& taint) {
  return std::any_of(
      tolerations.begin(), tolerations.end(),
      [&taint](const Toleration& toleration) { return toleration.Tolerates(taint); });
}

bool ToleratesConditionTaint(const PodInfo& pod, std::string_view key) {
  Taint taint{std::string(key), "", TaintEffect::kNoSchedule};
  return ToleratesAll(pod.tolerations, taint);
}

bool TermSelectsOwner(const PodAffinityTerm& term, const PodInfo& pod) {
  return term.Selects(pod.namespace_name, pod.labels, pod.namespace_name);
}

}  // namespace

std::string_view FilterCodeName(FilterCode code) {
  switch (code) {
    case FilterCode::kFits:
      return "Fits";
    case FilterCode::kNodeUnknown:
      return "NodeUnknown";
    case FilterCode::kNodeNotReady:
      return "NodeNotReady";
    case FilterCode::kNodeUnschedulable:
      return "NodeUnschedulable";
    case FilterCode::kUntoleratedTaint:
      return "UntoleratedTaint";
    case FilterCode::kNodeSelectorMismatch:
      return "NodeSelectorMismatch";
    case FilterCode::kNodeAffinityMismatch:
      return "NodeAffinityMismatch";
    case FilterCode::kInsufficientResource:
      return "InsufficientResource";
    case FilterCode::kHostPortConflict:
      return "HostPortConflict";
    case FilterCode::kPodAffinityUnsatisfied:
      return "PodAffinityUnsatisfied";
    case FilterCode::kPodAntiAffinityConflict:
      return "PodAntiAffinityConflict";
    case FilterCode::kExistingPodAntiAffinityConflict:
      return "ExistingPodAntiAffinityConflict";
  }
  return "Unknown";
}

std::string FilterResult::Message() const {
  switch (code) {
    case FilterCode::kFits:
      return "fits";
    case FilterCode::kNodeUnknown:
      return "node(s) not found";
    case FilterCode::kNodeNotReady:
      return "node(s) were not ready";
    case FilterCode::kNodeUnschedulable:
      return "node(s) were unschedulable";
    case FilterCode::kUntoleratedTaint:
      return "node(s) had untolerated taint {" + std::string(detail) + "}";
    case FilterCode::kNodeSelectorMismatch:
      return "node(s) didn't match node selector";
    case FilterCode::kNodeAffinityMismatch:
      return "node(s) didn't match node affinity";
    case FilterCode::kInsufficientResource:
      return "Insufficient " + std::string(detail);
    case FilterCode::kHostPortConflict:
      return "node(s) didn't have free ports for the requested pod ports";
    case FilterCode::kPodAffinityUnsatisfied:
      return "node(s) didn't match pod affinity rules";
    case FilterCode::kPodAntiAffinityConflict:
      return "node(s) didn't match pod anti-affinity rules";
    case FilterCode::kExistingPodAntiAffinityConflict:
      return "node(s) didn't satisfy existing pods anti-affinity rules";
  }
  return "unknown";
}

bool NodeSelectorTermMatches(const NodeSelectorTerm& term, const NodeInfo& node) {
  if (term.match_expressions.empty() && term.match_fields.empty()) {
    return false;
  }
  for (const SelectorRequirement& requirement : term.match_expressions) {
    if (!requirement.Matches(node.labels)) {
      return false;
    }
  }
  for (const SelectorRequirement& requirement : term.match_fields) {
    // Only metadata.name is accepted at parse time.
    if (!requirement.MatchesValue(&node.name)) {
      return false;
    }
  }
  return true;
}

FilterResult CheckNodeReady(const PodInfo& pod, const NodeInfo& node) {
  // A NotReady node carries the not-ready:NoSchedule taint in a real cluster;
  // pods that tolerate it may still go there.
  if (!node.ready && !ToleratesConditionTaint(pod, kTaintNodeNotReady)) {
    return Reject(FilterCode::kNodeNotReady);
  }
  return {};
}

FilterResult CheckNodeUnschedulable(const PodInfo& pod, const NodeInfo& node) {
  if (node.unschedulable && !ToleratesConditionTaint(pod, kTaintNodeUnschedulable)) {
    return Reject(FilterCode::kNodeUnschedulable);
  }
  return {};
}

FilterResult CheckTaints(const PodInfo& pod, const NodeInfo& node) {
  for (const Taint& taint : node.taints) {
    if (taint.effect == TaintEffect::kPreferNoSchedule) {
      continue;  // a scoring hint only
    }
    if (!ToleratesAll(pod.tolerations, taint)) {
      return Reject(FilterCode::kUntoleratedTaint, taint.key);
    }
  }
  return {};
}

FilterResult CheckNodeSelector(const PodInfo& pod, const NodeInfo& node) {
  for (const auto& [key, value] : pod.node_selector.entries()) {
    const std::string* actual = node.labels.Find(key);
    if (actual == nullptr || *actual != value) {
      return Reject(FilterCode::kNodeSelectorMismatch);
    }
  }
  return {};
}

FilterResult CheckRequiredNodeAffinity(const PodInfo& pod, const NodeInfo& node) {
  if (!pod.required_node_affinity.has_value()) {
    return {};
  }
  for (const NodeSelectorTerm& term : *pod.required_node_affinity) {
    if (NodeSelectorTermMatches(term, node)) {
      return {};
    }
  }
  return Reject(FilterCode::kNodeAffinityMismatch);
}

FilterResult RunStaticFilters(const PodInfo& pod, const NodeState& node) {
  if (!node.schedulable_slot()) {
    return Reject(FilterCode::kNodeUnknown);
  }
  for (auto check : {CheckNodeReady, CheckNodeUnschedulable, CheckTaints, CheckNodeSelector,
                     CheckRequiredNodeAffinity}) {
    FilterResult result = check(pod, node.info);
    if (!result.ok()) {
      return result;
    }
  }
  return {};
}

FilterResult RunLastingFilters(const PodInfo& pod, const NodeInfo& node) {
  static constexpr std::string_view kPassingTaints[] = {
      kTaintNodeNotReady,
      kTaintNodeUnschedulable,
      "node.kubernetes.io/unreachable",
      "node.kubernetes.io/memory-pressure",
      "node.kubernetes.io/disk-pressure",
      "node.kubernetes.io/pid-pressure",
      "node.kubernetes.io/network-unavailable",
  };
  for (const Taint& taint : node.taints) {
    if (taint.effect == TaintEffect::kPreferNoSchedule ||
        std::find(std::begin(kPassingTaints), std::end(kPassingTaints), taint.key) !=
            std::end(kPassingTaints)) {
      continue;
    }
    if (!ToleratesAll(pod.tolerations, taint)) {
      return Reject(FilterCode::kUntoleratedTaint, taint.key);
    }
  }
  for (auto check : {CheckNodeSelector, CheckRequiredNodeAffinity}) {
    FilterResult result = check(pod, node);
    if (!result.ok()) {
      return result;
    }
  }
  return {};
}

FilterResult CheckResources(const PodInfo& pod, const NodeState& node) {
  std::string_view short_of =
      FirstInsufficientResource(pod.requests, node.requested, node.info.allocatable);
  if (!short_of.empty()) {
    return Reject(FilterCode::kInsufficientResource, short_of);
  }
  return {};
}

FilterResult CheckHostPorts(const PodInfo& pod, const NodeState& node) {
  for (const HostPort& wanted : pod.host_ports) {
    for (const HostPort& used : node.used_host_ports) {
      if (wanted.ConflictsWith(used)) {
        return Reject(FilterCode::kHostPortConflict);
      }
    }
  }
  return {};
}

InterPodAffinityState InterPodAffinityState::Build(const PodInfo& pod, const Snapshot& snapshot) {
  InterPodAffinityState state;
  state.pod_ = &pod;
  state.affinity_counts_.resize(pod.required_pod_affinity.size());
  state.anti_affinity_counts_.resize(pod.required_pod_anti_affinity.size());
  state.pod_matches_own_affinity_ =
      std::all_of(pod.required_pod_affinity.begin(), pod.required_pod_affinity.end(),
                  [&pod](const PodAffinityTerm& term) { return TermSelectsOwner(term, pod); });

  const std::vector<NodeState>& slots = snapshot.slots();
  if (!pod.required_pod_affinity.empty() || !pod.required_pod_anti_affinity.empty()) {
    for (const NodeState& node : slots) {
      if (!node.schedulable_slot()) {
        continue;
      }
      for (const PodInfo* existing : node.pods) {
        state.CountIncomingTerms(*existing, node.info);
      }
    }
  }
  for (const PodOnNode& entry : snapshot.pods_with_required_anti_affinity()) {
    const NodeState& node = slots[entry.slot];
    if (node.schedulable_slot()) {
      state.CountExistingAntiAffinity(*entry.pod, node.info);
    }
  }
  return state;
}

void InterPodAffinityState::Increment(std::vector<KeyedCounts>& keyed,
                                      const std::string& topology_key, const std::string& value) {
  for (KeyedCounts& entry : keyed) {
    if (entry.topology_key == topology_key) {
      ++entry.counts[value];
      return;
    }
  }
  keyed.push_back(KeyedCounts{topology_key, {}});
  ++keyed.back().counts[value];
}

void InterPodAffinityState::CountIncomingTerms(const PodInfo& existing, const NodeInfo& node) {
  const PodInfo& pod = *pod_;
  // As kube-scheduler: a pod counts toward affinity only if it matches every
  // affinity term, and toward each anti-affinity term on its own.
  bool matches_all_affinity_terms =
      !pod.required_pod_affinity.empty() &&
      std::all_of(pod.required_pod_affinity.begin(), pod.required_pod_affinity.end(),
                  [&](const PodAffinityTerm& term) {
                    return term.Selects(existing.namespace_name, existing.labels,
                                        pod.namespace_name);
                  });
  if (matches_all_affinity_terms) {
    for (size_t i = 0; i < pod.required_pod_affinity.size(); ++i) {
      if (const std::string* value = node.labels.Find(pod.required_pod_affinity[i].topology_key)) {
        ++affinity_counts_[i][*value];
        any_affinity_match_ = true;
      }
    }
  }
  for (size_t i = 0; i < pod.required_pod_anti_affinity.size(); ++i) {
    const PodAffinityTerm& term = pod.required_pod_anti_affinity[i];
    if (term.Selects(existing.namespace_name, existing.labels, pod.namespace_name)) {
      if (const std::string* value = node.labels.Find(term.topology_key)) {
        ++anti_affinity_counts_[i][*value];
      }
    }
  }
}

void InterPodAffinityState::CountExistingAntiAffinity(const PodInfo& existing,
                                                      const NodeInfo& node) {
  for (const PodAffinityTerm& term : existing.required_pod_anti_affinity) {
    if (term.Selects(pod_->namespace_name, pod_->labels, existing.namespace_name)) {
      if (const std::string* value = node.labels.Find(term.topology_key)) {
        Increment(existing_anti_affinity_, term.topology_key, *value);
      }
    }
  }
}

void InterPodAffinityState::AddPod(const PodInfo& placed, const NodeInfo& node) {
  CountIncomingTerms(placed, node);
  CountExistingAntiAffinity(placed, node);
}

FilterResult InterPodAffinityState::Check(const NodeInfo& node) const {
  for (const KeyedCounts& entry : existing_anti_affinity_) {
    if (const std::string* value = node.labels.Find(entry.topology_key)) {
      auto it = entry.counts.find(*value);
      if (it != entry.counts.end() && it->second > 0) {
        return Reject(FilterCode::kExistingPodAntiAffinityConflict);
      }
    }
  }
  const PodInfo& pod = *pod_;
  for (size_t i = 0; i < pod.required_pod_anti_affinity.size(); ++i) {
    const std::string* value = node.labels.Find(pod.required_pod_anti_affinity[i].topology_key);
    if (value == nullptr) {
      continue;  // no such domain on this node, nothing to conflict with
    }
    auto it = anti_affinity_counts_[i].find(*value);
    if (it != anti_affinity_counts_[i].end() && it->second > 0) {
      return Reject(FilterCode::kPodAntiAffinityConflict);
    }
  }
  bool every_term_satisfied = true;
  for (size_t i = 0; i < pod.required_pod_affinity.size(); ++i) {
    const std::string* value = node.labels.Find(pod.required_pod_affinity[i].topology_key);
    if (value == nullptr) {
      // Every topology key of the pod's affinity must exist on the node.
      return Reject(FilterCode::kPodAffinityUnsatisfied);
    }
    auto it = affinity_counts_[i].find(*value);
    if (it == affinity_counts_[i].end() || it->second <= 0) {
      every_term_satisfied = false;
    }
  }
  // The first pod of a set with affinity to itself: no pod anywhere matches yet,
  // so it may go wherever its topology keys exist (kube-scheduler does the same).
  if (!every_term_satisfied && !(!any_affinity_match_ && pod_matches_own_affinity_)) {
    return Reject(FilterCode::kPodAffinityUnsatisfied);
  }
  return {};
}

FilterResult CheckInterPodAffinity(const NodeState& node, const InterPodAffinityState& state) {
  return state.Check(node.info);
}

FilterResult RunFilters(const PodInfo& pod, const NodeState& node,
                        const InterPodAffinityState& affinity) {
  FilterResult result = RunStaticFilters(pod, node);
  if (!result.ok()) {
    return result;
  }
  result = CheckResources(pod, node);
  if (!result.ok()) {
    return result;
  }
  result = CheckHostPorts(pod, node);
  if (!result.ok()) {
    return result;
  }
  return affinity.Check(node.info);
}

}  // namespace hybridjob::scheduler
