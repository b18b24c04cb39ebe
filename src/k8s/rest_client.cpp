#include <atomic>
#include <charconv>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>
#include <thread>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/base64.h>
#include <hybridjob/k8s/credential_source.h>
#include <hybridjob/k8s/http_transport.h>
#include <hybridjob/k8s/rate_limiter.h>
#include <hybridjob/k8s/rest_client.h>
#include <hybridjob/k8s/warnings.h>

#include "text.h"

namespace hybridjob::k8s {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kMaxRetryAfterAttempts = 3;
constexpr std::chrono::seconds kMaxRetryAfterDelay{10};
// A watch lives at most its timeoutSeconds; the transport gives up only well after.
constexpr std::chrono::seconds kWatchTransportSlack{90};

// The connections for one client certificate. Replaced as a whole when an
// exec plugin rotates the certificate (a TLS context holds one); requests
// in flight keep the one they began with alive.
struct Transport {
  std::shared_ptr<http::Transport> http;
  uint64_t cert_generation = 0;
};

struct HttpReply {
  int status = 0;
  std::string body;
  std::optional<std::chrono::seconds> retry_after;
};

std::optional<std::chrono::seconds> RetryAfter(const http::ResponseHead& head) {
  const std::string value = head.Get("Retry-After");
  int seconds = 0;
  const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  if (value.empty() || error != std::errc() || end != value.data() + value.size() || seconds < 0) {
    return std::nullopt;
  }
  return std::chrono::seconds(seconds);
}

Result<nlohmann::json> ParseJson(const std::string& body) {
  nlohmann::json parsed = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) {
    return Internal("response is not JSON: " + body.substr(0, 200));
  }
  return parsed;
}

std::string_view ContentType(PatchType type) {
  switch (type) {
    case PatchType::kMerge:
      return "application/merge-patch+json";
    case PatchType::kJson:
      return "application/json-patch+json";
    case PatchType::kStrategicMerge:
      return "application/strategic-merge-patch+json";
    case PatchType::kApply:
      return "application/apply-patch+yaml";
  }
  return "application/merge-patch+json";
}

void AppendQuery(std::string& path, std::string_view key, std::string_view value) {
  path += path.find('?') == std::string::npos ? '?' : '&';
  path += key;
  path += '=';
  path += UrlEncode(value);
}

Result<std::shared_ptr<http::Transport>> MakeHttpTransport(const ClientConfig& config,
                                                           const std::string& cert_pem,
                                                           const std::string& key_pem) {
  http::TlsOptions tls;
  tls.ca_pem = config.ca_pem;
  tls.client_cert_pem = cert_pem;
  tls.client_key_pem = key_pem;
  tls.insecure_skip_verify = config.insecure_skip_tls_verify;
  tls.server_name = config.tls_server_name;
  auto endpoint = http::ParseServerUrl(config.server);
  if (!endpoint) {
    return endpoint.status();
  }
  auto proxy = http::ChooseProxy(endpoint->tls, endpoint->host, endpoint->port, config.proxy_url,
                                 http::ProxyEnvironment::FromProcess());
  if (!proxy) {
    return proxy.status();
  }
  auto made = http::Transport::Create(config.server, tls,
                                      static_cast<size_t>(std::max(config.max_in_flight, 1)),
                                      std::move(*proxy));
  if (!made) {
    return made.status();
  }
  return std::shared_ptr<http::Transport>(std::move(*made));
}

class RestWatchStream final : public WatchStream {
 public:
  explicit RestWatchStream(std::unique_ptr<http::BodyReader> body) : body_(std::move(body)) {}

  ~RestWatchStream() override { Cancel(); }

