// Growth of elastic groups above their minimum, after every waiting group has
// had its chance: one member at a time, fair share first, never into capacity
// a waiting or starved group needs.
#include <algorithm>
#include <map>
#include <optional>

#include "policy_stages.h"

namespace hybridjob::scheduler::policy_stages {
namespace {

// Whether a group waits for capacity it could get some day (or for evictions
// under way): growth would take what frees for it.
bool SomethingWaitsForCapacity(const CycleInput& input, const CycleState& state) {
  for (const Entry& entry : state.entries) {
    if (entry.cause == WaitCause::kEvicting) {
      return true;
    }
  }
  for (const Entry& entry : state.entries) {
    if (entry.cause == WaitCause::kNoCapacity &&
        ChooseReservation(state.snapshot, entry.group, input.policy, input.planner, {}).possible) {
      return true;  // it could fit some day: leave it the capacity that frees
    }
  }
  return false;
}

// Whether the free, unreserved capacity holds every grower's pending members.
bool AmpleCapacityFor(const CycleState& state, const std::vector<size_t>& growers) {
  ResourceList demand;
  for (size_t index : growers) {
    const Entry& entry = state.entries[index];
    std::unordered_set<const PodInfo*> assigned;
    for (const Assignment& assignment : entry.assignments) {
      assigned.insert(assignment.pod);
    }
    for (const PodInfo* pod : entry.group.pending) {
      if (!assigned.contains(pod)) {
        demand += pod->requests;
      }
    }
  }
  ResourceList free;
  const std::vector<NodeState>& slots = state.snapshot.slots();
  for (uint32_t slot = 0; slot < slots.size(); ++slot) {
    const NodeState& node = slots[slot];
    if (!node.schedulable_slot() || state.reserved->Holder(slot) != nullptr) {
      continue;
    }
    ForEachResource(demand, [&](std::string_view name, int64_t) {
      int64_t left = node.info.allocatable.Get(name) - node.requested.Get(name);
      if (left > 0) {
        free.Set(name, free.Get(name) + left);
      }
    });
  }
  bool ample = true;
  ForEachResource(demand, [&](std::string_view name, int64_t amount) {
    if (amount > free.Get(name)) {
      ample = false;
    }
  });
  return ample;
}

// Every pending member that fits, within the max of the queue and its ancestors.
void GrowFully(const CycleInput& input, CycleState& state, Entry& entry) {
  PodGroup current = Current(state.snapshot, entry);
  if (current.pending.empty()) {
    return;
  }
  GroupPlan plan = PlanWithReservations(input, state, current, entry.key, /*growth=*/true);
  if (!plan.placed() || plan.assignments.empty()) {
    if (!plan.reason.empty()) {
      entry.notes.push_back("no room to grow: " + plan.reason);
    }
    return;
  }
  // Within the max of the queue and its ancestors: give back the members that
  // grew last (lowest role priority, highest index) until every ceiling holds.
  ResourceList request = PlanRequest(plan);
  if (const QueueAccount* over = state.share.FirstOverMax(entry.queue, request)) {
    std::vector<size_t> order(plan.assignments.size());
    for (size_t i = 0; i < order.size(); ++i) {
      order[i] = i;
    }
    auto role_priority = [&](const PodInfo* pod) {
      const GroupRole* role = entry.group.spec.FindRole(pod->role);
      return role != nullptr ? role->priority : 0;
    };
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      const PodInfo* pa = plan.assignments[a].pod;
      const PodInfo* pb = plan.assignments[b].pod;
      if (role_priority(pa) != role_priority(pb)) {
        return role_priority(pa) < role_priority(pb);
      }
      return pa->index > pb->index;
    });
    std::vector<uint8_t> dropped(plan.assignments.size(), 0);
    for (size_t i : order) {
      if (state.share.FirstOverMax(entry.queue, request) == nullptr) {
        break;
      }
      request -= plan.assignments[i].pod->requests;
      dropped[i] = 1;
    }
    std::vector<Assignment> kept;
    for (size_t i = 0; i < plan.assignments.size(); ++i) {
      if (dropped[i] == 0) {
        kept.push_back(plan.assignments[i]);
      }
    }
    plan.assignments = std::move(kept);
    // Only the claims of members still placed are bound for them.
    std::erase_if(plan.claim_decisions, [&plan](const ClaimDecision& decision) {
      return std::none_of(plan.assignments.begin(), plan.assignments.end(),
                          [&decision](const Assignment& assignment) {
                            const PodInfo& pod = *assignment.pod;
                            return pod.namespace_name == decision.namespace_name &&
                                   std::find(pod.claims.begin(), pod.claims.end(),
                                             decision.claim_name) != pod.claims.end();
                          });
    });
    entry.notes.push_back(DescribeQueue(input.table, *over, entry.queue) + " reached its max");
  }
  if (plan.assignments.empty()) {
    return;
  }
  size_t before = entry.assignments.size();
  if (Commit(state, entry, plan)) {
    entry.grown += static_cast<int32_t>(entry.assignments.size() - before);
  }
}

