#include <algorithm>
#include <charconv>
#include <limits>
#include <stdexcept>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/time.h>
#include <hybridjob/common/json_fields.h>
#include <hybridjob/scheduler/objects/objects.h>

#include <hybridjob/api/member_signature.h>

#include "strict_fields.h"

namespace hybridjob::scheduler {
namespace {

using hybridjob::GuardedParse;
using hybridjob::IndexPath;
using hybridjob::JoinPath;
using hybridjob::JsonFieldError;
using hybridjob::JsonFields;
using hybridjob::JsonMember;
using hybridjob::ThrowFieldError;
using nlohmann::json;

[[noreturn]] void Fail(const std::string& path, std::string_view what) {
  ThrowFieldError(path, what);
}

const json* ObjectMember(const json& object, std::string_view key, const std::string& path) {
  return Strict().Object(object, key, path);
}

const json* ArrayMember(const json& object, std::string_view key, const std::string& path) {
  return Strict().Array(object, key, path);
}

std::string StringMember(const json& object, std::string_view key, const std::string& path) {
  return Strict().String(object, key, path).value_or("");
}

int32_t Int32Member(const json& object, std::string_view key, const std::string& path,
                    int32_t fallback) {
  return Strict().Int32(object, key, path).value_or(fallback);
}

bool BoolMember(const json& object, std::string_view key, const std::string& path) {
  return Strict().Bool(object, key, path).value_or(false);
}

LabelMap StringMapMember(const json& object, std::string_view key, const std::string& path) {
  return LabelMap(Strict().StringMap(object, key, path));
}

std::vector<std::string> StringArrayMember(const json& object, std::string_view key,
                                           const std::string& path) {
  return Strict().StringList(object, key, path);
}

ResourceList ResourceListMember(const json& object, std::string_view key, const std::string& path) {
  const json* value = JsonMember(object, key);
  if (value == nullptr) {
    return {};
  }
  Result<ResourceList> parsed = ParseResourceList(*value);
  if (!parsed.ok()) {
    Fail(JoinPath(path, key), parsed.status().message());
  }
  return std::move(parsed).value();
}

bool ParseInt64(std::string_view text, int64_t* out) {
  if (!text.empty() && text.front() == '+') {
    text.remove_prefix(1);
  }
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return error == std::errc() && end == text.data() + text.size() && !text.empty();
}

SelectorOperator ParseOperator(const std::string& text, const std::string& path,
                               bool allow_numeric) {
  if (text == "In") {
    return SelectorOperator::kIn;
  }
  if (text == "NotIn") {
    return SelectorOperator::kNotIn;
  }
  if (text == "Exists") {
    return SelectorOperator::kExists;
  }
  if (text == "DoesNotExist") {
    return SelectorOperator::kDoesNotExist;
  }
  if (allow_numeric && text == "Gt") {
    return SelectorOperator::kGt;
  }
  if (allow_numeric && text == "Lt") {
    return SelectorOperator::kLt;
  }
  Fail(path, "unsupported operator \"" + text + "\"");
}

std::vector<SelectorRequirement> RequirementsMember(const json& object, std::string_view key,
                                                    const std::string& path, bool node_selector) {
  std::vector<SelectorRequirement> out;
  const json* items = ArrayMember(object, key, path);
  if (items == nullptr) {
    return out;
  }
  for (size_t i = 0; i < items->size(); ++i) {
    std::string item_path = IndexPath(JoinPath(path, key), i);
    const json& item = (*items)[i];
    if (!item.is_object()) {
      Fail(item_path, "expected an object");
    }
    SelectorRequirement requirement;
    requirement.key = StringMember(item, "key", item_path);
    if (requirement.key.empty()) {
      Fail(JoinPath(item_path, "key"), "must not be empty");
    }
    requirement.op = ParseOperator(StringMember(item, "operator", item_path),
                                   JoinPath(item_path, "operator"), node_selector);
    requirement.values = StringArrayMember(item, "values", item_path);
    out.push_back(std::move(requirement));
  }
  return out;
}

LabelSelector ParseLabelSelector(const json& selector, const std::string& path) {
  LabelSelector out;
  LabelMap match_labels = StringMapMember(selector, "matchLabels", path);
  for (const auto& [key, value] : match_labels.entries()) {
    out.requirements.push_back(SelectorRequirement{key, SelectorOperator::kIn, {value}});
  }
  std::vector<SelectorRequirement> expressions =
      RequirementsMember(selector, "matchExpressions", path, /*node_selector=*/false);
  out.requirements.insert(out.requirements.end(), std::make_move_iterator(expressions.begin()),
                          std::make_move_iterator(expressions.end()));
  return out;
}

NodeSelectorTerm ParseNodeSelectorTerm(const json& term, const std::string& path) {
  if (!term.is_object()) {
    Fail(path, "expected an object");
  }
  NodeSelectorTerm out;
  out.match_expressions = RequirementsMember(term, "matchExpressions", path, true);
  out.match_fields = RequirementsMember(term, "matchFields", path, true);
  for (size_t i = 0; i < out.match_fields.size(); ++i) {
    if (out.match_fields[i].key != "metadata.name") {
      Fail(IndexPath(JoinPath(path, "matchFields"), i), "only metadata.name is supported");
    }
  }
  return out;
}

std::vector<PodAffinityTerm> PodAffinityTermsMember(const json& object, std::string_view key,
                                                    const std::string& path) {
  std::vector<PodAffinityTerm> out;
  const json* terms = ArrayMember(object, key, path);
  if (terms == nullptr) {
    return out;
  }
  for (size_t i = 0; i < terms->size(); ++i) {
    std::string term_path = IndexPath(JoinPath(path, key), i);
    const json& term = (*terms)[i];
    if (!term.is_object()) {
      Fail(term_path, "expected an object");
    }
    PodAffinityTerm parsed;
    if (const json* selector = ObjectMember(term, "labelSelector", term_path)) {
      parsed.label_selector = ParseLabelSelector(*selector, JoinPath(term_path, "labelSelector"));
    }
    parsed.namespaces = StringArrayMember(term, "namespaces", term_path);
    if (const json* namespace_selector = ObjectMember(term, "namespaceSelector", term_path)) {
      if (!namespace_selector->empty()) {
        Fail(JoinPath(term_path, "namespaceSelector"), "only the empty selector is supported");
      }
      parsed.all_namespaces = true;
    }
    parsed.topology_key = StringMember(term, "topologyKey", term_path);
    if (parsed.topology_key.empty()) {
      Fail(JoinPath(term_path, "topologyKey"), "must not be empty");
    }
    out.push_back(std::move(parsed));
  }
  return out;
}

TaintEffect ParseTaintEffect(const std::string& text, const std::string& path) {
  if (text == "NoSchedule") {
    return TaintEffect::kNoSchedule;
  }
  if (text == "PreferNoSchedule") {
    return TaintEffect::kPreferNoSchedule;
  }
  if (text == "NoExecute") {
    return TaintEffect::kNoExecute;
  }
  Fail(path, "unknown taint effect \"" + text + "\"");
}

std::vector<Toleration> ParseTolerations(const json& spec) {
  std::vector<Toleration> out;
  const json* items = ArrayMember(spec, "tolerations", "spec");
  if (items == nullptr) {
    return out;
  }
  for (size_t i = 0; i < items->size(); ++i) {
    std::string path = IndexPath("spec.tolerations", i);
    const json& item = (*items)[i];
    if (!item.is_object()) {
      Fail(path, "expected an object");
    }
    Toleration toleration;
    toleration.key = StringMember(item, "key", path);
    std::string op = StringMember(item, "operator", path);
    if (op.empty() || op == "Equal") {
      toleration.op = TolerationOperator::kEqual;
    } else if (op == "Exists") {
      toleration.op = TolerationOperator::kExists;
    } else {
      Fail(JoinPath(path, "operator"), "unknown toleration operator \"" + op + "\"");
    }
    toleration.value = StringMember(item, "value", path);
    std::string effect = StringMember(item, "effect", path);
    if (!effect.empty()) {
      toleration.effect = ParseTaintEffect(effect, JoinPath(path, "effect"));
    }
    out.push_back(std::move(toleration));
  }
  return out;
}

struct ContainerRequests {
  ResourceList requests;
  bool is_sidecar = false;  // an init container with restartPolicy Always
};

// Requests of one container; a resource with a limit but no request is
// requested at its limit, as API defaulting does before a scheduler sees it.
ContainerRequests ParseContainerRequests(const json& container, const std::string& path) {
  ContainerRequests out;
  const json* resources = ObjectMember(container, "resources", path);
  if (resources != nullptr) {
    std::string resources_path = JoinPath(path, "resources");
    out.requests = ResourceListMember(*resources, "requests", resources_path);
    const json* requests_json = JsonMember(*resources, "requests");
    if (const json* limits_json = JsonMember(*resources, "limits")) {
      ResourceList limits = ResourceListMember(*resources, "limits", resources_path);
      for (auto it = limits_json->begin(); it != limits_json->end(); ++it) {
        if (requests_json == nullptr || !requests_json->contains(it.key())) {
          out.requests.Set(it.key(), limits.Get(it.key()));
        }
      }
    }
  }
  out.is_sidecar = StringMember(container, "restartPolicy", path) == "Always";
  return out;
}

// Whether the kubelet declared the pending in-place resize infeasible: the
// status field of 1.27-1.32, or the PodResizePending condition of 1.33+.
bool ResizeInfeasible(const json* status) {
  if (status == nullptr) {
    return false;
  }
  if (StringMember(*status, "resize", "status") == "Infeasible") {
    return true;
  }
  if (const json* conditions = ArrayMember(*status, "conditions", "status")) {
    for (size_t i = 0; i < conditions->size(); ++i) {
      const json& condition = (*conditions)[i];
      const std::string path = IndexPath("status.conditions", i);
      if (condition.is_object() && StringMember(condition, "type", path) == "PodResizePending" &&
          StringMember(condition, "status", path) == "True" &&
          StringMember(condition, "reason", path) == "Infeasible") {
        return true;
      }
    }
  }
  return false;
}

// The container's entry in status.<list>, by name, or nullptr.
const json* ContainerStatus(const json* status, std::string_view list, const std::string& name) {
  const json* statuses = status != nullptr ? ArrayMember(*status, list, "status") : nullptr;
  if (statuses == nullptr || name.empty()) {
    return nullptr;
  }
  const std::string path = JoinPath("status", list);
  for (size_t i = 0; i < statuses->size(); ++i) {
    const json& entry = (*statuses)[i];
    if (entry.is_object() && StringMember(entry, "name", IndexPath(path, i)) == name) {
      return &entry;
    }
  }
  return nullptr;
}

// A container's requests as kube-scheduler counts them once the kubelet reports
// its resources (in-place resize, 1.33): the larger of what the spec asks, what
// the kubelet allocated and what the container runs with; when the resize is
// infeasible the spec is ignored, as it will not be applied.
ResourceList EffectiveContainerRequests(const json& container, const ResourceList& spec_requests,
                                        const json* status, std::string_view list,
                                        bool resize_infeasible) {
  const std::string name =
      container.is_object() ? StringMember(container, "name", "container") : "";
  const json* entry = ContainerStatus(status, list, name);
  if (entry == nullptr) {
    return spec_requests;
  }
  const std::string path = JoinPath("status", list);
  ResourceList allocated = ResourceListMember(*entry, "allocatedResources", path);
  ResourceList actual;
  bool reported = JsonMember(*entry, "allocatedResources") != nullptr;
  if (const json* resources = ObjectMember(*entry, "resources", path)) {
    actual = ResourceListMember(*resources, "requests", JoinPath(path, "resources"));
    reported = reported || JsonMember(*resources, "requests") != nullptr;
  }
  if (!reported) {
    return spec_requests;
  }
  ResourceList out = resize_infeasible ? ResourceList{} : spec_requests;
  out.SetToMax(allocated);
  out.SetToMax(actual);
  return out;
}

// kube-scheduler's pod request: app containers summed; sidecar init containers
// run beside them and add up; every other init container runs alone (beside the
// sidecars started before it) and only sets a floor.
ResourceList ComputePodRequests(const json& spec, const json* status) {
  const bool infeasible = ResizeInfeasible(status);
  ResourceList total;
  if (const json* containers = ArrayMember(spec, "containers", "spec")) {
    for (size_t i = 0; i < containers->size(); ++i) {
      const json& container = (*containers)[i];
      ResourceList requests =
          ParseContainerRequests(container, IndexPath("spec.containers", i)).requests;
      total +=
          EffectiveContainerRequests(container, requests, status, "containerStatuses", infeasible);
    }
  }
  if (const json* init_containers = ArrayMember(spec, "initContainers", "spec")) {
    ResourceList sidecars;
    ResourceList init_floor;
    for (size_t i = 0; i < init_containers->size(); ++i) {
      const json& container = (*init_containers)[i];
      ContainerRequests init =
          ParseContainerRequests(container, IndexPath("spec.initContainers", i));
      if (init.is_sidecar) {
        // Sidecars keep running, so they can be resized like app containers.
        init.requests = EffectiveContainerRequests(container, init.requests, status,
                                                   "initContainerStatuses", infeasible);
        total += init.requests;
        sidecars += init.requests;
        init_floor.SetToMax(sidecars);
      } else {
        init_floor.SetToMax(init.requests + sidecars);
      }
    }
    total.SetToMax(init_floor);
  }
  total += ResourceListMember(spec, "overhead", "spec");
  total.pods = 1;
  return total;
}

// The claims spec.volumes mount (PodInfo::claims).
std::vector<std::string> ParseVolumeClaims(const json& spec, std::string_view pod_name) {
  std::vector<std::string> claims;
  const json* volumes = ArrayMember(spec, "volumes", "spec");
  if (volumes == nullptr) {
    return claims;
  }
  for (size_t i = 0; i < volumes->size(); ++i) {
    const json& volume = (*volumes)[i];
    const std::string path = IndexPath("spec.volumes", i);
    if (!volume.is_object()) {
      Fail(path, "expected an object");
    }
    std::string claim;
    if (const json* source = ObjectMember(volume, "persistentVolumeClaim", path)) {
      claim = StringMember(*source, "claimName", JoinPath(path, "persistentVolumeClaim"));
      if (claim.empty()) {
        Fail(JoinPath(path, "persistentVolumeClaim.claimName"), "required");
      }
    } else if (ObjectMember(volume, "ephemeral", path) != nullptr) {
      claim = std::string(pod_name) + "-" + StringMember(volume, "name", path);
    } else {
      continue;
    }
    if (std::find(claims.begin(), claims.end(), claim) == claims.end()) {
      claims.push_back(std::move(claim));
    }
  }
  return claims;
}

// Names from a list of {"name": ...} objects (schedulingGates, resourceClaims).
std::vector<std::string> NamesOf(const json& spec, std::string_view key) {
  std::vector<std::string> names;
  const json* items = ArrayMember(spec, key, "spec");
  if (items == nullptr) {
    return names;
  }
  const std::string path = JoinPath("spec", key);
  for (size_t i = 0; i < items->size(); ++i) {
    const json& item = (*items)[i];
    if (!item.is_object()) {
      Fail(IndexPath(path, i), "expected an object");
    }
    std::string name = StringMember(item, "name", IndexPath(path, i));
    if (name.empty()) {
      Fail(JoinPath(IndexPath(path, i), "name"), "required");
    }
    names.push_back(std::move(name));
  }
  return names;
}

std::vector<HostPort> ParseHostPorts(const json& spec) {
  std::vector<HostPort> out;
  const json* containers = ArrayMember(spec, "containers", "spec");
  if (containers == nullptr) {
    return out;
  }
  for (size_t c = 0; c < containers->size(); ++c) {
    std::string container_path = IndexPath("spec.containers", c);
    const json* ports = ArrayMember((*containers)[c], "ports", container_path);
    if (ports == nullptr) {
      continue;
    }
    for (size_t p = 0; p < ports->size(); ++p) {
      std::string port_path = IndexPath(JoinPath(container_path, "ports"), p);
      const json& port = (*ports)[p];
      int32_t host_port = Int32Member(port, "hostPort", port_path, 0);
      if (host_port <= 0) {
        continue;
      }
      HostPort entry;
      entry.port = host_port;
      entry.host_ip = StringMember(port, "hostIP", port_path);
      if (entry.host_ip.empty()) {
        entry.host_ip = "0.0.0.0";
      }
      entry.protocol = StringMember(port, "protocol", port_path);
      if (entry.protocol.empty()) {
        entry.protocol = "TCP";
      }
      out.push_back(std::move(entry));
    }
  }
  return out;
}

void ParseAffinity(const json& spec, PodInfo* pod) {
  const json* affinity = ObjectMember(spec, "affinity", "spec");
  if (affinity == nullptr) {
    return;
  }
  const std::string affinity_path = "spec.affinity";
  if (const json* node_affinity = ObjectMember(*affinity, "nodeAffinity", affinity_path)) {
    std::string path = JoinPath(affinity_path, "nodeAffinity");
    if (const json* required =
            ObjectMember(*node_affinity, "requiredDuringSchedulingIgnoredDuringExecution", path)) {
      std::string required_path = JoinPath(path, "requiredDuringSchedulingIgnoredDuringExecution");
      std::vector<NodeSelectorTerm> terms;
      if (const json* items = ArrayMember(*required, "nodeSelectorTerms", required_path)) {
        for (size_t i = 0; i < items->size(); ++i) {
          terms.push_back(ParseNodeSelectorTerm(
              (*items)[i], IndexPath(JoinPath(required_path, "nodeSelectorTerms"), i)));
        }
      }
      pod->required_node_affinity = std::move(terms);
    }
    if (const json* preferred =
            ArrayMember(*node_affinity, "preferredDuringSchedulingIgnoredDuringExecution", path)) {
      std::string preferred_path =
          JoinPath(path, "preferredDuringSchedulingIgnoredDuringExecution");
      for (size_t i = 0; i < preferred->size(); ++i) {
        std::string item_path = IndexPath(preferred_path, i);
        const json& item = (*preferred)[i];
        PreferredSchedulingTerm term;
        term.weight = Int32Member(item, "weight", item_path, 0);
        const json* preference = ObjectMember(item, "preference", item_path);
        if (preference == nullptr) {
          Fail(JoinPath(item_path, "preference"), "required");
        }
        term.preference = ParseNodeSelectorTerm(*preference, JoinPath(item_path, "preference"));
        pod->preferred_node_affinity.push_back(std::move(term));
      }
    }
  }
  if (const json* pod_affinity = ObjectMember(*affinity, "podAffinity", affinity_path)) {
    pod->required_pod_affinity =
        PodAffinityTermsMember(*pod_affinity, "requiredDuringSchedulingIgnoredDuringExecution",
                               JoinPath(affinity_path, "podAffinity"));
  }
  if (const json* anti_affinity = ObjectMember(*affinity, "podAntiAffinity", affinity_path)) {
    pod->required_pod_anti_affinity =
        PodAffinityTermsMember(*anti_affinity, "requiredDuringSchedulingIgnoredDuringExecution",
                               JoinPath(affinity_path, "podAntiAffinity"));
  }
}

std::optional<ControllerRef> ParseControllerRef(const json& metadata) {
  const json* owners = ArrayMember(metadata, "ownerReferences", "metadata");
  if (owners == nullptr) {
    return std::nullopt;
  }
  for (size_t i = 0; i < owners->size(); ++i) {
    const json& owner = (*owners)[i];
    const std::string path = IndexPath("metadata.ownerReferences", i);
    if (!owner.is_object()) {
      Fail(path, "expected an object");
    }
    const json* controller = JsonMember(owner, "controller");
    if (controller == nullptr || !controller->is_boolean() || !controller->get<bool>()) {
      continue;
    }
    return ControllerRef{StringMember(owner, "apiVersion", path), StringMember(owner, "kind", path),
                         StringMember(owner, "name", path), StringMember(owner, "uid", path)};
  }
  return std::nullopt;
}

PodInfo ParsePodOrThrow(const json& object) {
  if (!object.is_object()) {
    Fail("pod", "expected an object");
  }
  PodInfo pod;
  static const json kEmpty = json::object();
  const json* metadata_ptr = ObjectMember(object, "metadata", "");
  const json& metadata = metadata_ptr != nullptr ? *metadata_ptr : kEmpty;
  pod.name = StringMember(metadata, "name", "metadata");
  if (pod.name.empty()) {
    Fail("metadata.name", "required");
  }
  pod.namespace_name = StringMember(metadata, "namespace", "metadata");
  if (pod.namespace_name.empty()) {
    pod.namespace_name = "default";
  }
  pod.uid = StringMember(metadata, "uid", "metadata");
  pod.labels = StringMapMember(metadata, "labels", "metadata");
  std::string created = StringMember(metadata, "creationTimestamp", "metadata");
  if (!created.empty()) {
    Result<Timestamp> parsed = ParseTimestamp(created);
    if (!parsed.ok()) {
      Fail("metadata.creationTimestamp", parsed.status().message());
    }
    pod.creation_time = *parsed;
  }

  const json* spec_ptr = ObjectMember(object, "spec", "");
  const json& spec = spec_ptr != nullptr ? *spec_ptr : kEmpty;
  pod.scheduler_name = StringMember(spec, "schedulerName", "spec");
  if (pod.scheduler_name.empty()) {
    pod.scheduler_name = "default-scheduler";
  }
  pod.node_name = StringMember(spec, "nodeName", "spec");
  pod.priority = Int32Member(spec, "priority", "spec", 0);
  pod.priority_class_name = StringMember(spec, "priorityClassName", "spec");
  pod.preemption_never = StringMember(spec, "preemptionPolicy", "spec") == "Never";
  pod.controller = ParseControllerRef(metadata);
  const json* status = ObjectMember(object, "status", "");
  pod.requests = ComputePodRequests(spec, status);
  pod.scheduling_gates = NamesOf(spec, "schedulingGates");
  pod.resource_claims = NamesOf(spec, "resourceClaims");
  pod.claims = ParseVolumeClaims(spec, pod.name);
  pod.node_selector = StringMapMember(spec, "nodeSelector", "spec");
  ParseAffinity(spec, &pod);
  pod.tolerations = ParseTolerations(spec);
  pod.host_ports = ParseHostPorts(spec);

  pod.phase = status != nullptr ? StringMember(*status, "phase", "status") : "";
  if (pod.phase.empty()) {
    pod.phase = "Pending";
  }

  if (const std::string* job = pod.labels.Find(api::kJobNameLabel)) {
    pod.job_name = *job;
  }
  if (const std::string* role = pod.labels.Find(api::kRoleLabel)) {
    pod.role = *role;
  }
  if (const std::string* index = pod.labels.Find(api::kIndexLabel)) {
    int64_t value = -1;
    if (ParseInt64(*index, &value) && value >= 0 && value <= std::numeric_limits<int32_t>::max()) {
      pod.index = static_cast<int32_t>(value);
    }
  }
  if (const std::string* run = pod.labels.Find(api::kRunLabel); run != nullptr && !run->empty()) {
    int64_t value = -1;
    pod.run = ParseInt64(*run, &value) && value >= 0 ? value : -1;
  }
  LabelMap annotations = StringMapMember(metadata, "annotations", "metadata");
  if (const std::string* group_spec = annotations.Find(api::kGroupSpecAnnotation)) {
    Result<GroupSpec> parsed = api::ParseGroupSpec(*group_spec);
    if (parsed.ok()) {
      pod.annotated_group_spec = *parsed;
      pod.group_spec = std::move(parsed).value();
    } else {
      pod.group_spec_error = parsed.status().message();
    }
  }
  if (const std::string* signature = annotations.Find(api::kMemberSignatureAnnotation)) {
    pod.member_signature = *signature;
  }
  return pod;
}

NodeInfo ParseNodeOrThrow(const json& object) {
  if (!object.is_object()) {
    Fail("node", "expected an object");
  }
  NodeInfo node;
  static const json kEmpty = json::object();
  const json* metadata_ptr = ObjectMember(object, "metadata", "");
  const json& metadata = metadata_ptr != nullptr ? *metadata_ptr : kEmpty;
  node.name = StringMember(metadata, "name", "metadata");
  if (node.name.empty()) {
    Fail("metadata.name", "required");
  }
  node.labels = StringMapMember(metadata, "labels", "metadata");

  if (const json* spec = ObjectMember(object, "spec", "")) {
    node.unschedulable = BoolMember(*spec, "unschedulable", "spec");
    if (const json* taints = ArrayMember(*spec, "taints", "spec")) {
      for (size_t i = 0; i < taints->size(); ++i) {
        std::string path = IndexPath("spec.taints", i);
        const json& item = (*taints)[i];
        Taint taint;
        taint.key = StringMember(item, "key", path);
        if (taint.key.empty()) {
          Fail(JoinPath(path, "key"), "required");
        }
        taint.value = StringMember(item, "value", path);
        taint.effect =
            ParseTaintEffect(StringMember(item, "effect", path), JoinPath(path, "effect"));
        node.taints.push_back(std::move(taint));
      }
    }
  }

  node.ready = false;
  if (const json* status = ObjectMember(object, "status", "")) {
    node.allocatable = JsonMember(*status, "allocatable") != nullptr
                           ? ResourceListMember(*status, "allocatable", "status")
                           : ResourceListMember(*status, "capacity", "status");
    if (const json* conditions = ArrayMember(*status, "conditions", "status")) {
      for (size_t i = 0; i < conditions->size(); ++i) {
        std::string path = IndexPath("status.conditions", i);
        const json& condition = (*conditions)[i];
        if (StringMember(condition, "type", path) == "Ready") {
          node.ready = StringMember(condition, "status", path) == "True";
        }
      }
    }
  }
  return node;
}

Result<nlohmann::json> ParseJsonText(std::string_view what, std::string_view text) {
  json parsed = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return InvalidArgument(std::string(what) + ": not valid JSON");
  }
  return parsed;
}

}  // namespace

