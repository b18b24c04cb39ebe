#include <algorithm>
#include <cctype>
#include <unordered_map>
#include <utility>

#include <openssl/sha.h>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/resource.h>
#include <hybridjob/observability/access_review.h>

namespace hybridjob::observability {

using nlohmann::json;

AccessCheck AccessCheck::NonResource(std::string verb, std::string path) {
  AccessCheck check;
  check.verb = std::move(verb);
  check.path = std::move(path);
  return check;
}

AccessCheck AccessCheck::Resource(std::string verb, std::string group, std::string resource,
                                  std::string namespace_name) {
  AccessCheck check;
  check.verb = std::move(verb);
  check.group = std::move(group);
  check.resource = std::move(resource);
  check.namespace_name = std::move(namespace_name);
  return check;
}

std::string AccessCheck::Describe() const {
  if (!path.empty()) {
    return verb + " " + path;
  }
  std::string out = verb + " " + resource + (group.empty() ? "" : "." + group);
  if (!namespace_name.empty()) {
    out += " in namespace " + namespace_name;
  }
  return out;
}

std::string BearerToken(std::string_view header) {
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() <= kScheme.size()) {
    return {};
  }
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) {
      return {};
    }
  }
  std::string_view token = header.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') {
    token.remove_prefix(1);
  }
  while (!token.empty() && (token.back() == ' ' || token.back() == '\r')) {
    token.remove_suffix(1);
  }
  return std::string(token);
}

json TokenReviewRequest(std::string_view token, const std::vector<std::string>& audiences) {
  json review = {{"apiVersion", "authentication.k8s.io/v1"},
                 {"kind", "TokenReview"},
                 {"spec", {{"token", std::string(token)}}}};
  if (!audiences.empty()) {
    review["spec"]["audiences"] = audiences;
  }
  return review;
}

namespace {

const json* Field(const json& object, const char* name) {
  if (!object.is_object()) {
    return nullptr;
  }
  auto it = object.find(name);
  return it == object.end() ? nullptr : &*it;
}

Status NotA(std::string_view kind, const json& review) {
  std::string got = review.is_object() ? review.value("kind", std::string("an object without kind"))
                                       : std::string(review.type_name());
  return Internal("the API server's reply is not a " + std::string(kind) + " (" + got + ")");
}

}  // namespace

Result<std::optional<UserInfo>> ParseTokenReview(const json& review) {
  const json* kind = Field(review, "kind");
  if (kind == nullptr || *kind != "TokenReview") {
    return NotA("TokenReview", review);
  }
  const json* status = Field(review, "status");
  const json* authenticated = status ? Field(*status, "authenticated") : nullptr;
  if (authenticated == nullptr || !authenticated->is_boolean() || !authenticated->get<bool>()) {
    return std::optional<UserInfo>();
  }
  const json* user = Field(*status, "user");
  if (user == nullptr || !user->is_object()) {
    return Internal("an authenticated TokenReview names no user");
  }
  UserInfo info;
  if (const json* name = Field(*user, "username"); name && name->is_string()) {
    info.username = name->get<std::string>();
  }
  if (const json* uid = Field(*user, "uid"); uid && uid->is_string()) {
    info.uid = uid->get<std::string>();
  }
  if (const json* groups = Field(*user, "groups"); groups && groups->is_array()) {
    for (const json& group : *groups) {
      if (group.is_string()) {
        info.groups.push_back(group.get<std::string>());
      }
    }
  }
  if (const json* extra = Field(*user, "extra"); extra && extra->is_object()) {
    for (const auto& [key, values] : extra->items()) {
      std::vector<std::string>& out = info.extra[key];
      if (values.is_array()) {
        for (const json& value : values) {
          if (value.is_string()) {
            out.push_back(value.get<std::string>());
          }
        }
      }
    }
  }
  if (info.username.empty()) {
    return Internal("an authenticated TokenReview names no user");
  }
  return std::optional<UserInfo>(std::move(info));
}

json SubjectAccessReviewRequest(const UserInfo& user, const AccessCheck& check) {
  json spec = {{"user", user.username}};
  if (!user.uid.empty()) {
    spec["uid"] = user.uid;
  }
  if (!user.groups.empty()) {
    spec["groups"] = user.groups;
  }
  if (!user.extra.empty()) {
    spec["extra"] = user.extra;
  }
  if (!check.path.empty()) {
    spec["nonResourceAttributes"] = {{"path", check.path}, {"verb", check.verb}};
  } else {
    json attributes = {{"verb", check.verb}, {"group", check.group}, {"resource", check.resource}};
    if (!check.namespace_name.empty()) {
      attributes["namespace"] = check.namespace_name;
    }
    spec["resourceAttributes"] = std::move(attributes);
  }
  return {{"apiVersion", "authorization.k8s.io/v1"},
          {"kind", "SubjectAccessReview"},
          {"spec", std::move(spec)}};
}

Result<bool> ParseSubjectAccessReview(const json& review) {
  const json* kind = Field(review, "kind");
  if (kind == nullptr || *kind != "SubjectAccessReview") {
    return NotA("SubjectAccessReview", review);
  }
  const json* status = Field(review, "status");
  const json* allowed = status ? Field(*status, "allowed") : nullptr;
  const json* denied = status ? Field(*status, "denied") : nullptr;
  const bool is_denied = denied != nullptr && denied->is_boolean() && denied->get<bool>();
  return !is_denied && allowed != nullptr && allowed->is_boolean() && allowed->get<bool>();
}

