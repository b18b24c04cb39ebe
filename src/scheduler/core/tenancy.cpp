#include <algorithm>

#include <hybridjob/api/json.h>
#include <hybridjob/api/labels.h>
#include <hybridjob/api/names.h>
#include <hybridjob/api/spec_edits.h>
#include <hybridjob/common/maps.h>
#include <hybridjob/k8s/object_meta.h>
#include <hybridjob/scheduler/core/tenancy.h>

namespace hybridjob::scheduler {
namespace {

using nlohmann::json;

// The API group of an apiVersion ("batch.hybridjob.io/v1alpha1" ->
// "batch.hybridjob.io"; "v1" -> "").
std::string_view ApiGroupOf(std::string_view api_version) {
  size_t slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
}

std::string Quoted(std::string_view text) {
  return "\"" + std::string(text) + "\"";
}

// Stores `value` under `key`; whether the map changed.
template <typename Map, typename Value>
bool UpsertIfChanged(Map& map, std::string key, Value value) {
  auto it = map.find(key);
  if (it != map.end() && it->second == value) {
    return false;
  }
  map.insert_or_assign(std::move(key), std::move(value));
  return true;
}

template <typename Map, typename Value, typename KeyOf>
bool ReplaceAll(Map& map, std::vector<Value> values, KeyOf key_of) {
  Map next;
  next.reserve(values.size());
  for (Value& value : values) {
    std::string key = key_of(value);
    next.insert_or_assign(std::move(key), std::move(value));
  }
  if (next == map) {
    return false;
  }
  map = std::move(next);
  return true;
}

}  // namespace

Result<TrustedJob> ParseTrustedJob(const nlohmann::json& object) {
  Result<api::HybridJob> parsed = api::ParseHybridJob(object);
  if (!parsed.ok()) {
    return parsed.status();
  }
  const api::HybridJob& job = *parsed;
  TrustedJob out;
  out.namespace_name =
      job.metadata.namespace_name.empty() ? "default" : job.metadata.namespace_name;
  out.name = job.metadata.name;
  out.uid = job.metadata.uid;
  if (out.name.empty() || out.uid.empty()) {
    return InvalidArgument("HybridJob: metadata.name and metadata.uid are required");
  }
  // A running job's gang as the controller recorded it (status.runSpec), so
  // an edit the run does not take changes nothing here either; before it
  // starts, the job's own shape.
  if (job.status.run_spec) {
    out.spec = job.status.run_spec->group;
  } else {
    api::HybridJob defaulted = job;
    defaulted.spec = api::EffectiveSpec(job).spec;
    out.spec = api::GroupSpecOf(defaulted);
  }
  // The framework is fixed for a run; a record of an older controller lacks it.
  out.spec.resize_restarts = !api::LearnsMembershipLive(job.spec.framework);
  if (job.status.attained_service) {
    out.attained_gpu_seconds = job.status.attained_service->gpu_seconds;
  }
  out.ended = job.status.phase.has_value() && (api::IsTerminal(*job.status.phase) ||
                                               *job.status.phase == api::JobPhase::kSuspended);
  return out;
}

Result<NamespaceInfo> ParseNamespaceInfo(const nlohmann::json& object) {
  NamespaceInfo out;
  out.name = k8s::NameOf(object);
  if (out.name.empty()) {
    return InvalidArgument("namespace: metadata.name is required");
  }
  out.labels = LabelMap(k8s::LabelsOf(object));
  const LabelMap annotations(k8s::AnnotationsOf(object));
  if (const std::string* queue = out.labels.Find(kDefaultQueueKey)) {
    out.default_queue = *queue;
  } else if (const std::string* annotated = annotations.Find(kDefaultQueueKey)) {
    out.default_queue = *annotated;
  }
  return out;
}

Result<PriorityClassInfo> ParsePriorityClassInfo(const nlohmann::json& object) {
  PriorityClassInfo out;
  out.name = k8s::NameOf(object);
  if (out.name.empty()) {
    return InvalidArgument("priorityclass: metadata.name is required");
  }
  auto value = object.find("value");
  if (value == object.end() || !value->is_number_integer()) {
    return InvalidArgument("priorityclass " + out.name + ": value: expected an integer");
  }
  out.value =
      static_cast<int32_t>(std::clamp<int64_t>(value->get<int64_t>(), INT32_MIN, INT32_MAX));
  auto policy = object.find("preemptionPolicy");
  out.preempts = policy == object.end() || !policy->is_string() || *policy != "Never";
  auto global = object.find("globalDefault");
  out.global_default = global != object.end() && global->is_boolean() && global->get<bool>();
  return out;
}

bool TenancyDirectory::UpsertJob(TrustedJob job) {
  std::string key = PodKey(job.namespace_name, job.name);
  return UpsertIfChanged(jobs_, std::move(key), std::move(job));
}

bool TenancyDirectory::RemoveJob(std::string_view namespace_name, std::string_view name) {
  return jobs_.erase(PodKey(namespace_name, name)) > 0;
}

bool TenancyDirectory::UpsertNamespace(NamespaceInfo info) {
  std::string key = info.name;
  return UpsertIfChanged(namespaces_, std::move(key), std::move(info));
}

bool TenancyDirectory::RemoveNamespace(std::string_view name) {
  return EraseKey(namespaces_, name);
}

bool TenancyDirectory::UpsertPriorityClass(PriorityClassInfo info) {
  std::string key = info.name;
  return UpsertIfChanged(classes_, std::move(key), std::move(info));
}

bool TenancyDirectory::RemovePriorityClass(std::string_view name) {
  return EraseKey(classes_, name);
}

bool TenancyDirectory::ReplaceJobs(std::vector<TrustedJob> jobs) {
  return ReplaceAll(jobs_, std::move(jobs),
                    [](const TrustedJob& job) { return PodKey(job.namespace_name, job.name); });
}

bool TenancyDirectory::ReplaceNamespaces(std::vector<NamespaceInfo> namespaces) {
  return ReplaceAll(namespaces_, std::move(namespaces),
                    [](const NamespaceInfo& info) { return info.name; });
}

bool TenancyDirectory::ReplacePriorityClasses(std::vector<PriorityClassInfo> classes) {
  return ReplaceAll(classes_, std::move(classes),
                    [](const PriorityClassInfo& info) { return info.name; });
}

const TrustedJob* TenancyDirectory::FindJob(std::string_view namespace_name,
                                            std::string_view name) const {
  auto it = jobs_.find(PodKey(namespace_name, name));
  return it == jobs_.end() ? nullptr : &it->second;
}

const NamespaceInfo* TenancyDirectory::FindNamespace(std::string_view name) const {
  auto it = namespaces_.find(name);
  return it == namespaces_.end() ? nullptr : &it->second;
}

const PriorityClassInfo* TenancyDirectory::FindPriorityClass(std::string_view name) const {
  auto it = classes_.find(name);
  return it == classes_.end() ? nullptr : &it->second;
}

const PriorityClassInfo* TenancyDirectory::GlobalDefaultPriorityClass() const {
  const PriorityClassInfo* best = nullptr;
  for (const auto& [name, info] : classes_) {
    if (info.global_default && (best == nullptr || info.value > best->value ||
                                (info.value == best->value && info.name < best->name))) {
      best = &info;
    }
  }
  return best;
}

std::string TenancyDirectory::DefaultQueue(std::string_view namespace_name) const {
  const NamespaceInfo* info = FindNamespace(namespace_name);
  return info != nullptr && !info->default_queue.empty() ? info->default_queue
                                                         : std::string(api::kDefaultQueue);
}

GroupSpec EffectiveGroupSpec(const TrustedJob& job, const std::optional<GroupSpec>& annotation) {
  GroupSpec out;
  out.queue = job.spec.queue;
  out.topology = job.spec.topology;
  out.resize_restarts = job.spec.resize_restarts;
  // The controller sets the timeout to 0 once members have succeeded: their
  // indices never get pods again, so the gang must not wait to assemble.
  out.schedule_timeout_seconds =
      annotation ? std::min(annotation->ScheduleTimeoutSeconds(), job.spec.ScheduleTimeoutSeconds())
                 : job.spec.ScheduleTimeoutSeconds();
  for (const GroupRole& role : job.spec.roles) {
    GroupRole effective = role;
    const GroupRole* asked = annotation ? annotation->FindRole(role.name) : nullptr;
    if (asked != nullptr) {
      effective.max_replicas = std::min(asked->max_replicas, role.max_replicas);
      effective.min_replicas =
          std::min({asked->min_replicas, role.min_replicas, effective.max_replicas});
      // Succeeded indices only excuse a gap in the members' indices: the
      // job's own pods, nobody else's, wait or not.
      for (int32_t index : asked->completed) {
        if (index < effective.max_replicas) {
          effective.completed.push_back(index);
        }
      }
    }
    out.roles.push_back(std::move(effective));
  }
  return out;
}

namespace {

// Why a member's signature does not vouch for it; empty when it does or no
// keys are set. A member on a node is already placed (by this scheduler after
// the same check, or before keys were set): its signature, when valid, only
// claims its nonce, so no copy of it is placed.
std::string SignatureRefusal(const PodInfo& pod, const TrustedJob& job,
                             const TenancyDirectory& directory, api::MemberNonceLedger* nonces) {
  const api::MemberKeys& keys = directory.member_keys();
  if (keys.empty()) {
    return {};
  }
  const bool pending = pod.node_name.empty();
  if (!pending && pod.member_signature.empty()) {
    return {};
  }
  auto verified = api::VerifyMember(
      keys, {pod.namespace_name, pod.name, job.uid}, pod.member_signature,
      static_cast<int64_t>(pod.creation_time.time_since_epoch().count()));
  if (!verified.ok()) {
    return pending ? verified.status().message() : std::string();
  }
  if (nonces != nullptr && !nonces->Claim(verified->nonce, pod.uid, verified->issued_unix)) {
    return pending ? "its signature was made for another pod, which used it first"
                   : std::string();
  }
  return {};
}

}  // namespace

bool ResolvePod(PodInfo& pod, const TenancyDirectory& directory, api::MemberNonceLedger* nonces) {
  // The fields as they were, to say whether anything changed.
  const std::string old_job_name = pod.job_name;
  const std::optional<GroupSpec> old_group_spec = pod.group_spec;
  const std::string old_group_spec_error = pod.group_spec_error;
  const std::string old_queue = pod.queue;
  const int32_t old_priority = pod.priority;
  const bool old_preempts = pod.preempts;
  const LabelMap old_namespace_labels = pod.namespace_labels;
  const std::string old_untrusted = pod.untrusted_reason;
  const bool old_awaiting = pod.awaiting_job;

  const NamespaceInfo* namespace_info = directory.FindNamespace(pod.namespace_name);
  pod.namespace_labels = namespace_info != nullptr ? namespace_info->labels : LabelMap();
  const std::string default_queue = directory.DefaultQueue(pod.namespace_name);

  // Priority: what the PriorityClass says. A class the scheduler has not seen
  // (deleted since admission, or not observed yet) gives no standing.
  const PriorityClassInfo* priority_class =
      pod.priority_class_name.empty() ? directory.GlobalDefaultPriorityClass()
                                      : directory.FindPriorityClass(pod.priority_class_name);
  if (priority_class != nullptr) {
    pod.priority = priority_class->value;
    pod.preempts = priority_class->preempts && !pod.preemption_never;
  } else {
    pod.priority = 0;
    pod.preempts = pod.priority_class_name.empty() && !pod.preemption_never;
  }

  pod.job_name.clear();
  pod.group_spec.reset();
  pod.group_spec_error.clear();
  pod.untrusted_reason.clear();
  pod.awaiting_job = false;
  pod.queue = default_queue;

  const std::string* claimed = pod.labels.Find(api::kJobNameLabel);
  if (claimed != nullptr && !claimed->empty()) {
    const std::string& job_name = *claimed;
    const std::string label = std::string(api::kJobNameLabel) + "=" + job_name;
    const ControllerRef* controller = pod.controller ? &*pod.controller : nullptr;
    if (controller == nullptr || controller->kind != api::kKind ||
        ApiGroupOf(controller->api_version) != api::kGroup || controller->name != job_name) {
      pod.untrusted_reason =
          "pod " + pod.name + " carries " + label + " but is not controlled by HybridJob " +
          Quoted(job_name) + " (" +
          (controller == nullptr
               ? std::string("it has no controller ownerReference")
               : "its controller is " + controller->kind + " " + Quoted(controller->name)) +
          "); it is never part of that job's gang";
    } else if (const TrustedJob* job = directory.FindJob(pod.namespace_name, job_name);
               job == nullptr) {
      pod.awaiting_job = true;
    } else if (job->uid != controller->uid) {
      pod.untrusted_reason = "pod " + pod.name + " names HybridJob " + Quoted(job_name) +
                             " with uid " + controller->uid +
                             " as its controller, but that job's uid is " + job->uid +
                             "; it is never part of that job's gang";
    } else if (job->spec.FindRole(pod.role) == nullptr) {
      pod.untrusted_reason = "pod " + pod.name + ": role " + Quoted(pod.role) +
                             " is not a role of HybridJob " + Quoted(job_name);
    } else if (pod.index < 0 || pod.run < 0 ||
               pod.name != api::MemberPodName(job_name, pod.role, pod.index, pod.run)) {
      pod.untrusted_reason = "pod " + pod.name + " is not named as member " + pod.role + " " +
                             std::to_string(pod.index) + " of HybridJob " + Quoted(job_name) +
                             "; it is never part of that job's gang";
    } else if (std::string refused = SignatureRefusal(pod, *job, directory, nonces);
               !refused.empty()) {
      pod.untrusted_reason = "pod " + pod.name + " claims to be member " + pod.role + " " +
                             std::to_string(pod.index) + " of HybridJob " + Quoted(job_name) +
                             ", but " + refused +
                             "; only pods hybridjob-controller made join a gang";
    } else {
      pod.job_name = job_name;
      GroupSpec spec = EffectiveGroupSpec(*job, pod.annotated_group_spec);
      if (spec.queue.empty()) {
        spec.queue = default_queue;
      }
      pod.queue = spec.queue;
      pod.group_spec = std::move(spec);
    }
  }

  return pod.job_name != old_job_name || pod.group_spec != old_group_spec ||
         pod.group_spec_error != old_group_spec_error || pod.queue != old_queue ||
         pod.priority != old_priority || pod.preempts != old_preempts ||
         !(pod.namespace_labels == old_namespace_labels) || pod.untrusted_reason != old_untrusted ||
         pod.awaiting_job != old_awaiting;
}

Membership MembershipOf(const PodInfo& pod) {
  if (!pod.job_name.empty()) {
    return Membership::kTrusted;
  }
  if (pod.awaiting_job) {
    return Membership::kAwaitingJob;
  }
  return pod.untrusted_reason.empty() ? Membership::kNone : Membership::kUntrusted;
}

}  // namespace hybridjob::scheduler
