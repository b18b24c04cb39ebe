#include <algorithm>

#include <hybridjob/api/group_spec.h>
#include <hybridjob/common/json_fields.h>

#include "topology_fields.h"

namespace hybridjob::api {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// A bound on replicas per role so a bad annotation cannot make the scheduler
// allocate without limit when it checks which members exist.
constexpr int64_t kMaxAnnotatedReplicasPerRole = 100000;

// The annotation's topology: a level with Required or Preferred, none with None.
std::optional<TopologySpec> ReadTopology(JsonFields& fields, const json& parent,
                                         const std::string& parent_path) {
  std::optional<TopologySpec> topology =
      ReadTopologyMember(fields, parent, parent_path, /*reject_unknown_keys=*/false);
  if (topology && topology->level.empty() != (topology->mode == TopologyMode::kNone)) {
    fields.Error(JoinPath(JoinPath(parent_path, "topology"), "level"),
                 "required unless the mode is None, and only then");
  }
  return topology;
}

// A role's succeeded indices: ascending, each in [0, max).
std::vector<int32_t> ReadCompleted(JsonFields& fields, const json& role, const std::string& path,
                                   int32_t max_replicas) {
  std::vector<int32_t> completed;
  const json* items = fields.Array(role, "completed", path);
  if (items == nullptr) {
    return completed;
  }
  const std::string list_path = JoinPath(path, "completed");
  for (size_t i = 0; i < items->size(); ++i) {
    const json& item = (*items)[i];
    const std::string item_path = IndexPath(list_path, i);
    if (!item.is_number_integer()) {
      fields.Error(item_path, "must be an integer");
      return {};
    }
    const int64_t index = item.get<int64_t>();
    if (index < 0 || index >= max_replicas) {
      fields.Error(item_path, "index " + std::to_string(index) + " is outside [0, max " +
                                  std::to_string(max_replicas) + ")");
      return {};
    }
    if (!completed.empty() && index <= completed.back()) {
      fields.Error(item_path, "indices must ascend without repeats");
      return {};
    }
    completed.push_back(static_cast<int32_t>(index));
  }
  return completed;
}

}  // namespace

const GroupRole* GroupSpec::FindRole(std::string_view name) const {
  for (const GroupRole& role : roles) {
    if (role.name == name) {
      return &role;
    }
  }
  return nullptr;
}

GroupSpec GroupSpecOf(const HybridJob& job) {
  GroupSpec spec;
  for (const ReplicaSpec& role : job.spec.replica_specs) {
    spec.roles.push_back(
        {role.name, role.min_replicas, role.EffectiveMaxReplicas(), role.priority, role.topology});
  }
  spec.queue = job.spec.queue.value_or("");
  spec.topology = job.spec.topology;
  spec.schedule_timeout_seconds = job.spec.run_policy.schedule_timeout_seconds;
  spec.resize_restarts = !LearnsMembershipLive(job.spec.framework);
  return spec;
}

Result<GroupSpec> ParseGroupSpec(std::string_view annotation_json) {
  json object = json::parse(annotation_json, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) {
    return InvalidArgument("group spec: not valid JSON");
  }
  return GroupSpecFromJson(object);
}

Result<GroupSpec> GroupSpecFromJson(const json& object) {
  if (!object.is_object()) {
    return InvalidArgument("group spec: must be an object");
  }
  JsonFields fields;
  GroupSpec spec;
  int64_t total_max = 0;
  const json* roles = fields.Array(object, "roles", "");
  if (roles == nullptr || roles->empty()) {
    fields.Error("roles", "at least one role is required");
  }
  for (size_t i = 0; roles != nullptr && i < roles->size(); ++i) {
    const std::string path = IndexPath("roles", i);
    const json& item = (*roles)[i];
    if (!item.is_object()) {
      fields.Error(path, "must be an object");
      continue;
    }
    GroupRole role;
    role.name = fields.String(item, "name", path).value_or("");
    if (role.name.empty()) {
      fields.Error(JoinPath(path, "name"), "required");
    } else if (spec.FindRole(role.name) != nullptr) {
      fields.Error(JoinPath(path, "name"), "duplicate role \"" + role.name + "\"");
    }
    // Bounds are read as 64-bit so that an out-of-range value is refused by
    // the checks below rather than wrapped.
    const int64_t min = fields.Int64(item, "min", path).value_or(1);
    const int64_t max = fields.Int64(item, "max", path).value_or(std::max<int64_t>(min, 1));
    if (min < 0 || max < 0 || min > max) {
      fields.Error(path, "need 0 <= min <= max, got min " + std::to_string(min) + " max " +
                             std::to_string(max));
    } else if (max > kMaxAnnotatedReplicasPerRole) {
      fields.Error(JoinPath(path, "max"),
                   "more than " + std::to_string(kMaxAnnotatedReplicasPerRole));
    } else {
      role.min_replicas = static_cast<int32_t>(min);
      role.max_replicas = static_cast<int32_t>(max);
      total_max += max;
    }
    role.priority = fields.Int32(item, "priority", path).value_or(0);
    role.topology = ReadTopology(fields, item, path);
    role.completed = ReadCompleted(fields, item, path, role.max_replicas);
    spec.roles.push_back(std::move(role));
  }
  if (fields.ok() && total_max == 0) {
    fields.Error("roles", "every role has max 0");
  }
  spec.queue = fields.String(object, "queue", "").value_or("");
  spec.schedule_timeout_seconds = fields.Int64(object, "scheduleTimeoutSeconds", "");
  if (spec.schedule_timeout_seconds && *spec.schedule_timeout_seconds < 0) {
    fields.Error("scheduleTimeoutSeconds", "must not be negative");
  }
  spec.topology = ReadTopology(fields, object, "");
  spec.resize_restarts = fields.Bool(object, "resizeRestarts", "").value_or(false);
  if (spec.topology && spec.topology->mode == TopologyMode::kNone) {
    fields.Error("topology.mode", "None is only for a role");
  }
  if (!fields.ok()) {
    return Status(StatusCode::kInvalidArgument, "group spec: " + fields.ToStatus().message());
  }
  return spec;
}

namespace {

ordered_json GroupSpecObject(const GroupSpec& spec) {
  ordered_json roles = ordered_json::array();
  for (const GroupRole& role : spec.roles) {
    ordered_json item = {{"name", role.name},
                         {"min", role.min_replicas},
                         {"max", role.max_replicas},
                         {"priority", role.priority}};
    if (role.topology) {
      item["topology"] = TopologyObject<ordered_json>(*role.topology);
    }
    if (!role.completed.empty()) {
      item["completed"] = role.completed;
    }
    roles.push_back(std::move(item));
  }
  ordered_json object = {{"roles", std::move(roles)}};
  if (!spec.queue.empty()) {
    object["queue"] = spec.queue;
  }
  if (spec.schedule_timeout_seconds) {
    object["scheduleTimeoutSeconds"] = *spec.schedule_timeout_seconds;
  }
  if (spec.topology) {
    object["topology"] = TopologyObject<ordered_json>(*spec.topology);
  }
  if (spec.resize_restarts) {
    object["resizeRestarts"] = true;
  }
  return object;
}

}  // namespace

std::string FormatGroupSpec(const GroupSpec& spec) {
  return GroupSpecObject(spec).dump();
}

json GroupSpecToJson(const GroupSpec& spec) {
  return json::parse(GroupSpecObject(spec).dump());
}

}  // namespace hybridjob::api