namespace {

class ApiServerReviewer final : public AccessReviewer {
 public:
  explicit ApiServerReviewer(k8s::ApiClient& client) : client_(client) {}

  Result<std::optional<UserInfo>> Authenticate(std::string_view token) override {
    static const k8s::Resource kTokenReviews{"authentication.k8s.io", "v1", "tokenreviews", false};
    auto reply = client_.Create(kTokenReviews, "", TokenReviewRequest(token, {}));
    if (!reply.ok()) {
      return reply.status().WithContext("TokenReview");
    }
    return ParseTokenReview(*reply);
  }

  Result<bool> Authorize(const UserInfo& user, const AccessCheck& check) override {
    static const k8s::Resource kReviews{"authorization.k8s.io", "v1", "subjectaccessreviews",
                                        false};
    auto reply = client_.Create(kReviews, "", SubjectAccessReviewRequest(user, check));
    if (!reply.ok()) {
      return reply.status().WithContext("SubjectAccessReview");
    }
    return ParseSubjectAccessReview(*reply);
  }

 private:
  k8s::ApiClient& client_;
};

std::string Sha256(std::string_view text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

// The user and the check as one key: every field, each ended by a byte no
// name holds.
std::string AuthorizationKey(const UserInfo& user, const AccessCheck& check) {
  std::string key;
  auto add = [&key](std::string_view part) {
    key.append(part);
    key.push_back('\0');
  };
  add(user.username);
  add(user.uid);
  for (const std::string& group : user.groups) {
    add(group);
  }
  key.push_back('\1');
  for (const auto& [name, values] : user.extra) {
    add(name);
    for (const std::string& value : values) {
      add(value);
    }
    key.push_back('\1');
  }
  key.push_back('\2');
  for (const std::string* part :
       {&check.verb, &check.group, &check.resource, &check.namespace_name, &check.path}) {
    add(*part);
  }
  return key;
}

template <typename Value>
struct Expiring {
  Value value;
  std::chrono::steady_clock::time_point until;
};

// Drops what has expired, then, when still full, the half that expires first.
template <typename Map>
void MakeRoom(Map& map, size_t max_entries, std::chrono::steady_clock::time_point now) {
  if (map.size() < max_entries) {
    return;
  }
  std::erase_if(map, [now](const auto& entry) { return entry.second.until <= now; });
  if (map.size() < max_entries) {
    return;
  }
  std::vector<std::chrono::steady_clock::time_point> ends;
  ends.reserve(map.size());
  for (const auto& entry : map) {
    ends.push_back(entry.second.until);
  }
  auto middle = ends.begin() + static_cast<std::ptrdiff_t>(ends.size() / 2);
  std::nth_element(ends.begin(), middle, ends.end());
  const auto cut = *middle;
  std::erase_if(map, [cut](const auto& entry) { return entry.second.until <= cut; });
}

class CachingReviewer final : public AccessReviewer {
 public:
  CachingReviewer(std::unique_ptr<AccessReviewer> inner, ReviewCacheTtl ttl, SteadyClock now)
      : inner_(std::move(inner)), ttl_(ttl), now_(std::move(now)) {
    if (!now_) {
      now_ = [] { return std::chrono::steady_clock::now(); };
    }
    ttl_.max_entries = std::max<size_t>(ttl_.max_entries, 2);
  }

  Result<std::optional<UserInfo>> Authenticate(std::string_view token) override {
    const std::string key = Sha256(token);
    {
      MutexLock lock(mu_);
      auto it = users_.find(key);
      if (it != users_.end() && it->second.until > now_()) {
        return it->second.value;
      }
    }
    auto answer = inner_->Authenticate(token);
    if (!answer.ok()) {
      return answer;
    }
    const auto now = now_();
    MutexLock lock(mu_);
    MakeRoom(users_, ttl_.max_entries, now);
    users_[key] = {*answer,
                   now + (answer->has_value() ? ttl_.authenticated : ttl_.unauthenticated)};
    return answer;
  }

  Result<bool> Authorize(const UserInfo& user, const AccessCheck& check) override {
    const std::string key = AuthorizationKey(user, check);
    {
      MutexLock lock(mu_);
      auto it = decisions_.find(key);
      if (it != decisions_.end() && it->second.until > now_()) {
        return it->second.value;
      }
    }
    auto answer = inner_->Authorize(user, check);
    if (!answer.ok()) {
      return answer;
    }
    const auto now = now_();
    MutexLock lock(mu_);
    MakeRoom(decisions_, ttl_.max_entries, now);
    decisions_[key] = {*answer, now + (*answer ? ttl_.allowed : ttl_.denied)};
    return answer;
  }

 private:
  std::unique_ptr<AccessReviewer> inner_;
  ReviewCacheTtl ttl_;
  SteadyClock now_;
  Mutex mu_;
  std::unordered_map<std::string, Expiring<std::optional<UserInfo>>> users_ HJ_GUARDED_BY(mu_);
  std::unordered_map<std::string, Expiring<bool>> decisions_ HJ_GUARDED_BY(mu_);
};

}  // namespace

std::unique_ptr<AccessReviewer> ApiServerAccessReviewer(k8s::ApiClient& client) {
  return std::make_unique<ApiServerReviewer>(client);
}

std::unique_ptr<AccessReviewer> CachingAccessReviewer(std::unique_ptr<AccessReviewer> inner,
                                                      ReviewCacheTtl ttl, SteadyClock now) {
  return std::make_unique<CachingReviewer>(std::move(inner), ttl, std::move(now));
}

}  // namespace hybridjob::observability