  Result<std::optional<WatchEvent>> Next() override {
    while (true) {
      if (cancelled_.load()) {
        return Cancelled("watch cancelled");
      }
      std::optional<std::string_view> line = TakeLine();
      if (!line) {
        if (!at_end_) {
          Result<bool> more = ReadMore();
          if (!more.ok()) {
            return more.status();
          }
          at_end_ = !*more;
          continue;
        }
        // The stream ended; a last event may lack its newline.
        line = std::string_view(pending_).substr(start_);
        start_ = scanned_ = pending_.size();
        if (TrimSpace(*line).empty()) {
          return std::optional<WatchEvent>();
        }
      }
      if (TrimSpace(*line).empty()) {
        continue;
      }
      auto event = DecodeWatchEvent(*line);
      if (!event) {
        return event.status();
      }
      return std::optional<WatchEvent>(std::move(*event));
    }
  }

  void Cancel() override {
    if (!cancelled_.exchange(true)) {
      body_->Cancel();
    }
  }

 private:
  // The next whole line of `pending_`, without its newline: a view that
  // holds until the next ReadMore. Not a copy: an event is several KB, and
  // copying each one cost the scheduler a twentieth of its CPU, mostly in
  // malloc consolidating the small blocks the last event's JSON freed.
  std::optional<std::string_view> TakeLine() {
    const size_t newline = pending_.find('\n', scanned_);
    if (newline == std::string::npos) {
      scanned_ = pending_.size();
      return std::nullopt;
    }
    const std::string_view line(pending_.data() + start_, newline - start_);
    start_ = scanned_ = newline + 1;
    return line;
  }

  // Appends what the stream has to `pending_`, waiting for at least one
  // byte, after dropping the lines already returned. False at the end of
  // the stream.
  Result<bool> ReadMore() {
    if (start_ > 0) {  // drop the lines already returned
      pending_.erase(0, start_);
      scanned_ -= start_;
      start_ = 0;
    }
    auto more = body_->ReadSome(pending_);
    if (!more) {
      if (cancelled_.load() || more.status().code() == StatusCode::kCancelled) {
        return Cancelled("watch cancelled");
      }
      return Unavailable("watch stream broken: " + more.status().message());
    }
    return *more;
  }

  std::unique_ptr<http::BodyReader> body_;
  std::string pending_;  // read from the stream; [start_, end) not yet returned
  size_t start_ = 0;
  size_t scanned_ = 0;  // pending_[start_, scanned_) holds no newline
  bool at_end_ = false;
  std::atomic<bool> cancelled_{false};
};

}  // namespace

class RestClient::Impl {
 public:
  // `transport` carries the kubeconfig's own certificate (generation 0), if any.
  Impl(ClientConfig config, std::shared_ptr<http::Transport> transport)
      : config_(std::move(config)),
        credentials_(CredentialSource::ForConfig(config_)),
        limiter_(config_.qps, config_.burst),
        in_flight_(std::max(config_.max_in_flight, 1)),
        transport_(std::make_shared<Transport>(Transport{std::move(transport), 0})) {}

  // The connections for the certificate in `credentials`: the current ones, or new
  // ones when an exec plugin returned a different certificate.
  struct Authenticated {
    Credentials credentials;
    std::shared_ptr<const Transport> transport;
  };

  // The credentials for the next request and the clients that carry them.
  // Called before the rate limiter: a plugin run must not hold a token of it.
  Result<Authenticated> Authenticate() {
    auto credentials = credentials_->Get();
    if (!credentials) {
      return credentials.status();
    }
    auto transport = TransportFor(*credentials);
    if (!transport) {
      return transport.status();
    }
    return Authenticated{std::move(*credentials), std::move(*transport)};
  }

  Result<std::shared_ptr<const Transport>> TransportFor(const Credentials& credentials) {
    MutexLock lock(transport_mu_);
    if (transport_->cert_generation == credentials.cert_generation) {
      return transport_;
    }
    // Bad PEM from a plugin is an error for this request.
    auto made = MakeHttpTransport(config_, credentials.client_cert_pem, credentials.client_key_pem);
    if (!made) {
      return Status(
          StatusCode::kUnauthorized,
          "exec plugin returned an unusable client certificate or key: " + made.status().message());
    }
    transport_ =
        std::make_shared<Transport>(Transport{std::move(*made), credentials.cert_generation});
    return transport_;
  }

