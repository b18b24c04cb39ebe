// A thread-safe cache of objects by key ("namespace/name", or "name" for
// cluster-scoped objects) with secondary indexes, as client-go's indexer.
// Objects are immutable and shared: readers keep a snapshot as long as they
// like without copying or locking.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/object_meta.h>

namespace hybridjob::k8s {

template <typename T>
class Store {
 public:
  using Ptr = std::shared_ptr<const T>;
  using IndexFunc = std::function<std::vector<std::string>(const T&)>;

  // Indexers are registered before the store is filled.
  void AddIndexer(const std::string& name, IndexFunc func) {
    WriterMutexLock lock(mu_);
    indexers_[name] = std::move(func);
  }

  Ptr Get(const std::string& key) const {
    ReaderMutexLock lock(mu_);
    auto it = items_.find(key);
    return it == items_.end() ? nullptr : it->second;
  }

  std::vector<Ptr> List() const {
    ReaderMutexLock lock(mu_);
    std::vector<Ptr> out;
    out.reserve(items_.size());
    for (const auto& [key, item] : items_) {
      out.push_back(item);
    }
    return out;
  }

  std::vector<std::string> Keys() const {
    ReaderMutexLock lock(mu_);
    std::vector<std::string> out;
    out.reserve(items_.size());
    for (const auto& [key, item] : items_) {
      out.push_back(key);
    }
    return out;
  }

  // Objects whose index `index` yields `value`.
  std::vector<Ptr> ByIndex(const std::string& index, const std::string& value) const {
    ReaderMutexLock lock(mu_);
    std::vector<Ptr> out;
    auto idx = indices_.find(index);
    if (idx == indices_.end()) {
      return out;
    }
    auto bucket = idx->second.find(value);
    if (bucket == idx->second.end()) {
      return out;
    }
    out.reserve(bucket->second.size());
    for (const auto& key : bucket->second) {
      if (auto it = items_.find(key); it != items_.end()) {
        out.push_back(it->second);
      }
    }
    return out;
  }

  size_t Size() const {
    ReaderMutexLock lock(mu_);
    return items_.size();
  }

  // Mutations, used by the informer. Each returns the previous object.
  Ptr Upsert(const std::string& key, Ptr object) {
    WriterMutexLock lock(mu_);
    Ptr old;
    if (auto it = items_.find(key); it != items_.end()) {
      old = it->second;
      Unindex(key, *old);
      it->second = object;
    } else {
      items_.emplace(key, object);
    }
    Index(key, *object);
    return old;
  }

  Ptr Remove(const std::string& key) {
    WriterMutexLock lock(mu_);
    auto it = items_.find(key);
    if (it == items_.end()) {
      return nullptr;
    }
    Ptr old = it->second;
    Unindex(key, *old);
    items_.erase(it);
    return old;
  }

 private:
  void Index(const std::string& key, const T& object) HJ_REQUIRES(mu_) {
    for (const auto& [name, func] : indexers_) {
      for (auto& value : func(object)) {
        indices_[name][value].insert(key);
      }
    }
  }

  void Unindex(const std::string& key, const T& object) HJ_REQUIRES(mu_) {
    for (const auto& [name, func] : indexers_) {
      auto& index = indices_[name];
      for (const auto& value : func(object)) {
        auto bucket = index.find(value);
        if (bucket != index.end()) {
          bucket->second.erase(key);
          if (bucket->second.empty()) {
            index.erase(bucket);
          }
        }
      }
    }
  }

  mutable SharedMutex mu_;
  std::unordered_map<std::string, Ptr> items_ HJ_GUARDED_BY(mu_);
  std::unordered_map<std::string, IndexFunc> indexers_ HJ_GUARDED_BY(mu_);
  std::unordered_map<std::string, std::unordered_map<std::string, std::unordered_set<std::string>>>
      indices_ HJ_GUARDED_BY(mu_);
};

// Common index functions over raw JSON objects.
namespace indexers {
std::vector<std::string> ByNamespace(const nlohmann::json& object);
// The value of one label, if present.
std::function<std::vector<std::string>(const nlohmann::json&)> ByLabel(std::string label);
// spec.nodeName of pods (bound pods only).
std::vector<std::string> ByNodeName(const nlohmann::json& object);
}  // namespace indexers

}  // namespace hybridjob::k8s
