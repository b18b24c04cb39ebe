#include "fake_api_client.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include <hybridjob/api/time.h>

namespace hybridjob::k8s::testing {
namespace {

using nlohmann::json;

Status ApiError(StatusCode code, int http, std::string reason, std::string message) {
  return Status(code, std::move(message)).WithHttp(http, std::move(reason));
}

Status NotFoundError(const Resource& resource, std::string_view name) {
  return ApiError(StatusCode::kNotFound, 404, "NotFound",
                  resource.plural + " \"" + std::string(name) + "\" not found");
}

Status ConflictError(const Resource& resource, std::string_view name, const std::string& why) {
  return ApiError(StatusCode::kConflict, 409, "Conflict",
                  "Operation cannot be fulfilled on " + resource.plural + " \"" +
                      std::string(name) + "\": " + why);
}

std::string MetaString(const json& object, const char* field) {
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) {
    return {};
  }
  auto it = meta->find(field);
  return it != meta->end() && it->is_string() ? it->get<std::string>() : std::string();
}

// The value at a dotted path ("status.phase", "metadata.name"), or "".
std::string FieldValue(const json& object, std::string_view path) {
  const json* at = &object;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string part(
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (!at->is_object() || !at->contains(part)) {
      return {};
    }
    at = &(*at)[part];
    if (dot == std::string_view::npos) {
      break;
    }
    start = dot + 1;
  }
  if (at->is_string()) {
    return at->get<std::string>();
  }
  return at->is_null() ? std::string() : at->dump();
}

// Terms "k=v", "k==v", "k!=v", comma-separated; `value_of` reads a key.
template <typename ValueOf>
bool MatchesTerms(std::string_view selector, ValueOf value_of) {
  size_t start = 0;
  while (start < selector.size()) {
    size_t comma = selector.find(',', start);
    std::string_view term = selector.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    start = comma == std::string_view::npos ? selector.size() : comma + 1;
    if (term.empty()) {
      continue;
    }
    bool negated = false;
    size_t op = term.find("!=");
    size_t value_at = 0;
    if (op != std::string_view::npos) {
      negated = true;
      value_at = op + 2;
    } else if ((op = term.find("==")) != std::string_view::npos) {
      value_at = op + 2;
    } else if ((op = term.find('=')) != std::string_view::npos) {
      value_at = op + 1;
    } else {
      // A bare key: it must exist (labels only; "" never matches).
      if (!value_of(term).has_value()) {
        return false;
      }
      continue;
    }
    std::optional<std::string> value = value_of(term.substr(0, op));
    const bool equal = value.has_value() && *value == term.substr(value_at);
    if (equal == negated) {
      return false;
    }
  }
  return true;
}

// Strategic merge for the lists the shells patch: they merge by a key.
const char* MergeKeyOf(std::string_view list) {
  if (list == "conditions") {
    return "type";
  }
  if (list == "containers" || list == "initContainers" || list == "env" || list == "volumes") {
    return "name";
  }
  return nullptr;
}

void StrategicMerge(json& target, const json& patch) {
  if (!patch.is_object() || !target.is_object()) {
    target = patch;
    return;
  }
  for (auto it = patch.begin(); it != patch.end(); ++it) {
    if (it->is_null()) {
      target.erase(it.key());
      continue;
    }
    const char* merge_key = MergeKeyOf(it.key());
    if (merge_key != nullptr && it->is_array() && target.contains(it.key()) &&
        target[it.key()].is_array()) {
      json& list = target[it.key()];
      for (const json& item : *it) {
        auto same = std::find_if(list.begin(), list.end(), [&](const json& existing) {
          return existing.is_object() && item.is_object() && existing.contains(merge_key) &&
                 item.contains(merge_key) && existing[merge_key] == item[merge_key];
        });
        if (same != list.end()) {
          StrategicMerge(*same, item);
        } else {
          list.push_back(item);
        }
      }
      continue;
    }
    if (it->is_object() && target.contains(it.key()) && target[it.key()].is_object()) {
      StrategicMerge(target[it.key()], *it);
    } else {
      target[it.key()] = *it;
    }
  }
}

// Kinds whose status only the status subresource writes.
bool HasStatusSubresource(const Resource& resource) {
  return resource.plural == "pods" || resource.plural == "nodes" ||
         resource.plural == "hybridjobs" || resource.plural == "deployments" ||
         resource.plural == "persistentvolumeclaims" || resource.plural == "services";
}

// What a write leaves stored: through the status subresource only the status
// changes; otherwise everything else does (the status too, for kinds without
// that subresource). The identity the server assigned always stays.
json Written(const Resource& resource, const json& current, json written,
             std::string_view subresource) {
  json stored = current;
  if (subresource == "status") {
    stored["status"] = written.value("status", json::object());
    return stored;
  }
  json old_status = current.value("status", json());
  stored = std::move(written);
  if (HasStatusSubresource(resource)) {
    stored["status"] = std::move(old_status);
  }
  stored["metadata"]["uid"] = current["metadata"]["uid"];
  stored["metadata"]["creationTimestamp"] = current["metadata"]["creationTimestamp"];
  return stored;
}

}  // namespace

