#include <spdlog/spdlog.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/scheduler/cache.h>

namespace hybridjob::scheduler {
namespace {

std::string NameOf(const nlohmann::json& object, const char* field) {
  auto metadata = object.find("metadata");
  if (metadata == object.end() || !metadata->is_object()) {
    return {};
  }
  return metadata->value(field, "");
}

}  // namespace

SchedulerCache::SchedulerCache(std::string scheduler_name)
    : scheduler_name_(std::move(scheduler_name)) {}

void SchedulerCache::BumpLocked() {
  ++generation_;
  changed_.notify_all();
}

uint64_t SchedulerCache::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

uint64_t SchedulerCache::WaitForChange(uint64_t seen, std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  changed_.wait_for(lock, timeout, [&] { return generation_ != seen; });
  return generation_;
}

void SchedulerCache::Wake() {
  std::lock_guard lock(mu_);
  changed_.notify_all();
}

bool SchedulerCache::HasSynced() const {
  std::lock_guard lock(mu_);
  return nodes_synced_ && pods_synced_ && jobs_synced_ && namespaces_synced_ &&
         priority_classes_synced_;
}

size_t SchedulerCache::PendingCount() const {
  std::lock_guard lock(mu_);
  return pending_.size();
}

size_t SchedulerCache::AssumedCount() const {
  std::lock_guard lock(mu_);
  return assumed_.size();
}

void SchedulerCache::ReadSnapshot(const std::function<void(const Snapshot&)>& fn) const {
  std::lock_guard lock(mu_);
  fn(snapshot_);
}

void SchedulerCache::RunLocked(const CycleFn& fn) {
  std::lock_guard lock(mu_);
  std::vector<const PodInfo*> pending;
  pending.reserve(pending_.size());
  for (const auto& [key, pod] : pending_) {
    if (!assumed_.contains(key)) {
      pending.push_back(pod.get());
    }
  }
  for (auto& key : fn(snapshot_, pending)) {
    assumed_.insert(std::move(key));
  }
}

void SchedulerCache::ForgetAssumed(const std::string& namespace_name, const std::string& name) {
  std::lock_guard lock(mu_);
  const std::string key = PodKey(namespace_name, name);
  if (assumed_.erase(key) > 0) {
    // Only the assumed copy is on a node; a pod the informer saw bound stays.
    const PodInfo* on_node = snapshot_.FindPod(namespace_name, name);
    auto pending = pending_.find(key);
    if (on_node != nullptr && pending != pending_.end()) {
      (void)snapshot_.RemovePod(namespace_name, name);
    }
    BumpLocked();
  }
}

void SchedulerCache::UpsertPodLocked(PodInfo pod) {
  (void)ResolvePod(pod, directory_);
  IndexClaimLocked(pod, /*add=*/true);
  const std::string key = pod.Key();
  if (!pod.node_name.empty()) {
    // Bound (by us or anyone): it uses capacity on its node until it ends.
    pending_.erase(key);
    assumed_.erase(key);
    if (pod.IsTerminal()) {
      (void)snapshot_.RemovePod(pod.namespace_name, pod.name);
      BumpLocked();
      return;
    }
    // An in-place resize changes what the node has left: a shrink may let a
    // waiting gang in.
    const PodInfo* before = snapshot_.FindPod(pod.namespace_name, pod.name);
    const bool capacity_changed = before != nullptr && !(before->requests == pod.requests);
    if (Status s = snapshot_.AddPod(std::move(pod)); !s.ok()) {
      spdlog::warn("cache: pod {}: {}", key, s.ToString());
    }
    if (capacity_changed) {
      BumpLocked();
    }
    return;
  }
  if (pod.scheduler_name != scheduler_name_ || pod.IsTerminal()) {
    if (pending_.erase(key) > 0) {
      BumpLocked();
    }
    return;
  }
  auto it = pending_.find(key);
  // A new member may complete its group; a new group spec (the controller
  // counts members that succeeded meanwhile) may let it be placed.
  const bool changes_plans = it == pending_.end() || it->second->group_spec != pod.group_spec ||
                             it->second->group_spec_error != pod.group_spec_error ||
                             it->second->awaiting_job != pod.awaiting_job ||
                             it->second->untrusted_reason != pod.untrusted_reason ||
                             it->second->queue != pod.queue || it->second->priority != pod.priority;
  pending_[key] = std::make_unique<PodInfo>(std::move(pod));
  if (changes_plans) {
    BumpLocked();
  }
}

void SchedulerCache::RemovePodLocked(const std::string& namespace_name, const std::string& name) {
  const std::string key = PodKey(namespace_name, name);
  if (auto it = pending_.find(key); it != pending_.end()) {
    IndexClaimLocked(*it->second, /*add=*/false);
  } else if (const PodInfo* on_node = snapshot_.FindPod(namespace_name, name)) {
    IndexClaimLocked(*on_node, /*add=*/false);
  }
  pending_.erase(key);
  assumed_.erase(key);
  if (snapshot_.FindPod(namespace_name, name) != nullptr) {
    (void)snapshot_.RemovePod(namespace_name, name);
  }
  BumpLocked();
}

void SchedulerCache::PodSink::Replace(std::vector<nlohmann::json> items, const std::string&) {
  std::lock_guard lock(cache_.mu_);
  std::unordered_set<std::string> seen;
  for (auto& item : items) {
    auto pod = ParsePod(item);
    if (!pod) {
      spdlog::warn("cache: skipping pod {}/{}: {}", NameOf(item, "namespace"), NameOf(item, "name"),
                   pod.status().ToString());
      continue;
    }
    seen.insert(pod->Key());
    cache_.UpsertPodLocked(std::move(*pod));
  }
  // Pods that vanished while the watch was down.
  std::vector<std::pair<std::string, std::string>> gone;
  for (const auto& [key, pod] : cache_.pending_) {
    if (!seen.contains(key)) {
      gone.emplace_back(pod->namespace_name, pod->name);
    }
  }
  for (const auto& slot : cache_.snapshot_.slots()) {
    for (const PodInfo* pod : slot.pods) {
      if (!seen.contains(pod->Key()) && !cache_.assumed_.contains(pod->Key())) {
        gone.emplace_back(pod->namespace_name, pod->name);
      }
    }
  }
  for (const auto& [ns, name] : gone) {
    cache_.RemovePodLocked(ns, name);
  }
  cache_.pods_synced_ = true;
  cache_.BumpLocked();
}

void SchedulerCache::PodSink::Apply(k8s::WatchEventType type, nlohmann::json object) {
  std::lock_guard lock(cache_.mu_);
  if (type == k8s::WatchEventType::kDeleted) {
    cache_.RemovePodLocked(NameOf(object, "namespace"), NameOf(object, "name"));
    return;
  }
  auto pod = ParsePod(object);
  if (!pod) {
    spdlog::warn("cache: skipping pod {}/{}: {}", NameOf(object, "namespace"),
                 NameOf(object, "name"), pod.status().ToString());
    return;
  }
  cache_.UpsertPodLocked(std::move(*pod));
}

void SchedulerCache::NodeSink::Replace(std::vector<nlohmann::json> items, const std::string&) {
  std::lock_guard lock(cache_.mu_);
  std::unordered_set<std::string> seen;
  for (auto& item : items) {
    auto node = ParseNode(item);
    if (!node) {
      spdlog::warn("cache: skipping node {}: {}", NameOf(item, "name"), node.status().ToString());
      continue;
    }
    seen.insert(node->name);
    cache_.node_names_.insert(node->name);
    (void)cache_.snapshot_.UpsertNode(std::move(*node));
  }
  for (auto it = cache_.node_names_.begin(); it != cache_.node_names_.end();) {
    if (!seen.contains(*it)) {
      (void)cache_.snapshot_.RemoveNode(*it);
      it = cache_.node_names_.erase(it);
    } else {
      ++it;
    }
  }
  cache_.nodes_synced_ = true;
  cache_.BumpLocked();
}

void SchedulerCache::NodeSink::Apply(k8s::WatchEventType type, nlohmann::json object) {
  std::lock_guard lock(cache_.mu_);
  const std::string name = NameOf(object, "name");
  if (type == k8s::WatchEventType::kDeleted) {
    (void)cache_.snapshot_.RemoveNode(name);
    cache_.node_names_.erase(name);
    cache_.BumpLocked();
    return;
  }
  auto node = ParseNode(object);
  if (!node) {
    spdlog::warn("cache: skipping node {}: {}", name, node.status().ToString());
    return;
  }
  cache_.node_names_.insert(name);
  (void)cache_.snapshot_.UpsertNode(std::move(*node));
  cache_.BumpLocked();
}

void SchedulerCache::IndexClaimLocked(const PodInfo& pod, bool add) {
  const std::string* claimed = pod.labels.Find(api::kJobNameLabel);
  if (claimed == nullptr || claimed->empty()) {
    return;
  }
  const std::string job_key = PodKey(pod.namespace_name, *claimed);
  if (add) {
    claimants_[job_key].insert(pod.Key());
    return;
  }
  auto it = claimants_.find(job_key);
  if (it != claimants_.end()) {
    it->second.erase(pod.Key());
    if (it->second.empty()) {
      claimants_.erase(it);
    }
  }
}

void SchedulerCache::ReresolvePodsLocked(const std::function<bool(const PodInfo&)>& matches) {
  bool changed = false;
  for (auto& [key, pod] : pending_) {
    if (matches(*pod) && ResolvePod(*pod, directory_)) {
      changed = true;
    }
  }
  // Pods on nodes are re-added, so the snapshot re-indexes their group.
  std::vector<PodInfo> resolved;
  for (const NodeState& slot : snapshot_.slots()) {
    for (const PodInfo* pod : slot.pods) {
      if (!matches(*pod)) {
        continue;
      }
      PodInfo copy = *pod;
      if (ResolvePod(copy, directory_)) {
        resolved.push_back(std::move(copy));
      }
    }
  }
  for (PodInfo& pod : resolved) {
    const std::string key = pod.Key();
    if (Status s = snapshot_.AddPod(std::move(pod)); !s.ok()) {
      spdlog::warn("cache: pod {}: {}", key, s.ToString());
    }
  }
  if (changed || !resolved.empty()) {
    BumpLocked();
  }
}

bool SchedulerCache::TenancySink::UpsertLocked(const nlohmann::json& object) {
  TenancyDirectory& directory = cache_.directory_;
  switch (kind_) {
    case TenancyKind::kJob: {
      Result<TrustedJob> job = ParseTrustedJob(object);
      if (!job.ok()) {
        // Its members wait as if the job were not there yet.
        spdlog::warn("cache: HybridJob {}/{}: {}", NameOf(object, "namespace"),
                     NameOf(object, "name"), job.status().ToString());
        return RemoveLocked(object);
      }
      keys_.insert(PodKey(job->namespace_name, job->name));
      return directory.UpsertJob(std::move(job).value());
    }
    case TenancyKind::kNamespace: {
      Result<NamespaceInfo> info = ParseNamespaceInfo(object);
      if (!info.ok()) {
        spdlog::warn("cache: {}", info.status().ToString());
        return false;
      }
      keys_.insert(info->name);
      return directory.UpsertNamespace(std::move(info).value());
    }
    case TenancyKind::kPriorityClass: {
      Result<PriorityClassInfo> info = ParsePriorityClassInfo(object);
      if (!info.ok()) {
        spdlog::warn("cache: {}", info.status().ToString());
        return RemoveLocked(object);
      }
      keys_.insert(info->name);
      return directory.UpsertPriorityClass(std::move(info).value());
    }
  }
  return false;
}

bool SchedulerCache::TenancySink::RemoveLocked(const nlohmann::json& object) {
  TenancyDirectory& directory = cache_.directory_;
  const std::string name = NameOf(object, "name");
  switch (kind_) {
    case TenancyKind::kJob: {
      std::string ns = NameOf(object, "namespace");
      keys_.erase(PodKey(ns, name));
      return directory.RemoveJob(ns, name);
    }
    case TenancyKind::kNamespace:
      keys_.erase(name);
      return directory.RemoveNamespace(name);
    case TenancyKind::kPriorityClass:
      keys_.erase(name);
      return directory.RemovePriorityClass(name);
  }
  return false;
}

void SchedulerCache::TenancySink::ReresolveLocked(const nlohmann::json& object) {
  const std::string name = NameOf(object, "name");
  switch (kind_) {
    case TenancyKind::kJob: {
      auto it = cache_.claimants_.find(PodKey(NameOf(object, "namespace"), name));
      if (it == cache_.claimants_.end()) {
        return;
      }
      const std::unordered_set<std::string> keys = it->second;
      cache_.ReresolvePodsLocked([&keys](const PodInfo& pod) { return keys.contains(pod.Key()); });
      return;
    }
    case TenancyKind::kNamespace:
      cache_.ReresolvePodsLocked(
          [&name](const PodInfo& pod) { return pod.namespace_name == name; });
      return;
    case TenancyKind::kPriorityClass:
      // A globalDefault class concerns every pod that names none.
      cache_.ReresolvePodsLocked([](const PodInfo&) { return true; });
      return;
  }
}

void SchedulerCache::TenancySink::Replace(std::vector<nlohmann::json> items, const std::string&) {
  std::lock_guard lock(cache_.mu_);
  const std::unordered_set<std::string> before = keys_;
  std::unordered_set<std::string> seen;
  bool changed = false;
  for (const nlohmann::json& item : items) {
    changed = UpsertLocked(item) || changed;
    const std::string name = NameOf(item, "name");
    seen.insert(kind_ == TenancyKind::kJob ? PodKey(NameOf(item, "namespace"), name) : name);
  }
  for (const std::string& key : before) {
    if (seen.contains(key)) {
      continue;
    }
    size_t slash = key.find('/');
    nlohmann::json gone = {{"metadata", nlohmann::json::object()}};
    if (kind_ == TenancyKind::kJob && slash != std::string::npos) {
      gone["metadata"]["namespace"] = key.substr(0, slash);
      gone["metadata"]["name"] = key.substr(slash + 1);
    } else {
      gone["metadata"]["name"] = key;
    }
    changed = RemoveLocked(gone) || changed;
  }
  bool& synced = kind_ == TenancyKind::kJob         ? cache_.jobs_synced_
                 : kind_ == TenancyKind::kNamespace ? cache_.namespaces_synced_
                                                    : cache_.priority_classes_synced_;
  const bool first = !synced;
  synced = true;
  if (changed) {
    cache_.ReresolvePodsLocked([](const PodInfo&) { return true; });
  }
  // A relist that changes nothing (a watch ended) need not wake the loop.
  if (first) {
    cache_.BumpLocked();
  }
}

void SchedulerCache::TenancySink::Apply(k8s::WatchEventType type, nlohmann::json object) {
  std::lock_guard lock(cache_.mu_);
  const bool changed =
      type == k8s::WatchEventType::kDeleted ? RemoveLocked(object) : UpsertLocked(object);
  if (changed) {
    ReresolveLocked(object);
  }
}

}  // namespace hybridjob::scheduler
