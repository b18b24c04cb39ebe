// Queues: whom a pod group's resources are accounted to, what each queue is
// entitled to (guaranteed) and may never exceed (max, borrowed capacity
// included), and the switches of the policies built on them: elastic reclaim
// and growth, priority preemption, starvation control. Pure data and
// functions, no I/O; docs/scheduler-policies.md describes the policies.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <hybridjob/api/labels.h>
#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/core/attained_service.h>
#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/objects/objects.h>
#include <hybridjob/scheduler/objects/resources.h>

namespace hybridjob::scheduler {

// Upper bounds on named resources ("cpu" in millicores, as ResourceList::Get
// names them); a resource that is not named is unbounded.
class ResourceCeiling {
 public:
  void Set(std::string_view name, int64_t amount);
  std::optional<int64_t> Limit(std::string_view name) const;
  bool empty() const { return limits_.empty(); }
  // Sorted by name.
  const std::vector<ScalarResource>& limits() const { return limits_; }

  // The first named resource on which `usage` is above its limit, else empty.
  std::string_view FirstExceeded(const ResourceList& usage) const;
  // "cpu=64 nvidia.com/gpu=32" (cpu as a quantity), or "unlimited".
  std::string ToString() const;

  friend bool operator==(const ResourceCeiling&, const ResourceCeiling&) = default;

 private:
  std::vector<ScalarResource> limits_;
};

// The order in which a queue's own groups start, each group going by
// priority, then age. Across queues the turn is always weighted DRF.
enum class QueueOrder : uint8_t {
  // A group that cannot start now lets the groups behind it try (backfill).
  kBestEffortFifo,
  // No group starts while one ahead of it in the queue waits for capacity
  // (or for its queue's max): head-of-line blocking, so large gangs are
  // never overtaken; the head may still reclaim and be reserved for.
  kStrictFifo,
  // By attained service (attained_service.h): within a priority, the group
  // of the lowest level goes first, then the oldest; a group that cannot
  // start lets the ones behind it try. Growth goes to the least served
  // first, and reclaim in the queue takes from the most served first.
  kAttainedService,
};

// "BestEffortFIFO", "StrictFIFO" (the configuration's names, as Kueue's
// queueingStrategy spells them), "AttainedService".
std::string_view QueueOrderName(QueueOrder order);
Result<QueueOrder> ParseQueueOrder(std::string_view name);

struct QueueSpec {
  std::string name;
  // The queue this one is nested in; empty for a top-level queue. Jobs run in
  // leaf queues only; a parent's guarantee, ceiling and weight bound and share
  // out what its children use together.
  std::string parent;
  // Relative weight in weighted dominant-resource fairness: a queue of weight 2
  // is entitled to twice the dominant share of a queue of weight 1.
  double weight = 1.0;
  // Capacity the queue is entitled to: reclaim and preemption never take the
  // queue below it, and while the queue uses less, others may only borrow it.
  ResourceList guaranteed;
  // Ceiling on the queue's usage, borrowed capacity included.
  ResourceCeiling max;
  // Which namespaces' jobs may use the queue: those named here, and those
  // whose labels the selector matches (`{}` matches every namespace). Neither
  // set: every namespace. A parent's restriction applies to its children too.
  std::vector<std::string> namespaces;
  std::optional<LabelSelector> namespace_selector;
  // How the queue's groups take their turns; only a leaf queue has groups.
  QueueOrder order = QueueOrder::kBestEffortFifo;

  // Whether the queue's own restriction lets jobs of the namespace in.
  bool AdmitsNamespace(std::string_view namespace_name, const LabelMap& namespace_labels) const;

  friend bool operator==(const QueueSpec&, const QueueSpec&) = default;
};

struct ReclaimSettings {
  // Shrink elastic members (above a role's minimum) of running groups so that a
  // waiting group can reach its minimum.
  bool enabled = true;
  // Grow running groups back toward their maximum when capacity is idle and no
  // group waits for capacity.
  bool growth = true;
  // Waiting groups examined for evictions per cycle: bounds the cycle's cost.
  int32_t max_groups_per_cycle = 8;
  // Hand capacity back to groups below their fair share (FairShareTargets):
  // elastic members of groups over theirs are reclaimed for them.
  bool rebalance = true;
  // A group (and its queues) counts as below its fair share only while it
  // uses less than (1 - share_tolerance) of it.
  double share_tolerance = 0.1;
  // Rebalancing never shrinks a group resized (grown or shrunk) less than
  // this long ago; a cycle's own decisions count as one resize.
  int64_t min_resize_interval_seconds = 30;