LabelMap::LabelMap(std::initializer_list<std::pair<std::string, std::string>> entries) {
  for (const auto& [key, value] : entries) {
    Set(key, value);
  }
}

LabelMap::LabelMap(std::map<std::string, std::string>&& entries) {
  entries_.reserve(entries.size());
  while (!entries.empty()) {
    auto node = entries.extract(entries.begin());
    entries_.emplace_back(std::move(node.key()), std::move(node.mapped()));
  }
}

const std::string* LabelMap::Find(std::string_view key) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const std::pair<std::string, std::string>& entry,
                                std::string_view k) { return entry.first < k; });
  if (it == entries_.end() || it->first != key) {
    return nullptr;
  }
  return &it->second;
}

void LabelMap::Set(std::string_view key, std::string_view value) {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                             [](const std::pair<std::string, std::string>& entry,
                                std::string_view k) { return entry.first < k; });
  if (it != entries_.end() && it->first == key) {
    it->second = value;
  } else {
    entries_.emplace(it, std::string(key), std::string(value));
  }
}

bool SelectorRequirement::MatchesValue(const std::string* value) const {
  switch (op) {
    case SelectorOperator::kIn:
      return value != nullptr && std::find(values.begin(), values.end(), *value) != values.end();
    case SelectorOperator::kNotIn:
      return value == nullptr || std::find(values.begin(), values.end(), *value) == values.end();
    case SelectorOperator::kExists:
      return value != nullptr;
    case SelectorOperator::kDoesNotExist:
      return value == nullptr;
    case SelectorOperator::kGt:
    case SelectorOperator::kLt: {
      int64_t bound = 0;
      int64_t actual = 0;
      if (value == nullptr || values.size() != 1 || !ParseInt64(values[0], &bound) ||
          !ParseInt64(*value, &actual)) {
        return false;
      }
      return op == SelectorOperator::kGt ? actual > bound : actual < bound;
    }
  }
  return false;
}

