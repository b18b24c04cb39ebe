// What the reconciler's own writes must look like in its informer caches
// before a job is planned again, as client-go's (UID-tracking)
// ControllerExpectations.
//
// The caches lag the API server. Planning a job from a cache that has not yet
// seen the reconciler's last writes repeats decisions: a failed member already
// deleted would be counted as a restart twice, a pod just created would be
// created again. So after each write the reconciler records what it expects
// to see:
//   - a pod it created: the pod's name (and uid) must appear;
//   - a pod it deleted: the pod's uid must disappear, or carry a
//     deletionTimestamp (the planner treats terminating pods as gone);
//   - a status it wrote: the cached job must move off the resourceVersion the
//     write was based on;
//   - a Service, ConfigMap, PVC or Deployment it created must appear, and a
//     ConfigMap it updated must move off the resourceVersion it had (else the
//     next pass creates it again, or rewrites it from stale data).
// and skips planning the job until the caches show all of it. Expectations
// are met by informer events (PodSeen/PodGone) and, because an event may come
// before the expectation is recorded, by checking the cache as it is
// (Check). Whatever is still unmet `timeout` after the job's latest
// expectation is dropped, so a missed event never wedges a job.
//
// Pure bookkeeping: no I/O, time passed in; safe to call from any thread.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <hybridjob/common/mutex.h>
#include <hybridjob/controller/observed.h>
#include <hybridjob/k8s/object_meta.h>

namespace hybridjob::controller {

class Expectations {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr Clock::duration kDefaultTimeout = std::chrono::seconds(30);

  // The job's other children, as Observed holds them.
  enum class ChildKind { kService, kConfigMap, kClaim, kDeployment };

  enum class State {
    kSatisfied,  // nothing outstanding: plan
    kPending,    // the caches have not caught up: wait
    kExpired,    // waited `timeout` in vain: the expectations were dropped, plan
  };

  explicit Expectations(Clock::duration timeout = kDefaultTimeout) : timeout_(timeout) {}

  // The reconciler created pod `name` of job `key`; `uid` is the created
  // object's ("" if unknown: then any pod of that name meets it).
  void ExpectCreation(const std::string& key, const std::string& name, const std::string& uid,
                      Clock::time_point now) {
    MutexLock lock(mu_);
    Record& record = records_[key];
    record.creations[name] = uid;
    record.last_set = now;
  }

  // The reconciler deleted the pod with `uid` (or found it already gone).
  void ExpectDeletion(const std::string& key, const std::string& uid, Clock::time_point now) {
    if (uid.empty()) {
      return;
    }
    MutexLock lock(mu_);
    Record& record = records_[key];
    record.deletions.insert(uid);
    record.last_set = now;
  }

  // The reconciler wrote the job (its status) based on `stale_resource_version`
  // and the server stored a new version: the cached job is stale until its
  // resourceVersion differs. resourceVersions are only compared for equality.
  void ExpectJobChange(const std::string& key, const std::string& stale_resource_version,
                       Clock::time_point now) {
    if (stale_resource_version.empty()) {
      return;
    }
    MutexLock lock(mu_);
    Record& record = records_[key];
    record.stale_job_version = stale_resource_version;
    record.last_set = now;
  }

  // The reconciler created (`stale_resource_version` empty) or updated the
  // child `name` of `kind`: the cache must show it, at another version than
  // `stale_resource_version` when one is given.
  void ExpectChild(const std::string& key, ChildKind kind, const std::string& name,
                   const std::string& stale_resource_version, Clock::time_point now) {
    MutexLock lock(mu_);
    Record& record = records_[key];
    record.children[{kind, name}] = stale_resource_version;
    record.last_set = now;
  }

  // The reconciler deleted the child `name` of `kind` whose uid was `uid`
  // (or found it gone): the cache must stop showing that object.
  void ExpectChildGone(const std::string& key, ChildKind kind, const std::string& name,
                       const std::string& uid, Clock::time_point now) {
    MutexLock lock(mu_);
    Record& record = records_[key];
    record.children_gone[{kind, name}] = uid;
    record.last_set = now;
  }

  // Pod informer: a pod of job `key` was added or updated.
  void PodSeen(const std::string& key, const ObservedPod& pod) {
    MutexLock lock(mu_);
    auto it = records_.find(key);
    if (it == records_.end()) {
      return;
    }
    MeetSeen(it->second, pod);
  }

  // Pod informer: a pod of job `key` was deleted (or found gone by a relist).
  void PodGone(const std::string& key, const ObservedPod& pod) {
    MutexLock lock(mu_);
    auto it = records_.find(key);
    if (it == records_.end()) {
      return;
    }
    Record& record = it->second;
    record.deletions.erase(pod.uid);
    // A pod that came and went was seen, if only briefly.
    auto created = record.creations.find(pod.name);
    if (created != record.creations.end() &&
        (created->second.empty() || created->second == pod.uid)) {
      record.creations.erase(created);
    }
  }