  friend bool operator==(const ReclaimSettings&, const ReclaimSettings&) = default;
};

struct PreemptionSettings {
  // A higher-priority group that cannot reach its minimum may evict members of
  // lower-priority groups: elastic members first, then whole gangs.
  bool enabled = false;

  friend bool operator==(const PreemptionSettings&, const PreemptionSettings&) = default;
};

struct StarvationSettings {
  // A group waiting this long for capacity gets the nodes it needs reserved
  // (no other placements there) until it fits. 0 turns reservations off.
  int64_t max_wait_seconds = 600;
  // Starved groups holding reservations at the same time.
  int32_t max_reserved_groups = 1;

  friend bool operator==(const StarvationSettings&, const StarvationSettings&) = default;
};

struct PolicyConfig {
  std::vector<QueueSpec> queues;  // `default` is added when absent (weight 1, no bounds)
  ReclaimSettings reclaim;
  PreemptionSettings preemption;
  StarvationSettings starvation;
  // Pods of other schedulers belong to no queue: they only reduce the capacity
  // shared out, and are never evicted. Empty: every pod counts as ours.
  std::string scheduler_name;
  // A reservation whose group has not been seen waiting for this long is
  // dropped (the group was deleted, or the caller stopped passing it).
  int64_t reservation_forget_after_seconds = 120;
  // An eviction still in flight after this long is forgotten, so its pod may
  // be chosen again (e.g. the Eviction API kept refusing it).
  int64_t eviction_timeout_seconds = 900;
  // After a refused eviction the victim's group is not chosen again for this
  // long, doubling with each refusal in a row up to the max. A refusal is
  // forgotten once its pod is gone or a max back-off has passed without one.
  int64_t refused_eviction_backoff_seconds = 10;
  int64_t refused_eviction_backoff_max_seconds = 300;
  // Levels and the starvation guard of AttainedService queues.
  AttainedServiceSettings attained_service;
};

// Names unique and non-empty, weights positive and finite, guaranteed within
// max, settings in range, namespaces valid names. The tree: a parent names
// another queue, no queue is its own ancestor, `default` is a top-level leaf,
// a parent's guarantee holds its children's (per resource the parent names),
// and no guarantee exceeds an ancestor's max. Messages name the field:
// "queues[1].weight: must be positive", "queues[2].parent: no queue named
// \"org\"", "starvation.maxWaitSeconds: must not be negative".
Status ValidateQueues(const std::vector<QueueSpec>& queues);
Status ValidatePolicyConfig(const PolicyConfig& config);
// Some queue's order is AttainedService: the cycle keeps the service ledger.
bool OrdersByService(const PolicyConfig& config);

// Whether `name` is a valid namespace name (an RFC 1123 label: at most 63
// lowercase alphanumerics or '-', starting and ending with an alphanumeric).
bool IsNamespaceName(std::string_view name);

// The configured queues as a tree, with `default` added (a top-level leaf)
// when the configuration lacks it. A parent that names no queue, or that
// would close a cycle, is dropped (ValidateQueues refuses both), so the table
// of any configuration is a forest.
class QueueTable {
 public:
  explicit QueueTable(const std::vector<QueueSpec>& queues);

  const QueueSpec* Find(std::string_view name) const;
  // In configuration order, `default` last when added; `parent` as the tree
  // has it (dropped when it named no queue or closed a cycle), and a parent's
  // `guaranteed` raised, per resource, to what its children are guaranteed
  // together: a child's guarantee counts inside its parent's.
  const std::vector<QueueSpec>& queues() const { return queues_; }
  // "a, b, default": for messages.
  std::string Names() const;