bool MatchesLabelSelector(const json& object, std::string_view selector) {
  const json* labels = nullptr;
  if (object.contains("metadata") && object["metadata"].is_object() &&
      object["metadata"].contains("labels") && object["metadata"]["labels"].is_object()) {
    labels = &object["metadata"]["labels"];
  }
  return MatchesTerms(selector, [&](std::string_view key) -> std::optional<std::string> {
    if (labels == nullptr) {
      return std::nullopt;
    }
    auto it = labels->find(std::string(key));
    if (it == labels->end() || !it->is_string()) {
      return std::nullopt;
    }
    return it->get<std::string>();
  });
}

bool MatchesFieldSelector(const json& object, std::string_view selector) {
  return MatchesTerms(selector, [&](std::string_view path) -> std::optional<std::string> {
    return FieldValue(object, path);
  });
}

// An open watch: events queued by the server side, taken by Next().
struct FakeApiClient::Open {
  std::string resource;
  std::string ns;
  std::string label_selector;
  std::string field_selector;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<WatchEvent> events;
  bool closed = false;     // by the server: Next() ends cleanly once drained
  bool cancelled = false;  // by the client
  bool waiting = false;    // a Next() call waits for an event

  bool Matches(const json& object) const {
    return MatchesLabelSelector(object, label_selector) &&
           MatchesFieldSelector(object, field_selector);
  }
  // The event this watch sees of a change, as the watch cache filters it.
  std::optional<WatchEvent> Filter(const Change& change, const json* before) const {
    if (change.resource != resource || (!ns.empty() && change.ns != ns)) {
      return std::nullopt;
    }
    const bool now = change.type != WatchEventType::kDeleted && Matches(change.object);
    const bool was = change.type == WatchEventType::kAdded
                         ? false
                         : (before != nullptr ? Matches(*before) : Matches(change.object));
    WatchEvent event;
    event.object = change.object;
    if (change.type == WatchEventType::kDeleted) {
      if (!was) {
        return std::nullopt;
      }
      event.type = WatchEventType::kDeleted;
    } else if (now && was) {
      event.type = WatchEventType::kModified;
    } else if (now) {
      event.type = WatchEventType::kAdded;
    } else if (was) {
      event.type = WatchEventType::kDeleted;
    } else {
      return std::nullopt;
    }
    return event;
  }
  void Push(WatchEvent event) {
    {
      std::lock_guard lock(mu);
      events.push_back(std::move(event));
    }
    cv.notify_all();
  }
  void Close() {
    {
      std::lock_guard lock(mu);
      closed = true;
    }
    cv.notify_all();
  }
};

class FakeApiClient::Stream final : public WatchStream {
 public:
  explicit Stream(std::shared_ptr<Open> open) : open_(std::move(open)) {}
  ~Stream() override { Cancel(); }

