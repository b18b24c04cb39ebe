#include <type_traits>

#include <hybridjob/controller/actions.h>
#include <hybridjob/k8s/object_meta.h>

namespace hybridjob::controller {
namespace {

int32_t MemberTotal(const std::vector<std::pair<std::string, int32_t>>& roles) {
  int32_t total = 0;
  for (const auto& [role, count] : roles) {
    total += count;
  }
  return total;
}

std::string PerRoleCounts(const std::vector<std::pair<std::string, int32_t>>& roles) {
  std::string text;
  for (const auto& [role, count] : roles) {
    text += " " + role + " " + std::to_string(count);
  }
  return text;
}

}  // namespace

std::string CreatedMessage(const CreatedMembers& members) {
  return "created " + std::to_string(MemberTotal(members.roles)) +
         " member pods:" + PerRoleCounts(members.roles) +
         (members.others_refused ? " (the API server refused the others)" : "");
}

std::optional<RecordEvent> CreatedEventOnceApplied(const RecordEvent& planned,
                                                   const std::set<std::string>& created_pods) {
  if (!planned.created || planned.created->creates.empty()) {
    return planned;
  }
  std::vector<std::pair<std::string, int32_t>> existing = planned.created->roles;
  size_t took = 0;
  for (const auto& [pod, role] : planned.created->creates) {
    if (created_pods.count(pod) != 0) {
      ++took;
      continue;
    }
    for (auto& [name, count] : existing) {
      if (name == role && count > 0) {
        --count;
      }
    }
  }
  if (took == 0) {
    return std::nullopt;
  }
  if (took == planned.created->creates.size()) {
    return planned;
  }
  RecordEvent event{planned.type, planned.reason, "", std::nullopt};
  event.message = "created " + std::to_string(MemberTotal(existing)) + " of " +
                  std::to_string(MemberTotal(planned.created->roles)) +
                  " member pods:" + PerRoleCounts(existing) +
                  "; the others are not created yet (see FailedCreate)";
  return event;
}

std::string_view ToString(EventType type) {
  return type == EventType::kWarning ? "Warning" : "Normal";
}

std::string Describe(const Action& action) {
  return std::visit(
      [](const auto& a) -> std::string {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, CreatePod>) {
          return "CreatePod " + k8s::NameOf(a.pod);
        } else if constexpr (std::is_same_v<T, CreateService>) {
          return "CreateService " + k8s::NameOf(a.service);
        } else if constexpr (std::is_same_v<T, CreateSshKeySecret>) {
          return "CreateSshKeySecret " + k8s::NameOf(a.secret);
        } else if constexpr (std::is_same_v<T, CreateRunRevision>) {
          return "CreateRunRevision " + k8s::NameOf(a.revision);
        } else if constexpr (std::is_same_v<T, DeleteRunRevision>) {
          return "DeleteRunRevision " + a.name;
        } else if constexpr (std::is_same_v<T, CreateConfigMap>) {
          return "CreateConfigMap " + k8s::NameOf(a.config_map);
        } else if constexpr (std::is_same_v<T, UpdateConfigMap>) {
          return "UpdateConfigMap " + k8s::NameOf(a.config_map);
        } else if constexpr (std::is_same_v<T, DeleteConfigMap>) {
          return "DeleteConfigMap " + a.name;
        } else if constexpr (std::is_same_v<T, CreatePVC>) {
          return "CreatePVC " + k8s::NameOf(a.claim);
        } else if constexpr (std::is_same_v<T, CreateDeployment>) {
          return "CreateDeployment " + k8s::NameOf(a.deployment);
        } else if constexpr (std::is_same_v<T, DeletePod>) {
          return "DeletePod " + a.name + " (" + a.reason + ")";
        } else if constexpr (std::is_same_v<T, PatchPodGroupSpec>) {
          return "PatchPodGroupSpec " + a.name + " " + a.group_spec;
        } else if constexpr (std::is_same_v<T, UpdateStatus>) {
          std::string phase =
              a.status.phase ? std::string(api::ToString(*a.status.phase)) : std::string("-");
          return "UpdateStatus phase=" + phase;
        } else if constexpr (std::is_same_v<T, RecordEvent>) {
          return "RecordEvent " + std::string(ToString(a.type)) + " " + a.reason + ": " + a.message;
        } else {
          static_assert(std::is_same_v<T, DeleteJob>);
          return "DeleteJob";
        }
      },
      action);
}

}  // namespace hybridjob::controller
