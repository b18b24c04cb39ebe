// The API server as the rest of HybridJob sees it. RestClient implements it
// over HTTPS; tests of pure logic never need it, and integration tests use the
// real server.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>
#include <hybridjob/k8s/resource.h>
#include <hybridjob/k8s/watch.h>

namespace hybridjob::k8s {

struct ListOptions {
  std::string label_selector;
  std::string field_selector;
  std::string resource_version;  // "" = most recent (quorum read), "0" = any (cache)
  std::string continue_token;
  int64_t limit = 0;  // 0 = no paging
};

struct ObjectList {
  std::vector<nlohmann::json> items;
  std::string resource_version;
  std::string continue_token;  // non-empty when more pages remain
};

struct WriteOptions {
  std::string field_manager;
  bool dry_run = false;
};

struct DeleteOptions {
  std::string propagation_policy;  // Foreground, Background, Orphan; "" = server default
  std::optional<std::string> precondition_uid;
  std::optional<std::string> precondition_resource_version;
  std::optional<int64_t> grace_period_seconds;
  bool dry_run = false;
};

enum class PatchType {
  kMerge,           // application/merge-patch+json
  kJson,            // application/json-patch+json
  kStrategicMerge,  // application/strategic-merge-patch+json (built-in types only)
  kApply,           // application/apply-patch+yaml: server-side apply
};

struct PatchOptions {
  std::string field_manager;  // required for kApply
  bool force = false;         // kApply: take ownership of conflicting fields
  std::string subresource;    // e.g. "status"
  bool dry_run = false;
};

struct WatchOptions {
  std::string resource_version;
  std::string label_selector;
  std::string field_selector;
  bool allow_bookmarks = true;
  std::chrono::seconds timeout{300};  // server-side timeoutSeconds
};

// A response body read as it arrives: a followed log.
class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Appends at least one byte of the body to `out`, waiting for it; false at
  // its end.
  virtual Result<bool> ReadSome(std::string& out) = 0;
  // Makes a ReadSome blocked in another thread return; safe from any thread
  // while the stream exists.
  virtual void Cancel() = 0;
};

class ApiClient {
 public:
  virtual ~ApiClient() = default;

  virtual Result<nlohmann::json> Get(const Resource& resource, std::string_view ns,
                                     std::string_view name) = 0;
  // One page; see ListAll for every page.
  virtual Result<ObjectList> List(const Resource& resource, std::string_view ns,
                                  const ListOptions& options) = 0;
  virtual Result<nlohmann::json> Create(const Resource& resource, std::string_view ns,
                                        const nlohmann::json& object,
                                        const WriteOptions& options = {}) = 0;
  // PUT of the whole object; its metadata.resourceVersion makes it conditional
  // (Conflict when stale). subresource "status" writes only the status.
  virtual Result<nlohmann::json> Update(const Resource& resource, const nlohmann::json& object,
                                        std::string_view subresource = {},
                                        const WriteOptions& options = {}) = 0;
  virtual Result<nlohmann::json> Patch(const Resource& resource, std::string_view ns,
                                       std::string_view name, PatchType type, std::string_view body,
                                       const PatchOptions& options = {}) = 0;
  virtual Status Delete(const Resource& resource, std::string_view ns, std::string_view name,
                        const DeleteOptions& options = {}) = 0;
  // POST to a subresource: pods/binding, pods/eviction, serviceaccounts/token.
  virtual Result<nlohmann::json> CreateSubresource(const Resource& resource, std::string_view ns,
                                                   std::string_view name,
                                                   std::string_view subresource,
                                                   const nlohmann::json& body) = 0;
  virtual Result<std::unique_ptr<WatchStream>> Watch(const Resource& resource, std::string_view ns,
                                                     const WatchOptions& options) = 0;

  // The namespace of the configured context.
  virtual const std::string& DefaultNamespace() const = 0;

  // GET of a raw path (discovery documents, /version, /readyz): the body.
  virtual Result<std::string> GetRaw(const std::string& path) = 0;
  // GET of a raw path whose body streams for as long as the server sends it
  // (pods/{name}/log?follow=true), with no limit on the wait between reads.
  // An answer other than 200 is the error, in the API server's words.
  virtual Result<std::unique_ptr<ByteStream>> GetStream(const std::string& path) = 0;
};

// Binds a pod to a node through pods/{name}/binding, as a scheduler does. The
// API server copies the binding's annotations onto the pod.
Status BindPod(ApiClient& client, std::string_view ns, std::string_view pod_name,
               std::string_view pod_uid, std::string_view node_name,
               const std::map<std::string, std::string>& annotations = {});

// Eviction bodies: policy/v1 is served from Kubernetes 1.22 on; 1.20 and 1.21
// know only policy/v1beta1 (which later servers still accept, deprecated).
inline constexpr std::string_view kEvictionV1 = "policy/v1";
inline constexpr std::string_view kEvictionV1beta1 = "policy/v1beta1";

// The Eviction version a server serves, read as kubectl drain reads it: the
// group and version of the pods/eviction entry in the core/v1 resource list
// (GET /api/v1). policy/v1beta1 when the list does not name one.
std::string EvictionApiVersion(const nlohmann::json& core_v1_resource_list);

// GET /api/v1 and EvictionApiVersion of it.
Result<std::string> DiscoverEvictionApiVersion(ApiClient& client);

// Evicts a pod through pods/{name}/eviction with an Eviction body of
// `api_version` (see DiscoverEvictionApiVersion), with the pod's uid as a
// precondition and no grace period override, so the pod's own
// terminationGracePeriodSeconds applies and PodDisruptionBudgets are
// honoured: a budget that forbids it answers 429.
Status EvictPod(ApiClient& client, std::string_view ns, std::string_view pod_name,
                std::string_view pod_uid, std::string_view api_version);

// Every page of a list. Restarts from scratch if the continue token expires
// (410) mid-way, so the result is always one consistent snapshot.
Result<ObjectList> ListAll(ApiClient& client, const Resource& resource, std::string_view ns,
                           ListOptions options, int64_t page_size = 500);

}  // namespace hybridjob::k8s
