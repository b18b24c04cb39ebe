// Weighted dominant-resource fairness across queues, as Mesos's DRF sorter:
// a queue's dominant share is the largest fraction of the cluster's cpu,
// memory or GPUs it uses (GPUs weighted: every configured GPU resource counts
// together, a MIG slice as its fraction of a GPU); divided by its weight, it orders the queues
// (lowest first). Usage is computed from the snapshot: every bound or assumed pod this scheduler
// owns counts toward its group's queue, and toward every ancestor of that queue, so a parent's
// usage is its subtree's. Queue trees are ordered top-down, as Mesos's hierarchical sorter:
// siblings compare their subtrees' shares, each with its own weight.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <hybridjob/scheduler/core/gpu_resources.h>
#include <hybridjob/scheduler/core/queues.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/objects/resources.h>

namespace hybridjob::scheduler {

// The largest usage / capacity over cpu, memory and the weighted GPUs of
// `gpus`; what the cluster has none of is left out.
double DominantShare(const ResourceList& usage, const ResourceList& capacity,
                     const GpuResources& gpus);

struct QueueAccount {
  QueueSpec spec;  // spec.parent as the QueueTable has it
  // False for a queue that pods name but the configuration does not have (it
  // was removed by a reload): weight 1, nothing guaranteed, no ceiling.
  bool configured = true;
  // Requests of its bound and assumed pods; for a parent, of its subtree's.
  ResourceList used;
  int64_t pods = 0;
  bool leaf = true;  // has no child queue
};

// What the pods on one node ask for: per queue (QueueOfPod) for the pods the
// policy's scheduler manages, in order of first appearance, and in one sum for
// every other pod.
struct NodeQueueUsage {
  struct Queue {
    std::string queue;
    ResourceList requests;
    int64_t pods = 0;
  };
  std::vector<Queue> managed;
  ResourceList unmanaged;
};
NodeQueueUsage SumQueueUsage(const NodeState& node, const PolicyConfig& policy);

// What FairShare::FromSnapshot sums over the nodes: the capacity (the
// allocatable of every node with an object, less what pods of other schedulers
// request there) and the usage of the managed pods by queue, the queues in
// the order of their first pod by slot.
struct SnapshotSums {
  ResourceList capacity;
  std::vector<NodeQueueUsage::Queue> usage;
};
SnapshotSums SumSnapshot(const Snapshot& snapshot, const PolicyConfig& policy);

// SumSnapshot kept from one cycle to the next: each node's NodeQueueUsage
// until its pods change (NodeState::pods_version), and the sums of each block
// of kBlockSlots slots until one of its nodes or their pods change
// (node_version, pods_version). A cycle sums again only the blocks that
// changed, then adds up the blocks: the result is SumSnapshot's exactly, same
// entries in the same order. Owned with the snapshot it serves; given another
// snapshot or scheduler name, it starts over.
class QueueUsageMemo {
 public:
  static constexpr uint32_t kBlockSlots = 32;

  const SnapshotSums& Sums(const Snapshot& snapshot, const PolicyConfig& policy);

 private:
  struct Entry {
    // Of the node when its block was last summed; `usage` is for pods_version.
    uint64_t pods_version = 0;
    uint64_t node_version = 0;
    NodeQueueUsage usage;
  };
  struct Block {
    bool summed = false;
    SnapshotSums sums;
  };
  std::vector<Entry> entries_;
  std::vector<Block> blocks_;
  SnapshotSums total_;
  uint64_t snapshot_identity_ = 0;
  std::string scheduler_name_;  // the policy's, which decides what is managed
};

class FairShare {
 public:
  FairShare(const QueueTable& table, ResourceList capacity, GpuResources gpus);

  // Capacity: the allocatable of every node with an object, less what pods of
  // other schedulers request there. Usage: requests of every managed pod in the
  // snapshot (tentative placements included), by queue. With a memo, only the
  // nodes whose pods changed since its last use are summed again.
  static FairShare FromSnapshot(const Snapshot& snapshot, const QueueTable& table,
                                const PolicyConfig& policy, GpuResources gpus,
                                QueueUsageMemo* memo = nullptr);

  const ResourceList& capacity() const { return capacity_; }
  const GpuResources& gpus() const { return gpus_; }
  // Stable addresses: accounts are only ever appended.
  const std::deque<QueueAccount>& accounts() const { return accounts_; }

  // The account of `queue`; one is made (unconfigured, top-level) for a name
  // not seen yet.
  QueueAccount& Account(std::string_view queue);
  const QueueAccount* Find(std::string_view queue) const;
  // To (from) the queue and every ancestor.
  void Add(std::string_view queue, const ResourceList& amount, int64_t pods = 0);
  void Remove(std::string_view queue, const ResourceList& amount, int64_t pods = 0);

  // The parent's account, or nullptr for a top-level queue.
  const QueueAccount* Parent(const QueueAccount& account) const;
  // The queue's account, then its ancestors' up to the top level; empty for
  // a queue without an account.
  std::vector<const QueueAccount*> Path(std::string_view queue) const;
  // The first of the queue and its ancestors (in that order) whose max the
  // queue's usage plus `extra` would exceed, or nullptr.
  const QueueAccount* FirstOverMax(std::string_view queue, const ResourceList& extra) const;
  // Where the paths of two queues part: the children of their lowest common
  // ancestor (or the two top-level queues) on the way to `a` and to `b`. Both
  // nullptr when one is the other or its ancestor, or has no account.
  std::pair<const QueueAccount*, const QueueAccount*> Parting(std::string_view a,
                                                              std::string_view b) const;
  // Levels from `from` up to the lowest common ancestor of `from` and `to`,
  // the level above the top-level queues counting as their common ancestor:
  // 0 for the queue itself, 1 for siblings, for two top-level queues and for
  // the parent, 2 for cousins.
  int32_t Distance(std::string_view from, std::string_view to) const;
  // Whose turn it is among `queues` (those with work waiting): top-down, at
  // each level the queue that GoesFirst among those with a candidate in their
  // subtree, down to a candidate. Empty when `queues` is. With no tree this is
  // the candidate that GoesFirst.
  std::string_view NextQueue(const std::vector<std::string_view>& queues) const;

  // Dominant share divided by weight.
  double WeightedShare(const QueueAccount& account) const;
  double WeightedShare(std::string_view queue) const;
  // The weighted share the queue would have if it used `used`.
  double WeightedShareOf(const QueueAccount& account, const ResourceList& used) const;
  // Whether the queue uses less than its guarantee of some guaranteed
  // resource (GPUs compared weighted: AsGpuEquivalents).
  bool BelowGuarantee(const QueueAccount& account) const;
  // Queue order: below its guarantee first, then the lower weighted share,
  // then the name.
  bool GoesFirst(const QueueAccount& a, const QueueAccount& b) const;

 private:
  ResourceList capacity_;
  GpuResources gpus_;
  std::deque<QueueAccount> accounts_;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> index_;
  // By account index: the parent's index (kTop for none), the children's.
  static constexpr size_t kTop = static_cast<size_t>(-1);
  std::vector<size_t> parent_;
  std::vector<std::vector<size_t>> children_;
};

}  // namespace hybridjob::scheduler
