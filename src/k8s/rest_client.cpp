#include <atomic>
#include <boost/asio/ssl.hpp>
#include <mutex>
#include <optional>
#include <semaphore>
#include <string>
#include <thread>

#include <cpprest/containerstream.h>
#include <cpprest/http_client.h>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/base64.h>
#include <hybridjob/k8s/credential_source.h>
#include <hybridjob/k8s/rate_limiter.h>
#include <hybridjob/k8s/rest_client.h>
#include <hybridjob/k8s/warnings.h>

#include "text.h"

namespace hybridjob::k8s {
namespace {

namespace http = web::http;
using Clock = std::chrono::steady_clock;

constexpr int kMaxRetryAfterAttempts = 3;
constexpr std::chrono::seconds kMaxRetryAfterDelay{10};
// A watch lives at most its timeoutSeconds; the transport gives up only well after.
constexpr std::chrono::seconds kWatchTransportSlack{90};

// The HTTP clients for one client certificate. Replaced as a whole when an
// exec plugin rotates the certificate (cpprestsdk fixes the TLS context when
// a client is made); requests and watches in flight keep the one they began
// with alive.
struct Transport {
  std::shared_ptr<http::client::http_client> client;
  std::shared_ptr<http::client::http_client> watch_client;
  uint64_t cert_generation = 0;
};

struct HttpReply {
  int status = 0;
  std::string body;
};

std::optional<std::chrono::seconds> RetryAfter(const http::http_headers& headers) {
  auto it = headers.find("Retry-After");
  if (it == headers.end()) {
    return std::nullopt;
  }
  try {
    return std::chrono::seconds(std::stoi(it->second));
  } catch (const std::exception&) {
    return std::nullopt;
  }
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

// Applies the TLS material; throws on bad PEM (the caller converts).
void ConfigureSsl(boost::asio::ssl::context& ctx, const std::string& ca_pem,
                  const std::string& cert_pem, const std::string& key_pem) {
  if (!ca_pem.empty()) {
    ctx.add_certificate_authority(boost::asio::buffer(ca_pem.data(), ca_pem.size()));
  }
  if (!cert_pem.empty()) {
    ctx.use_certificate_chain(boost::asio::buffer(cert_pem.data(), cert_pem.size()));
    ctx.use_private_key(boost::asio::buffer(key_pem.data(), key_pem.size()),
                        boost::asio::ssl::context::pem);
  }
}

class RestWatchStream final : public WatchStream {
 public:
  RestWatchStream(std::shared_ptr<const Transport> transport, http::http_response response,
                  pplx::cancellation_token_source cts)
      : transport_(std::move(transport)),
        response_(std::move(response)),
        cts_(std::move(cts)),
        body_(response_.body()) {}

  ~RestWatchStream() override { Cancel(); }

  Result<std::optional<WatchEvent>> Next() override {
    while (true) {
      if (cancelled_.load()) {
        return Cancelled("watch cancelled");
      }
      std::optional<std::string> line = TakeLine();
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
        line = pending_.substr(start_);
        pending_.clear();
        start_ = scanned_ = 0;
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
      cts_.cancel();
    }
  }

 private:
  // The next whole line of `pending_`, without its newline.
  std::optional<std::string> TakeLine() {
    const size_t newline = pending_.find('\n', scanned_);
    if (newline == std::string::npos) {
      scanned_ = pending_.size();
      return std::nullopt;
    }
    std::string line = pending_.substr(start_, newline - start_);
    start_ = scanned_ = newline + 1;
    if (start_ == pending_.size()) {
      pending_.clear();
      start_ = scanned_ = 0;
    }
    return line;
  }

  // Appends what the stream has to `pending_`: waits for one byte, then takes
  // everything else already there in one go (the body's buffer locks once per
  // read, so reading a line byte by byte costs a lock per byte). False at the
  // end of the stream.
  Result<bool> ReadMore() {
    try {
      concurrency::streams::streambuf<uint8_t> buffer = body_.streambuf();
      const auto first = buffer.bumpc().get();
      if (first == concurrency::streams::streambuf<uint8_t>::traits::eof()) {
        return false;
      }
      if (start_ > 0) {  // drop the lines already returned
        pending_.erase(0, start_);
        scanned_ -= start_;
        start_ = 0;
      }
      pending_.push_back(static_cast<char>(first));
      const size_t available = buffer.in_avail();
      if (available > 0) {
        const size_t before = pending_.size();
        pending_.resize(before + available);
        const size_t read =
            buffer.getn(reinterpret_cast<uint8_t*>(pending_.data() + before), available).get();
        pending_.resize(before + read);
      }
      return true;
    } catch (const std::exception& e) {
      if (cancelled_.load()) {
        return Cancelled("watch cancelled");
      }
      return Unavailable(std::string("watch stream broken: ") + e.what());
    }
  }

  std::shared_ptr<const Transport> transport_;  // outlives the response read from it
  http::http_response response_;
  pplx::cancellation_token_source cts_;
  concurrency::streams::istream body_;
  std::string pending_;  // read from the stream; [start_, end) not yet returned
  size_t start_ = 0;
  size_t scanned_ = 0;  // pending_[start_, scanned_) holds no newline
  bool at_end_ = false;
  std::atomic<bool> cancelled_{false};
};

}  // namespace

class RestClient::Impl {
 public:
  explicit Impl(ClientConfig config)
      : config_(std::move(config)),
        credentials_(CredentialSource::ForConfig(config_)),
        limiter_(config_.qps, config_.burst),
        in_flight_(std::max(config_.max_in_flight, 1)) {
    // Generation 0 is the kubeconfig's own certificate (if any).
    transport_ = MakeTransport(config_.client_cert_pem, config_.client_key_pem, 0);
  }