  // Whether job `key` may be planned from caches holding `cached_pods` (the
  // job's pods), the job at `job_resource_version` and, when given, its other
  // children as `cached_children` holds them (its pods are not read). Met
  // expectations are cleared; expired ones are dropped.
  State Check(const std::string& key, const std::vector<ObservedPod>& cached_pods,
              std::string_view job_resource_version, Clock::time_point now,
              const Observed* cached_children = nullptr) {
    MutexLock lock(mu_);
    auto it = records_.find(key);
    if (it == records_.end()) {
      return State::kSatisfied;
    }
    Record& record = it->second;
    std::map<std::string, bool> live_uids;  // uid -> terminating
    for (const ObservedPod& pod : cached_pods) {
      MeetSeen(record, pod);
      live_uids[pod.uid] = pod.terminating;
    }
    for (auto deletion = record.deletions.begin(); deletion != record.deletions.end();) {
      auto live = live_uids.find(*deletion);
      if (live == live_uids.end() || live->second) {
        deletion = record.deletions.erase(deletion);
      } else {
        ++deletion;
      }
    }
    if (record.stale_job_version && *record.stale_job_version != job_resource_version) {
      record.stale_job_version.reset();
    }
    if (cached_children != nullptr) {
      std::erase_if(record.children, [cached_children](const auto& expected) {
        return ChildShown(*cached_children, expected.first.first, expected.first.second,
                          expected.second);
      });
      std::erase_if(record.children_gone, [cached_children](const auto& expected) {
        const nlohmann::json* shown =
            FindChild(*cached_children, expected.first.first, expected.first.second);
        return shown == nullptr || k8s::UidOf(*shown) != expected.second;
      });
    }
    if (record.empty()) {
      records_.erase(it);
      return State::kSatisfied;
    }
    if (now - record.last_set >= timeout_) {
      records_.erase(it);
      return State::kExpired;
    }
    return State::kPending;
  }

  // How long until the expectations of `key` expire (zero if none).
  Clock::duration TimeToExpiry(const std::string& key, Clock::time_point now) const {
    MutexLock lock(mu_);
    auto it = records_.find(key);
    if (it == records_.end()) {
      return Clock::duration::zero();
    }
    return std::max(Clock::duration::zero(), it->second.last_set + timeout_ - now);
  }

  // The job is gone: expect nothing more for it.
  void Forget(const std::string& key) {
    MutexLock lock(mu_);
    records_.erase(key);
  }

  // Outstanding expectations of `key`, for logs: "create a-worker-1, delete
  // uid 1234, status write".
  std::string Describe(const std::string& key) const {
    MutexLock lock(mu_);
    auto it = records_.find(key);
    if (it == records_.end()) {
      return "";
    }
    std::string out;
    auto add = [&out](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
    for (const auto& [name, uid] : it->second.creations) {
      add("create " + name);
    }
    for (const std::string& uid : it->second.deletions) {
      add("delete uid " + uid);
    }
    if (it->second.stale_job_version) {
      add("status write");
    }
    for (const auto& [child, stale] : it->second.children) {
      add(std::string(stale.empty() ? "create " : "update ") +
          std::string(ChildKindName(child.first)) + " " + child.second);
    }
    for (const auto& [child, uid] : it->second.children_gone) {
      add("delete " + std::string(ChildKindName(child.first)) + " " + child.second);
    }
    return out;
  }

  // Number of outstanding expectations of `key`.
  size_t Pending(const std::string& key) const {
    MutexLock lock(mu_);
    auto it = records_.find(key);
    if (it == records_.end()) {
      return 0;
    }
    const Record& record = it->second;
    return record.creations.size() + record.deletions.size() + record.children.size() +
           record.children_gone.size() + (record.stale_job_version ? 1 : 0);
  }

  // Jobs with outstanding expectations.
  size_t Size() const {
    MutexLock lock(mu_);
    return records_.size();
  }

 private:
  struct Record {
    std::map<std::string, std::string> creations;  // pod name -> uid ("" = any)
    std::set<std::string> deletions;               // pod uids
    std::optional<std::string> stale_job_version;
    // (kind, name) -> the resourceVersion it must move off ("": must appear)
    std::map<std::pair<ChildKind, std::string>, std::string> children;
    // (kind, name) -> the uid of the deleted object the cache must stop showing
    std::map<std::pair<ChildKind, std::string>, std::string> children_gone;
    Clock::time_point last_set{};

    bool empty() const {
      return creations.empty() && deletions.empty() && !stale_job_version && children.empty() &&
             children_gone.empty();
    }
  };

  static std::string_view ChildKindName(ChildKind kind) {
    switch (kind) {
      case ChildKind::kService:
        return "Service";
      case ChildKind::kConfigMap:
        return "ConfigMap";
      case ChildKind::kClaim:
        return "PersistentVolumeClaim";
      case ChildKind::kDeployment:
        return "Deployment";
    }
    return "object";
  }

  static const nlohmann::json* FindChild(const Observed& cached, ChildKind kind,
                                         const std::string& name) {
    const std::vector<nlohmann::json>* objects = nullptr;
    switch (kind) {
      case ChildKind::kService:
        objects = &cached.services;
        break;
      case ChildKind::kConfigMap:
        objects = &cached.config_maps;
        break;
      case ChildKind::kClaim:
        objects = &cached.claims;
        break;
      case ChildKind::kDeployment:
        objects = &cached.deployments;
        break;
    }
    for (const nlohmann::json& object : *objects) {
      if (k8s::NameOf(object) == name) {
        return &object;
      }
    }
    return nullptr;
  }

  static bool ChildShown(const Observed& cached, ChildKind kind, const std::string& name,
                         const std::string& stale_resource_version) {
    const nlohmann::json* object = FindChild(cached, kind, name);
    return object != nullptr && (stale_resource_version.empty() ||
                                 k8s::ResourceVersionOf(*object) != stale_resource_version);
  }

  static void MeetSeen(Record& record, const ObservedPod& pod) {
    auto created = record.creations.find(pod.name);
    if (created != record.creations.end() &&
        (created->second.empty() || created->second == pod.uid)) {
      record.creations.erase(created);
    }
    if (pod.terminating) {
      record.deletions.erase(pod.uid);
    }
  }

  const Clock::duration timeout_;
  mutable Mutex mu_;
  std::unordered_map<std::string, Record> records_ HJ_GUARDED_BY(mu_);
};

}  // namespace hybridjob::controller
