// An informer: a reflector feeding an indexed Store, plus event handlers.
// T is what the cache keeps: raw JSON by default, or a compact decoded type
// (the scheduler keeps only what it schedules with). The informer owns its
// threads and joins them in Stop().
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/reflector.h>
#include <hybridjob/k8s/store.h>

namespace hybridjob::k8s {

template <typename T>
struct EventHandler {
  using Ptr = std::shared_ptr<const T>;
  std::function<void(const Ptr& object)> on_add;
  std::function<void(const Ptr& old_object, const Ptr& new_object)> on_update;
  // final_state_unknown: the delete was missed while the watch was down and
  // found by a relist, so `last_known` may be stale (client-go's tombstone).
  std::function<void(const Ptr& last_known, bool final_state_unknown)> on_delete;
};

template <typename T>
struct InformerOptions {
  ReflectorOptions reflector;
  // Turns an API object into T; an object that fails to decode is skipped.
  std::function<Result<T>(nlohmann::json&&)> decode;
  // Re-delivers every cached object as an update this often (0 = never).
  Duration resync_period = Duration::zero();
};

// Drops fields no consumer needs (managedFields is often half an object).
nlohmann::json PruneForCache(nlohmann::json&& object);

template <typename T>
class Informer final : private ReflectorSink {
 public:
  using Ptr = std::shared_ptr<const T>;

  Informer(ApiClient& client, InformerOptions<T> options)
      : options_(std::move(options)), reflector_(client, options_.reflector, *this) {}

  ~Informer() override { Stop(); }
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Handlers and indexers are registered before Start().
  void AddEventHandler(EventHandler<T> handler) { handlers_.push_back(std::move(handler)); }
  void AddIndexer(const std::string& name, typename Store<T>::IndexFunc func) {
    store_.AddIndexer(name, std::move(func));
  }

  void Start() {
    MutexLock lock(lifecycle_mu_);
    if (started_) {
      return;
    }
    started_ = true;
    reflector_thread_ = std::thread([this] { reflector_.Run(); });
    if (options_.resync_period > Duration::zero()) {
      resync_thread_ = std::thread([this] { ResyncLoop(); });
    }
  }

  void Stop() {
    MutexLock lock(lifecycle_mu_);
    reflector_.Stop();
    {
      MutexLock sync_lock(sync_mu_);
      stopping_ = true;
      sync_cv_.notify_all();
    }
    if (reflector_thread_.joinable()) {
      reflector_thread_.join();
    }
    if (resync_thread_.joinable()) {
      resync_thread_.join();
    }
  }

  bool HasSynced() const {
    MutexLock lock(sync_mu_);
    return synced_;
  }

  bool WaitForSync(Duration timeout) const {
    MutexLock lock(sync_mu_);
    return lock.WaitFor(sync_cv_, timeout, [this]() HJ_REQUIRES(sync_mu_) {
      return synced_ || stopping_;
    }) && synced_;
  }

  const Store<T>& store() const { return store_; }
  const ReflectorStats& stats() const { return reflector_.stats(); }
  std::string LastResourceVersion() const { return reflector_.LastResourceVersion(); }

 private:
  Result<Ptr> Decode(nlohmann::json&& object) {
    if (!options_.decode) {
      if constexpr (std::is_same_v<T, nlohmann::json>) {
        return Ptr(std::make_shared<const T>(PruneForCache(std::move(object))));
      } else {
        return Internal("informer: no decoder");
      }
    } else {
      auto decoded = options_.decode(std::move(object));
      if (!decoded) {
        return decoded.status();
      }
      return Ptr(std::make_shared<const T>(std::move(*decoded)));
    }
  }

  void Replace(std::vector<nlohmann::json> items, const std::string&) override {
    MutexLock handler_lock(handler_mu_);
    std::unordered_set<std::string> seen;
    seen.reserve(items.size());
    for (auto& item : items) {
      std::string key = ObjectKeyOf(item);
      if (key.empty()) {
        continue;
      }
      auto decoded = Decode(std::move(item));
      if (!decoded) {
        continue;
      }
      seen.insert(key);
      Ptr old = store_.Upsert(key, *decoded);
      Notify(old, *decoded);
    }
    for (const auto& key : store_.Keys()) {
      if (!seen.contains(key)) {
        if (Ptr gone = store_.Remove(key)) {
          NotifyDelete(gone, /*final_state_unknown=*/true);
        }
      }
    }
    MutexLock sync_lock(sync_mu_);
    synced_ = true;
    sync_cv_.notify_all();
  }

  void Apply(WatchEventType type, nlohmann::json object) override {
    MutexLock handler_lock(handler_mu_);
    std::string key = ObjectKeyOf(object);
    if (key.empty()) {
      return;
    }
    if (type == WatchEventType::kDeleted) {
      store_.Remove(key);
      auto decoded = Decode(std::move(object));
      if (decoded) {
        NotifyDelete(*decoded, /*final_state_unknown=*/false);
      }
      return;
    }
    auto decoded = Decode(std::move(object));
    if (!decoded) {
      return;
    }
    Ptr old = store_.Upsert(key, *decoded);
    Notify(old, *decoded);
  }

  void Notify(const Ptr& old, const Ptr& current) HJ_REQUIRES(handler_mu_) {
    for (const auto& handler : handlers_) {
      if (old == nullptr) {
        if (handler.on_add) {
          handler.on_add(current);
        }
      } else if (handler.on_update) {
        handler.on_update(old, current);
      }
    }
  }

  void NotifyDelete(const Ptr& last, bool final_state_unknown) HJ_REQUIRES(handler_mu_) {
    for (const auto& handler : handlers_) {
      if (handler.on_delete) {
        handler.on_delete(last, final_state_unknown);
      }
    }
  }

  void ResyncLoop() {
    MutexLock lock(sync_mu_);
    while (!lock.WaitFor(sync_cv_, options_.resync_period,
                         [this]() HJ_REQUIRES(sync_mu_) { return stopping_; })) {
      if (!synced_) {
        continue;
      }
      lock.Unlock();
      {
        MutexLock handler_lock(handler_mu_);
        for (const auto& object : store_.List()) {
          Notify(object, object);
        }
      }
      lock.Lock();
    }
  }

  InformerOptions<T> options_;
  Store<T> store_;
  std::vector<EventHandler<T>> handlers_;
  Reflector reflector_;

  Mutex lifecycle_mu_;
  Mutex handler_mu_;  // handlers never run concurrently with each other
  mutable Mutex sync_mu_;
  mutable std::condition_variable sync_cv_;
  bool synced_ HJ_GUARDED_BY(sync_mu_) = false;
  bool stopping_ HJ_GUARDED_BY(sync_mu_) = false;
  bool started_ HJ_GUARDED_BY(lifecycle_mu_) = false;
  std::thread reflector_thread_ HJ_GUARDED_BY(lifecycle_mu_);
  std::thread resync_thread_ HJ_GUARDED_BY(lifecycle_mu_);
};

}  // namespace hybridjob::k8s
