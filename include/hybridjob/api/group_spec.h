// The group-spec annotation (kGroupSpecAnnotation in labels.h): the one type
// for it, with its only parse and format. The controller writes it on every
// member from the job (GroupSpecOf); the gang-scheduler reads it from the pods.
//
//   {"roles":[{"name":"ps","min":1,"max":1,"priority":0},
//             {"name":"worker","min":1,"max":8,"priority":0,"completed":[0]}],
//    "queue":"research","scheduleTimeoutSeconds":120,
//    "topology":{"level":"example.com/rack","mode":"Required"},
//    "resizeRestarts":true}
//
// "queue", "scheduleTimeoutSeconds" and "topology" (also a role's own) are
// written only when the job sets them; "resizeRestarts" only for frameworks
// that restart every member on a new membership (TensorFlow, MXNet, MPI); a role's "completed" only
// once members of it have succeeded. The scheduler trusts the annotation only to lower a trusted
// job's bounds (see scheduler/core/tenancy.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/api/types.h>
#include <hybridjob/common/status.h>

namespace hybridjob::api {

// GroupRole and GroupSpec, the one type for the annotation, are in types.h:
// status.runSpec records the gang as a run schedules it in the same shape.

// The shape of a (defaulted) job, as its members carry it.
GroupSpec GroupSpecOf(const HybridJob& job);

// Reads an annotation value. Refuses unnamed or duplicate roles, min > max,
// negative bounds or timeout, completed indices outside [0, max), repeated or
// out of order, and a group that can never have a member, with the field's
// path in the message.
Result<GroupSpec> ParseGroupSpec(std::string_view annotation_json);

// The annotation value: compact JSON, keys in the order shown above.
std::string FormatGroupSpec(const GroupSpec& spec);

// The same contract as a JSON value (status.runSpec.group).
Result<GroupSpec> GroupSpecFromJson(const nlohmann::json& object);
nlohmann::json GroupSpecToJson(const GroupSpec& spec);

}  // namespace hybridjob::api
