#include <utility>

#include <spdlog/spdlog.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/scheduler/shell/cache.h>

namespace hybridjob::scheduler {

SchedulerCache::SchedulerCache(std::string scheduler_name)
    : scheduler_name_(std::move(scheduler_name)) {}

bool SchedulerCache::Apply(Delta delta) {
  return std::visit([this](auto&& change) { return ApplyOne(std::move(change)); },
                    std::move(delta));
}

bool SchedulerCache::HasSynced() const {
  return nodes_synced_ && pods_synced_ && jobs_synced_ && namespaces_synced_ &&
         priority_classes_synced_ && claims_synced_ && volumes_synced_ && storage_classes_synced_;
}

std::vector<const PodInfo*> SchedulerCache::Pending() const {
  std::vector<const PodInfo*> pending;
  pending.reserve(pending_.size());
  for (const auto& [key, pod] : pending_) {
    if (!assumed_.contains(key)) {
      pending.push_back(pod.get());
    }
  }
  return pending;
}

const PodInfo* SchedulerCache::FindPod(const std::string& namespace_name,
                                       const std::string& name) const {
  auto it = pending_.find(PodKey(namespace_name, name));
  if (it != pending_.end()) {
    return it->second.get();
  }
  return snapshot_.FindPod(namespace_name, name);
}

void SchedulerCache::Assume(std::string key) {
  assumed_.insert(std::move(key));
}

bool SchedulerCache::ForgetAssumed(const std::string& namespace_name, const std::string& name) {
  const std::string key = PodKey(namespace_name, name);
  if (assumed_.erase(key) == 0) {
    return false;
  }
  // Only the assumed copy is on a node; a pod the informer saw bound stays.
  const PodInfo* on_node = snapshot_.FindPod(namespace_name, name);
  if (on_node != nullptr && pending_.contains(key)) {
    (void)snapshot_.RemovePod(namespace_name, name);
  }
  return true;
}

bool SchedulerCache::UpsertPod(PodInfo pod) {
  (void)ResolvePod(pod, directory_, &nonces_);
  IndexClaim(pod, /*add=*/true);
  const std::string key = pod.Key();
  if (!pod.node_name.empty()) {
    // Bound (by us or anyone): it uses capacity on its node until it ends.
    pending_.erase(key);
    assumed_.erase(key);
    if (pod.IsTerminal()) {
      (void)snapshot_.RemovePod(pod.namespace_name, pod.name);
      return true;
    }
    // An in-place resize changes what the node has left: a shrink may let a
    // waiting gang in.
    const PodInfo* before = snapshot_.FindPod(pod.namespace_name, pod.name);
    const bool capacity_changed = before != nullptr && !(before->requests == pod.requests);
    if (Status s = snapshot_.AddPod(std::move(pod)); !s.ok()) {
      spdlog::warn("cache: pod {}: {}", key, s.ToString());
    }
    return capacity_changed;
  }
  if (pod.scheduler_name != scheduler_name_ || pod.IsTerminal()) {
    return pending_.erase(key) > 0;
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
  return changes_plans;
}

bool SchedulerCache::RemovePod(const std::string& namespace_name, const std::string& name) {
  const std::string key = PodKey(namespace_name, name);
  if (auto it = pending_.find(key); it != pending_.end()) {
    IndexClaim(*it->second, /*add=*/false);
  } else if (const PodInfo* on_node = snapshot_.FindPod(namespace_name, name)) {
    IndexClaim(*on_node, /*add=*/false);
  }
  pending_.erase(key);
  assumed_.erase(key);
  if (const PodInfo* bound = snapshot_.FindPod(namespace_name, name)) {
    if (bound->group_spec.has_value() && bound->group_spec->resize_restarts &&
        MembershipOf(*bound) == Membership::kTrusted && !bound->IsTerminal()) {
      const TrustedJob* job = directory_.FindJob(namespace_name, bound->job_name);
      if (job != nullptr && !job->ended) {
        vacated_.push_back({PodKey(namespace_name, bound->job_name), namespace_name,
                            bound->job_name, bound->node_name});
      }
    }
    (void)snapshot_.RemovePod(namespace_name, name);
  }
  return true;
}

std::vector<SchedulerCache::Vacated> SchedulerCache::TakeVacated() {
  return std::exchange(vacated_, {});
}

bool SchedulerCache::ApplyOne(Upsert<PodInfo> delta) {
  return UpsertPod(std::move(delta.object));
}

bool SchedulerCache::ApplyOne(Removal<PodInfo> delta) {
  return RemovePod(delta.namespace_name, delta.name);
}

bool SchedulerCache::ApplyOne(Relist<PodInfo> delta) {
  std::unordered_set<std::string> seen;
  for (PodInfo& pod : delta.objects) {
    seen.insert(pod.Key());
    (void)UpsertPod(std::move(pod));
  }
  // Pods that vanished while the watch was down.
  std::vector<std::pair<std::string, std::string>> gone;
  for (const auto& [key, pod] : pending_) {
    if (!seen.contains(key)) {
      gone.emplace_back(pod->namespace_name, pod->name);
    }
  }
  for (const auto& slot : snapshot_.slots()) {
    for (const PodInfo* pod : slot.pods) {
      if (!seen.contains(pod->Key()) && !assumed_.contains(pod->Key())) {
        gone.emplace_back(pod->namespace_name, pod->name);
      }
    }
  }
  for (const auto& [ns, name] : gone) {
    (void)RemovePod(ns, name);
  }
  pods_synced_ = true;
  return true;
}

bool SchedulerCache::ApplyOne(Upsert<NodeInfo> delta) {
  node_names_.insert(delta.object.name);
  (void)snapshot_.UpsertNode(std::move(delta.object));
  return true;
}

bool SchedulerCache::ApplyOne(Removal<NodeInfo> delta) {
  (void)snapshot_.RemoveNode(delta.name);
  node_names_.erase(delta.name);
  return true;
}

bool SchedulerCache::ApplyOne(Relist<NodeInfo> delta) {
  std::unordered_set<std::string> seen;
  for (NodeInfo& node : delta.objects) {
    seen.insert(node.name);
    node_names_.insert(node.name);
    (void)snapshot_.UpsertNode(std::move(node));
  }
  for (auto it = node_names_.begin(); it != node_names_.end();) {
    if (!seen.contains(*it)) {
      (void)snapshot_.RemoveNode(*it);
      it = node_names_.erase(it);
    } else {
      ++it;
    }
  }
  nodes_synced_ = true;
  return true;
}

void SchedulerCache::IndexClaim(const PodInfo& pod, bool add) {
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

bool SchedulerCache::ReresolvePods(const std::function<bool(const PodInfo&)>& matches) {
  bool changed = false;
  for (auto& [key, pod] : pending_) {
    if (matches(*pod) && ResolvePod(*pod, directory_, &nonces_)) {
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
      if (ResolvePod(copy, directory_, &nonces_)) {
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
  return changed || !resolved.empty();
}

bool SchedulerCache::ReresolveClaimantsOf(const std::string& namespace_name,
                                          const std::string& job_name) {
  auto it = claimants_.find(PodKey(namespace_name, job_name));
  if (it == claimants_.end()) {
    return false;
  }
  const std::unordered_set<std::string> keys = it->second;
  return ReresolvePods([&keys](const PodInfo& pod) { return keys.contains(pod.Key()); });
}

bool SchedulerCache::ApplyOne(Upsert<TrustedJob> delta) {
  const std::string ns = delta.object.namespace_name;
  const std::string name = delta.object.name;
  return directory_.UpsertJob(std::move(delta.object)) && ReresolveClaimantsOf(ns, name);
}

bool SchedulerCache::ApplyOne(Removal<TrustedJob> delta) {
  return directory_.RemoveJob(delta.namespace_name, delta.name) &&
         ReresolveClaimantsOf(delta.namespace_name, delta.name);
}

// A relist that changes nothing (a watch ended) needs no cycle, unless it is
// the first: the loop waits for every kind to be listed.
bool SchedulerCache::ApplyOne(Relist<TrustedJob> delta) {
  const bool first = !jobs_synced_;
  jobs_synced_ = true;
  const bool changed = directory_.ReplaceJobs(std::move(delta.objects)) &&
                       ReresolvePods([](const PodInfo&) { return true; });
  return changed || first;
}

bool SchedulerCache::ApplyOne(Upsert<NamespaceInfo> delta) {
  const std::string name = delta.object.name;
  return directory_.UpsertNamespace(std::move(delta.object)) &&
         ReresolvePods([&name](const PodInfo& pod) { return pod.namespace_name == name; });
}

bool SchedulerCache::ApplyOne(Removal<NamespaceInfo> delta) {
  const std::string& name = delta.name;
  return directory_.RemoveNamespace(name) &&
         ReresolvePods([&name](const PodInfo& pod) { return pod.namespace_name == name; });
}

bool SchedulerCache::ApplyOne(Relist<NamespaceInfo> delta) {
  const bool first = !namespaces_synced_;
  namespaces_synced_ = true;
  const bool changed = directory_.ReplaceNamespaces(std::move(delta.objects)) &&
                       ReresolvePods([](const PodInfo&) { return true; });
  return changed || first;
}

// A globalDefault class concerns every pod that names none: every pod is
// resolved again when a class changes.
bool SchedulerCache::ApplyOne(Upsert<PriorityClassInfo> delta) {
  return directory_.UpsertPriorityClass(std::move(delta.object)) &&
         ReresolvePods([](const PodInfo&) { return true; });
}

bool SchedulerCache::ApplyOne(Removal<PriorityClassInfo> delta) {
  return directory_.RemovePriorityClass(delta.name) &&
         ReresolvePods([](const PodInfo&) { return true; });
}

bool SchedulerCache::ApplyOne(Relist<PriorityClassInfo> delta) {
  const bool first = !priority_classes_synced_;
  priority_classes_synced_ = true;
  const bool changed = directory_.ReplacePriorityClasses(std::move(delta.objects)) &&
                       ReresolvePods([](const PodInfo&) { return true; });
  return changed || first;
}

// A storage object changes where a member's volumes can be had: a claim
// bound or provisioned, a volume made available, a class created.
bool SchedulerCache::ApplyOne(Upsert<ClaimInfo> delta) {
  snapshot_.storage().UpsertClaim(std::move(delta.object));
  return true;
}

bool SchedulerCache::ApplyOne(Removal<ClaimInfo> delta) {
  snapshot_.storage().RemoveClaim(delta.namespace_name, delta.name);
  return true;
}

bool SchedulerCache::ApplyOne(Relist<ClaimInfo> delta) {
  snapshot_.storage().ReplaceClaims(std::move(delta.objects));
  claims_synced_ = true;
  TrackStorageOnceListed();
  return true;
}

bool SchedulerCache::ApplyOne(Upsert<VolumeInfo> delta) {
  snapshot_.storage().UpsertVolume(std::move(delta.object));
  return true;
}

bool SchedulerCache::ApplyOne(Removal<VolumeInfo> delta) {
  snapshot_.storage().RemoveVolume(delta.name);
  return true;
}

bool SchedulerCache::ApplyOne(Relist<VolumeInfo> delta) {
  snapshot_.storage().ReplaceVolumes(std::move(delta.objects));
  volumes_synced_ = true;
  TrackStorageOnceListed();
  return true;
}

bool SchedulerCache::ApplyOne(Upsert<StorageClassInfo> delta) {
  snapshot_.storage().UpsertClass(std::move(delta.object));
  return true;
}

bool SchedulerCache::ApplyOne(Removal<StorageClassInfo> delta) {
  snapshot_.storage().RemoveClass(delta.name);
  return true;
}

bool SchedulerCache::ApplyOne(Relist<StorageClassInfo> delta) {
  snapshot_.storage().ReplaceClasses(std::move(delta.objects));
  storage_classes_synced_ = true;
  TrackStorageOnceListed();
  return true;
}

void SchedulerCache::TrackStorageOnceListed() {
  if (claims_synced_ && volumes_synced_ && storage_classes_synced_) {
    snapshot_.storage().set_tracked(true);
  }
}

}  // namespace hybridjob::scheduler