bool SelectorRequirement::Matches(const LabelMap& labels) const {
  return MatchesValue(labels.Find(key));
}

bool LabelSelector::Matches(const LabelMap& labels) const {
  return std::all_of(
      requirements.begin(), requirements.end(),
      [&labels](const SelectorRequirement& requirement) { return requirement.Matches(labels); });
}

bool PodAffinityTerm::Selects(std::string_view candidate_namespace,
                              const LabelMap& candidate_labels,
                              std::string_view owner_namespace) const {
  if (!label_selector.has_value()) {
    return false;
  }
  if (!all_namespaces) {
    if (namespaces.empty()) {
      if (candidate_namespace != owner_namespace) {
        return false;
      }
    } else if (std::find(namespaces.begin(), namespaces.end(), candidate_namespace) ==
               namespaces.end()) {
      return false;
    }
  }
  return label_selector->Matches(candidate_labels);
}

bool Toleration::Tolerates(const Taint& taint) const {
  if (effect.has_value() && *effect != taint.effect) {
    return false;
  }
  if (!key.empty() && key != taint.key) {
    return false;
  }
  if (op == TolerationOperator::kExists) {
    return true;
  }
  // An empty key is only meaningful with Exists; API validation refuses Equal with it.
  return !key.empty() && value == taint.value;
}