  std::vector<http::Header> RequestHeaders(const Credentials& credentials,
                                           std::string_view content_type) const {
    std::vector<http::Header> headers;
    headers.reserve(4);
    headers.push_back({"Accept", "application/json"});
    headers.push_back({"User-Agent", config_.user_agent});
    if (!credentials.token.empty()) {
      headers.push_back({"Authorization", "Bearer " + credentials.token});
    } else if (!config_.username.empty()) {
      headers.push_back(
          {"Authorization", "Basic " + Base64Encode(config_.username + ":" + config_.password)});
    }
    if (!content_type.empty()) {
      headers.push_back({"Content-Type", std::string(content_type)});
    }
    return headers;
  }

  // One request with flow control, Retry-After handling and, with an exec
  // plugin, one retry with fresh credentials after a 401. Non-2xx answers
  // come back as a Status carrying the server's reason.
  Result<HttpReply> Send(std::string_view method, std::string_view verb, std::string_view resource,
                         const std::string& path_and_query, const std::string& body = {},
                         std::string_view content_type = {}) {
    bool refreshed = false;
    for (int attempt = 1;; ++attempt) {
      Credentials used;
      auto reply = SendOnce(method, verb, resource, path_and_query, body, content_type, &used);
      if (!reply) {
        return reply.status();
      }
      if (reply->status >= 200 && reply->status < 300) {
        return reply;
      }
      if (reply->status == 401 && !refreshed && credentials_->RefreshAfterUnauthorized(used)) {
        refreshed = true;
        --attempt;  // not a Retry-After attempt
        continue;
      }
      Status status = StatusFromHttpResponse(reply->status, reply->body, reply->retry_after);
      const bool server_asked_to_retry =
          status.retry_after().has_value() &&
          (reply->status == 429 || reply->status == 503 || reply->status == 504);
      if (server_asked_to_retry && attempt < kMaxRetryAfterAttempts) {
        std::this_thread::sleep_for(std::min(*status.retry_after(), kMaxRetryAfterDelay));
        continue;
      }
      return status;
    }
  }

  Result<HttpReply> SendOnce(std::string_view method, std::string_view verb,
                             std::string_view resource, const std::string& path_and_query,
                             const std::string& body, std::string_view content_type,
                             Credentials* used) {
    auto auth = Authenticate();
    if (!auth) {
      return auth.status();
    }
    limiter_.Wait();
    in_flight_.acquire();
    const auto start = Clock::now();
    http::Request request{method, path_and_query, RequestHeaders(auth->credentials, content_type),
                          body};
    auto response = auth->transport->http->RoundTrip(request, config_.request_timeout);
    in_flight_.release();
    Observe(verb, resource, response.ok() ? response->head.status : 0, Clock::now() - start);
    if (!response) {
      return Unavailable(std::string(verb) + " " + path_and_query + ": " +
                         response.status().message());
    }
    NoteWarnings(response->head);
    *used = std::move(auth->credentials);
    return HttpReply{response->head.status, std::move(response->body), RetryAfter(response->head)};
  }

  // The server's Warning headers, each distinct text said once.
  void NoteWarnings(const http::ResponseHead& head) {
    if (!head.Has("Warning")) {
      return;
    }
    const std::vector<std::string> fresh = warnings_.New(ParseWarningHeader(head.Get("Warning")));
    if (fresh.empty()) {
      return;
    }
    MutexLock lock(observer_mu_);
    for (const std::string& text : fresh) {
      if (warning_handler_) {
        warning_handler_(text);
      } else {
        LogServerWarning(text);
      }
    }
  }

  void Observe(std::string_view verb, std::string_view resource, int code,
               Clock::duration latency) {
    MutexLock lock(observer_mu_);
    if (observer_) {
      observer_(verb, resource, code, latency);
    }
  }

