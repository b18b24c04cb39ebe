// One scheduling cycle: pending pods grouped into gangs, gangs ordered, each
// planned against one snapshot and committed before the next is planned, so
// two groups that fit alone but not together never both hold capacity.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {

// Groups pending pods by namespace and job-name label; a pod without that label
// is a group of one (gates and resourceClaims: see HoldBlockedMembers). The group spec comes from
// the members' annotation (the first valid one by pod name); bound members come from the snapshot.
// Pods already bound or finished are skipped. Groups come out in queue order.
std::vector<PodGroup> BuildGroups(std::span<const PodInfo* const> pending_pods,
                                  const Snapshot& snapshot);

// Members that cannot be bound yet: a gated member of a group that has not
// started holds the whole gang (gated_reason); gated members of a running
// group are dropped from `pending` until their gates are gone. A member with
// resourceClaims sets unsupported_reason. BuildGroups applies this and drops
// groups left with nothing pending.
void HoldBlockedMembers(PodGroup& group);

// Queue order: higher priority first, then older, then by namespace and name.
bool GroupGoesFirst(const PodGroup& a, const PodGroup& b);
void SortGroups(std::vector<PodGroup>& groups);

// Empty when a pod exists (pending or bound) for every index below every
// role's maximum, else which are missing, e.g. "worker has 3 of 8 member pods".
// A group with bound members has started already and is always complete.
std::string MissingMembers(const PodGroup& group);

// Pointers in a decision (group members, assignments) refer to the caller's
// pending pods and to bound pods owned by the snapshot: valid until those change.
struct GroupDecision {
  PodGroup group;
  GroupPlan plan;  // a placed plan is already committed to the snapshot
};

struct CycleResult {
  std::vector<GroupDecision> decisions;  // in the order the groups were planned
  uint32_t next_start_slot = 0;
};

// Orders `groups`, then plans each against `snapshot`, committing every placed
// plan before the next group is planned. A group still missing member pods
// waits unless its schedule timeout (counted from its oldest member's
// creation) has passed at `now`; then it is planned with the members it has.
CycleResult RunCycle(Snapshot& snapshot, std::vector<PodGroup> groups, Timestamp now,
                     const PlannerConfig& config, uint32_t start_slot = 0);

}  // namespace hybridjob::scheduler
