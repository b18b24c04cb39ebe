// The ConfigMaps a job's members cannot start without: those its pod
// templates mount, project or read into the environment, unless marked
// optional. A kubelet leaves a pod whose such ConfigMap is missing in
// ContainerCreating (CreateContainerConfigError for the environment), holding
// whatever it was bound with; so the controller creates no member before they
// exist (plan_membership.cpp), and no GPU waits on a missing object.
//
// Secrets are left out on purpose: no HybridJob binary may read Secrets
// (docs/security.md), so a member that needs a missing one waits on its node
// as any pod would.
#pragma once

#include <string>
#include <vector>

#include <hybridjob/api/types.h>

namespace hybridjob::controller {

struct RequiredConfigMap {
  std::string name;
  std::string used_by;  // `volume "config" of role worker`, ...

  friend bool operator==(const RequiredConfigMap&, const RequiredConfigMap&) = default;
};

// Every required ConfigMap of the job, each name once, in the order of the
// roles, volumes before containers.
std::vector<RequiredConfigMap> RequiredConfigMaps(const api::HybridJob& job);

// `ConfigMap "config" (volume "config" of role worker)`.
std::string Describe(const RequiredConfigMap& config_map);

}  // namespace hybridjob::controller
