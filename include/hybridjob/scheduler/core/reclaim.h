// Elastic reclaim: when a waiting group cannot reach its minimum, running
// groups give back elastic members (those above a role's minReplicas).
//
// Victims are taken from the queue furthest over its fair share first (highest
// weighted dominant share, re-evaluated after every victim), then the lowest
// role priority, then the highest index, so the survivors of every role stay
// indices 0..k-1. A queue gives back only while it is over the waiting group's
// queue's share (or the waiting queue is still within its guarantee), and
// never below its own guarantee. Within one queue, a waiting group takes only
// from groups of no higher priority.
//
// In a queue tree, capacity moving from a victim queue V to the waiting queue
// W is judged at their lowest common ancestor L (the level above the
// top-level queues when they share none), between L's children on the way to
// V and to W: V's side gives back only while its subtree's share is over W's
// side's (W's group counted in, capacity W's side already took back from
// inside it counted out), or while W's side stays within its guarantee. Every
// queue from V up to, not including, L keeps its guarantee; L and above lose
// nothing, as the capacity stays inside them. Borrowed capacity goes back to
// whoever is owed it first: victims come from the queues closest to W (its
// siblings and its own queue, then cousins, then further), and at the same
// distance from the queue furthest over its share, compared top-down where
// their paths part. A group held back by an ancestor's max (not by the
// cluster) takes victims only from inside that ancestor, until they free
// what it would put over the max. Without a tree this is the flat rule above.
//
// The search is exact about capacity: every candidate is released on the
// snapshot through what-if edits and the real planner checks whether the
// waiting group then reaches its minimum; nothing is evicted unless it does,
// and victims that turn out not to be needed are dropped again (minimal set).
// Priority preemption (preemption.h) feeds more candidates to the same search.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <hybridjob/scheduler/core/fair_share.h>
#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/queues.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/core/what_if.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {

enum class EvictionCause : uint8_t { kReclaim, kPreemption };

// "Reclaim" or "Preemption".
std::string_view EvictionCauseName(EvictionCause cause);

struct RunningRole {
  std::string name;
  int32_t min_replicas = 0;
  int32_t max_replicas = 0;
  int32_t priority = 0;
  std::vector<const PodInfo*> members;  // staying members, lowest index first
};

// A group with members bound or assumed in the snapshot, as reclaim and
// preemption see it. Pointers refer to pods the snapshot owns.
struct RunningGroup {
  std::string namespace_name;
  std::string name;  // the job-name label, or the pod's name for a pod outside any group
  bool single_pod = false;
  std::string queue;
  int32_t priority = 0;       // highest member priority
  Timestamp creation_time{};  // the oldest member's creation
  // Members can be shrunk down to each role's minimum. False when the group
  // spec is unknown or a member does not fit it: then only whole.
  bool elastic_shape = false;
  // A new membership restarts every member (GroupSpec::resize_restarts).
  bool resize_restarts = false;
  // The HybridJob's uid (the pods' controller), when a HybridJob owns it.
  std::string job_uid;
  std::vector<RunningRole> roles;
  std::vector<const PodInfo*> members;  // every staying member
  int32_t leaving = 0;                  // members already being evicted
  // Placed in this cycle: never a victim.
  bool placed_this_cycle = false;
  // An eviction of one of its pods was refused recently: never a victim
  // until the back-off ends (see RefusedEviction).
  bool shielded = false;
  // Its attained-service level in an AttainedService queue; -1 in a queue
  // of another order. The most served give back first.
  int32_t service_level = -1;

  // "namespace/name", with "|pod" appended for a pod outside any group (the
  // same keys BuildGroups uses).
  std::string Key() const;
  ResourceList Requests() const;
};

class RunningGroups {
 public:
  // Every group of managed pods in the snapshot. Pods whose keys are in
  // `leaving` are being evicted: left out of the members and counted apart.
  static RunningGroups FromSnapshot(const Snapshot& snapshot, const PolicyConfig& policy,
                                    const std::unordered_set<std::string>& leaving);

  std::vector<RunningGroup>& groups() { return groups_; }
  const std::vector<RunningGroup>& groups() const { return groups_; }
  RunningGroup* Find(std::string_view key);

  // Takes the pods out of their group's members (they are being evicted).
  void MarkLeaving(size_t group, const std::vector<const PodInfo*>& pods);

 private:
  std::vector<RunningGroup> groups_;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> index_;
};

// One unit of eviction: an elastic member, or every staying member of a group.
struct VictimUnit {
  size_t group = 0;   // index into RunningGroups::groups()
  int32_t role = -1;  // an elastic member: index of its role; -1: the whole group
  std::vector<const PodInfo*> pods;
  ResourceList requests;
  EvictionCause cause = EvictionCause::kReclaim;

