// Who a request to a binary's serving port comes from, and what it may see,
// decided by the API server as kube-rbac-proxy and kubebuilder-made operators
// do: the bearer token through a TokenReview, each permission through a
// SubjectAccessReview. The review objects are built and read by pure
// functions; ApiServerAccessReviewer sends them, and CachingAccessReviewer
// keeps answers for a short time so a scrape or a dashboard poll does not
// cost two API calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>

namespace hybridjob::k8s {
class ApiClient;
}

namespace hybridjob::observability {

// The user a TokenReview names (authentication.k8s.io/v1 UserInfo).
struct UserInfo {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;

  friend bool operator==(const UserInfo&, const UserInfo&) = default;
};

// One permission: a verb on a resource (namespace empty: every namespace, or
// a cluster-scoped resource), or, when `path` is set, on a non-resource URL.
struct AccessCheck {
  std::string verb;
  std::string group;
  std::string resource;
  std::string namespace_name;
  std::string path;

  static AccessCheck NonResource(std::string verb, std::string path);
  static AccessCheck Resource(std::string verb, std::string group, std::string resource,
                              std::string namespace_name = {});
  // "get /metrics", "list hybridjobs.batch.hybridjob.io in a": for messages.
  std::string Describe() const;

  friend bool operator==(const AccessCheck&, const AccessCheck&) = default;
  friend auto operator<=>(const AccessCheck&, const AccessCheck&) = default;
};

// The bearer token of an Authorization header ("Bearer <token>", the scheme
// case-insensitive); empty when there is none.
std::string BearerToken(std::string_view authorization_header);

// A TokenReview to POST; audiences empty: the API server's own.
nlohmann::json TokenReviewRequest(std::string_view token,
                                  const std::vector<std::string>& audiences);
// The reviewed TokenReview: the user when authenticated, nullopt when not;
// an error when the reply is not a TokenReview.
Result<std::optional<UserInfo>> ParseTokenReview(const nlohmann::json& review);

// A SubjectAccessReview of `check` for `user`, to POST.
nlohmann::json SubjectAccessReviewRequest(const UserInfo& user, const AccessCheck& check);
// Whether the reviewed SubjectAccessReview allows; an error when it is not one.
Result<bool> ParseSubjectAccessReview(const nlohmann::json& review);

class AccessReviewer {
 public:
  virtual ~AccessReviewer() = default;
  // nullopt: the token names nobody (expired, revoked, made up).
  virtual Result<std::optional<UserInfo>> Authenticate(std::string_view token) = 0;
  virtual Result<bool> Authorize(const UserInfo& user, const AccessCheck& check) = 0;
};

// Sends the reviews to the API server through `client` (which must outlive
// it). The binary's account needs the `system:auth-delegator` ClusterRole.
std::unique_ptr<AccessReviewer> ApiServerAccessReviewer(k8s::ApiClient& client);

// How long answers are kept: kube-rbac-proxy's defaults for what the API
// server said yes or no to. Errors are never kept.
struct ReviewCacheTtl {
  std::chrono::seconds authenticated{120};
  std::chrono::seconds unauthenticated{10};
  std::chrono::seconds allowed{300};
  std::chrono::seconds denied{30};
  size_t max_entries = 4096;  // per kind; the oldest half goes when full
};

using SteadyClock = std::function<std::chrono::steady_clock::time_point()>;

// Keeps `inner`'s answers for ReviewCacheTtl. Tokens are kept as SHA-256
// digests, never as text. Thread-safe; `inner` is called without a lock held.
std::unique_ptr<AccessReviewer> CachingAccessReviewer(std::unique_ptr<AccessReviewer> inner,
                                                      ReviewCacheTtl ttl = {},
                                                      SteadyClock now = {});

}  // namespace hybridjob::observability
