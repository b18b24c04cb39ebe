// Compact, parsed forms of core/v1 Pods and Nodes: only what scheduling needs.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/api/group_spec.h>
#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/objects/resources.h>

namespace hybridjob::scheduler {

// Label (or node selector) map kept as a sorted vector: nodes and pods carry a
// handful of labels, and a flat vector beats a tree or a hash table for that.
class LabelMap {
 public:
  LabelMap() = default;
  LabelMap(std::initializer_list<std::pair<std::string, std::string>> entries);
  // Takes the entries of a map (already sorted by key) without copying them.
  explicit LabelMap(std::map<std::string, std::string>&& entries);

  // The value for `key`, or nullptr.
  const std::string* Find(std::string_view key) const;
  bool Contains(std::string_view key) const { return Find(key) != nullptr; }
  void Set(std::string_view key, std::string_view value);

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }

  friend bool operator==(const LabelMap&, const LabelMap&) = default;

 private:
  std::vector<std::pair<std::string, std::string>> entries_;  // sorted by key
};

enum class SelectorOperator : uint8_t { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };

// One requirement of a label selector or node selector term.
struct SelectorRequirement {
  std::string key;
  SelectorOperator op = SelectorOperator::kIn;
  std::vector<std::string> values;

  // Whether a set of labels satisfies the requirement. Gt/Lt compare integers;
  // a missing label or a value that is not an integer never matches.
  bool Matches(const LabelMap& labels) const;
  // Same, against a single field value (matchFields on metadata.name).
  bool MatchesValue(const std::string* value) const;

  friend bool operator==(const SelectorRequirement&, const SelectorRequirement&) = default;
};

// metav1.LabelSelector; matchLabels entries become In requirements. An empty
// selector matches every set of labels.
struct LabelSelector {
  std::vector<SelectorRequirement> requirements;

  bool Matches(const LabelMap& labels) const;

  friend bool operator==(const LabelSelector&, const LabelSelector&) = default;
};

// A core/v1 NodeSelectorTerm: every expression and field requirement must hold.
// A term without any requirement matches no node, as in Kubernetes.
struct NodeSelectorTerm {
  std::vector<SelectorRequirement> match_expressions;
  std::vector<SelectorRequirement> match_fields;  // key "metadata.name" only

  friend bool operator==(const NodeSelectorTerm&, const NodeSelectorTerm&) = default;
};

struct PreferredSchedulingTerm {
  int32_t weight = 0;
  NodeSelectorTerm preference;

  friend bool operator==(const PreferredSchedulingTerm&, const PreferredSchedulingTerm&) = default;
};

// A required pod (anti-)affinity term.
struct PodAffinityTerm {
  // Absent selector matches no pod, as in Kubernetes.
  std::optional<LabelSelector> label_selector;
  // Empty means the namespace of the pod that carries the term.
  std::vector<std::string> namespaces;
  // `namespaceSelector: {}`: every namespace. Non-empty namespace selectors are
  // not supported (they need namespace labels) and are refused at parse time.
  bool all_namespaces = false;
  std::string topology_key;

  // Whether `candidate` is selected by the term carried by a pod in `owner_namespace`.
  bool Selects(std::string_view candidate_namespace, const LabelMap& candidate_labels,
               std::string_view owner_namespace) const;

  friend bool operator==(const PodAffinityTerm&, const PodAffinityTerm&) = default;
};

enum class TaintEffect : uint8_t { kNoSchedule, kPreferNoSchedule, kNoExecute };

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;

  friend bool operator==(const Taint&, const Taint&) = default;
};

enum class TolerationOperator : uint8_t { kEqual, kExists };

struct Toleration {
  std::string key;  // empty with kExists: every key
  TolerationOperator op = TolerationOperator::kEqual;
  std::string value;
  std::optional<TaintEffect> effect;  // absent: every effect

  bool Tolerates(const Taint& taint) const;

  friend bool operator==(const Toleration&, const Toleration&) = default;
};

struct HostPort {
  std::string host_ip;   // "0.0.0.0" when unset: every address
  std::string protocol;  // "TCP" when unset
  int32_t port = 0;

  // Two host ports collide on the same protocol and port when either listens on
  // every address or both name the same one.
  bool ConflictsWith(const HostPort& other) const;

  friend bool operator==(const HostPort&, const HostPort&) = default;
};

// A pod group's shape comes from the group-spec annotation, whose one type
// lives with the API (hybridjob/api/group_spec.h).
using api::GroupRole;
using api::GroupSpec;

using Timestamp = std::chrono::sys_seconds;

// RFC 3339 as the API server writes it: "2024-05-01T12:00:00Z", optionally with
// fractional seconds and a numeric offset.
Result<Timestamp> ParseTimestamp(std::string_view text);

// metadata.ownerReferences entry with controller: true.
struct ControllerRef {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;

  friend bool operator==(const ControllerRef&, const ControllerRef&) = default;
};