bool HostPort::ConflictsWith(const HostPort& other) const {
  if (port != other.port || protocol != other.protocol) {
    return false;
  }
  return host_ip == "0.0.0.0" || other.host_ip == "0.0.0.0" || host_ip == other.host_ip;
}

Result<Timestamp> ParseTimestamp(std::string_view text) {
  // One RFC 3339 reader for the whole project: the API's.
  std::optional<Timestamp> parsed = api::ParseTime(text);
  if (!parsed) {
    return InvalidArgument("timestamp \"" + std::string(text) + "\": expected RFC 3339");
  }
  return *parsed;
}

std::string PodKey(std::string_view namespace_name, std::string_view name) {
  std::string key;
  key.reserve(namespace_name.size() + 1 + name.size());
  key.append(namespace_name).append("/").append(name);
  return key;
}

std::string PodInfo::Key() const {
  return PodKey(namespace_name, name);
}

Result<PodInfo> ParsePod(const nlohmann::json& pod) {
  return GuardedParse<PodInfo>("pod", [&]() { return ParsePodOrThrow(pod); });
}

Result<LabelSelector> ParseLabelSelectorJson(const nlohmann::json& selector,
                                             const std::string& path) {
  try {
    if (!selector.is_object()) {
      Fail(path, "expected a label selector (matchLabels, matchExpressions)");
    }
    for (const auto& [key, value] : selector.items()) {
      if (key != "matchLabels" && key != "matchExpressions") {
        Fail(JoinPath(path, key), "unknown field");
      }
    }
    LabelSelector parsed = ParseLabelSelector(selector, path);
    for (size_t i = 0; i < parsed.requirements.size(); ++i) {
      const SelectorRequirement& requirement = parsed.requirements[i];
      bool takes_values =
          requirement.op == SelectorOperator::kIn || requirement.op == SelectorOperator::kNotIn;
      if (takes_values == requirement.values.empty()) {
        Fail(path, "requirement on \"" + requirement.key + "\": " +
                       (takes_values ? "In and NotIn need values"
                                     : "Exists and DoesNotExist take no values"));
      }
    }
    return parsed;
  } catch (const JsonFieldError& error) {
    return InvalidArgument(error.what());
  }
}

