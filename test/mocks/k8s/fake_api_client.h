// An in-memory API server behind the ApiClient interface, for unit tests of
// the shells (integration tests use the real kube-apiserver, never this).
// It keeps the rules the shells depend on: uids and resourceVersions on every
// object, 409 on a stale resourceVersion or a failed uid precondition,
// bindings only of unbound pods, evictions that delete, equality selectors,
// and watches that replay every change after a resourceVersion (410 Gone
// once that version is compacted away). Faults are injected per request.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/k8s/api_client.h>

namespace hybridjob::k8s::testing {

class FakeApiClient final : public ApiClient {
 public:
  // What a call asked for, as the fault hook and the request log see it.
  struct Request {
    std::string verb;      // get, list, create, update, patch, delete, watch, getraw, getstream
    std::string resource;  // plural, e.g. "pods"
    std::string ns;
    std::string name;
    std::string subresource;  // status, binding, eviction; the path for getraw and getstream
    nlohmann::json body;      // create/update/subresource bodies; patches as parsed JSON
  };
  // Consulted before every call: a Status returned is the call's answer, and
  // the call changes nothing.
  using Fault = std::function<std::optional<Status>(const Request&)>;

  FakeApiClient();
  ~FakeApiClient() override;

  void SetFault(Fault fault);
  std::vector<Request> Requests() const;
  // Requests of one verb (and subresource, if given).
  size_t CountRequests(std::string_view verb, std::string_view subresource = {}) const;
  // Adds or replaces an object without a request (metadata filled in as on a create).
  nlohmann::json Seed(const Resource& resource, nlohmann::json object);
  std::optional<nlohmann::json> Object(const Resource& resource, std::string_view ns,
                                       std::string_view name) const;
  // Forgets the change history: watches from before now get 410 Gone.
  void Compact();
  // Ends every open watch as a server timeout does (the stream closes cleanly),
  // including one whose request was made (and counted) but not yet answered.
  void CloseWatches();
  // Bodies for GetRaw and GetStream, by path (discovery documents, logs). A
  // stream hands its body out a few bytes at a time, as a network may.
  void SetRaw(std::string path, std::string body);
  // Whether every open watch has handed out all its events and waits in
  // Next() for more. A reflector handles an event before it asks for the
  // next, so then every change so far has reached the watchers' handlers.
  bool WatchesIdle() const;

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
  const std::string& DefaultNamespace() const override { return default_namespace_; }
  Result<std::string> GetRaw(const std::string& path) override;
  Result<std::unique_ptr<ByteStream>> GetStream(const std::string& path) override;

 private:
  // A SetRaw body, or the API server's 404.
  Result<std::string> RawBody(const std::string& path) const;
  struct Change {
    uint64_t version;
    std::string resource;
    std::string ns;
    WatchEventType type;
    nlohmann::json object;
  };
  class Stream;
  struct Open;  // an open watch

  std::optional<Status> Admit(Request request);  // logs it; the fault's answer
  // All under mu_.
  std::string KeyLocked(const Resource& resource, std::string_view ns, std::string_view name) const;
  nlohmann::json StoreLocked(const Resource& resource, nlohmann::json object, WatchEventType type);
  Status RemoveLocked(const Resource& resource, std::string_view ns, std::string_view name,
                      const DeleteOptions& options);

  const std::string default_namespace_ = "default";
  mutable std::mutex mu_;
  Fault fault_;
  std::vector<Request> requests_;
  std::map<std::string, nlohmann::json> objects_;  // plural/ns/name -> object
  std::map<std::string, std::string> raw_;
  uint64_t version_ = 1;
  uint64_t uid_counter_ = 0;
  uint64_t compacted_ = 0;  // changes at or below this version are forgotten
  uint64_t closes_ = 0;     // CloseWatches calls so far
  std::deque<Change> history_;
  std::vector<std::shared_ptr<Open>> watches_;
};

// Whether the object matches a selector of `key=value`, `key==value` and
// `key!=value` terms (labels), or of dotted field paths (fields).
bool MatchesLabelSelector(const nlohmann::json& object, std::string_view selector);
bool MatchesFieldSelector(const nlohmann::json& object, std::string_view selector);

}  // namespace hybridjob::k8s::testing
