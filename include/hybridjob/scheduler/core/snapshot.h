// The scheduler's view of the cluster: nodes, the pods bound (or assumed) on
// them, and what those pods use. Pure data, no I/O: the informer-fed cache in
// the shell applies events to it, the planner reads it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/core/topology.h>
#include <hybridjob/scheduler/core/volumes.h>
#include <hybridjob/scheduler/objects/objects.h>
#include <hybridjob/scheduler/objects/resources.h>

namespace hybridjob::scheduler {

// One slot of the snapshot's node table.
struct NodeState {
  NodeInfo info;
  // The slot holds a node or a placeholder; free slots are reused.
  bool in_use = false;
  // False for a placeholder: pods name a node whose Node object is not (or no
  // longer) known. Placeholders keep the accounting and never take new pods.
  bool has_node = false;
  ResourceList requested;  // sum of requests of every pod on the node, any scheduler
  std::vector<const PodInfo*> pods;
  std::vector<HostPort> used_host_ports;
  // Changes whenever `pods` does (a pod comes or goes, tentatively too) or
  // the slot gets another occupant; never repeats within a snapshot, so what
  // is derived from a node's pods can be kept until it changes.
  uint64_t pods_version = 0;
  // Changes whenever the node object does (added, replaced or removed); drawn
  // from the same sequence as pods_version.
  uint64_t node_version = 0;

  bool schedulable_slot() const { return in_use && has_node; }
};

// A pod with a required anti-affinity term and the slot of the node it is on:
// every incoming pod must be checked against these terms (symmetry).
struct PodOnNode {
  const PodInfo* pod = nullptr;
  uint32_t slot = 0;
};

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
};

class Snapshot {
 public:
  Snapshot() = default;
  Snapshot(const Snapshot&) = delete;
  Snapshot& operator=(const Snapshot&) = delete;
  Snapshot(Snapshot&&) = default;
  Snapshot& operator=(Snapshot&&) = default;

  // Adds a node or replaces its object, keeping the pods accounted on it.
  Status UpsertNode(NodeInfo node);
  // Forgets a node object. Its pods stay accounted on a placeholder until they
  // are removed too (informers may deliver the node's deletion first).
  Status RemoveNode(std::string_view name);

  // Adds or replaces a pod bound to pod.node_name. Terminal pods hold no
  // resources and are dropped. A node not known yet gets a placeholder.
  // Replacing a pod frees the old PodInfo: pointers to it (NodeState::pods,
  // PodGroup::bound, plans) are valid only until the pod changes.
  Status AddPod(PodInfo pod);
  Status RemovePod(std::string_view namespace_name, std::string_view name);
  // The scheduler's decision ahead of the binding: a copy of `pod` on
  // `node_name`. AlreadyExists if the pod is in the snapshot already.
  Status AssumePod(const PodInfo& pod, std::string_view node_name);

  const PodInfo* FindPod(std::string_view namespace_name, std::string_view name) const;
  std::optional<uint32_t> FindNodeSlot(std::string_view name) const;
  const NodeState* FindNode(std::string_view name) const;

  // Every slot, including free ones and placeholders (see NodeState). Slot
  // numbers are stable while a node exists.
  const std::vector<NodeState>& slots() const { return slots_; }
  size_t node_count() const { return node_count_; }
  // Unique among the snapshots of a process: with NodeState::pods_version it
  // tells whether something derived from a node's pods still holds.
  uint64_t identity() const { return identity_.value; }
  size_t pod_count() const { return pods_.size(); }

  // Bound or assumed members of a pod group (namespace + job-name label).
  std::vector<const PodInfo*> GroupMembers(std::string_view namespace_name,
                                           std::string_view job_name) const;

  const std::vector<PodOnNode>& pods_with_required_anti_affinity() const {
    return anti_affinity_pods_;
  }
  // Label keys referenced by the selectors of those terms, with use counts: a
  // pod's labels matter to them only through these keys.
  const std::unordered_map<std::string, int, StringHash, std::equal_to<>>&
  anti_affinity_selector_keys() const {
    return anti_affinity_selector_keys_;
  }

  // The nodes grouped by the topology label `key` (topology.h). Built on first
  // use and kept until a node comes, goes or changes its labels; the
  // reference is valid until then.
  const TopologyLevelIndex& TopologyLevel(std::string_view key);

  // Claims, volumes and storage classes (see StorageCatalog::tracked).
  StorageCatalog& storage() { return storage_; }
  const StorageCatalog& storage() const { return storage_; }
  // The nodes of the pods (bound, assumed or tentative) that mount a claim, one
  // entry per pod; nullptr when no pod does. Key: namespace/claim.
  const ClaimUsers* ClaimUsersOf(std::string_view claim_key) const;

  // Tentative placements: the planner's scratch space. A tentative pod is not
  // owned (the caller keeps it alive) and is accounted exactly like a bound
  // one until RollbackTentative. While any is open, the mutating calls above
  // fail, which keeps the undo log valid.
  size_t TentativeMark() const { return tentative_log_.size(); }
  void PlaceTentatively(const PodInfo& pod, uint32_t slot);
  void RollbackTentative(size_t mark);

 private:
  struct PodEntry {
    std::unique_ptr<PodInfo> pod;
    uint32_t slot = 0;
  };

  Status CheckNoTentative(std::string_view operation) const;
  uint32_t SlotForNodeName(std::string_view name);
  uint32_t TakeFreeSlot();
  void ReleaseSlotIfUnused(uint32_t slot);
  void Attach(const PodInfo& pod, uint32_t slot);
  void TouchPods(NodeState& state) { state.pods_version = ++versions_; }
  void TouchNode(NodeState& state) { state.node_version = ++versions_; }
  void Detach(const PodInfo& pod, uint32_t slot);
  void CountSelectorKeys(const PodInfo& pod, int delta);
  void UncountClaimUsers(const PodInfo& pod, const std::string& node_name);
  void IndexGroupMember(const PodInfo& pod);
  void UnindexGroupMember(const PodInfo& pod);

  // A moved-from snapshot takes a new identity: it may be filled again.
  struct Identity {
    static uint64_t Next();
    uint64_t value = Next();
    Identity() = default;
    Identity(Identity&& other) noexcept : value(other.value) { other.value = Next(); }
    Identity& operator=(Identity&& other) noexcept {
      value = other.value;
      other.value = Next();
      return *this;
    }
  };

  Identity identity_;
  std::vector<NodeState> slots_;
  uint64_t versions_ = 0;  // the last NodeState::pods_version or node_version given
  std::vector<uint32_t> free_slots_;
  size_t node_count_ = 0;
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> slot_by_name_;
  std::unordered_map<std::string, PodEntry, StringHash, std::equal_to<>> pods_;
  std::unordered_map<std::string, std::vector<const PodInfo*>, StringHash, std::equal_to<>>
      group_members_;
  std::vector<PodOnNode> anti_affinity_pods_;
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> anti_affinity_selector_keys_;
  std::vector<PodOnNode> tentative_log_;
  StorageCatalog storage_;
  std::unordered_map<std::string, ClaimUsers, StringHash, std::equal_to<>> claim_users_;
  std::unordered_map<std::string, TopologyLevelIndex, StringHash, std::equal_to<>> topology_levels_;
};

}  // namespace hybridjob::scheduler
