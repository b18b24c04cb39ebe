#include <chrono>
#include <cstdio>
#include <ctime>

#include <spdlog/spdlog.h>

#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/event_recorder.h>

namespace hybridjob::k8s {
namespace {

constexpr size_t kMaxAggregates = 4096;

std::string NowRfc3339() {
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string_view TypeName(EventType type) {
  return type == EventType::kWarning ? "Warning" : "Normal";
}

}  // namespace

ObjectReference ReferenceTo(const nlohmann::json& object) {
  ObjectReference ref;
  ref.api_version = object.value("apiVersion", "");
  ref.kind = object.value("kind", "");
  if (auto metadata = object.find("metadata"); metadata != object.end() && metadata->is_object()) {
    ref.namespace_name = metadata->value("namespace", "");
    ref.name = metadata->value("name", "");
    ref.uid = metadata->value("uid", "");
    ref.resource_version = metadata->value("resourceVersion", "");
  }
  return ref;
}

EventRecorder::EventRecorder(ApiClient& client, std::string component, size_t max_pending)
    : client_(client), component_(std::move(component)), max_pending_(max_pending) {
  thread_ = std::thread([this] { Run(); });
}

EventRecorder::~EventRecorder() {
  Stop();
}

void EventRecorder::Record(const ObjectReference& object, EventType type, std::string reason,
                           std::string message) {
  uint64_t dropped = 0;
  {
    MutexLock lock(mu_);
    if (stopping_) {
      return;
    }
    if (queue_.size() < max_pending_) {
      queue_.push_back({object, type, std::move(reason), std::move(message)});
      cv_.notify_one();
      return;
    }
    dropped = ++dropped_;
  }
  if (dropped % kDropLogEvery == 1) {
    spdlog::warn("{}: {} Events not written so far: more than {} were waiting for the API server",
                 component_, dropped, max_pending_);
  }
}

bool EventRecorder::Flush(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  return lock.WaitFor(idle_cv_, timeout,
                      [this]() HJ_REQUIRES(mu_) { return queue_.empty() && !writing_; });
}

void EventRecorder::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_) {
      return;
    }
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) {
    thread_.join();
  }
}

void EventRecorder::Run() {
  while (true) {
    Pending next;
    {
      MutexLock lock(mu_);
      lock.Wait(cv_, [this]() HJ_REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) {
        return;  // stopping and drained
      }
      next = std::move(queue_.front());
      queue_.pop_front();
      writing_ = true;
    }
    Write(next);
    {
      MutexLock lock(mu_);
      writing_ = false;
      if (queue_.empty()) {
        idle_cv_.notify_all();
      }
    }
  }
}

void EventRecorder::Write(const Pending& event) {
  const std::string ns =
      event.object.namespace_name.empty() ? "default" : event.object.namespace_name;
  const std::string key = event.object.kind + "/" + ns + "/" + event.object.name + "/" +
                          event.object.uid + "/" + std::string(TypeName(event.type)) + "/" +
                          event.reason + "/" + event.message;
  const std::string now = NowRfc3339();

  if (auto it = aggregates_.find(key); it != aggregates_.end()) {
    Aggregate& aggregate = it->second;
    const nlohmann::json patch = {{"count", aggregate.count + 1}, {"lastTimestamp", now}};
    auto patched = client_.Patch(resources::Events(), aggregate.event_namespace,
                                 aggregate.event_name, PatchType::kMerge, patch.dump());
    if (patched) {
      ++aggregate.count;
      return;
    }
    aggregates_.erase(it);  // the Event expired or was deleted: write a new one
  }

  const auto nanos = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), ".%llx", static_cast<unsigned long long>(nanos));
  const std::string name = event.object.name + suffix;
  nlohmann::json involved = {{"apiVersion", event.object.api_version},
                             {"kind", event.object.kind},
                             {"name", event.object.name},
                             {"uid", event.object.uid}};
  if (!event.object.namespace_name.empty()) {
    involved["namespace"] = event.object.namespace_name;
  }
  if (!event.object.resource_version.empty()) {
    involved["resourceVersion"] = event.object.resource_version;
  }
  if (!event.object.field_path.empty()) {
    involved["fieldPath"] = event.object.field_path;
  }
  const nlohmann::json body = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"name", name}, {"namespace", ns}}},
      {"involvedObject", involved},
      {"reason", event.reason},
      {"message", event.message},
      {"type", TypeName(event.type)},
      {"source", {{"component", component_}}},
      {"reportingComponent", component_},
      {"firstTimestamp", now},
      {"lastTimestamp", now},
      {"count", 1},
  };
  auto created = client_.Create(resources::Events(), ns, body);
  if (!created) {
    return;  // Events are best effort; the namespace may be terminating
  }
  if (aggregates_.size() >= kMaxAggregates) {
    aggregates_.clear();
  }
  aggregates_[key] = {ns, name, 1};
}

}  // namespace hybridjob::k8s
