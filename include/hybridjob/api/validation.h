// Semantic checks the CRD schema cannot express: cross-field rules, uniqueness,
// derived name lengths, framework conventions. Works on defaulted and
// undefaulted jobs alike.
#pragma once

#include <string>
#include <vector>

#include <hybridjob/api/types.h>

namespace hybridjob::api {

struct FieldError {
  std::string field;  // "spec.replicaSpecs[1].maxReplicas"
  std::string message;

  std::string ToString() const { return field + ": " + message; }
  friend bool operator==(const FieldError&, const FieldError&) = default;
};

// Upper bounds that keep one job from overwhelming the controller and the
// scheduler; far above any real training job.
inline constexpr int32_t kMaxReplicasPerRole = 10000;
inline constexpr int32_t kMaxReplicasPerJob = 10000;
inline constexpr size_t kMaxRoles = 32;
inline constexpr size_t kMaxVolumes = 32;

std::vector<FieldError> Validate(const HybridJob& job);

// "a: x; b: y" for a condition message or an Event.
std::string JoinErrors(const std::vector<FieldError>& errors);

}  // namespace hybridjob::api