  std::shared_ptr<const Transport> MakeTransport(const std::string& cert, const std::string& key,
                                                 uint64_t cert_generation) const {
    auto transport = std::make_shared<Transport>();
    transport->client = std::make_shared<http::client::http_client>(
        config_.server, MakeHttpConfig(config_.request_timeout, cert, key));
    transport->watch_client = std::make_shared<http::client::http_client>(
        config_.server,
        MakeHttpConfig(std::chrono::seconds(600) + kWatchTransportSlack, cert, key));
    transport->cert_generation = cert_generation;
    return transport;
  }

  http::client::http_client_config MakeHttpConfig(std::chrono::seconds timeout,
                                                  const std::string& cert,
                                                  const std::string& key) const {
    http::client::http_client_config cfg;
    cfg.set_timeout(timeout);
    cfg.set_validate_certificates(!config_.insecure_skip_tls_verify);
    cfg.set_ssl_context_callback([ca = config_.ca_pem, cert, key](boost::asio::ssl::context& ctx) {
      ConfigureSsl(ctx, ca, cert, key);
    });
    return cfg;
  }

  // The clients for the certificate in `credentials`: the current ones, or new
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
    try {
      // Bad PEM from a plugin is an error for this request, not a throw
      // inside cpprestsdk's handshake.
      boost::asio::ssl::context probe(boost::asio::ssl::context::sslv23_client);
      ConfigureSsl(probe, "", credentials.client_cert_pem, credentials.client_key_pem);
      transport_ = MakeTransport(credentials.client_cert_pem, credentials.client_key_pem,
                                 credentials.cert_generation);
    } catch (const std::exception& e) {
      return Status(
          StatusCode::kUnauthorized,
          std::string("exec plugin returned an unusable client certificate or key: ") + e.what());
    }
    return transport_;
  }

  http::http_request MakeRequest(const http::method& method, const std::string& path_and_query,
                                 const Credentials& credentials) const {
    http::http_request request(method);
    request.set_request_uri(path_and_query);
    request.headers().add("Accept", "application/json");
    request.headers().add("User-Agent", config_.user_agent);
    if (!credentials.token.empty()) {
      request.headers().add("Authorization", "Bearer " + credentials.token);
    } else if (!config_.username.empty()) {
      request.headers().add("Authorization",
                            "Basic " + Base64Encode(config_.username + ":" + config_.password));
    }
    return request;
  }