  Result<std::optional<WatchEvent>> Next() override {
    std::unique_lock lock(open_->mu);
    open_->waiting = true;
    open_->cv.wait(lock,
                   [this] { return open_->cancelled || open_->closed || !open_->events.empty(); });
    open_->waiting = false;
    if (open_->cancelled) {
      return Cancelled("watch cancelled");
    }
    if (open_->events.empty()) {
      return std::optional<WatchEvent>();  // closed by the server
    }
    WatchEvent event = std::move(open_->events.front());
    open_->events.pop_front();
    return std::optional<WatchEvent>(std::move(event));
  }

  void Cancel() override {
    {
      std::lock_guard lock(open_->mu);
      open_->cancelled = true;
    }
    open_->cv.notify_all();
  }

 private:
  std::shared_ptr<Open> open_;
};

FakeApiClient::FakeApiClient() {
  raw_["/api/v1"] = json{{"kind", "APIResourceList"},
                         {"groupVersion", "v1"},
                         {"resources", json::array({{{"name", "pods"}, {"kind", "Pod"}},
                                                    {{"name", "pods/eviction"},
                                                     {"kind", "Eviction"},
                                                     {"group", "policy"},
                                                     {"version", "v1"}}})}}
                        .dump();
}

FakeApiClient::~FakeApiClient() {
  CloseWatches();
}

void FakeApiClient::SetFault(Fault fault) {
  std::lock_guard lock(mu_);
  fault_ = std::move(fault);
}

std::vector<FakeApiClient::Request> FakeApiClient::Requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

size_t FakeApiClient::CountRequests(std::string_view verb, std::string_view subresource) const {
  std::lock_guard lock(mu_);
  return static_cast<size_t>(std::count_if(requests_.begin(), requests_.end(), [&](const auto& r) {
    return r.verb == verb && (subresource.empty() || r.subresource == subresource);
  }));
}

void FakeApiClient::SetRaw(std::string path, std::string body) {
  std::lock_guard lock(mu_);
  raw_[std::move(path)] = std::move(body);
}

std::optional<Status> FakeApiClient::Admit(Request request) {
  Fault fault;
  {
    std::lock_guard lock(mu_);
    fault = fault_;
  }
  // Called unlocked: a fault may call back into the fake (Seed, Object).
  std::optional<Status> refused = fault ? fault(request) : std::nullopt;
  // Counted once the fault has decided: a test that sees the request counted
  // and then changes what the fault refuses changes it for later requests only.
  std::lock_guard lock(mu_);
  requests_.push_back(std::move(request));
  return refused;
}

std::string FakeApiClient::KeyLocked(const Resource& resource, std::string_view ns,
                                     std::string_view name) const {
  return resource.plural + "/" + (resource.namespaced ? std::string(ns) : std::string()) + "/" +
         std::string(name);
}

json FakeApiClient::StoreLocked(const Resource& resource, json object, WatchEventType type) {
  const std::string ns = resource.namespaced ? MetaString(object, "namespace") : std::string();
  const std::string key = KeyLocked(resource, ns, MetaString(object, "name"));
  const uint64_t version = ++version_;
  object["metadata"]["resourceVersion"] = std::to_string(version);
  std::optional<json> before;
  if (auto it = objects_.find(key); it != objects_.end()) {
    before = it->second;
  }
  Change change{version, resource.plural, ns, type, object};
  if (type == WatchEventType::kDeleted) {
    objects_.erase(key);
  } else {
    objects_[key] = object;
  }
  for (const auto& open : watches_) {
    if (auto event = open->Filter(change, before ? &*before : nullptr)) {
      open->Push(std::move(*event));
    }
  }
  history_.push_back(std::move(change));
  return object;
}

