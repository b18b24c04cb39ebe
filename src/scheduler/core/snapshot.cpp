#include <algorithm>
#include <atomic>

#include <hybridjob/scheduler/core/snapshot.h>

namespace hybridjob::scheduler {
namespace {

std::string GroupKey(std::string_view namespace_name, std::string_view job_name) {
  return PodKey(namespace_name, job_name);
}

template <typename T>
void EraseOne(std::vector<T>& items, const T& item) {
  auto it = std::find(items.begin(), items.end(), item);
  if (it != items.end()) {
    *it = std::move(items.back());
    items.pop_back();
  }
}

}  // namespace

Status Snapshot::CheckNoTentative(std::string_view operation) const {
  if (!tentative_log_.empty()) {
    return Internal(std::string(operation) + " while a tentative placement is open");
  }
  return Status::Ok();
}

uint64_t Snapshot::Identity::Next() {
  static std::atomic<uint64_t> last{0};
  return ++last;
}

uint32_t Snapshot::TakeFreeSlot() {
  if (!free_slots_.empty()) {
    uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    return slot;
  }
  slots_.emplace_back();
  return static_cast<uint32_t>(slots_.size() - 1);
}

uint32_t Snapshot::SlotForNodeName(std::string_view name) {
  if (auto it = slot_by_name_.find(name); it != slot_by_name_.end()) {
    return it->second;
  }
  uint32_t slot = TakeFreeSlot();
  NodeState& state = slots_[slot];
  state = NodeState{};
  TouchPods(state);
  state.info.name = std::string(name);
  state.in_use = true;
  state.has_node = false;
  slot_by_name_.emplace(std::string(name), slot);
  return slot;
}

void Snapshot::ReleaseSlotIfUnused(uint32_t slot) {
  NodeState& state = slots_[slot];
  if (!state.in_use || state.has_node || !state.pods.empty()) {
    return;
  }
  slot_by_name_.erase(slot_by_name_.find(state.info.name));
  state = NodeState{};
  TouchPods(state);
  free_slots_.push_back(slot);
}

Status Snapshot::UpsertNode(NodeInfo node) {
  if (Status status = CheckNoTentative("UpsertNode"); !status.ok()) {
    return status;
  }
  if (node.name.empty()) {
    return InvalidArgument("node without a name");
  }
  uint32_t slot = SlotForNodeName(node.name);
  NodeState& state = slots_[slot];
  if (!state.has_node) {
    ++node_count_;
  }
  // Status updates keep the labels: the topology indexes stay valid.
  if (!state.has_node || !(state.info.labels == node.labels)) {
    topology_levels_.clear();
  }
  state.info = std::move(node);
  state.has_node = true;
  TouchNode(state);
  return Status::Ok();
}

Status Snapshot::RemoveNode(std::string_view name) {
  if (Status status = CheckNoTentative("RemoveNode"); !status.ok()) {
    return status;
  }
  auto it = slot_by_name_.find(name);
  if (it == slot_by_name_.end() || !slots_[it->second].has_node) {
    return NotFound("node " + std::string(name) + " is not in the snapshot");
  }
  uint32_t slot = it->second;
  NodeState& state = slots_[slot];
  state.has_node = false;
  std::string kept_name = std::move(state.info.name);
  state.info = NodeInfo{};
  state.info.name = std::move(kept_name);
  TouchNode(state);
  --node_count_;
  topology_levels_.clear();
  ReleaseSlotIfUnused(slot);
  return Status::Ok();
}

const TopologyLevelIndex& Snapshot::TopologyLevel(std::string_view key) {
  auto found = topology_levels_.find(key);
  if (found == topology_levels_.end()) {
    found = topology_levels_.emplace(std::string(key), BuildTopologyLevel(slots_, key)).first;
  }
  return found->second;
}

void Snapshot::CountSelectorKeys(const PodInfo& pod, int delta) {
  for (const PodAffinityTerm& term : pod.required_pod_anti_affinity) {
    if (!term.label_selector.has_value()) {
      continue;
    }
    for (const SelectorRequirement& requirement : term.label_selector->requirements) {
      auto it = anti_affinity_selector_keys_.find(requirement.key);
      if (it == anti_affinity_selector_keys_.end()) {
        it = anti_affinity_selector_keys_.emplace(requirement.key, 0).first;
      }
      it->second += delta;
      if (it->second <= 0) {
        anti_affinity_selector_keys_.erase(it);
      }
    }
  }
}

void Snapshot::Attach(const PodInfo& pod, uint32_t slot) {
  NodeState& state = slots_[slot];
  TouchPods(state);
  state.requested += pod.requests;
  state.pods.push_back(&pod);
  state.used_host_ports.insert(state.used_host_ports.end(), pod.host_ports.begin(),
                               pod.host_ports.end());
  if (!pod.required_pod_anti_affinity.empty()) {
    anti_affinity_pods_.push_back(PodOnNode{&pod, slot});
    CountSelectorKeys(pod, +1);
  }
  for (const std::string& claim : pod.claims) {
    claim_users_[PodKey(pod.namespace_name, claim)].push_back(state.info.name);
  }
}

void Snapshot::Detach(const PodInfo& pod, uint32_t slot) {
  NodeState& state = slots_[slot];
  TouchPods(state);
  state.requested -= pod.requests;
  EraseOne(state.pods, &pod);
  for (const HostPort& port : pod.host_ports) {
    EraseOne(state.used_host_ports, port);
  }
  if (!pod.required_pod_anti_affinity.empty()) {
    auto it = std::find_if(anti_affinity_pods_.begin(), anti_affinity_pods_.end(),
                           [&pod](const PodOnNode& entry) { return entry.pod == &pod; });
    if (it != anti_affinity_pods_.end()) {
      *it = anti_affinity_pods_.back();
      anti_affinity_pods_.pop_back();
    }
    CountSelectorKeys(pod, -1);
  }
  UncountClaimUsers(pod, state.info.name);
}

void Snapshot::UncountClaimUsers(const PodInfo& pod, const std::string& node_name) {
  for (const std::string& claim : pod.claims) {
    auto users = claim_users_.find(PodKey(pod.namespace_name, claim));
    if (users == claim_users_.end()) {
      continue;
    }
    auto user = std::find(users->second.begin(), users->second.end(), node_name);
    if (user != users->second.end()) {
      users->second.erase(user);
    }
    if (users->second.empty()) {
      claim_users_.erase(users);
    }
  }
}

const ClaimUsers* Snapshot::ClaimUsersOf(std::string_view claim_key) const {
  auto it = claim_users_.find(claim_key);
  return it == claim_users_.end() ? nullptr : &it->second;
}

void Snapshot::IndexGroupMember(const PodInfo& pod) {
  if (pod.job_name.empty()) {
    return;
  }
  group_members_[GroupKey(pod.namespace_name, pod.job_name)].push_back(&pod);
}

void Snapshot::UnindexGroupMember(const PodInfo& pod) {
  if (pod.job_name.empty()) {
    return;
  }
  auto it = group_members_.find(GroupKey(pod.namespace_name, pod.job_name));
  if (it == group_members_.end()) {
    return;
  }
  EraseOne(it->second, &pod);
  if (it->second.empty()) {
    group_members_.erase(it);
  }
}

Status Snapshot::AddPod(PodInfo pod) {
  if (Status status = CheckNoTentative("AddPod"); !status.ok()) {
    return status;
  }
  if (pod.node_name.empty()) {
    return InvalidArgument("pod " + pod.Key() + " is not bound to a node");
  }
  std::string key = pod.Key();
  if (auto it = pods_.find(key); it != pods_.end()) {
    if (Status status = RemovePod(pod.namespace_name, pod.name); !status.ok()) {
      return status;
    }
  }
  if (pod.IsTerminal()) {
    return Status::Ok();
  }
  uint32_t slot = SlotForNodeName(pod.node_name);
  auto owned = std::make_unique<PodInfo>(std::move(pod));
  const PodInfo& stored = *owned;
  pods_.emplace(std::move(key), PodEntry{std::move(owned), slot});
  Attach(stored, slot);
  IndexGroupMember(stored);
  return Status::Ok();
}

Status Snapshot::RemovePod(std::string_view namespace_name, std::string_view name) {
  if (Status status = CheckNoTentative("RemovePod"); !status.ok()) {
    return status;
  }
  auto it = pods_.find(PodKey(namespace_name, name));
  if (it == pods_.end()) {
    return NotFound("pod " + PodKey(namespace_name, name) + " is not in the snapshot");
  }
  const PodInfo& pod = *it->second.pod;
  uint32_t slot = it->second.slot;
  Detach(pod, slot);
  UnindexGroupMember(pod);
  pods_.erase(it);
  ReleaseSlotIfUnused(slot);
  return Status::Ok();
}

Status Snapshot::AssumePod(const PodInfo& pod, std::string_view node_name) {
  // Assuming replaces nothing: a pod already here is bound (or assumed), and
  // replacing it would free an object others may still point to.
  if (FindPod(pod.namespace_name, pod.name) != nullptr) {
    return Status(StatusCode::kAlreadyExists, "pod " + pod.Key() + " is already in the snapshot");
  }
  PodInfo assumed = pod;
  assumed.node_name = std::string(node_name);
  return AddPod(std::move(assumed));
}

const PodInfo* Snapshot::FindPod(std::string_view namespace_name, std::string_view name) const {
  auto it = pods_.find(PodKey(namespace_name, name));
  return it == pods_.end() ? nullptr : it->second.pod.get();
}

std::optional<uint32_t> Snapshot::FindNodeSlot(std::string_view name) const {
  auto it = slot_by_name_.find(name);
  if (it == slot_by_name_.end()) {
    return std::nullopt;
  }
  return it->second;
}

const NodeState* Snapshot::FindNode(std::string_view name) const {
  std::optional<uint32_t> slot = FindNodeSlot(name);
  return slot.has_value() ? &slots_[*slot] : nullptr;
}

std::vector<const PodInfo*> Snapshot::GroupMembers(std::string_view namespace_name,
                                                   std::string_view job_name) const {
  auto it = group_members_.find(GroupKey(namespace_name, job_name));
  if (it == group_members_.end()) {
    return {};
  }
  return it->second;
}

void Snapshot::PlaceTentatively(const PodInfo& pod, uint32_t slot) {
  Attach(pod, slot);
  tentative_log_.push_back(PodOnNode{&pod, slot});
}

void Snapshot::RollbackTentative(size_t mark) {
  // Undo in reverse order: each tentative pod is the newest entry of every list
  // it was appended to, so popping restores the previous state exactly.
  while (tentative_log_.size() > mark) {
    PodOnNode entry = tentative_log_.back();
    tentative_log_.pop_back();
    const PodInfo& pod = *entry.pod;
    NodeState& state = slots_[entry.slot];
    TouchPods(state);
    state.requested -= pod.requests;
    state.pods.pop_back();
    state.used_host_ports.resize(state.used_host_ports.size() - pod.host_ports.size());
    if (!pod.required_pod_anti_affinity.empty()) {
      anti_affinity_pods_.pop_back();
      CountSelectorKeys(pod, -1);
    }
    UncountClaimUsers(pod, state.info.name);
  }
}

}  // namespace hybridjob::scheduler