  bool whole() const { return role < 0; }
};

// Elastic members of a group, per role (in spec order) the highest index
// first, as units. A group whose minimums are all 0 keeps one member.
std::vector<VictimUnit> ElasticUnits(const RunningGroups& running, size_t group,
                                     EvictionCause cause);

// The group that waits, and what the search may do for it.
struct EvictionRequest {
  std::string group_key;  // GroupKey() of the waiting group (never its own victim)
  std::string queue;
  int32_t priority = 0;
  // Its attained-service level in an AttainedService queue (-1: another
  // order): in its own queue, only groups of a higher level give back.
  int32_t service_level = -1;
  ResourceList need;  // its minimum request, MinimumRequest()
  bool reclaim = true;
  // Extra candidates after the reclaim ones (see preemption.h), tried in order.
  std::vector<VictimUnit> preemption_candidates;
  // Nodes the group may not use (reserved for others): victims there free
  // nothing for it. Indexed by slot; may be shorter than the slot table.
  const std::vector<uint8_t>* blocked_slots = nullptr;
  // Set for a group that must keep to one topology domain: the slots of that
  // domain (indexed by slot; may be shorter than the slot table). Victims
  // are taken only there: an elastic role gives back down to its first
  // member outside the domain (so its survivors stay 0..k-1), a gang evicted
  // whole needs a member inside; only capacity inside counts.
  const std::vector<uint8_t>* domain_slots = nullptr;
  // The group is known not to fit before any victim is taken (the caller just
  // planned it in the same state): the search skips that first check.
  bool known_not_to_fit = false;
  // Plan calls allowed in one search; bounds its cost on huge clusters.
  int32_t max_fit_checks = 48;
  // Set when the max of an ancestor of the group's queue holds it back, not
  // the cluster: victims come only from `within_queue`'s subtree, and the
  // search succeeds only once they take at least the amount named for each
  // queue here (what the group would put over that queue's max).
  std::string within_queue;
  std::vector<std::pair<std::string, ResourceList>> over_ceiling;
};

struct EvictionChoice {
  // The waiting group reaches its minimum once the victims (and whatever was
  // released before the search) are gone.
  bool fits = false;
  std::vector<VictimUnit> victims;  // in the order chosen
  int32_t fit_checks = 0;
  // "key=value" when the search kept to one topology domain.
  std::string domain;
};

// Whether the waiting group reaches its minimum on the snapshot as it stands
// (with the what-if edits made so far).
using FitCheck = std::function<bool()>;

// Searches for the fewest victims, in policy order, after which `fits` holds.
// The caller has already made its what-if edits (nodes reserved for others
// filled, victims evicted earlier for this group released); the search adds
// its own on `what_if` and removes them before returning. `share` is the
// projected usage: what each queue will use once earlier decisions of the
// cycle take effect. Returns fits=false and no victims when no allowed set
// of victims makes the group fit.
EvictionChoice FindEvictions(Snapshot& snapshot, WhatIf& what_if, const RunningGroups& running,
                             const FairShare& share, const EvictionRequest& request,
                             const FitCheck& fits);

// Where a waiting group's victims must lie when a Required topology unit
// confines it (topology.h): inside one domain of the unit's level.
struct EvictionScope {
  const TopologyLevelIndex* level = nullptr;  // null: anywhere
  std::vector<int32_t> domains;               // the domains to try, in order
  // The unit holds every role of the group: victims outside one domain can
  // never help it.
  bool whole_group = false;
};

// The scope for `group` (planned with `planner`), the domains ordered by
// DomainsToClear with `blocked` slots left out. Anywhere when the group has
// no Required unit missing members, or its topology cannot be read (the
// planner reports that).
EvictionScope EvictionScopeOf(const PodGroup& group, Snapshot& snapshot,
                              const PlannerConfig& planner, const std::vector<uint8_t>& blocked);

// At most this many domains are searched for one group.
inline constexpr size_t kMaxEvictionDomains = 4;

// FindEvictions kept to one domain of `scope`: a search in each of the first
// kMaxEvictionDomains domains, all sharing twice request.max_fit_checks; the
// choice evicting the fewest pods wins, the earlier domain on a tie. When no
// domain fits, an unrestricted search follows, unless the scope confines the
// whole group and every domain was tried. Without a level: FindEvictions.
EvictionChoice FindEvictionsInScope(Snapshot& snapshot, WhatIf& what_if,
                                    const RunningGroups& running, const FairShare& share,
                                    const EvictionRequest& request, const FitCheck& fits,
                                    const EvictionScope& scope);

}  // namespace hybridjob::scheduler
