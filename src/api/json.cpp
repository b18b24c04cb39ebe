#include <algorithm>
#include <exception>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include <hybridjob/api/group_spec.h>
#include <hybridjob/api/json.h>
#include <hybridjob/api/labels.h>
#include <hybridjob/common/json_fields.h>

#include "topology_fields.h"

namespace hybridjob::api {
namespace {

using nlohmann::json;

ObjectMeta ReadObjectMeta(JsonFields& reader, const json& object) {
  ObjectMeta meta;
  const json* metadata = reader.Object(object, "metadata", "");
  if (metadata == nullptr) {
    return meta;
  }
  const std::string path = "metadata";
  meta.name = reader.String(*metadata, "name", path).value_or("");
  meta.namespace_name = reader.String(*metadata, "namespace", path).value_or("");
  meta.uid = reader.String(*metadata, "uid", path).value_or("");
  meta.resource_version = reader.String(*metadata, "resourceVersion", path).value_or("");
  meta.generation = reader.Int64(*metadata, "generation", path).value_or(0);
  meta.creation_timestamp = reader.String(*metadata, "creationTimestamp", path).value_or("");
  meta.deletion_timestamp = reader.String(*metadata, "deletionTimestamp", path);
  meta.labels = reader.StringMap(*metadata, "labels", path);
  meta.annotations = reader.StringMap(*metadata, "annotations", path);
  return meta;
}

ReplicaSpec ReadReplicaSpec(JsonFields& reader, const json& item, const std::string& path) {
  ReplicaSpec role;
  if (!item.is_object()) {
    reader.Error(path, "must be an object");
    return role;
  }
  reader.CheckKnown(item,
                    {"name", "minReplicas", "maxReplicas", "priority", "restartPolicy", "port",
                     "topology", "template"},
                    path);
  std::optional<std::string> name = reader.String(item, "name", path);
  if (!name) {
    if (JsonMember(item, "name") == nullptr) {
      reader.Error(JoinPath(path, "name"), "required");
    }
  } else {
    role.name = *name;
  }
  std::optional<int32_t> min = reader.Int32(item, "minReplicas", path);
  if (min) {
    role.min_replicas = *min;
  } else if (JsonMember(item, "minReplicas") == nullptr) {
    reader.Error(JoinPath(path, "minReplicas"), "required");
  }
  role.max_replicas = reader.Int32(item, "maxReplicas", path);
  role.priority = reader.Int32(item, "priority", path).value_or(0);
  role.restart_policy = reader
                            .Enumerated<RestartPolicy>(item, "restartPolicy", path,
                                                       ParseRestartPolicy, AllRestartPolicies())
                            .value_or(RestartPolicy::kNever);
  role.port = reader.Int32(item, "port", path);
  role.topology = ReadTopologyMember(reader, item, path, /*reject_unknown_keys=*/true);
  if (const json* pod_template = reader.Object(item, "template", path)) {
    role.pod_template = *pod_template;
  }
  return role;
}

RunPolicy ReadRunPolicy(JsonFields& reader, const json& spec) {
  RunPolicy policy;
  const std::string path = "spec.runPolicy";
  const json* object = reader.Object(spec, "runPolicy", "spec");
  if (object == nullptr) {
    return policy;
  }
  reader.CheckKnown(*object,
                    {"backoffLimit", "activeDeadlineSeconds", "ttlSecondsAfterFinished",
                     "cleanPodPolicy", "scheduleTimeoutSeconds", "rerun"},
                    path);
  policy.backoff_limit = reader.Int32(*object, "backoffLimit", path).value_or(kDefaultBackoffLimit);
  policy.active_deadline_seconds = reader.Int64(*object, "activeDeadlineSeconds", path);
  policy.ttl_seconds_after_finished = reader.Int64(*object, "ttlSecondsAfterFinished", path);
  policy.clean_pod_policy =
      reader
          .Enumerated<CleanPodPolicy>(*object, "cleanPodPolicy", path, ParseCleanPodPolicy,
                                      AllCleanPodPolicies())
          .value_or(CleanPodPolicy::kRunning);
  policy.schedule_timeout_seconds = reader.Int64(*object, "scheduleTimeoutSeconds", path);
  policy.rerun = reader.Int64(*object, "rerun", path).value_or(0);
  return policy;
}

std::optional<SuccessPolicy> ReadSuccessPolicy(JsonFields& reader, const json& spec) {
  const std::string path = "spec.successPolicy";
  const json* object = reader.Object(spec, "successPolicy", "spec");
  if (object == nullptr) {
    return std::nullopt;
  }
  reader.CheckKnown(*object, {"roles", "operator"}, path);
  SuccessPolicy policy;
  policy.roles = reader.StringList(*object, "roles", path);
  policy.op = reader
                  .Enumerated<SuccessOperator>(*object, "operator", path, ParseSuccessOperator,
                                               AllSuccessOperators())
                  .value_or(SuccessOperator::kAll);
  return policy;
}

VolumeSpec ReadVolume(JsonFields& reader, const json& item, const std::string& path) {
  VolumeSpec volume;
  if (!item.is_object()) {
    reader.Error(path, "must be an object");
    return volume;
  }
  reader.CheckKnown(item,
                    {"name", "storageClassName", "size", "accessModes", "mountPath", "roles",
                     "retain", "existingClaim"},
                    path);
  volume.name = reader.String(item, "name", path).value_or("");
  volume.storage_class_name = reader.String(item, "storageClassName", path);
  volume.size = reader.Quantity(item, "size", path);
  volume.access_modes = reader.StringList(item, "accessModes", path);
  volume.mount_path = reader.String(item, "mountPath", path).value_or("");
  volume.roles = reader.StringList(item, "roles", path);
  volume.retain = reader.Bool(item, "retain", path).value_or(false);
  volume.existing_claim = reader.String(item, "existingClaim", path);
  return volume;
}

std::optional<ArtifactsSpec> ReadArtifacts(JsonFields& reader, const json& spec) {
  const std::string path = "spec.artifacts";
  const json* object = reader.Object(spec, "artifacts", "spec");
  if (object == nullptr) {
    return std::nullopt;
  }
  reader.CheckKnown(*object,
                    {"volume", "paths", "destination", "endpoint", "credentialsSecret", "image",
                     "deadlineSeconds"},
                    path);
  ArtifactsSpec artifacts;
  artifacts.volume = reader.String(*object, "volume", path).value_or("");
  artifacts.paths = reader.StringList(*object, "paths", path);
  artifacts.destination = reader.String(*object, "destination", path).value_or("");
  artifacts.endpoint = reader.String(*object, "endpoint", path);
  artifacts.credentials_secret = reader.String(*object, "credentialsSecret", path);
  artifacts.image = reader.String(*object, "image", path);
  artifacts.deadline_seconds =
      reader.Int64(*object, "deadlineSeconds", path).value_or(artifacts.deadline_seconds);
  return artifacts;
}

std::optional<CodeSpec> ReadCode(JsonFields& reader, const json& spec) {
  const std::string path = "spec.code";
  const json* object = reader.Object(spec, "code", "spec");
  if (object == nullptr) {
    return std::nullopt;
  }
  reader.CheckKnown(*object, {"source", "mountPath", "image", "endpoint", "credentialsSecret"},
                    path);
  CodeSpec code;
  code.source = reader.String(*object, "source", path).value_or("");
  code.mount_path =
      reader.String(*object, "mountPath", path).value_or(std::string(kDefaultCodeMountPath));
  code.image = reader.String(*object, "image", path);
  code.endpoint = reader.String(*object, "endpoint", path);
  code.credentials_secret = reader.String(*object, "credentialsSecret", path);
  return code;
}

std::optional<TensorboardSpec> ReadTensorboard(JsonFields& reader, const json& spec) {
  const std::string path = "spec.tensorboard";
  const json* object = reader.Object(spec, "tensorboard", "spec");
  if (object == nullptr) {
    return std::nullopt;
  }
  reader.CheckKnown(*object, {"logDir", "image", "serviceType"}, path);
  TensorboardSpec tensorboard;
  tensorboard.log_dir = reader.String(*object, "logDir", path).value_or("");
  tensorboard.image = reader.String(*object, "image", path);
  tensorboard.service_type = reader.String(*object, "serviceType", path)
                                 .value_or(std::string(kDefaultTensorboardServiceType));
  return tensorboard;
}

HybridJobSpec ReadSpec(JsonFields& reader, const json& object) {
  HybridJobSpec spec;
  const json* spec_json = reader.Object(object, "spec", "");
  if (spec_json == nullptr) {
    if (JsonMember(object, "spec") == nullptr) {
      reader.Error("spec", "required");
    }
    return spec;
  }
  reader.CheckKnown(
      *spec_json,
      {"framework", "replicaSpecs", "runPolicy", "successPolicy", "volumes", "code", "artifacts",
       "tensorboard", "queue", "topology", "schedulerName", "suspend", "runHistoryLimit"},
      "spec");
  spec.framework =
      reader.Enumerated<Framework>(*spec_json, "framework", "spec", ParseFramework, AllFrameworks())
          .value_or(Framework::kGeneric);
  if (const json* roles = reader.Array(*spec_json, "replicaSpecs", "spec")) {
    for (size_t i = 0; i < roles->size(); ++i) {
      spec.replica_specs.push_back(
          ReadReplicaSpec(reader, (*roles)[i], IndexPath("spec.replicaSpecs", i)));
    }
  } else if (JsonMember(*spec_json, "replicaSpecs") == nullptr) {
    reader.Error("spec.replicaSpecs", "required");
  }
  spec.run_policy = ReadRunPolicy(reader, *spec_json);
  spec.success_policy = ReadSuccessPolicy(reader, *spec_json);
  if (const json* volumes = reader.Array(*spec_json, "volumes", "spec")) {
    for (size_t i = 0; i < volumes->size(); ++i) {
      spec.volumes.push_back(ReadVolume(reader, (*volumes)[i], IndexPath("spec.volumes", i)));
    }
  }
  spec.code = ReadCode(reader, *spec_json);
  spec.artifacts = ReadArtifacts(reader, *spec_json);
  spec.tensorboard = ReadTensorboard(reader, *spec_json);
  spec.queue = reader.String(*spec_json, "queue", "spec");
  spec.topology = ReadTopologyMember(reader, *spec_json, "spec", /*reject_unknown_keys=*/true);
  spec.scheduler_name = reader.String(*spec_json, "schedulerName", "spec")
                            .value_or(std::string(kDefaultSchedulerName));
  spec.suspend = reader.Bool(*spec_json, "suspend", "spec").value_or(false);
  spec.run_history_limit =
      reader.Int32(*spec_json, "runHistoryLimit", "spec").value_or(kDefaultRunHistoryLimit);
  return spec;
}

HybridJobStatus ReadStatus(JsonFields& reader, const json& status) {
  HybridJobStatus out;
  if (!status.is_object()) {
    return out;
  }
  const std::string path = "status";
  out.phase = reader.Enumerated<JobPhase>(status, "phase", path, ParseJobPhase, AllJobPhases());
  if (const json* conditions = reader.Array(status, "conditions", path)) {
    for (size_t i = 0; i < conditions->size(); ++i) {
      const json& item = (*conditions)[i];
      std::string item_path = IndexPath("status.conditions", i);
      Condition condition;
      condition.type = reader.String(item, "type", item_path).value_or("");
      if (condition.type.empty()) {
        continue;
      }
      condition.status = reader.String(item, "status", item_path).value_or("Unknown");
      condition.reason = reader.String(item, "reason", item_path).value_or("");
      condition.message = reader.String(item, "message", item_path).value_or("");
      condition.last_transition_time =
          reader.String(item, "lastTransitionTime", item_path).value_or("");
      condition.last_update_time = reader.String(item, "lastUpdateTime", item_path).value_or("");
      out.conditions.push_back(std::move(condition));
    }
  }
  if (const json* replicas = reader.Array(status, "replicaStatuses", path)) {
    for (size_t i = 0; i < replicas->size(); ++i) {
      const json& item = (*replicas)[i];
      std::string item_path = IndexPath("status.replicaStatuses", i);
      ReplicaStatus replica;
      replica.name = reader.String(item, "name", item_path).value_or("");
      if (replica.name.empty()) {
        continue;
      }
      replica.members = reader.Int32(item, "members", item_path).value_or(0);
      replica.scheduled = reader.Int32(item, "scheduled", item_path).value_or(0);
      replica.active = reader.Int32(item, "active", item_path).value_or(0);
      replica.succeeded = reader.Int32(item, "succeeded", item_path).value_or(0);
      replica.failed = reader.Int32(item, "failed", item_path).value_or(0);
      replica.restarts = reader.Int32(item, "restarts", item_path).value_or(0);
      out.replica_statuses.push_back(std::move(replica));
    }
  }
  out.ready_members = reader.String(status, "readyMembers", path).value_or("");
  out.start_time = reader.String(status, "startTime", path);
  out.completion_time = reader.String(status, "completionTime", path);
  out.last_restart_time = reader.String(status, "lastRestartTime", path);
  out.restart_count = reader.Int32(status, "restartCount", path).value_or(0);
  out.observed_generation = reader.Int64(status, "observedGeneration", path).value_or(0);
  out.placement = reader.String(status, "placement", path).value_or("");
  out.run = reader.Int64(status, "run", path).value_or(0);
  if (const json* run_spec = JsonMember(status, "runSpec");
      run_spec != nullptr && run_spec->is_object()) {
    // The controller's own record: one without a gang that parses is dropped
    // whole (a record of an older controller, the whole spec, has none: the
    // run then goes on with the spec as it is, see spec_edits.h).
    const json* group = JsonMember(*run_spec, "group");
    if (group != nullptr) {
      if (Result<GroupSpec> parsed = GroupSpecFromJson(*group); parsed.ok()) {
        JsonFields strict;
        out.run_spec =
            RunSpecRecord{.hash = strict.String(*run_spec, "hash", "runSpec").value_or(""),
                          .revision = strict.String(*run_spec, "revision", "runSpec").value_or(""),
                          .group = std::move(*parsed)};
      }
    }
  }
  if (const json* queue = JsonMember(status, "queue"); queue != nullptr && queue->is_object()) {
    const std::string queue_path = path + ".queue";
    QueueStanding standing;
    standing.name = reader.String(*queue, "name", queue_path).value_or("");
    standing.position = reader.Int32(*queue, "position", queue_path).value_or(0);
    standing.reason = reader.String(*queue, "reason", queue_path).value_or("");
    out.queue = std::move(standing);
  }
  if (const json* service = JsonMember(status, "attainedService");
      service != nullptr && service->is_object()) {
    const std::string service_path = path + ".attainedService";
    AttainedService attained;
    attained.gpu_seconds =
        std::max<int64_t>(0, reader.Int64(*service, "gpuSeconds", service_path).value_or(0));
    attained.level = std::max(0, reader.Int32(*service, "level", service_path).value_or(0));
    attained.queue = reader.String(*service, "queue", service_path).value_or("");
    out.attained_service = std::move(attained);
  }
  if (const json* runs = reader.Array(status, "previousRuns", path)) {
    for (size_t i = 0; i < runs->size(); ++i) {
      const json& item = (*runs)[i];
      std::string item_path = IndexPath("status.previousRuns", i);
      std::optional<JobPhase> phase =
          ParseJobPhase(reader.String(item, "phase", item_path).value_or(""));
      if (!phase) {
        continue;
      }
      PreviousRun run;
      run.run = reader.Int64(item, "run", item_path).value_or(0);
      run.phase = *phase;
      run.reason = reader.String(item, "reason", item_path).value_or("");
      run.message = reader.String(item, "message", item_path).value_or("");
      run.start_time = reader.String(item, "startTime", item_path);
      run.completion_time = reader.String(item, "completionTime", item_path);
      run.restart_count = reader.Int32(item, "restartCount", item_path).value_or(0);
      out.previous_runs.push_back(std::move(run));
    }
  }
  return out;
}

Result<HybridJob> ParseOrThrow(const json& object, const ParseOptions& options) {
  if (!object.is_object()) {
    return InvalidArgument("HybridJob: must be a JSON object");
  }
  JsonFields reader;
  reader.RejectUnknownFields(options.reject_unknown_fields);
  reader.CheckKnown(object, {"apiVersion", "kind", "metadata", "spec", "status"}, "");
  if (std::optional<std::string> api_version = reader.String(object, "apiVersion", "")) {
    if (*api_version != kApiVersion) {
      reader.Error("apiVersion", "must be " + std::string(kApiVersion));
    }
  }
  if (std::optional<std::string> kind = reader.String(object, "kind", "")) {
    if (*kind != kKind) {
      reader.Error("kind", "must be " + std::string(kKind));
    }
  }
  HybridJob job;
  job.metadata = ReadObjectMeta(reader, object);
  job.spec = ReadSpec(reader, object);
  if (const json* status = JsonMember(object, "status")) {
    // Errors in the status are dropped, not reported (see json.h).
    JsonFields lenient(JsonFields::Mode::kLenient);
    job.status = ReadStatus(lenient, *status);
  }
  if (!reader.ok()) {
    return reader.ToStatus();
  }
  return job;
}

void SetIf(json& out, std::string_view key, const std::optional<std::string>& value) {
  if (value) {
    out[std::string(key)] = *value;
  }
}

template <typename T>
void SetIf(json& out, std::string_view key, const std::optional<T>& value) {
  if (value) {
    out[std::string(key)] = *value;
  }
}

void SetIfNotEmpty(json& out, std::string_view key, const std::string& value) {
  if (!value.empty()) {
    out[std::string(key)] = value;
  }
}

}  // namespace

Result<HybridJob> ParseHybridJob(const json& object, const ParseOptions& options) {
  try {
    return ParseOrThrow(object, options);
  } catch (const std::exception& error) {
    return InvalidArgument(std::string("HybridJob: ") + error.what());
  }
}

ObjectMeta ParseObjectMeta(const json& object) {
  try {
    JsonFields lenient(JsonFields::Mode::kLenient);
    return ReadObjectMeta(lenient, object);
  } catch (const std::exception&) {
    return {};
  }
}

HybridJobStatus ParseHybridJobStatus(const json& status) {
  try {
    JsonFields lenient(JsonFields::Mode::kLenient);
    return ReadStatus(lenient, status);
  } catch (const std::exception&) {
    return {};
  }
}

json ToJson(const ObjectMeta& metadata) {
  json out = json::object();
  SetIfNotEmpty(out, "name", metadata.name);
  SetIfNotEmpty(out, "namespace", metadata.namespace_name);
  SetIfNotEmpty(out, "uid", metadata.uid);
  SetIfNotEmpty(out, "resourceVersion", metadata.resource_version);
  if (metadata.generation != 0) {
    out["generation"] = metadata.generation;
  }
  SetIfNotEmpty(out, "creationTimestamp", metadata.creation_timestamp);
  SetIf(out, "deletionTimestamp", metadata.deletion_timestamp);
  if (!metadata.labels.empty()) {
    out["labels"] = metadata.labels;
  }
  if (!metadata.annotations.empty()) {
    out["annotations"] = metadata.annotations;
  }
  return out;
}

json ToJson(const HybridJobSpec& spec) {
  json out = json::object();
  out["framework"] = ToString(spec.framework);
  json roles = json::array();
  for (const ReplicaSpec& role : spec.replica_specs) {
    json item = {{"name", role.name}, {"minReplicas", role.min_replicas}};
    SetIf(item, "maxReplicas", role.max_replicas);
    item["priority"] = role.priority;
    item["restartPolicy"] = ToString(role.restart_policy);
    SetIf(item, "port", role.port);
    if (role.topology) {
      item["topology"] = TopologyObject<json>(*role.topology);
    }
    item["template"] = role.pod_template;
    roles.push_back(std::move(item));
  }
  out["replicaSpecs"] = std::move(roles);

  json run_policy = {{"backoffLimit", spec.run_policy.backoff_limit},
                     {"cleanPodPolicy", ToString(spec.run_policy.clean_pod_policy)}};
  SetIf(run_policy, "activeDeadlineSeconds", spec.run_policy.active_deadline_seconds);
  SetIf(run_policy, "ttlSecondsAfterFinished", spec.run_policy.ttl_seconds_after_finished);
  SetIf(run_policy, "scheduleTimeoutSeconds", spec.run_policy.schedule_timeout_seconds);
  if (spec.run_policy.rerun != 0) {
    run_policy["rerun"] = spec.run_policy.rerun;
  }
  out["runPolicy"] = std::move(run_policy);

  if (spec.success_policy) {
    out["successPolicy"] = {{"roles", spec.success_policy->roles},
                            {"operator", ToString(spec.success_policy->op)}};
  }
  if (!spec.volumes.empty()) {
    json volumes = json::array();
    for (const VolumeSpec& volume : spec.volumes) {
      json item = {{"name", volume.name}, {"mountPath", volume.mount_path}};
      SetIf(item, "storageClassName", volume.storage_class_name);
      SetIf(item, "size", volume.size);
      if (!volume.access_modes.empty()) {
        item["accessModes"] = volume.access_modes;
      }
      if (!volume.roles.empty()) {
        item["roles"] = volume.roles;
      }
      if (volume.retain) {
        item["retain"] = true;
      }
      SetIf(item, "existingClaim", volume.existing_claim);
      volumes.push_back(std::move(item));
    }
    out["volumes"] = std::move(volumes);
  }
  if (spec.code) {
    json code = {{"source", spec.code->source}, {"mountPath", spec.code->mount_path}};
    SetIf(code, "image", spec.code->image);
    SetIf(code, "endpoint", spec.code->endpoint);
    SetIf(code, "credentialsSecret", spec.code->credentials_secret);
    out["code"] = std::move(code);
  }
  if (spec.artifacts) {
    const ArtifactsSpec& a = *spec.artifacts;
    json artifacts = {{"volume", a.volume},
                      {"paths", a.paths},
                      {"destination", a.destination},
                      {"deadlineSeconds", a.deadline_seconds}};
    SetIf(artifacts, "endpoint", a.endpoint);
    SetIf(artifacts, "credentialsSecret", a.credentials_secret);
    SetIf(artifacts, "image", a.image);
    out["artifacts"] = std::move(artifacts);
  }
  if (spec.tensorboard) {
    json tensorboard = {{"logDir", spec.tensorboard->log_dir},
                        {"serviceType", spec.tensorboard->service_type}};
    SetIf(tensorboard, "image", spec.tensorboard->image);
    out["tensorboard"] = std::move(tensorboard);
  }
  if (spec.queue) {
    out["queue"] = *spec.queue;
  }
  if (spec.topology) {
    out["topology"] = TopologyObject<json>(*spec.topology);
  }
  out["schedulerName"] = spec.scheduler_name;
  if (spec.suspend) {
    out["suspend"] = true;
  }
  // Only when set: the defaulted spec of a job that never names it, and so
  // its run revision's name, stay what they were before the field existed.
  if (spec.run_history_limit != kDefaultRunHistoryLimit) {
    out["runHistoryLimit"] = spec.run_history_limit;
  }
  return out;
}

json ToJson(const HybridJobStatus& status) {
  json out = json::object();
  if (status.phase) {
    out["phase"] = ToString(*status.phase);
  }
  json conditions = json::array();
  for (const Condition& condition : status.conditions) {
    json item = {{"type", condition.type}, {"status", condition.status}};
    SetIfNotEmpty(item, "reason", condition.reason);
    SetIfNotEmpty(item, "message", condition.message);
    SetIfNotEmpty(item, "lastTransitionTime", condition.last_transition_time);
    SetIfNotEmpty(item, "lastUpdateTime", condition.last_update_time);
    conditions.push_back(std::move(item));
  }
  out["conditions"] = std::move(conditions);
  json replicas = json::array();
  for (const ReplicaStatus& replica : status.replica_statuses) {
    replicas.push_back({{"name", replica.name},
                        {"members", replica.members},
                        {"scheduled", replica.scheduled},
                        {"active", replica.active},
                        {"succeeded", replica.succeeded},
                        {"failed", replica.failed},
                        {"restarts", replica.restarts}});
  }
  out["replicaStatuses"] = std::move(replicas);
  SetIfNotEmpty(out, "readyMembers", status.ready_members);
  SetIf(out, "startTime", status.start_time);
  SetIf(out, "completionTime", status.completion_time);
  SetIf(out, "lastRestartTime", status.last_restart_time);
  out["restartCount"] = status.restart_count;
  out["observedGeneration"] = status.observed_generation;
  SetIfNotEmpty(out, "placement", status.placement);
  // Written from the first run on (0), so that `kubectl get -o wide` shows it;
  // a status without it (an older controller's) reads as run 0.
  out["run"] = status.run;
  if (!status.previous_runs.empty()) {
    json runs = json::array();
    for (const PreviousRun& run : status.previous_runs) {
      json item = {{"run", run.run}, {"phase", ToString(run.phase)}};
      SetIfNotEmpty(item, "reason", run.reason);
      SetIfNotEmpty(item, "message", run.message);
      SetIf(item, "startTime", run.start_time);
      SetIf(item, "completionTime", run.completion_time);
      item["restartCount"] = run.restart_count;
      runs.push_back(std::move(item));
    }
    out["previousRuns"] = std::move(runs);
  }
  if (status.queue) {
    json queue = json::object();
    SetIfNotEmpty(queue, "name", status.queue->name);
    if (status.queue->position > 0) {
      queue["position"] = status.queue->position;
    }
    SetIfNotEmpty(queue, "reason", status.queue->reason);
    out["queue"] = std::move(queue);
  }
  if (status.attained_service) {
    json service = {{"gpuSeconds", status.attained_service->gpu_seconds},
                    {"level", status.attained_service->level}};
    SetIfNotEmpty(service, "queue", status.attained_service->queue);
    out["attainedService"] = std::move(service);
  }
  if (status.run_spec) {
    out["runSpec"] = {{"hash", status.run_spec->hash},
                      {"revision", status.run_spec->revision},
                      {"group", GroupSpecToJson(status.run_spec->group)}};
  }
  return out;
}

json ToJson(const HybridJob& job) {
  return {{"apiVersion", kApiVersion},
          {"kind", kKind},
          {"metadata", ToJson(job.metadata)},
          {"spec", ToJson(job.spec)},
          {"status", ToJson(job.status)}};
}

}  // namespace hybridjob::api
