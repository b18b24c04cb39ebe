// What the cycle tells the shell and the user: one decision per group (bind,
// wait with a reason, evict) and the status of every queue.
#include <algorithm>
#include <map>
#include <set>

#include "policy_stages.h"

namespace hybridjob::scheduler::policy_stages {
namespace {

// Each group waiting to start gets its place in its queue's line.
void NumberQueueLines(CycleState& state) {
  std::map<std::string_view, std::vector<Entry*>> lines;
  for (Entry& entry : state.entries) {
    // One that can never start stands in nobody's way: it is not counted.
    if (entry.starting && !entry.placed && !NeverStarts(entry)) {
      lines[entry.queue].push_back(&entry);
    }
  }
  for (auto& [queue, line] : lines) {
    std::stable_sort(line.begin(), line.end(), [](const Entry* a, const Entry* b) {
      return GroupGoesFirst(a->group, b->group);
    });
    for (size_t i = 0; i < line.size(); ++i) {
      line[i]->queue_position = static_cast<int32_t>(i + 1);
    }
  }
}

PolicyDecision DecideOne(const CycleState& state, Entry& entry) {
  PolicyDecision decision;
  decision.queue = entry.queue;
  decision.cause = entry.cause;
  decision.grown = entry.grown;
  if (!entry.placed && !entry.running) {
    const Reservation* reservation = nullptr;
    for (const Reservation& held : state.reservations) {
      reservation = held.group_key == entry.key ? &held : reservation;
    }
    decision.waiting_reason = WaitingReasonCode(
        entry.cause, entry.plan.shortfall,
        reservation != nullptr && reservation->cause == ReservationCause::kStarvation,
        entry.behind_reservations);
    decision.queue_position = entry.queue_position;
  }
  GroupPlan& plan = decision.plan;
  if (entry.assignments.empty() && !entry.placed) {
    plan = std::move(entry.plan);
    if (plan.outcome == PlanOutcome::kPlaced) {
      plan.outcome = PlanOutcome::kWait;
    }
    plan.assignments.clear();
    plan.surplus.clear();
    for (const std::string& note : entry.notes) {
      plan.reason += (plan.reason.empty() ? "" : "; ") + note;
    }
    decision.group = std::move(entry.group);
    return decision;
  }
  const GroupSpec& spec = entry.group.spec;
  auto role_order = [&spec](const PodInfo* pod) {
    for (size_t r = 0; r < spec.roles.size(); ++r) {
      if (spec.roles[r].name == pod->role) {
        return r;
      }
    }
    return spec.roles.size();
  };
  plan.outcome = PlanOutcome::kPlaced;
  plan.next_start_slot = entry.plan.next_start_slot;
  plan.assignments = entry.assignments;
  plan.claim_decisions = entry.claim_decisions;
  plan.placement = entry.placement;
  std::stable_sort(plan.assignments.begin(), plan.assignments.end(),
                   [&](const Assignment& a, const Assignment& b) {
                     if (role_order(a.pod) != role_order(b.pod)) {
                       return role_order(a.pod) < role_order(b.pod);
                     }
                     return a.pod->index < b.pod->index;
                   });
  for (const GroupRole& role : spec.roles) {
    RoleSummary summary{role.name, role.min_replicas, role.max_replicas,
                        BoundInRole(entry.group, role.name), 0};
    for (const Assignment& assignment : plan.assignments) {
      if (assignment.pod->role == role.name) {
        ++summary.placed;
      }
    }
    plan.roles.push_back(std::move(summary));
  }
  if (!entry.had_bound) {
    // A first placement: what is left out is surplus (or ignored: no place in
    // the spec, or a duplicate index), as the planner reports it.
    std::unordered_set<const PodInfo*> assigned;
    std::set<std::pair<std::string, int32_t>> taken;
    for (const Assignment& assignment : plan.assignments) {
      assigned.insert(assignment.pod);
      taken.insert({assignment.pod->role, assignment.pod->index});
    }
    std::vector<const PodInfo*> rest;
    for (const PodInfo* pod : entry.group.pending) {
      if (!assigned.contains(pod)) {
        rest.push_back(pod);
      }
    }
    std::sort(rest.begin(), rest.end(), [](const PodInfo* a, const PodInfo* b) {
      return a->index != b->index ? a->index < b->index : a->name < b->name;
    });
    for (const PodInfo* pod : rest) {
      const GroupRole* role = spec.FindRole(pod->role);
      if (role == nullptr || pod->index >= role->max_replicas) {
        plan.ignored.push_back(pod);
      } else if (pod->index >= 0 && !taken.insert({pod->role, pod->index}).second) {
        plan.ignored.push_back(pod);
      } else {
        plan.surplus.push_back(pod);
      }
    }
  }
  for (const std::string& note : entry.notes) {
    plan.reason += (plan.reason.empty() ? "" : "; ") + note;
  }
  decision.group = std::move(entry.group);
  return decision;
}

// One row per queue, counting each group in its queue and every ancestor.
void FillQueues(const CycleState& state, PolicyCycleResult& result) {
  const FairTargets targets = state.targets.has_value() ? *state.targets : QueueTargets(state);
  std::unordered_map<std::string_view, size_t> row_of;
  for (const QueueAccount& account : state.share.accounts()) {
    QueueStatus status;
    status.name = account.spec.name;
    status.parent = account.spec.parent;
    status.leaf = account.leaf;
    status.configured = account.configured;
    status.weight = account.spec.weight;
    status.used = account.used;
    status.guaranteed = account.spec.guaranteed;
    status.max = account.spec.max;
    status.dominant_share = DominantShare(account.used, state.share.capacity(), state.share.gpus());
    status.weighted_share = state.share.WeightedShare(account);
    status.fair_share = targets.Queue(account.spec.name);
    row_of.emplace(account.spec.name, result.queues.size());
    result.queues.push_back(std::move(status));
  }
  // A group counts in its queue's row and in every ancestor's.
  for (const Entry& entry : state.entries) {
    bool placed = entry.placed;
    bool waiting = !placed && !entry.running && entry.cause != WaitCause::kNone;
    if (!placed && !waiting) {
      continue;
    }
    for (const QueueAccount* account : state.share.Path(entry.queue)) {
      QueueStatus& status = result.queues[row_of.at(account->spec.name)];
      ++(placed ? status.placed_groups : status.waiting_groups);
    }
  }
  std::sort(result.queues.begin(), result.queues.end(),
            [](const QueueStatus& a, const QueueStatus& b) { return a.name < b.name; });
}

}  // namespace

PolicyCycleResult Decide(const CycleInput& input, CycleState& state) {
  PolicyCycleResult result;
  std::vector<size_t> order(state.entries.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(), [&state](size_t a, size_t b) {
    const Entry& ea = state.entries[a];
    const Entry& eb = state.entries[b];
    if ((ea.sequence < 0) != (eb.sequence < 0)) {
      return ea.sequence >= 0;
    }
    return ea.sequence != eb.sequence ? ea.sequence < eb.sequence : ea.input_order < eb.input_order;
  });
  FillQueues(state, result);
  NumberQueueLines(state);
  for (size_t index : order) {
    result.decisions.push_back(DecideOne(state, state.entries[index]));
  }
  // Sizes changed in this cycle: shrunk by evictions, or grown while running.
  std::vector<GroupResize> resizes = std::move(state.resizes);
  auto resized = [&resizes, &input](const std::string& key) {
    std::erase_if(resizes, [&key](const GroupResize& resize) { return resize.group_key == key; });
    resizes.push_back(GroupResize{key, input.now});
  };
  for (const Eviction& eviction : state.evictions.decided) {
    resized(eviction.victim_group);
  }
  for (const Entry& entry : state.entries) {
    if (entry.running && entry.grown > 0) {
      resized(entry.key);
    }
  }
  result.state.resizes = std::move(resizes);
  result.state.restart_holds = std::move(state.restart_holds);
  for (auto& [key, owed] : state.evictions.owed_growth) {
    if (owed.members > 0) {
      result.state.owed.push_back(owed);
    }
  }
  std::sort(result.state.owed.begin(), result.state.owed.end(),
            [](const PolicyState::OwedGrowth& a, const PolicyState::OwedGrowth& b) {
              return a.group_key < b.group_key;
            });
  result.rebalanced = std::move(state.rebalanced);
  result.evictions = std::move(state.evictions.decided);
  result.reservations = state.reservations;
  result.state.evictions = std::move(state.evictions.in_flight);
  result.state.reservations = std::move(state.reservations);
  result.state.refused = std::move(state.evictions.refused);
  result.state.service = SettleService(input, state);
  result.next_start_slot = state.start_slot;
  return result;
}

}  // namespace hybridjob::scheduler::policy_stages