json FakeApiClient::Seed(const Resource& resource, json object) {
  std::lock_guard lock(mu_);
  json& meta = object["metadata"];
  if (resource.namespaced && !meta.contains("namespace")) {
    meta["namespace"] = default_namespace_;
  }
  if (!meta.contains("uid")) {
    meta["uid"] = "uid-" + std::to_string(++uid_counter_);
  }
  if (!meta.contains("creationTimestamp")) {
    meta["creationTimestamp"] =
        api::FormatTime(std::chrono::time_point_cast<std::chrono::seconds>(api::Clock::now()));
  }
  const bool exists = objects_.contains(
      KeyLocked(resource, MetaString(object, "namespace"), MetaString(object, "name")));
  return StoreLocked(resource, std::move(object),
                     exists ? WatchEventType::kModified : WatchEventType::kAdded);
}

std::optional<json> FakeApiClient::Object(const Resource& resource, std::string_view ns,
                                          std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = objects_.find(KeyLocked(resource, ns, name));
  if (it == objects_.end()) {
    return std::nullopt;
  }
  return it->second;
}

void FakeApiClient::Compact() {
  std::lock_guard lock(mu_);
  compacted_ = version_;
  history_.clear();
}

bool FakeApiClient::WatchesIdle() const {
  std::lock_guard lock(mu_);
  for (const auto& open : watches_) {
    std::lock_guard open_lock(open->mu);
    if (!open->cancelled && !open->closed && (!open->waiting || !open->events.empty())) {
      return false;
    }
  }
  return true;
}

void FakeApiClient::CloseWatches() {
  std::vector<std::shared_ptr<Open>> watches;
  {
    std::lock_guard lock(mu_);
    ++closes_;
    watches.swap(watches_);
  }
  for (const auto& open : watches) {
    open->Close();
  }
}

Result<json> FakeApiClient::Get(const Resource& resource, std::string_view ns,
                                std::string_view name) {
  if (auto fault = Admit({"get", resource.plural, std::string(ns), std::string(name), "", {}})) {
    return *fault;
  }
  std::lock_guard lock(mu_);
  auto it = objects_.find(KeyLocked(resource, ns, name));
  if (it == objects_.end()) {
    return NotFoundError(resource, name);
  }
  return it->second;
}

Result<ObjectList> FakeApiClient::List(const Resource& resource, std::string_view ns,
                                       const ListOptions& options) {
  if (auto fault = Admit({"list", resource.plural, std::string(ns), "", "", {}})) {
    return *fault;
  }
  std::lock_guard lock(mu_);
  std::vector<json> matching;
  const std::string prefix =
      resource.plural + "/" + (resource.namespaced && !ns.empty() ? std::string(ns) + "/" : "");
  for (auto it = objects_.lower_bound(prefix); it != objects_.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) {
      break;
    }
    if (MatchesLabelSelector(it->second, options.label_selector) &&
        MatchesFieldSelector(it->second, options.field_selector)) {
      matching.push_back(it->second);
    }
  }
  ObjectList list;
  list.resource_version = std::to_string(version_);
  size_t begin = options.continue_token.empty() ? 0 : std::stoul(options.continue_token);
  size_t end = options.limit > 0
                   ? std::min(matching.size(), begin + static_cast<size_t>(options.limit))
                   : matching.size();
  for (size_t i = begin; i < end; ++i) {
    list.items.push_back(std::move(matching[i]));
  }
  if (end < matching.size()) {
    list.continue_token = std::to_string(end);
  }
  return list;
}

Result<json> FakeApiClient::Create(const Resource& resource, std::string_view ns,
                                   const json& object, const WriteOptions&) {
  if (auto fault = Admit(
          {"create", resource.plural, std::string(ns), MetaString(object, "name"), "", object})) {
    return *fault;
  }
  std::lock_guard lock(mu_);
  json created = object;
  json& meta = created["metadata"];
  if (!meta.is_object()) {
    return ApiError(StatusCode::kInvalid, 422, "Invalid", "metadata: Required value");
  }
  if (resource.namespaced) {
    meta["namespace"] = std::string(ns.empty() ? std::string_view(default_namespace_) : ns);
  }
  if (MetaString(created, "name").empty()) {
    const std::string generate = MetaString(created, "generateName");
    if (generate.empty()) {
      return ApiError(StatusCode::kInvalid, 422, "Invalid",
                      "metadata.name: Required value: name or generateName is required");
    }
    meta["name"] = generate + std::to_string(++uid_counter_);
  }
  const std::string name = MetaString(created, "name");
  if (objects_.contains(KeyLocked(resource, MetaString(created, "namespace"), name))) {
    return ApiError(StatusCode::kAlreadyExists, 409, "AlreadyExists",
                    resource.plural + " \"" + name + "\" already exists");
  }
  meta["uid"] = "uid-" + std::to_string(++uid_counter_);
  meta["creationTimestamp"] =
      api::FormatTime(std::chrono::time_point_cast<std::chrono::seconds>(api::Clock::now()));
  return StoreLocked(resource, std::move(created), WatchEventType::kAdded);
}