  Result<nlohmann::json> SendJson(std::string_view method, std::string_view verb,
                                  std::string_view resource, const std::string& path,
                                  const std::string& body = {},
                                  std::string_view content_type = {}) {
    auto reply = Send(method, verb, resource, path, body, content_type);
    if (!reply) {
      return reply.status();
    }
    return ParseJson(reply->body);
  }

  Result<std::unique_ptr<WatchStream>> OpenWatch(const std::string& path, std::string_view resource,
                                                 std::chrono::seconds watch_timeout) {
    auto body = OpenStream(path, "WATCH", resource, watch_timeout + kWatchTransportSlack);
    if (!body) {
      return body.status();
    }
    return std::unique_ptr<WatchStream>(std::make_unique<RestWatchStream>(std::move(*body)));
  }

  // A GET whose 200 answer's body streams; `read_timeout` bounds each read.
  Result<std::unique_ptr<http::BodyReader>> OpenStream(const std::string& path,
                                                       std::string_view verb,
                                                       std::string_view resource,
                                                       std::chrono::milliseconds read_timeout) {
    for (bool refreshed = false;; refreshed = true) {
      auto auth = Authenticate();
      if (!auth) {
        return auth.status();
      }
      limiter_.Wait();
      const auto start = Clock::now();
      http::Request request{"GET", path, RequestHeaders(auth->credentials, {}), {}};
      auto response =
          auth->transport->http->OpenStream(request, config_.request_timeout, read_timeout);
      if (!response) {
        Observe(verb, resource, 0, Clock::now() - start);
        return Unavailable(std::string(verb) + " " + path + ": " + response.status().message());
      }
      const int code = response->head.status;
      Observe(verb, resource, code, Clock::now() - start);
      NoteWarnings(response->head);
      if (code == 401 && !refreshed && credentials_->RefreshAfterUnauthorized(auth->credentials)) {
        continue;
      }
      if (code != 200) {
        auto body = http::ReadAll(*response->body);
        return StatusFromHttpResponse(code, body ? *body : body.status().message(),
                                      RetryAfter(response->head));
      }
      return std::move(response->body);
    }
  }

  ClientConfig config_;
  // Owned here, shared by every request of this client; it has its own lock.
  std::unique_ptr<CredentialSource> credentials_;
  BlockingRateLimiter limiter_;
  std::counting_semaphore<> in_flight_;
  Mutex transport_mu_;
  std::shared_ptr<const Transport> transport_ HJ_GUARDED_BY(transport_mu_);
  Mutex observer_mu_;
  RequestObserver observer_ HJ_GUARDED_BY(observer_mu_);
  WarningHandler warning_handler_ HJ_GUARDED_BY(observer_mu_);
  WarningDeduplicator warnings_;
};

Result<std::unique_ptr<RestClient>> RestClient::Create(const ClientConfig& config) {
  if (config.server.empty()) {
    return InvalidArgument("client config: no server");
  }
  // A bad URL or unusable TLS material fails here, with a clear message,
  // rather than on the first request.
  auto transport = MakeHttpTransport(config, config.client_cert_pem, config.client_key_pem);
  if (!transport) {
    return InvalidArgument("client config: " + transport.status().message());
  }
  return std::unique_ptr<RestClient>(
      new RestClient(std::make_unique<Impl>(config, std::move(*transport))));
}

RestClient::RestClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RestClient::~RestClient() = default;

const std::string& RestClient::DefaultNamespace() const {
  return impl_->config_.namespace_name;
}

void RestClient::SetRequestObserver(RequestObserver observer) {
  MutexLock lock(impl_->observer_mu_);
  impl_->observer_ = std::move(observer);
}

void RestClient::SetWarningHandler(WarningHandler handler) {
  MutexLock lock(impl_->observer_mu_);
  impl_->warning_handler_ = std::move(handler);
}