  // One request with flow control, Retry-After handling and, with an exec
  // plugin, one retry with fresh credentials after a 401. Non-2xx answers
  // come back as a Status carrying the server's reason.
  Result<HttpReply> Send(const http::method& method, std::string_view verb,
                         std::string_view resource, const std::string& path_and_query,
                         const std::string& body = {}, std::string_view content_type = {}) {
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
      if (reply->status == http::status_codes::Unauthorized && !refreshed &&
          credentials_->RefreshAfterUnauthorized(used)) {
        refreshed = true;
        --attempt;  // not a Retry-After attempt
        continue;
      }
      Status status = StatusFromHttpResponse(reply->status, reply->body, retry_after_);
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

  Result<HttpReply> SendOnce(const http::method& method, std::string_view verb,
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
    HttpReply reply;
    Status failure;
    try {
      http::http_request request = MakeRequest(method, path_and_query, auth->credentials);
      if (!content_type.empty()) {
        request.set_body(body, std::string(content_type));
      }
      http::http_response response = auth->transport->client->request(request).get();
      reply.status = response.status_code();
      retry_after_ = RetryAfter(response.headers());
      NoteWarnings(response.headers());
      reply.body = response.extract_utf8string(true).get();
    } catch (const std::exception& e) {
      failure = Unavailable(std::string(verb) + " " + path_and_query + ": " + e.what());
    }
    in_flight_.release();
    Observe(verb, resource, failure.ok() ? reply.status : 0, Clock::now() - start);
    if (!failure.ok()) {
      return failure;
    }
    *used = std::move(auth->credentials);
    return reply;
  }

  // The server's Warning headers, each distinct text said once.
  void NoteWarnings(const http::http_headers& headers) {
    auto header = headers.find("Warning");
    if (header == headers.end()) {
      return;
    }
    const std::vector<std::string> fresh = warnings_.New(ParseWarningHeader(header->second));
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

  Result<nlohmann::json> SendJson(const http::method& method, std::string_view verb,
                                  std::string_view resource, const std::string& path,
                                  const std::string& body = {},
                                  std::string_view content_type = {}) {
    auto reply = Send(method, verb, resource, path, body, content_type);
    if (!reply) {
      return reply.status();
    }
    return ParseJson(reply->body);
  }

  Result<std::unique_ptr<WatchStream>> OpenWatch(const std::string& path,
                                                 std::string_view resource) {
    for (bool refreshed = false;; refreshed = true) {
      auto auth = Authenticate();
      if (!auth) {
        return auth.status();
      }
      limiter_.Wait();
      const auto start = Clock::now();
      pplx::cancellation_token_source cts;
      try {
        http::http_request request = MakeRequest(http::methods::GET, path, auth->credentials);
        http::http_response response =
            auth->transport->watch_client->request(request, cts.get_token()).get();
        Observe("WATCH", resource, response.status_code(), Clock::now() - start);
        NoteWarnings(response.headers());
        if (response.status_code() == http::status_codes::Unauthorized && !refreshed &&
            credentials_->RefreshAfterUnauthorized(auth->credentials)) {
          continue;
        }
        if (response.status_code() != http::status_codes::OK) {
          const std::string body = response.extract_utf8string(true).get();
          return StatusFromHttpResponse(response.status_code(), body,
                                        RetryAfter(response.headers()));
        }
        return std::unique_ptr<WatchStream>(std::make_unique<RestWatchStream>(
            std::move(auth->transport), std::move(response), std::move(cts)));
      } catch (const std::exception& e) {
        Observe("WATCH", resource, 0, Clock::now() - start);
        return Unavailable("WATCH " + path + ": " + e.what());
      }
    }
  }

  ClientConfig config_;
  // Owned here, shared by every request of this client; it has its own lock.
  std::unique_ptr<CredentialSource> credentials_;
  BlockingRateLimiter limiter_;
  std::counting_semaphore<> in_flight_;
  Mutex transport_mu_;
  std::shared_ptr<const Transport> transport_ HJ_GUARDED_BY(transport_mu_);  // not the clients
  Mutex observer_mu_;
  RequestObserver observer_ HJ_GUARDED_BY(observer_mu_);
  WarningHandler warning_handler_ HJ_GUARDED_BY(observer_mu_);
  WarningDeduplicator warnings_;
  static thread_local std::optional<std::chrono::seconds> retry_after_;
};

thread_local std::optional<std::chrono::seconds> RestClient::Impl::retry_after_;

Result<std::unique_ptr<RestClient>> RestClient::Create(const ClientConfig& config) {
  if (config.server.empty()) {
    return InvalidArgument("client config: no server");
  }
  try {
    web::uri parsed(config.server);
    if (parsed.scheme() != "https" && parsed.scheme() != "http") {
      return InvalidArgument("client config: server must be http(s): " + config.server);
    }
  } catch (const std::exception& e) {
    return InvalidArgument("client config: bad server URL \"" + config.server + "\": " + e.what());
  }
  // Reject unusable TLS material now, with a clear message, rather than on the
  // first request.
  try {
    boost::asio::ssl::context probe(boost::asio::ssl::context::sslv23_client);
    ConfigureSsl(probe, config.ca_pem, config.client_cert_pem, config.client_key_pem);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("client config: unusable TLS material (CA, client "
                                       "certificate or key): ") +
                           e.what());
  }
  try {
    return std::unique_ptr<RestClient>(new RestClient(std::make_unique<Impl>(config)));
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("client config: ") + e.what());
  }
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
  auto reply = impl_->Send(http::methods::GET, "GET", "raw", path);
  if (!reply) {
    return reply.status();
  }
  return std::move(reply->body);
}

Result<nlohmann::json> RestClient::Get(const Resource& resource, std::string_view ns,
                                       std::string_view name) {
  return impl_->SendJson(http::methods::GET, "GET", resource.plural, resource.ObjectPath(ns, name));
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
  auto reply = impl_->Send(http::methods::GET, "LIST", resource.plural, path);
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
  return impl_->SendJson(http::methods::POST, "CREATE", resource.plural, path, object.dump(),
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
  return impl_->SendJson(http::methods::PUT, "UPDATE", resource.plural, path, object.dump(),
                         "application/json");
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
  return impl_->SendJson(http::methods::PATCH, "PATCH", resource.plural, path, std::string(body),
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
  auto reply = impl_->Send(http::methods::DEL, "DELETE", resource.plural, path, body.dump(),
                           "application/json");
  return reply ? Status::Ok() : reply.status();
}

Result<nlohmann::json> RestClient::CreateSubresource(const Resource& resource, std::string_view ns,
                                                     std::string_view name,
                                                     std::string_view subresource,
                                                     const nlohmann::json& body) {
  const std::string verb = subresource == "binding" ? "BIND" : "CREATE";
  return impl_->SendJson(
      http::methods::POST, verb, resource.plural + "/" + std::string(subresource),
      resource.ObjectPath(ns, name, subresource), body.dump(), "application/json");
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
  return impl_->OpenWatch(path, resource.plural);
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