Result<json> FakeApiClient::Update(const Resource& resource, const json& object,
                                   std::string_view subresource, const WriteOptions&) {
  const std::string ns = MetaString(object, "namespace");
  const std::string name = MetaString(object, "name");
  if (auto fault = Admit({"update", resource.plural, ns, name, std::string(subresource), object})) {
    return *fault;
  }
  std::lock_guard lock(mu_);
  auto it = objects_.find(KeyLocked(resource, ns, name));
  if (it == objects_.end()) {
    return NotFoundError(resource, name);
  }
  const std::string rv = MetaString(object, "resourceVersion");
  if (!rv.empty() && rv != MetaString(it->second, "resourceVersion")) {
    return ConflictError(resource, name,
                         "the object has been modified; please apply your changes to the latest "
                         "version and try again");
  }
  return StoreLocked(resource, Written(resource, it->second, object, subresource),
                     WatchEventType::kModified);
}

Result<json> FakeApiClient::Patch(const Resource& resource, std::string_view ns,
                                  std::string_view name, PatchType type, std::string_view body,
                                  const PatchOptions& options) {
  json patch = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (auto fault = Admit({"patch", resource.plural, std::string(ns), std::string(name),
                          options.subresource, patch})) {
    return *fault;
  }
  if (patch.is_discarded()) {
    return ApiError(StatusCode::kBadRequest, 400, "BadRequest", "the patch is not JSON");
  }
  std::lock_guard lock(mu_);
  auto it = objects_.find(KeyLocked(resource, ns, name));
  if (it == objects_.end()) {
    return NotFoundError(resource, name);
  }
  json patched = it->second;
  switch (type) {
    case PatchType::kMerge:
      patched.merge_patch(patch);
      break;
    case PatchType::kStrategicMerge:
      StrategicMerge(patched, patch);
      break;
    case PatchType::kJson:
      try {
        patched = patched.patch(patch);
      } catch (const json::exception& e) {
        return ApiError(StatusCode::kInvalid, 422, "Invalid", e.what());
      }
      break;
    case PatchType::kApply:
      return ApiError(StatusCode::kBadRequest, 400, "BadRequest",
                      "server-side apply is not modelled by the fake API server");
  }
  const std::string rv = MetaString(patch, "resourceVersion");
  if (!rv.empty() && rv != MetaString(it->second, "resourceVersion")) {
    return ConflictError(resource, name, "the object has been modified");
  }
  // A uid in the patch is a precondition, as the API server treats it.
  const std::string uid = MetaString(patch, "uid");
  if (!uid.empty() && uid != MetaString(it->second, "uid")) {
    return ConflictError(resource, name,
                         "Precondition failed: UID in precondition: " + uid +
                             ", UID in object meta: " + MetaString(it->second, "uid"));
  }
  return StoreLocked(resource,
                     Written(resource, it->second, std::move(patched), options.subresource),
                     WatchEventType::kModified);
}