Result<std::string> RestClient::GetRaw(const std::string& path) {
  auto reply = impl_->Send("GET", "GET", "raw", path);
  if (!reply) {
    return reply.status();
  }
  return std::move(reply->body);
}

namespace {

class RestByteStream final : public ByteStream {
 public:
  explicit RestByteStream(std::unique_ptr<http::BodyReader> body) : body_(std::move(body)) {}
  Result<bool> ReadSome(std::string& out) override { return body_->ReadSome(out); }
  void Cancel() override { body_->Cancel(); }

 private:
  std::unique_ptr<http::BodyReader> body_;
};

// A followed log may be quiet for hours; kubectl waits on it as long.
constexpr std::chrono::hours kStreamReadTimeout{24};

}  // namespace

Result<std::unique_ptr<ByteStream>> RestClient::GetStream(const std::string& path) {
  auto body = impl_->OpenStream(path, "GET", "raw", kStreamReadTimeout);
  if (!body) {
    return body.status();
  }
  return std::unique_ptr<ByteStream>(std::make_unique<RestByteStream>(std::move(*body)));
}

Result<nlohmann::json> RestClient::Get(const Resource& resource, std::string_view ns,
                                       std::string_view name) {
  return impl_->SendJson("GET", "GET", resource.plural, resource.ObjectPath(ns, name));
}

Result<ObjectList> RestClient::List(const Resource& resource, std::string_view ns,
                                    const ListOptions& options) {
  std::string path = resource.CollectionPath(ns);
  if (!options.label_selector.empty()) {
    AppendQuery(path, "labelSelector", options.label_selector);
  }
  if (!options.field_selector.empty()) {
    AppendQuery(path, "fieldSelector", options.field_selector);
  }
  if (!options.resource_version.empty()) {
    AppendQuery(path, "resourceVersion", options.resource_version);
  }
  if (options.limit > 0) {
    AppendQuery(path, "limit", std::to_string(options.limit));
  }
  if (!options.continue_token.empty()) {
    AppendQuery(path, "continue", options.continue_token);
  }
  auto reply = impl_->Send("GET", "LIST", resource.plural, path);
  if (!reply) {
    return reply.status();
  }
  nlohmann::json parsed = nlohmann::json::parse(reply->body, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Internal("LIST " + path + ": response is not a JSON object");
  }
  ObjectList list;
  auto& metadata = parsed["metadata"];
  if (metadata.is_object()) {
    list.resource_version = metadata.value("resourceVersion", "");
    list.continue_token = metadata.value("continue", "");
  }
  auto& items = parsed["items"];
  if (items.is_array()) {
    list.items.reserve(items.size());
    // Items of a list carry no kind/apiVersion; restore them so objects from a
    // list look like objects from a get or a watch.
    const std::string kind = parsed.value("kind", "");
    const std::string item_kind =
        kind.size() > 4 && kind.ends_with("List") ? kind.substr(0, kind.size() - 4) : "";
    const std::string api_version = parsed.value("apiVersion", "");
    for (auto& item : items) {
      if (!item_kind.empty() && !item.contains("kind")) {
        item["kind"] = item_kind;
        item["apiVersion"] = api_version;
      }
      list.items.push_back(std::move(item));
    }
  }
  return list;
}

Result<nlohmann::json> RestClient::Create(const Resource& resource, std::string_view ns,
                                          const nlohmann::json& object,
                                          const WriteOptions& options) {
  std::string path = resource.CollectionPath(ns);
  if (!options.field_manager.empty()) {
    AppendQuery(path, "fieldManager", options.field_manager);
  }
  if (options.dry_run) {
    AppendQuery(path, "dryRun", "All");
  }
  return impl_->SendJson("POST", "CREATE", resource.plural, path, object.dump(),
                         "application/json");
}

