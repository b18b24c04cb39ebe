// The group-spec annotation (kGroupSpecAnnotation in labels.h): the one type
// for it, with its only parse and format. The controller writes it on every
// member from the job (GroupSpecOf); the gang-scheduler reads it from the pods.
//
//   {"roles":[{"name":"ps","min":1,"max":1,"priority":0},
//             {"name":"worker","min":1,"max":8,"priority":0,"completed":[0]}],
//    "queue":"research","scheduleTimeoutSeconds":120,
//    "topology":{"level":"example.com/rack","mode":"Required"}}
//
// "queue", "scheduleTimeoutSeconds" and "topology" (also a role's own) are
// written only when the job sets them; a role's "completed" only once members
// of it have succeeded. The scheduler trusts the annotation only to lower a trusted
// job's bounds (see scheduler/core/tenancy.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/api/types.h>
#include <hybridjob/common/status.h>

namespace hybridjob::api {

// How long a gang waits for all its member pods to exist before it is planned
// with those that do, when the job does not say.
inline constexpr int64_t kDefaultScheduleTimeoutSeconds = 300;

// One role of a pod group: how many members it may run with.
struct GroupRole {
  std::string name;
  int32_t min_replicas = 1;
  int32_t max_replicas = 1;
  int32_t priority = 0;  // higher roles grow toward their maximum first
  // The role's override of the group's topology (a domain of its own, or
  // mode None for none); unset: the role shares the group's domain.
  std::optional<TopologySpec> topology;
  // Indices whose members succeeded, ascending: they never get a pod again,
  // so they hold their place in the run of indices from 0 (the controller
  // has already lowered the minimum by their count).
  std::vector<int32_t> completed;

  friend bool operator==(const GroupRole&, const GroupRole&) = default;
};

// The whole group's shape.
struct GroupSpec {
  std::vector<GroupRole> roles;
  // Empty: the job names no queue (its namespace's default queue applies).
  std::string queue;
  // Unset: kDefaultScheduleTimeoutSeconds. Zero: never wait.
  std::optional<int64_t> schedule_timeout_seconds;
  // Every role without an override keeps to one domain of this level.
  std::optional<TopologySpec> topology;

  const GroupRole* FindRole(std::string_view name) const;
  int64_t ScheduleTimeoutSeconds() const {
    return schedule_timeout_seconds.value_or(kDefaultScheduleTimeoutSeconds);
  }

  friend bool operator==(const GroupSpec&, const GroupSpec&) = default;
};

// The shape of a (defaulted) job, as its members carry it.
GroupSpec GroupSpecOf(const HybridJob& job);

// Reads an annotation value. Refuses unnamed or duplicate roles, min > max,
// negative bounds or timeout, completed indices outside [0, max), repeated or
// out of order, and a group that can never have a member, with the field's
// path in the message.
Result<GroupSpec> ParseGroupSpec(std::string_view annotation_json);

// The annotation value: compact JSON, keys in the order shown above.
std::string FormatGroupSpec(const GroupSpec& spec);

}  // namespace hybridjob::api