Status FakeApiClient::RemoveLocked(const Resource& resource, std::string_view ns,
                                   std::string_view name, const DeleteOptions& options) {
  auto it = objects_.find(KeyLocked(resource, ns, name));
  if (it == objects_.end()) {
    return NotFoundError(resource, name);
  }
  if (options.precondition_uid && *options.precondition_uid != MetaString(it->second, "uid")) {
    return ConflictError(resource, name,
                         "Precondition failed: UID in precondition: " + *options.precondition_uid +
                             ", UID in object meta: " + MetaString(it->second, "uid"));
  }
  if (options.precondition_resource_version &&
      *options.precondition_resource_version != MetaString(it->second, "resourceVersion")) {
    return ConflictError(resource, name, "Precondition failed: resourceVersion");
  }
  json gone = it->second;
  StoreLocked(resource, std::move(gone), WatchEventType::kDeleted);
  return Status::Ok();
}

Status FakeApiClient::Delete(const Resource& resource, std::string_view ns, std::string_view name,
                             const DeleteOptions& options) {
  if (auto fault = Admit({"delete", resource.plural, std::string(ns), std::string(name), "", {}})) {
    return *fault;
  }
  std::lock_guard lock(mu_);
  return RemoveLocked(resource, ns, name, options);
}

Result<json> FakeApiClient::CreateSubresource(const Resource& resource, std::string_view ns,
                                              std::string_view name, std::string_view subresource,
                                              const json& body) {
  if (auto fault = Admit({"create", resource.plural, std::string(ns), std::string(name),
                          std::string(subresource), body})) {
    return *fault;
  }
  std::lock_guard lock(mu_);
  auto it = objects_.find(KeyLocked(resource, ns, name));
  if (resource.plural != "pods" || (subresource != "binding" && subresource != "eviction")) {
    return ApiError(StatusCode::kNotFound, 404, "NotFound",
                    "the server could not find the requested resource");
  }
  if (it == objects_.end()) {
    return NotFoundError(resource, name);
  }
  const std::string uid = MetaString(body, "uid");
  if (subresource == "binding") {
    json pod = it->second;
    if (!uid.empty() && uid != MetaString(pod, "uid")) {
      return ConflictError(resource, name, "Precondition failed: UID in precondition: " + uid);
    }
    const json& spec = pod["spec"];
    if (spec.contains("nodeName") && spec["nodeName"].is_string() &&
        !spec["nodeName"].get<std::string>().empty()) {
      return ConflictError(resource, name,
                           "pod " + std::string(name) + " is already assigned to node \"" +
                               spec["nodeName"].get<std::string>() + "\"");
    }
    if (spec.contains("schedulingGates") && spec["schedulingGates"].is_array() &&
        !spec["schedulingGates"].empty()) {
      return ConflictError(resource, name,
                           "pod " + std::string(name) + " has non-empty .spec.schedulingGates");
    }
    pod["spec"]["nodeName"] = body.value("target", json::object()).value("name", "");
    // As the API server does: the binding's annotations go onto the pod.
    const json& metadata = body.value("metadata", json::object());
    if (metadata.contains("annotations") && metadata["annotations"].is_object()) {
      for (const auto& [key, value] : metadata["annotations"].items()) {
        pod["metadata"]["annotations"][key] = value;
      }
    }
    StrategicMerge(
        pod["status"],
        json{{"conditions", json::array({{{"type", "PodScheduled"}, {"status", "True"}}})}});
    StoreLocked(resource, std::move(pod), WatchEventType::kModified);
    return json{{"kind", "Status"}, {"status", "Success"}};
  }
  // eviction: the pod goes (no PodDisruptionBudgets here; inject a 429 for one).
  DeleteOptions options;
  if (body.contains("deleteOptions") && body["deleteOptions"].contains("preconditions")) {
    const json& preconditions = body["deleteOptions"]["preconditions"];
    if (preconditions.contains("uid") && preconditions["uid"].is_string()) {
      options.precondition_uid = preconditions["uid"].get<std::string>();
    }
  }
  if (Status removed = RemoveLocked(resource, ns, name, options); !removed.ok()) {
    return removed;
  }
  return json{{"kind", "Status"}, {"status", "Success"}};
}

