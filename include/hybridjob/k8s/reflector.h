// List-then-watch of one collection, as client-go's reflector: list (paged),
// hand the snapshot to the sink, then watch from its resourceVersion; resume
// after a dropped stream from the last seen resourceVersion (bookmarks move it
// too); relist on 410 Gone; back off exponentially with jitter on errors.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/rate_limiter.h>

namespace hybridjob::k8s {

struct ReflectorOptions {
  Resource resource;
  std::string namespace_name;  // "" = all namespaces
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  // Each watch asks the server to end it after a random time in [min, 2*min),
  // so many clients do not reconnect in step.
  std::chrono::seconds min_watch_timeout{300};
  Duration initial_backoff = std::chrono::milliseconds(200);
  Duration max_backoff = std::chrono::seconds(10);
  // A collection that may not be served yet (a CRD not installed): a list
  // answered 404 hands the sink an empty snapshot, so its consumer can sync,
  // and is retried after max_backoff until the collection appears.
  bool absent_collection_is_empty = false;
};

struct ReflectorStats {
  std::atomic<uint64_t> lists{0};
  std::atomic<uint64_t> watches{0};
  std::atomic<uint64_t> relists_after_gone{0};
  std::atomic<uint64_t> events{0};
  std::atomic<uint64_t> errors{0};
};

class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // A complete, consistent snapshot of the collection.
  virtual void Replace(std::vector<nlohmann::json> items, const std::string& resource_version) = 0;
  // One ADDED, MODIFIED or DELETED event.
  virtual void Apply(WatchEventType type, nlohmann::json object) = 0;
};

class Reflector {
 public:
  Reflector(ApiClient& client, ReflectorOptions options, ReflectorSink& sink);

  // Lists and watches until Stop(); call on a thread the caller owns.
  void Run();
  // Thread-safe; unblocks Run() promptly, even mid-watch or mid-backoff.
  void Stop();

  std::string LastResourceVersion() const;
  const ReflectorStats& stats() const { return stats_; }
  const ReflectorOptions& options() const { return options_; }

 private:
  enum class WatchEnd { kRewatch, kRelist, kStopped };

  bool ListAndReplace();
  WatchEnd WatchOnce();
  // Sleeps for the current backoff (then doubles it); false when stopped.
  bool Backoff();
  void ResetBackoff();
  bool Stopped() const { return stopped_.load(); }
  void ReportError(std::string_view what, const Status& status);

  ApiClient& client_;
  ReflectorOptions options_;
  ReflectorSink& sink_;
  ReflectorStats stats_;

  mutable Mutex mu_;
  std::condition_variable stop_cv_;
  std::atomic<bool> stopped_{false};
  std::string last_resource_version_ HJ_GUARDED_BY(mu_);
  WatchStream* active_watch_ HJ_GUARDED_BY(mu_) = nullptr;  // owned by WatchOnce
  int failures_ = 0;  // failed lists or watches since the last success; Run's thread only
  std::string last_error_ HJ_GUARDED_BY(mu_);
  bool absent_reported_ = false;  // the sink holds the empty snapshot of an absent collection
  std::chrono::steady_clock::time_point last_error_logged_ HJ_GUARDED_BY(mu_){};
};

}  // namespace hybridjob::k8s