Result<nlohmann::json> RestClient::Update(const Resource& resource, const nlohmann::json& object,
                                          std::string_view subresource,
                                          const WriteOptions& options) {
  const auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object() || !metadata->contains("name")) {
    return InvalidArgument("update: object has no metadata.name");
  }
  const std::string ns = metadata->value("namespace", "");
  const std::string name = metadata->value("name", "");
  std::string path = resource.ObjectPath(ns, name, subresource);
  if (!options.field_manager.empty()) {
    AppendQuery(path, "fieldManager", options.field_manager);
  }
  if (options.dry_run) {
    AppendQuery(path, "dryRun", "All");
  }
  return impl_->SendJson("PUT", "UPDATE", resource.plural, path, object.dump(), "application/json");
}

Result<nlohmann::json> RestClient::Patch(const Resource& resource, std::string_view ns,
                                         std::string_view name, PatchType type,
                                         std::string_view body, const PatchOptions& options) {
  if (type == PatchType::kApply && options.field_manager.empty()) {
    return InvalidArgument("server-side apply needs a field manager");
  }
  std::string path = resource.ObjectPath(ns, name, options.subresource);
  if (!options.field_manager.empty()) {
    AppendQuery(path, "fieldManager", options.field_manager);
  }
  if (type == PatchType::kApply && options.force) {
    AppendQuery(path, "force", "true");
  }
  if (options.dry_run) {
    AppendQuery(path, "dryRun", "All");
  }
  return impl_->SendJson("PATCH", "PATCH", resource.plural, path, std::string(body),
                         ContentType(type));
}

Status RestClient::Delete(const Resource& resource, std::string_view ns, std::string_view name,
                          const DeleteOptions& options) {
  nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (!options.propagation_policy.empty()) {
    body["propagationPolicy"] = options.propagation_policy;
  }
  if (options.precondition_uid) {
    body["preconditions"]["uid"] = *options.precondition_uid;
  }
  if (options.precondition_resource_version) {
    body["preconditions"]["resourceVersion"] = *options.precondition_resource_version;
  }
  if (options.grace_period_seconds) {
    body["gracePeriodSeconds"] = *options.grace_period_seconds;
  }
  std::string path = resource.ObjectPath(ns, name);
  if (options.dry_run) {
    AppendQuery(path, "dryRun", "All");
  }
  auto reply =
      impl_->Send("DELETE", "DELETE", resource.plural, path, body.dump(), "application/json");
  return reply ? Status::Ok() : reply.status();
}

Result<nlohmann::json> RestClient::CreateSubresource(const Resource& resource, std::string_view ns,
                                                     std::string_view name,
                                                     std::string_view subresource,
                                                     const nlohmann::json& body) {
  const std::string verb = subresource == "binding" ? "BIND" : "CREATE";
  return impl_->SendJson("POST", verb, resource.plural + "/" + std::string(subresource),
                         resource.ObjectPath(ns, name, subresource), body.dump(),
                         "application/json");
}

Result<std::unique_ptr<WatchStream>> RestClient::Watch(const Resource& resource,
                                                       std::string_view ns,
                                                       const WatchOptions& options) {
  std::string path = resource.CollectionPath(ns);
  AppendQuery(path, "watch", "1");
  if (options.allow_bookmarks) {
    AppendQuery(path, "allowWatchBookmarks", "true");
  }
  if (!options.resource_version.empty()) {
    AppendQuery(path, "resourceVersion", options.resource_version);
  }
  if (!options.label_selector.empty()) {
    AppendQuery(path, "labelSelector", options.label_selector);
  }
  if (!options.field_selector.empty()) {
    AppendQuery(path, "fieldSelector", options.field_selector);
  }
  AppendQuery(path, "timeoutSeconds", std::to_string(options.timeout.count()));
  return impl_->OpenWatch(path, resource.plural, options.timeout);
}

