#include <type_traits>

#include <hybridjob/controller/actions.h>

namespace hybridjob::controller {
namespace {

std::string NameOf(const nlohmann::json& object) {
  if (object.is_object() && object.contains("metadata") && object["metadata"].is_object()) {
    return object["metadata"].value("name", "");
  }
  return "";
}

}  // namespace

std::string_view ToString(EventType type) {
  return type == EventType::kWarning ? "Warning" : "Normal";
}

std::string Describe(const Action& action) {
  return std::visit(
      [](const auto& a) -> std::string {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, CreatePod>) {
          return "CreatePod " + NameOf(a.pod);
        } else if constexpr (std::is_same_v<T, CreateService>) {
          return "CreateService " + NameOf(a.service);
        } else if constexpr (std::is_same_v<T, CreateConfigMap>) {
          return "CreateConfigMap " + NameOf(a.config_map);
        } else if constexpr (std::is_same_v<T, UpdateConfigMap>) {
          return "UpdateConfigMap " + NameOf(a.config_map);
        } else if constexpr (std::is_same_v<T, CreatePVC>) {
          return "CreatePVC " + NameOf(a.claim);
        } else if constexpr (std::is_same_v<T, CreateDeployment>) {
          return "CreateDeployment " + NameOf(a.deployment);
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