  // Whether any queue has a parent: without one, every queue is a top-level
  // leaf and the policies behave as they did before queue trees.
  bool HasTree() const { return has_tree_; }
  // The parent of `queue`, or nullptr for a top-level or unknown queue.
  const QueueSpec* Parent(std::string_view queue) const;
  // The children of `queue`, by name; empty for a leaf or an unknown queue.
  const std::vector<std::string>& Children(std::string_view queue) const;
  // Whether jobs may run in `queue`: it has no child queue.
  bool IsLeaf(std::string_view queue) const;
  // The ancestors of `queue`: its parent first, the top-level queue last.
  std::vector<std::string> Ancestors(std::string_view queue) const;
  // Levels above `queue`: 0 for a top-level (or unknown) queue.
  int32_t Depth(std::string_view queue) const;
  // Whether the queue and every ancestor admit jobs of the namespace (false
  // for an unknown queue).
  bool AdmitsNamespace(std::string_view queue, std::string_view namespace_name,
                       const LabelMap& namespace_labels) const;
  // The first of the queue and its ancestors (in that order) that does not
  // admit jobs of the namespace, or nullptr when all of them do.
  const QueueSpec* RefusesNamespace(std::string_view queue, std::string_view namespace_name,
                                    const LabelMap& namespace_labels) const;

 private:
  std::vector<QueueSpec> queues_;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> index_;
  std::vector<std::vector<std::string>> children_;  // by index, sorted by name
  bool has_tree_ = false;
};

// The queue a pod is accounted to: its resolved queue (ResolvePod), else its
// group spec's, else `default`.
std::string_view QueueOfPod(const PodInfo& pod);
// Whether the policies account and may evict the pod (see scheduler_name).
bool IsManagedPod(const PodInfo& pod, const PolicyConfig& policy);

// "namespace/name" of a group; "namespace/name|pod" for a pod outside any
// group, so it never collides with a job of the same name.
std::string GroupKey(const PodGroup& group);

// Members per role of a group as it stands: bound members by role name.
int32_t BoundInRole(const PodGroup& group, std::string_view role);

// Whether every role has at least its minimum bound: the group runs and only
// grows from here.
bool ReachedMinimum(const PodGroup& group);

// The minimum each role must reach for the group to run, in spec order: the
// roles' minReplicas, except that a group with nothing bound whose minimums
// are all 0 starts with one member of its highest-priority role that has a
// pending member (a group is never "placed" with no member at all).
std::vector<int32_t> StartingMinimums(const PodGroup& group);

// A copy of `group` that must reach StartingMinimums and offers only the
// members it lacks for them (MinimumMembers): planning it places exactly what
// the group lacks. The maximums stay: they also bound the indices, and a
// member that succeeded keeps its index, so the one that starts the minimum
// can sit above it.
PodGroup AtMinimum(const PodGroup& group);

// The pending members the group lacks to reach StartingMinimums: per role the
// lowest-indexed ones.
std::vector<const PodInfo*> MinimumMembers(const PodGroup& group);
// Their summed requests.
ResourceList MinimumRequest(const PodGroup& group);

// Sum of the requests of the pods of a plan's assignments.
ResourceList PlanRequest(const GroupPlan& plan);

// Calls fn(name, amount) for every resource of `list` with a non-zero amount,
// named as ResourceList::Get names them.
template <typename Fn>
void ForEachResource(const ResourceList& list, Fn&& fn) {
  if (list.milli_cpu != 0) {
    fn(kResourceCpu, list.milli_cpu);
  }
  if (list.memory != 0) {
    fn(kResourceMemory, list.memory);
  }
  if (list.ephemeral_storage != 0) {
    fn(kResourceEphemeralStorage, list.ephemeral_storage);
  }
  if (list.pods != 0) {
    fn(kResourcePods, list.pods);
  }
  for (const ScalarResource& scalar : list.scalars()) {
    if (scalar.amount != 0) {
      fn(std::string_view(scalar.name), scalar.amount);
    }
  }
}

// Guaranteed-share protection: whether a queue using `usage_after` once
// `removed` is taken from it still holds its guarantee on every resource that
// `removed` frees and `guaranteed` names.
bool KeepsGuarantee(const ResourceList& usage_after, const ResourceList& removed,
                    const ResourceList& guaranteed);

// Whether `usage` stays within `guaranteed` on every resource `request` uses
// that the guarantee names, and `request` uses at least one such resource.
bool WithinGuarantee(const ResourceList& usage, const ResourceList& request,
                     const ResourceList& guaranteed);

}  // namespace hybridjob::scheduler