Result<std::unique_ptr<WatchStream>> FakeApiClient::Watch(const Resource& resource,
                                                          std::string_view ns,
                                                          const WatchOptions& options) {
  uint64_t closes_before;
  {
    std::lock_guard lock(mu_);
    closes_before = closes_;
  }
  if (auto fault =
          Admit({"watch", resource.plural, std::string(ns), "", options.resource_version, {}})) {
    return *fault;
  }
  auto open = std::make_shared<Open>();
  open->resource = resource.plural;
  open->ns = resource.namespaced ? std::string(ns) : std::string();
  open->label_selector = options.label_selector;
  open->field_selector = options.field_selector;
  std::lock_guard lock(mu_);
  if (closes_ != closes_before) {
    // CloseWatches ran after this request was made (and counted): it ends
    // this watch too, before any event, as a server timing out would.
    open->Close();
    return std::unique_ptr<WatchStream>(std::make_unique<Stream>(open));
  }
  const std::string& from = options.resource_version;
  if (from.empty() || from == "0") {
    // Starts with the current state, as synthetic ADDED events.
    for (const auto& [key, object] : objects_) {
      Change added{version_, resource.plural, MetaString(object, "namespace"),
                   WatchEventType::kAdded, object};
      if (resource.namespaced == false) {
        added.ns.clear();
      }
      if (auto event = open->Filter(added, nullptr)) {
        open->Push(std::move(*event));
      }
    }
  } else {
    const uint64_t since = std::stoull(from);
    if (since < compacted_) {
      WatchEvent gone;
      gone.type = WatchEventType::kError;
      gone.error =
          ApiError(StatusCode::kGone, 410, "Expired",
                   "too old resource version: " + from + " (" + std::to_string(compacted_) + ")");
      gone.object = {{"kind", "Status"}, {"code", 410}, {"reason", "Expired"}};
      open->Push(std::move(gone));
      open->Close();
      return std::unique_ptr<WatchStream>(std::make_unique<Stream>(open));
    }
    // Replays what changed since, each change seen against the state before it.
    std::map<std::string, json> before;
    for (const Change& change : history_) {
      const std::string key =
          change.resource + "/" + change.ns + "/" + MetaString(change.object, "name");
      auto prior = before.find(key);
      if (change.version > since) {
        if (auto event = open->Filter(change, prior != before.end() ? &prior->second : nullptr)) {
          open->Push(std::move(*event));
        }
      }
      before[key] = change.object;
    }
  }
  watches_.push_back(open);
  return std::unique_ptr<WatchStream>(std::make_unique<Stream>(open));
}

Result<std::string> FakeApiClient::GetRaw(const std::string& path) {
  if (auto fault = Admit({"getraw", "", "", "", path, {}})) {
    return *fault;
  }
  return RawBody(path);
}

Result<std::string> FakeApiClient::RawBody(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = raw_.find(path);
  if (it == raw_.end()) {
    return ApiError(StatusCode::kNotFound, 404, "NotFound",
                    "the server could not find the requested resource");
  }
  return it->second;
}

namespace {

class ChunkedByteStream final : public ByteStream {
 public:
  explicit ChunkedByteStream(std::string body) : body_(std::move(body)) {}
  Result<bool> ReadSome(std::string& out) override {
    constexpr size_t kChunk = 3;
    if (cancelled_.load() || offset_ >= body_.size()) {
      return false;
    }
    const size_t count = std::min(kChunk, body_.size() - offset_);
    out.append(body_, offset_, count);
    offset_ += count;
    return true;
  }
  void Cancel() override { cancelled_ = true; }

 private:
  std::string body_;
  size_t offset_ = 0;
  std::atomic<bool> cancelled_{false};
};

}  // namespace

Result<std::unique_ptr<ByteStream>> FakeApiClient::GetStream(const std::string& path) {
  if (auto fault = Admit({"getstream", "", "", "", path, {}})) {
    return *fault;
  }
  Result<std::string> body = RawBody(path);
  if (!body.ok()) {
    return body.status();
  }
  return std::unique_ptr<ByteStream>(std::make_unique<ChunkedByteStream>(std::move(*body)));
}

}  // namespace hybridjob::k8s::testing
