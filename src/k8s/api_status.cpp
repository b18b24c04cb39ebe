#include <cstdint>

#include <nlohmann/json.hpp>

#include <hybridjob/k8s/api_status.h>

namespace hybridjob::k8s {
namespace {

StatusCode CodeFor(int http_status, std::string_view reason) {
  switch (http_status) {
    case 400:
      return StatusCode::kBadRequest;
    case 401:
      return StatusCode::kUnauthorized;
    case 403:
      return StatusCode::kForbidden;
    case 404:
      return StatusCode::kNotFound;
    case 405:
      return StatusCode::kBadRequest;
    case 409:
      return reason == "AlreadyExists" ? StatusCode::kAlreadyExists : StatusCode::kConflict;
    case 410:
      return StatusCode::kGone;
    case 415:
      return StatusCode::kBadRequest;
    case 422:
      return StatusCode::kInvalid;
    case 429:
      return StatusCode::kTooManyRequests;
    case 504:
      return StatusCode::kTimeout;
    default:
      break;
  }
  if (reason == "Expired" || reason == "Gone") {
    return StatusCode::kGone;
  }
  if (http_status >= 500) {
    return StatusCode::kUnavailable;
  }
  return StatusCode::kInternal;
}

std::string_view DefaultReason(int http_status) {
  switch (http_status) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 409:
      return "Conflict";
    case 410:
      return "Gone";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 500:
      return "InternalError";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "Unknown";
  }
}

}  // namespace

Status StatusFromApiStatus(const nlohmann::json& status_object) {
  int code = 500;
  std::string reason;
  std::string message;
  if (status_object.is_object()) {
    // Only a plausible HTTP code counts: converting a larger number to int
    // wrapped (4294967706 read as 410, Gone, and the caller relisted). Read as
    // int64, numbers beyond its range come out negative.
    if (auto it = status_object.find("code");
        it != status_object.end() && it->is_number_integer()) {
      const int64_t value = it->get<int64_t>();
      if (value >= 0 && value <= 999) {
        code = static_cast<int>(value);
      }
    }
    if (auto it = status_object.find("reason"); it != status_object.end() && it->is_string()) {
      reason = it->get<std::string>();
    }
    if (auto it = status_object.find("message"); it != status_object.end() && it->is_string()) {
      message = it->get<std::string>();
    }
  }
  if (reason.empty()) {
    reason = DefaultReason(code);
  }
  if (message.empty()) {
    message = reason;
  }
  Status status(CodeFor(code, reason), std::move(message));
  status.WithHttp(code, std::move(reason));
  return status;
}

Status StatusFromHttpResponse(int http_status, std::string_view body,
                              std::optional<std::chrono::seconds> retry_after) {
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  Status status;
  // value() would throw for a "kind" that is not a string.
  const auto kind = parsed.is_object() ? parsed.find("kind") : parsed.end();
  if (parsed.is_object() && kind != parsed.end() && kind->is_string() &&
      kind->get<std::string>() == "Status") {
    parsed["code"] = http_status;  // the HTTP code is authoritative
    status = StatusFromApiStatus(parsed);
  } else {
    std::string message(body.substr(0, 512));
    while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) {
      message.pop_back();
    }
    status = Status(CodeFor(http_status, ""),
                    message.empty() ? std::string(DefaultReason(http_status)) : message);
    status.WithHttp(http_status, std::string(DefaultReason(http_status)));
  }
  if (retry_after) {
    status.WithRetryAfter(*retry_after);
  }
  return status;
}

}  // namespace hybridjob::k8s