// One more member for the entry, of its role that goes first; false when no
// role can grow. A role that cannot is blocked for the rest of the stage.
bool GrowOneMember(const CycleInput& input, CycleState& state, Entry& entry,
                   std::vector<uint8_t>& blocked_roles, std::vector<int32_t>& grown_in_role) {
  PodGroup current = Current(state.snapshot, entry);
  const std::vector<GroupRole>& roles = entry.group.spec.roles;
  std::vector<int32_t> counts(roles.size(), 0);
  for (size_t r = 0; r < roles.size(); ++r) {
    counts[r] = BoundInRole(current, roles[r].name);
  }
  // Higher role priority first; equal priorities take turns.
  std::optional<size_t> choice;
  const PodInfo* next_member = nullptr;
  for (size_t r = 0; r < roles.size(); ++r) {
    if (blocked_roles[r] != 0 || counts[r] >= roles[r].max_replicas) {
      continue;
    }
    const PodInfo* lowest = nullptr;
    for (const PodInfo* pod : current.pending) {
      if (pod->role == roles[r].name && (lowest == nullptr || pod->index < lowest->index)) {
        lowest = pod;
      }
    }
    if (lowest == nullptr) {
      continue;
    }
    if (!choice.has_value() || roles[r].priority > roles[*choice].priority ||
        (roles[r].priority == roles[*choice].priority &&
         grown_in_role[r] < grown_in_role[*choice])) {
      choice = r;
      next_member = lowest;
    }
  }
  if (!choice.has_value()) {
    return false;
  }
  size_t role = *choice;
  if (const QueueAccount* over = state.share.FirstOverMax(entry.queue, next_member->requests)) {
    blocked_roles[role] = 1;
    entry.notes.push_back(DescribeQueue(input.table, *over, entry.queue) + " reached its max");
    return true;
  }
  PodGroup one_more = current;
  for (size_t r = 0; r < roles.size(); ++r) {
    GroupRole& spec = one_more.spec.roles[r];
    spec.max_replicas = std::max(counts[r], spec.min_replicas) + (r == role ? 1 : 0);
  }
  GroupPlan plan = PlanWithReservations(input, state, one_more, entry.key, /*growth=*/true);
  if (!plan.placed() || plan.assignments.size() != 1 || !Commit(state, entry, plan)) {
    blocked_roles[role] = 1;
    return true;
  }
  ++grown_in_role[role];
  ++entry.grown;
  return true;
}

}  // namespace

void Grow(const CycleInput& input, CycleState& state) {
  std::vector<size_t> growers;
  for (size_t i = 0; i < state.entries.size(); ++i) {
    const Entry& entry = state.entries[i];
    if (entry.lone) {
      continue;
    }
    if ((entry.running && entry.cause == WaitCause::kNone) || entry.placed) {
      if (entry.group.pending.size() > entry.assignments.size()) {
        growers.push_back(i);
      }
    }
  }
  if (growers.empty()) {
    return;
  }
  auto defer = [&](WaitCause cause, const std::string& reason) {
    for (size_t index : growers) {
      Entry& entry = state.entries[index];
      if (entry.running) {
        entry.cause = cause;
        entry.plan.outcome = PlanOutcome::kWait;
        entry.plan.reason = reason;
      }
    }
  };
  if (!input.policy.reclaim.growth) {
    defer(WaitCause::kNoRoomToGrow, "elastic growth is turned off");
    return;
  }
  if (SomethingWaitsForCapacity(input, state)) {
    defer(WaitCause::kGrowthDeferred, "growth deferred: other groups wait for capacity");
    return;
  }
  // Groups whose rebalancing victims are gone take their places first.
  for (size_t index : growers) {
    Entry& entry = state.entries[index];
    auto owed = state.evictions.owed_growth.find(entry.key);
    if (owed == state.evictions.owed_growth.end()) {
      continue;
    }
    std::vector<uint8_t> blocked(entry.group.spec.roles.size(), 0);
    std::vector<int32_t> grown(entry.group.spec.roles.size(), 0);
    while (owed->second.members > 0) {
      const int32_t before = entry.grown;
      if (!GrowOneMember(input, state, entry, blocked, grown)) {
        break;
      }
      if (entry.grown > before) {
        --owed->second.members;
      }
    }
  }
  std::stable_sort(growers.begin(), growers.end(), [&state](size_t a, size_t b) {
    return GroupGoesFirst(state.entries[a].group, state.entries[b].group);
  });
  std::map<std::string, std::vector<size_t>> by_queue;
  for (size_t index : growers) {
    by_queue[state.entries[index].queue].push_back(index);
  }
  for (auto& [queue, line] : by_queue) {
    OrderLine(input, state, line);
  }
  if (by_queue.size() == 1) {
    growers = by_queue.begin()->second;
  }
  if (by_queue.size() == 1 || AmpleCapacityFor(state, growers)) {
    // One queue, or room for everyone: fairness has nothing to share out.
    for (size_t index : growers) {
      GrowFully(input, state, state.entries[index]);
    }
  } else {
    // Water-filling: one member at a time to the queue with the lowest share.
    std::unordered_map<size_t, std::vector<uint8_t>> blocked;
    std::unordered_map<size_t, std::vector<int32_t>> grown;
    for (size_t index : growers) {
      size_t roles = state.entries[index].group.spec.roles.size();
      blocked[index].assign(roles, 0);
      grown[index].assign(roles, 0);
    }
    QueueTurns turns(state.share, std::move(by_queue));
    while (std::optional<size_t> index = turns.Next()) {
      if (!GrowOneMember(input, state, state.entries[*index], blocked[*index], grown[*index])) {
        turns.Pass();  // this group cannot grow further: the next one in the queue
      }
    }
  }
  // The running groups, if built already, miss what grew: built anew on use.
  if (std::any_of(growers.begin(), growers.end(),
                  [&state](size_t index) { return state.entries[index].grown > 0; })) {
    state.running.reset();
  }
  for (size_t index : growers) {
    Entry& entry = state.entries[index];
    if (entry.running && entry.grown == 0) {
      entry.cause = WaitCause::kNoRoomToGrow;
      entry.plan.outcome = PlanOutcome::kWait;
      entry.plan.reason = "no room to grow";
    }
  }
}

}  // namespace hybridjob::scheduler::policy_stages
