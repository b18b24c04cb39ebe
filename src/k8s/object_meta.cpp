#include <hybridjob/common/json_fields.h>
#include <hybridjob/k8s/object_meta.h>

namespace hybridjob::k8s {
namespace {

using nlohmann::json;

std::string MetadataString(const json& object, std::string_view key) {
  const json* metadata = MetadataOf(object);
  if (metadata == nullptr) {
    return {};
  }
  const json* value = JsonMember(*metadata, key);
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

std::string MapEntry(const json& object, std::string_view map, std::string_view key) {
  const json* metadata = MetadataOf(object);
  const json* entries = metadata != nullptr ? JsonMember(*metadata, map) : nullptr;
  const json* value = entries != nullptr ? JsonMember(*entries, key) : nullptr;
  return value != nullptr && value->is_string() ? value->get<std::string>() : std::string();
}

std::map<std::string, std::string> MapOf(const json& object, std::string_view map) {
  const json* metadata = MetadataOf(object);
  if (metadata == nullptr) {
    return {};
  }
  return JsonFields(JsonFields::Mode::kLenient).StringMap(*metadata, map, "metadata");
}

}  // namespace

const json* MetadataOf(const json& object) {
  const json* metadata = JsonMember(object, "metadata");
  return metadata != nullptr && metadata->is_object() ? metadata : nullptr;
}

std::string NameOf(const json& object) {
  return MetadataString(object, "name");
}

std::string NamespaceOf(const json& object) {
  return MetadataString(object, "namespace");
}

std::string UidOf(const json& object) {
  return MetadataString(object, "uid");
}

std::string ResourceVersionOf(const json& object) {
  return MetadataString(object, "resourceVersion");
}

std::string CreationTimestampOf(const json& object) {
  return MetadataString(object, "creationTimestamp");
}

bool IsTerminating(const json& object) {
  const json* metadata = MetadataOf(object);
  return metadata != nullptr && JsonMember(*metadata, "deletionTimestamp") != nullptr;
}

std::string LabelOf(const json& object, std::string_view key) {
  return MapEntry(object, "labels", key);
}

std::string AnnotationOf(const json& object, std::string_view key) {
  return MapEntry(object, "annotations", key);
}

std::map<std::string, std::string> LabelsOf(const json& object) {
  return MapOf(object, "labels");
}

std::map<std::string, std::string> AnnotationsOf(const json& object) {
  return MapOf(object, "annotations");
}

std::string ControllerUidOf(const json& object) {
  const json* metadata = MetadataOf(object);
  const json* owners = metadata != nullptr ? JsonMember(*metadata, "ownerReferences") : nullptr;
  if (owners == nullptr || !owners->is_array()) {
    return {};
  }
  for (const json& owner : *owners) {
    const json* controller = JsonMember(owner, "controller");
    if (controller != nullptr && controller->is_boolean() && controller->get<bool>()) {
      const json* uid = JsonMember(owner, "uid");
      return uid != nullptr && uid->is_string() ? uid->get<std::string>() : std::string();
    }
  }
  return {};
}

std::string ObjectKey(std::string_view ns, std::string_view name) {
  if (ns.empty()) {
    return std::string(name);
  }
  std::string key;
  key.reserve(ns.size() + 1 + name.size());
  key.append(ns).append("/").append(name);
  return key;
}

std::string ObjectKeyOf(const json& object) {
  const std::string name = NameOf(object);
  return name.empty() ? std::string() : ObjectKey(NamespaceOf(object), name);
}

}  // namespace hybridjob::k8s
