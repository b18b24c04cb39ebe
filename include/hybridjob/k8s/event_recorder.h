// Kubernetes Events (core/v1) about objects, written in the background and
// aggregated: the same reason and message about the same object bumps the
// existing Event's count instead of creating a new one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/api_client.h>

namespace hybridjob::k8s {

struct ObjectReference {
  std::string api_version;
  std::string kind;
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string field_path;
};

// The reference to a JSON object (apiVersion/kind must be set on it).
ObjectReference ReferenceTo(const nlohmann::json& object);

enum class EventType { kNormal, kWarning };

class EventRecorder {
 public:
  // component: source.component of every Event (e.g. "gang-scheduler").
  // max_pending: Events waiting to be written at most; a recorder that makes
  // one per pod in bursts (the scheduler's Scheduled) needs room for a burst.
  EventRecorder(ApiClient& client, std::string component, size_t max_pending = 1000);
  ~EventRecorder();
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;

  // Never blocks on the API server; when too far behind, drops the Event,
  // counts it and logs a warning (the first drop, then one per kDropLogEvery).
  void Record(const ObjectReference& object, EventType type, std::string reason,
              std::string message);

  static constexpr uint64_t kDropLogEvery = 1000;

  // Waits until everything recorded so far was written (tests, shutdown).
  bool Flush(std::chrono::milliseconds timeout);
  void Stop();

  uint64_t dropped() const { return dropped_.load(); }

 private:
  struct Pending {
    ObjectReference object;
    EventType type;
    std::string reason;
    std::string message;
  };
  struct Aggregate {
    std::string event_namespace;
    std::string event_name;
    int count = 0;
  };

  void Run();
  void Write(const Pending& event);

  ApiClient& client_;
  std::string component_;
  size_t max_pending_;

  Mutex mu_;
  std::condition_variable cv_;
  std::condition_variable idle_cv_;
  std::deque<Pending> queue_ HJ_GUARDED_BY(mu_);
  bool writing_ HJ_GUARDED_BY(mu_) = false;
  bool stopping_ HJ_GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> dropped_{0};
  std::unordered_map<std::string, Aggregate> aggregates_;  // worker thread only
  std::thread thread_;
};

}  // namespace hybridjob::k8s