struct PodInfo {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string scheduler_name;  // "default-scheduler" when unset
  std::string node_name;       // empty while pending
  std::string phase;           // "Pending" when unset
  int32_t priority = 0;
  Timestamp creation_time{};
  LabelMap labels;

  // As kube-scheduler computes them: containers summed, each init container as
  // a floor, pod overhead added; pods is always 1. While an in-place resize is
  // under way (1.33), each container counts the larger of its spec, its
  // allocated and its actual resources (only the latter two when the resize is
  // infeasible), so a node is never counted as freer than it is.
  ResourceList requests;
  LabelMap node_selector;
  // Absent: no required node affinity. Present: at least one term must match.
  std::optional<std::vector<NodeSelectorTerm>> required_node_affinity;
  std::vector<PreferredSchedulingTerm> preferred_node_affinity;
  std::vector<Toleration> tolerations;
  std::vector<PodAffinityTerm> required_pod_affinity;
  std::vector<PodAffinityTerm> required_pod_anti_affinity;
  std::vector<HostPort> host_ports;
  // spec.schedulingGates by name (GA in 1.30): while any is left the API
  // server refuses to bind the pod, so its gang waits.
  std::vector<std::string> scheduling_gates;
  // spec.resourceClaims by name (dynamic resource allocation): devices this
  // scheduler does not allocate, so a pending pod that asks for them is not
  // placed.
  std::vector<std::string> resource_claims;
  // PersistentVolumeClaims the pod's volumes mount, by name, in volume order:
  // persistentVolumeClaim.claimName, and "<pod>-<volume>" for a generic
  // ephemeral volume (the claim its controller creates). No duplicates.
  std::vector<std::string> claims;

  // What the pod says about itself (anyone who may create pods can write
  // these): its controller ownerReference, spec.priorityClassName and
  // spec.preemptionPolicy.
  std::optional<ControllerRef> controller;
  std::string priority_class_name;
  bool preemption_never = false;  // spec.preemptionPolicy: Never

  // Group membership from the batch.hybridjob.io labels; empty job_name means
  // the pod is not part of a group. index is -1 when the label is missing.
  // ParsePod takes them from the labels and the group-spec annotation as
  // written; the live scheduler then replaces them, and priority, with what
  // ResolvePod (tenancy.h) verifies against the HybridJob, namespace and
  // PriorityClass objects.
  std::string job_name;
  std::string role;
  int32_t index = -1;
  int64_t run = 0;  // batch.hybridjob.io/run: 0 when missing, -1 when malformed
  std::optional<GroupSpec> group_spec;
  std::string group_spec_error;  // why the annotation was refused, if it was
  // The annotation as written, kept for ResolvePod (group_spec is replaced).
  std::optional<GroupSpec> annotated_group_spec;
  // The controller's signature (api/member_signature.h), checked by ResolvePod.
  std::string member_signature;

  // Set by ResolvePod. The queue the pod is accounted to (empty: the group
  // spec's, else `default`); whether it may preempt others; the labels of its
  // namespace (for queues' namespaceSelector); why a pod that claims a job's
  // membership is not given it; and whether its job is not known yet (the pod
  // is not planned until it is).
  std::string queue;
  bool preempts = true;
  LabelMap namespace_labels;
  std::string untrusted_reason;
  bool awaiting_job = false;

  bool IsTerminal() const { return phase == "Succeeded" || phase == "Failed"; }
  // "namespace/name"
  std::string Key() const;
};

std::string PodKey(std::string_view namespace_name, std::string_view name);

struct NodeInfo {
  std::string name;
  LabelMap labels;
  ResourceList allocatable;
  std::vector<Taint> taints;
  bool unschedulable = false;
  bool ready = true;
};

// Parses a core/v1 Pod. Malformed fields give an InvalidArgument status naming
// the field; a bad group-spec annotation does not fail the pod but is recorded
// in group_spec_error, so the scheduler can report it on the pod.
Result<PodInfo> ParsePod(const nlohmann::json& pod);
Result<PodInfo> ParsePodJson(std::string_view text);
// Only the requests of ParsePod, for callers that need nothing else.
Result<ResourceList> ParsePodRequests(const nlohmann::json& pod);

// A metav1.LabelSelector (matchLabels, matchExpressions); errors name `path`.
Result<LabelSelector> ParseLabelSelectorJson(const nlohmann::json& selector,
                                             const std::string& path);

// Parses a core/v1 Node. Allocatable falls back to capacity when absent; a node
// without a Ready=True condition is not ready.
Result<NodeInfo> ParseNode(const nlohmann::json& node);
Result<NodeInfo> ParseNodeJson(std::string_view text);

// A core/v1 NodeSelector's nodeSelectorTerms array (as in a PersistentVolume's
// spec.nodeAffinity.required); errors name `path`.
Result<std::vector<NodeSelectorTerm>> ParseNodeSelectorTermsJson(const nlohmann::json& terms,
                                                                 const std::string& path);

}  // namespace hybridjob::scheduler
