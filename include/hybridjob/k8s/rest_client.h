// ApiClient over HTTPS (cpprestsdk). Exceptions from cpprestsdk and nlohmann
// stay inside this adapter: every call returns a Status or Result.
#pragma once

#include <functional>
#include <memory>

#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/config.h>

namespace hybridjob::k8s {

// Observes every request (for metrics): verb, resource plural, HTTP code (0 for
// a transport failure) and latency.
using RequestObserver =
    std::function<void(std::string_view verb, std::string_view resource, int http_status,
                       std::chrono::steady_clock::duration latency)>;

// Hears each distinct text of the API server's `Warning:` headers once
// (deprecated API versions, ignored fields). Without one, they are logged.
using WarningHandler = std::function<void(std::string_view text)>;

class RestClient final : public ApiClient {
 public:
  static Result<std::unique_ptr<RestClient>> Create(const ClientConfig& config);
  ~RestClient() override;

  RestClient(const RestClient&) = delete;
  RestClient& operator=(const RestClient&) = delete;

  Result<nlohmann::json> Get(const Resource& resource, std::string_view ns,
                             std::string_view name) override;
  Result<ObjectList> List(const Resource& resource, std::string_view ns,
                          const ListOptions& options) override;
  Result<nlohmann::json> Create(const Resource& resource, std::string_view ns,
                                const nlohmann::json& object,
                                const WriteOptions& options = {}) override;
  Result<nlohmann::json> Update(const Resource& resource, const nlohmann::json& object,
                                std::string_view subresource = {},
                                const WriteOptions& options = {}) override;
  Result<nlohmann::json> Patch(const Resource& resource, std::string_view ns, std::string_view name,
                               PatchType type, std::string_view body,
                               const PatchOptions& options = {}) override;
  Status Delete(const Resource& resource, std::string_view ns, std::string_view name,
                const DeleteOptions& options = {}) override;
  Result<nlohmann::json> CreateSubresource(const Resource& resource, std::string_view ns,
                                           std::string_view name, std::string_view subresource,
                                           const nlohmann::json& body) override;
  Result<std::unique_ptr<WatchStream>> Watch(const Resource& resource, std::string_view ns,
                                             const WatchOptions& options) override;
  const std::string& DefaultNamespace() const override;

  // GET of a raw path such as /readyz or /version.
  Result<std::string> GetRaw(const std::string& path) override;
  Result<std::unique_ptr<ByteStream>> GetStream(const std::string& path) override;

  void SetRequestObserver(RequestObserver observer);
  void SetWarningHandler(WarningHandler handler);

 private:
  class Impl;
  explicit RestClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A client from the usual flags: --kubeconfig (else $KUBECONFIG, else the
// in-cluster service account), with the given flow control and user agent.
Result<std::unique_ptr<RestClient>> ConnectFromFlags(const std::string& kubeconfig, double qps,
                                                     int burst, int max_in_flight,
                                                     const std::string& user_agent);

}  // namespace hybridjob::k8s