Status BindPod(ApiClient& client, std::string_view ns, std::string_view pod_name,
               std::string_view pod_uid, std::string_view node_name,
               const std::map<std::string, std::string>& annotations) {
  nlohmann::json binding = {
      {"apiVersion", "v1"},
      {"kind", "Binding"},
      {"metadata", {{"name", pod_name}, {"namespace", ns}}},
      {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node_name}}},
  };
  if (!pod_uid.empty()) {
    binding["metadata"]["uid"] = pod_uid;
  }
  if (!annotations.empty()) {
    binding["metadata"]["annotations"] = annotations;
  }
  auto result = client.CreateSubresource(resources::Pods(), ns, pod_name, "binding", binding);
  return result ? Status::Ok() : result.status();
}

std::string EvictionApiVersion(const nlohmann::json& core_v1_resource_list) {
  const nlohmann::json* resources = nullptr;
  if (core_v1_resource_list.is_object()) {
    auto it = core_v1_resource_list.find("resources");
    if (it != core_v1_resource_list.end() && it->is_array()) {
      resources = &*it;
    }
  }
  if (resources != nullptr) {
    for (const nlohmann::json& resource : *resources) {
      if (!resource.is_object()) {
        continue;
      }
      auto text = [&](const char* key) {
        auto it = resource.find(key);
        return it != resource.end() && it->is_string() ? it->get<std::string>() : std::string();
      };
      const std::string group = text("group");
      const std::string version = text("version");
      if (text("name") == "pods/eviction" && text("kind") == "Eviction" && !group.empty() &&
          !version.empty()) {
        return group + "/" + version;
      }
    }
  }
  return std::string(kEvictionV1beta1);
}

Result<std::string> DiscoverEvictionApiVersion(ApiClient& client) {
  Result<std::string> body = client.GetRaw("/api/v1");
  if (!body) {
    return body.status();
  }
  nlohmann::json list = nlohmann::json::parse(*body, nullptr, /*allow_exceptions=*/false);
  if (list.is_discarded()) {
    return InvalidArgument("GET /api/v1 did not return JSON");
  }
  return EvictionApiVersion(list);
}

Status EvictPod(ApiClient& client, std::string_view ns, std::string_view pod_name,
                std::string_view pod_uid, std::string_view api_version) {
  nlohmann::json eviction = {
      {"apiVersion", api_version},
      {"kind", "Eviction"},
      {"metadata", {{"name", pod_name}, {"namespace", ns}}},
  };
  if (!pod_uid.empty()) {
    eviction["deleteOptions"] = {{"preconditions", {{"uid", pod_uid}}}};
  }
  auto result = client.CreateSubresource(resources::Pods(), ns, pod_name, "eviction", eviction);
  return result ? Status::Ok() : result.status();
}

Result<ObjectList> ListAll(ApiClient& client, const Resource& resource, std::string_view ns,
                           ListOptions options, int64_t page_size) {
  constexpr int kMaxRestarts = 3;
  for (int restart = 0;; ++restart) {
    ObjectList all;
    ListOptions page = options;
    page.limit = page_size;
    page.continue_token.clear();
    Status failure;
    while (true) {
      auto result = client.List(resource, ns, page);
      if (!result) {
        failure = result.status();
        break;
      }
      if (all.resource_version.empty()) {
        all.resource_version = result->resource_version;
      }
      for (auto& item : result->items) {
        all.items.push_back(std::move(item));
      }
      if (result->continue_token.empty()) {
        return all;
      }
      page.continue_token = result->continue_token;
      page.resource_version.clear();  // the continue token pins the snapshot
    }
    // An expired continue token means the snapshot is gone: start over.
    if (IsGone(failure) && restart < kMaxRestarts) {
      continue;
    }
    return failure;
  }
}

Result<std::unique_ptr<RestClient>> ConnectFromFlags(const std::string& kubeconfig, double qps,
                                                     int burst, int max_in_flight,
                                                     const std::string& user_agent) {
  auto config = ResolveClientConfig(kubeconfig);
  if (!config) {
    return config.status();
  }
  config->qps = qps;
  config->burst = burst;
  config->max_in_flight = max_in_flight;
  config->user_agent = user_agent;
  return RestClient::Create(*config);
}

}  // namespace hybridjob::k8s