Result<ResourceList> ParsePodRequests(const nlohmann::json& pod) {
  return GuardedParse<ResourceList>("pod", [&]() {
    static const json kEmpty = json::object();
    if (!pod.is_object()) {
      Fail("pod", "expected an object");
    }
    const json* spec = ObjectMember(pod, "spec", "");
    return ComputePodRequests(spec != nullptr ? *spec : kEmpty, ObjectMember(pod, "status", ""));
  });
}

Result<PodInfo> ParsePodJson(std::string_view text) {
  Result<json> parsed = ParseJsonText("pod", text);
  if (!parsed.ok()) {
    return parsed.status();
  }
  return ParsePod(*parsed);
}

Result<NodeInfo> ParseNode(const nlohmann::json& node) {
  return GuardedParse<NodeInfo>("node", [&]() { return ParseNodeOrThrow(node); });
}

Result<std::vector<NodeSelectorTerm>> ParseNodeSelectorTermsJson(const nlohmann::json& terms,
                                                                 const std::string& path) {
  try {
    if (!terms.is_array()) {
      Fail(path, "expected an array");
    }
    std::vector<NodeSelectorTerm> out;
    out.reserve(terms.size());
    for (size_t i = 0; i < terms.size(); ++i) {
      out.push_back(ParseNodeSelectorTerm(terms[i], IndexPath(path, i)));
    }
    return out;
  } catch (const JsonFieldError& error) {
    return InvalidArgument(error.what());
  }
}

Result<NodeInfo> ParseNodeJson(std::string_view text) {
  Result<json> parsed = ParseJsonText("node", text);
  if (!parsed.ok()) {
    return parsed.status();
  }
  return ParseNode(*parsed);
}

}  // namespace hybridjob::scheduler
