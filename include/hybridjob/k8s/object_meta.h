// Reads of the metadata every Kubernetes object carries, for objects held as
// JSON: the one set of accessors the shells, the controller's planner, the
// scheduler and the simulator use. A member that is absent, null or of an
// unexpected type reads as empty: these are for objects the program observes,
// which it must never crash on (nlohmann's value() throws on a wrong type).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace hybridjob::k8s {

// metadata, or nullptr when the object has none.
const nlohmann::json* MetadataOf(const nlohmann::json& object);

std::string NameOf(const nlohmann::json& object);
std::string NamespaceOf(const nlohmann::json& object);
std::string UidOf(const nlohmann::json& object);
std::string ResourceVersionOf(const nlohmann::json& object);
std::string CreationTimestampOf(const nlohmann::json& object);
// Whether metadata.deletionTimestamp is set: the object is being deleted.
bool IsTerminating(const nlohmann::json& object);

// One label or annotation value; empty when absent.
std::string LabelOf(const nlohmann::json& object, std::string_view key);
std::string AnnotationOf(const nlohmann::json& object, std::string_view key);
// All labels or annotations; values that are not strings are left out.
std::map<std::string, std::string> LabelsOf(const nlohmann::json& object);
std::map<std::string, std::string> AnnotationsOf(const nlohmann::json& object);

// The uid of the ownerReference marked controller: true; empty when none.
std::string ControllerUidOf(const nlohmann::json& object);

// "namespace/name", or "name" for cluster-scoped objects: the key of caches
// and work queues, as client-go's MetaNamespaceKeyFunc.
std::string ObjectKey(std::string_view ns, std::string_view name);
// The key of an object from its metadata; empty if it has no name.
std::string ObjectKeyOf(const nlohmann::json& object);

}  // namespace hybridjob::k8s
