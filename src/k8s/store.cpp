#include <hybridjob/k8s/object_meta.h>
#include <hybridjob/k8s/store.h>

namespace hybridjob::k8s {

namespace indexers {

std::vector<std::string> ByNamespace(const nlohmann::json& object) {
  if (MetadataOf(object) == nullptr) {
    return {};
  }
  return {NamespaceOf(object)};
}

std::function<std::vector<std::string>(const nlohmann::json&)> ByLabel(std::string label) {
  return [label = std::move(label)](const nlohmann::json& object) -> std::vector<std::string> {
    const nlohmann::json* metadata = MetadataOf(object);
    if (metadata == nullptr) {
      return {};
    }
    auto labels = metadata->find("labels");
    if (labels == metadata->end() || !labels->is_object()) {
      return {};
    }
    auto value = labels->find(label);
    if (value == labels->end() || !value->is_string()) {
      return {};
    }
    return {value->get<std::string>()};
  };
}

std::vector<std::string> ByNodeName(const nlohmann::json& object) {
  auto spec = object.find("spec");
  if (spec == object.end() || !spec->is_object()) {
    return {};
  }
  std::string node = spec->value("nodeName", "");
  if (node.empty()) {
    return {};
  }
  return {std::move(node)};
}

}  // namespace indexers
}  // namespace hybridjob::k8s

#include <hybridjob/k8s/informer.h>

namespace hybridjob::k8s {

nlohmann::json PruneForCache(nlohmann::json&& object) {
  if (auto metadata = object.find("metadata"); metadata != object.end() && metadata->is_object()) {
    metadata->erase("managedFields");
  }
  return std::move(object);
}

}  // namespace hybridjob::k8s
