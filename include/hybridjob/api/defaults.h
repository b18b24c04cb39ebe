// Defaulting: fills every field the user may leave out with its default value,
// so a defaulted job serialises with nothing implicit. Idempotent.
#pragma once

#include <hybridjob/api/types.h>

namespace hybridjob::api {

// maxReplicas = minReplicas, port = the framework's port, the success policy
// (see DefaultSuccessPolicy), volume roles = every role, accessModes =
// [ReadWriteOnce] for created claims. Images stay unset: they are the
// controller's configuration, not the job's.
void ApplyDefaults(HybridJob& job);
void ApplyDefaults(HybridJobSpec& spec);

}  // namespace hybridjob::api
