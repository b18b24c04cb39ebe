// Status and Result: how every module reports failure across its boundary.
// Exceptions from third-party libraries never cross a module boundary; they are
// caught in the adapter that calls the library and turned into a Status.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace hybridjob {

enum class StatusCode {
  kOk,
  kInvalidArgument,  // caller's input is malformed (bad flag, bad manifest, bad config)
  kNotFound,         // HTTP 404
  kAlreadyExists,    // HTTP 409 with reason AlreadyExists
  kConflict,         // HTTP 409: stale resourceVersion or failed precondition
  kGone,             // HTTP 410: resourceVersion too old, relist
  kUnauthorized,     // HTTP 401
  kForbidden,        // HTTP 403
  kInvalid,          // HTTP 422: the API server refused the object
  kBadRequest,       // HTTP 400
  kTooManyRequests,  // HTTP 429, see retry_after
  kTimeout,          // HTTP 504 or a client-side deadline
  kUnavailable,      // transport failure or HTTP 5xx: retry later
  kCancelled,        // the operation was stopped on purpose (shutdown)
  kInternal,         // a bug or an unexpected response
};

std::string_view StatusCodeName(StatusCode code);

// [[nodiscard]]: a dropped Status is a dropped error. A caller that means to
// drop one casts it to void.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Set when the status came from an HTTP response.
  int http_status() const { return http_status_; }
  // The API server's machine-readable reason (metav1.Status.reason), if any.
  const std::string& reason() const { return reason_; }
  std::optional<std::chrono::seconds> retry_after() const { return retry_after_; }

  Status& WithHttp(int http_status, std::string reason) {
    http_status_ = http_status;
    reason_ = std::move(reason);
    return *this;
  }
  Status& WithRetryAfter(std::chrono::seconds delay) {
    retry_after_ = delay;
    return *this;
  }

  // The same status with "context: " before its message; the HTTP status,
  // reason and Retry-After are kept.
  Status WithContext(std::string_view context) const {
    Status out = *this;
    out.message_ = std::string(context) + ": " + message_;
    return out;
  }

  // "Conflict: Operation cannot be fulfilled ..." — for logs and conditions.
  std::string ToString() const;

  // Whether trying the same call again later can succeed.
  bool IsRetriable() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  int http_status_ = 0;
  std::string reason_;
  std::optional<std::chrono::seconds> retry_after_;
};

inline Status InvalidArgument(std::string message) {
  return {StatusCode::kInvalidArgument, std::move(message)};
}
inline Status NotFound(std::string message) {
  return {StatusCode::kNotFound, std::move(message)};
}
inline Status Internal(std::string message) {
  return {StatusCode::kInternal, std::move(message)};
}
inline Status Unavailable(std::string message) {
  return {StatusCode::kUnavailable, std::move(message)};
}
inline Status Cancelled(std::string message) {
  return {StatusCode::kCancelled, std::move(message)};
}

// A value or the Status saying why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : state_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(state_).ok()) {
      state_ =
          Status(StatusCode::kInternal, "Result constructed from an OK status without a value");
    }
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return ok(); }

  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(state_);
  }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  T value_or(T fallback) const& { return ok() ? value() : std::move(fallback); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace hybridjob
