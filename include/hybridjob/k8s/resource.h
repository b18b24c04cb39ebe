// Which REST collection an object lives in, and the URL paths to it.
#pragma once

#include <string>
#include <string_view>

namespace hybridjob::k8s {

struct Resource {
  std::string group;    // "" for the core group
  std::string version;  // "v1"
  std::string plural;   // "pods"
  bool namespaced = true;

  // /api/v1 or /apis/<group>/<version>
  std::string GroupVersionPath() const;
  std::string ApiVersion() const { return group.empty() ? version : group + "/" + version; }

  // Collection path; an empty namespace means all namespaces.
  std::string CollectionPath(std::string_view ns) const;
  // Object path, optionally with a subresource (status, binding, eviction).
  std::string ObjectPath(std::string_view ns, std::string_view name,
                         std::string_view subresource = {}) const;
};

namespace resources {
Resource Pods();
Resource Nodes();
Resource Services();
Resource ConfigMaps();
Resource Secrets();
Resource PersistentVolumeClaims();
Resource PersistentVolumes();
Resource StorageClasses();
Resource Events();
Resource Namespaces();
Resource ServiceAccounts();
Resource Leases();
Resource PriorityClasses();
Resource Deployments();
Resource ControllerRevisions();
Resource HybridJobs();
Resource CustomResourceDefinitions();
}  // namespace resources

// Percent-encodes a query parameter value.
std::string UrlEncode(std::string_view value);

}  // namespace hybridjob::k8s
