// Turning API server answers (HTTP code + metav1.Status body) into Status.
#pragma once

#include <chrono>
#include <optional>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include <hybridjob/common/status.h>

namespace hybridjob::k8s {

// Maps an HTTP error response to a Status carrying the code, the server's
// reason (metav1.Status.reason) and message, and Retry-After when given.
Status StatusFromHttpResponse(int http_status, std::string_view body,
                              std::optional<std::chrono::seconds> retry_after = std::nullopt);

// Maps a metav1.Status object (as carried by a watch ERROR event).
Status StatusFromApiStatus(const nlohmann::json& status_object);

inline bool IsNotFound(const Status& s) {
  return s.code() == StatusCode::kNotFound;
}
inline bool IsAlreadyExists(const Status& s) {
  return s.code() == StatusCode::kAlreadyExists;
}
inline bool IsConflict(const Status& s) {
  return s.code() == StatusCode::kConflict;
}
inline bool IsGone(const Status& s) {
  return s.code() == StatusCode::kGone;
}
inline bool IsForbidden(const Status& s) {
  return s.code() == StatusCode::kForbidden;
}

}  // namespace hybridjob::k8s
