#include <hybridjob/api/labels.h>
#include <hybridjob/k8s/resource.h>

namespace hybridjob::k8s {

std::string Resource::GroupVersionPath() const {
  return group.empty() ? "/api/" + version : "/apis/" + group + "/" + version;
}

std::string Resource::CollectionPath(std::string_view ns) const {
  std::string path = GroupVersionPath();
  if (namespaced && !ns.empty()) {
    path += "/namespaces/";
    path += ns;
  }
  path += "/";
  path += plural;
  return path;
}

std::string Resource::ObjectPath(std::string_view ns, std::string_view name,
                                 std::string_view subresource) const {
  std::string path = CollectionPath(ns);
  path += "/";
  path += UrlEncode(name);
  if (!subresource.empty()) {
    path += "/";
    path += subresource;
  }
  return path;
}

namespace resources {
Resource Pods() {
  return {"", "v1", "pods", true};
}
Resource Nodes() {
  return {"", "v1", "nodes", false};
}
Resource Services() {
  return {"", "v1", "services", true};
}
Resource ConfigMaps() {
  return {"", "v1", "configmaps", true};
}
Resource Secrets() {
  return {"", "v1", "secrets", true};
}
Resource PersistentVolumeClaims() {
  return {"", "v1", "persistentvolumeclaims", true};
}
Resource PersistentVolumes() {
  return {"", "v1", "persistentvolumes", false};
}
Resource StorageClasses() {
  return {"storage.k8s.io", "v1", "storageclasses", false};
}
Resource Events() {
  return {"", "v1", "events", true};
}
Resource Namespaces() {
  return {"", "v1", "namespaces", false};
}
Resource ServiceAccounts() {
  return {"", "v1", "serviceaccounts", true};
}
Resource Leases() {
  return {"coordination.k8s.io", "v1", "leases", true};
}
Resource PriorityClasses() {
  return {"scheduling.k8s.io", "v1", "priorityclasses", false};
}
Resource Deployments() {
  return {"apps", "v1", "deployments", true};
}
Resource ControllerRevisions() {
  return {"apps", "v1", "controllerrevisions", true};
}
Resource HybridJobs() {
  return {std::string(api::kGroup), std::string(api::kVersion), std::string(api::kPlural), true};
}
Resource CustomResourceDefinitions() {
  return {"apiextensions.k8s.io", "v1", "customresourcedefinitions", false};
}
}  // namespace resources

std::string UrlEncode(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (unsigned char c : value) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace hybridjob::k8s
