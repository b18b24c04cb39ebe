#include <hybridjob/api/defaults.h>

namespace hybridjob::api {

void ApplyDefaults(HybridJobSpec& spec) {
  for (ReplicaSpec& role : spec.replica_specs) {
    role.max_replicas = role.EffectiveMaxReplicas();
    role.port = role.EffectivePort(spec.framework);
  }
  spec.success_policy = EffectiveSuccessPolicy(spec);
  for (VolumeSpec& volume : spec.volumes) {
    if (volume.roles.empty()) {
      for (const ReplicaSpec& role : spec.replica_specs) {
        volume.roles.push_back(role.name);
      }
    }
    if (!volume.existing_claim && volume.access_modes.empty()) {
      volume.access_modes.emplace_back(kDefaultAccessMode);
    }
  }
}

void ApplyDefaults(HybridJob& job) {
  ApplyDefaults(job.spec);
}

}  // namespace hybridjob::api
