#include <hybridjob/common/status.h>

namespace hybridjob {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNotFound:
      return "NotFound";
    case StatusCode::kAlreadyExists:
      return "AlreadyExists";
    case StatusCode::kConflict:
      return "Conflict";
    case StatusCode::kGone:
      return "Gone";
    case StatusCode::kUnauthorized:
      return "Unauthorized";
    case StatusCode::kForbidden:
      return "Forbidden";
    case StatusCode::kInvalid:
      return "Invalid";
    case StatusCode::kBadRequest:
      return "BadRequest";
    case StatusCode::kTooManyRequests:
      return "TooManyRequests";
    case StatusCode::kTimeout:
      return "Timeout";
    case StatusCode::kUnavailable:
      return "Unavailable";
    case StatusCode::kCancelled:
      return "Cancelled";
    case StatusCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) {
    return "OK";
  }
  std::string out(StatusCodeName(code_));
  if (http_status_ != 0) {
    out += " (HTTP " + std::to_string(http_status_) + ")";
  }
  if (!message_.empty()) {
    out += ": " + message_;
  }
  return out;
}

bool Status::IsRetriable() const {
  switch (code_) {
    case StatusCode::kConflict:
    case StatusCode::kTooManyRequests:
    case StatusCode::kTimeout:
    case StatusCode::kUnavailable:
    case StatusCode::kGone:
      return true;
    default:
      return false;
  }
}

}  // namespace hybridjob
