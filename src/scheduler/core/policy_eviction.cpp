// The stages that take capacity back: evictions for groups short of their
// minimum, and the reservations that hold nodes for waiting groups.
#include <algorithm>
#include <optional>
#include <set>

#include <hybridjob/scheduler/core/preemption.h>

#include "policy_stages.h"

namespace hybridjob::scheduler::policy_stages {
namespace {

using std::chrono::seconds;

// What the group would put over the max of each ancestor of its queue, on
// the projected usage (evictions in flight gone).
std::vector<std::pair<std::string, ResourceList>> OverCeilings(const FairShare& projected,
                                                               const Entry& entry) {
  std::vector<std::pair<std::string, ResourceList>> out;
  for (const QueueAccount* account : projected.Path(entry.queue)) {
    if (account->spec.name == entry.queue) {
      continue;
    }
    ResourceList excess;
    ResourceList after = AsGpuEquivalents(account->used + entry.need, projected.gpus());
    for (const ScalarResource& limit : account->spec.max.limits()) {
      if (after.Get(limit.name) > limit.amount) {
        excess.Set(limit.name, after.Get(limit.name) - limit.amount);
      }
    }
    if (!(excess == ResourceList{})) {
      out.emplace_back(account->spec.name, std::move(excess));
    }
  }
  return out;
}

// Records the choice's evictions for the entry, and reserves their nodes
// (and those of pods already leaving for it) for it. The caller rebuilds the
// reserved slots.
void EvictFor(const CycleInput& input, CycleState& state, Entry& entry,
              const EvictionChoice& choice) {
  RunningGroups& running = Running(input, state);
  std::set<std::string> nodes;
  std::vector<std::string> names;
  for (const VictimUnit& unit : choice.victims) {
    RunningGroup& victim = running.groups()[unit.group];
    std::string what;
    if (unit.whole()) {
      what = victim.Key() + " is evicted whole (priority " + std::to_string(victim.priority) +
             " < " + std::to_string(entry.group.priority) + ")";
    } else {
      const RunningRole& role = victim.roles[static_cast<size_t>(unit.role)];
      what = victim.Key() + " " + role.name + " shrinks to " +
             std::to_string(role.members.size() - 1) + " members (min " +
             std::to_string(role.min_replicas) + ")";
    }
    std::string message = std::string(EvictionCauseName(unit.cause)) + ": making room for " +
                          entry.key + " (queue " + entry.queue + "); " + what;
    for (const PodInfo* pod : unit.pods) {
      DecideEviction(input, state, *pod, victim, entry, unit.cause, message);
      nodes.insert(pod->node_name);
      names.push_back(pod->Key());
    }
    running.MarkLeaving(unit.group, unit.pods);
  }
  for (const PodInfo* pod : state.evictions.leaving_for[entry.key]) {
    nodes.insert(pod->node_name);
  }
  entry.cause = WaitCause::kEvicting;
  std::string listed;
  for (size_t i = 0; i < names.size() && i < 4; ++i) {
    listed += (i == 0 ? "" : ", ") + names[i];
  }
  if (names.size() > 4) {
    listed += ", ...";
  }
  entry.plan.reason = "evicting " + Plural(names.size(), "pod", "pods") +
                      (choice.domain.empty() ? "" : " in " + choice.domain) +
                      " to make room for it: " + listed;

  Reservation* reservation = FindReservation(state, entry.key);
  if (reservation == nullptr) {
    Reservation made;
    made.group_key = entry.key;
    made.namespace_name = entry.group.namespace_name;
    made.group_name = entry.group.name;
    made.since = input.now;
    state.reservations.push_back(std::move(made));
    reservation = &state.reservations.back();
  }
  reservation->cause = ReservationCause::kEviction;
  reservation->last_seen = input.now;
  nodes.insert(reservation->nodes.begin(), reservation->nodes.end());
  reservation->nodes.assign(nodes.begin(), nodes.end());
}

// An AttainedService queue's starved groups get reservations only when its
// settings ask for them (attainedService.reserveForStarved).
bool ReservesForStarved(const CycleInput& input, const Entry& entry) {
  return input.policy.attained_service.reserve_for_starved ||
         !OrderedByService(input, entry.queue);
}

}  // namespace

void ChooseEvictions(const CycleInput& input, CycleState& state) {
  bool reclaim = input.policy.reclaim.enabled;
  bool preempt = input.policy.preemption.enabled;
  // Groups short of capacity, and groups an ancestor's max holds back: what
  // a sibling borrowed under that ancestor can be taken back for them.
  std::vector<size_t> waiting;
  for (size_t i = 0; i < state.entries.size(); ++i) {
    const Entry& entry = state.entries[i];
    if (entry.cause == WaitCause::kNoCapacity ||
        (entry.cause == WaitCause::kOverQueueMax && !entry.ceiling_queue.empty())) {
      waiting.push_back(i);
    }
  }
  std::sort(waiting.begin(), waiting.end(), [&state](size_t a, size_t b) {
    return state.entries[a].sequence < state.entries[b].sequence;
  });
  if (waiting.empty()) {
    return;
  }
  // Projected usage: what each queue uses once the evictions in flight end.
  std::optional<FairShare> projected;
  int32_t searches = 0;
  bool changed_reservations = false;
  for (size_t index : waiting) {
    Entry& entry = state.entries[index];
    auto leaving_it = state.evictions.leaving_for.find(entry.key);
    bool has_in_flight =
        leaving_it != state.evictions.leaving_for.end() && !leaving_it->second.empty();
    if (!has_in_flight && (!reclaim && !preempt)) {
      continue;
    }
    if (!has_in_flight && searches >= input.policy.reclaim.max_groups_per_cycle) {
      continue;
    }
    RunningGroups& running = Running(input, state);
    if (!projected.has_value()) {
      projected = state.share;
      for (const auto& [group, pods] : state.evictions.leaving_for) {
        for (const PodInfo* pod : pods) {
          projected->Remove(QueueOfPod(*pod), pod->requests, 1);
        }
      }
    }
    EvictionRequest request;
    request.group_key = entry.key;
    request.queue = entry.queue;
    request.priority = entry.group.priority;
    request.service_level = entry.service_level;
    request.need = entry.need;
    request.reclaim = reclaim;
    request.known_not_to_fit = !has_in_flight && entry.cause == WaitCause::kNoCapacity;
    if (!entry.ceiling_queue.empty()) {
      request.within_queue = entry.ceiling_queue;
      request.over_ceiling = OverCeilings(*projected, entry);
    }
    // A group whose PriorityClass (or spec.preemptionPolicy) says Never
    // waits rather than preempt.
    if (preempt && entry.group.preempts) {
      request.preemption_candidates =
          PreemptionCandidates(running, *projected, entry.key, entry.group.priority, entry.queue);
    }
    if (!has_in_flight && !request.reclaim && request.preemption_candidates.empty()) {
      continue;
    }
    ++searches;
    std::vector<uint8_t> blocked = state.reserved->BlockedFor(entry.key);
    request.blocked_slots = &blocked;
    PodGroup at_minimum = AtMinimum(entry.group);
    EvictionChoice choice;
    {
      WhatIf what_if(state.snapshot);
      state.reserved->FillFor(what_if, entry.key);
      if (has_in_flight) {
        for (const PodInfo* pod : leaving_it->second) {
          what_if.Release(*pod);
        }
      }
      FitCheck fits = [&]() {
        return PlanGroup(state.snapshot, at_minimum, input.planner).placed();
      };
      // A gang that must keep to one topology domain takes its victims
      // inside one, scoped on the state after the edits above.
      const EvictionScope scope =
          EvictionScopeOf(at_minimum, state.snapshot, input.planner, blocked);
      choice =
          FindEvictionsInScope(state.snapshot, what_if, running, *projected, request, fits, scope);
    }
    if (!choice.fits) {
      if (has_in_flight) {
        entry.notes.push_back(
            Plural(leaving_it->second.size(), "evicted pod is", "evicted pods are") +
            " still ending");
      }
      continue;
    }
    if (choice.victims.empty()) {
      if (has_in_flight) {
        entry.cause = WaitCause::kEvicting;
        entry.plan.reason = "waiting for " +
                            Plural(leaving_it->second.size(), "evicted pod", "evicted pods") +
                            " to end; their nodes are reserved for it";
        if (Reservation* reservation = FindReservation(state, entry.key)) {
          reservation->last_seen = input.now;
        }
      }
      continue;
    }
    for (const VictimUnit& unit : choice.victims) {
      projected->Remove(running.groups()[unit.group].queue, unit.requests,
                        static_cast<int64_t>(unit.pods.size()));
    }
    projected->Add(entry.queue, entry.need);
    EvictFor(input, state, entry, choice);
    changed_reservations = true;
  }
  if (changed_reservations) {
    RebuildReserved(state);
  }
}

void KeepReservations(const CycleInput& input, CycleState& state) {
  bool starvation_on = input.policy.starvation.max_wait_seconds > 0 &&
                       input.policy.starvation.max_reserved_groups > 0;
  std::vector<Reservation> kept;
  for (Reservation& reservation : state.reservations) {
    auto it = state.entry_by_key.find(reservation.group_key);
    if (it == state.entry_by_key.end()) {
      kept.push_back(std::move(reservation));  // not seen: kept until forgotten (Classify)
      continue;
    }
    const Entry& entry = state.entries[it->second];
    const bool in_flight = state.evictions.LeavingFor(entry.key);
    bool keep = false;
    if (entry.placed || entry.running) {
      keep = false;
    } else if (entry.cause == WaitCause::kEvicting || in_flight) {
      keep = true;
    } else if (entry.cause == WaitCause::kNoCapacity &&
               reservation.cause == ReservationCause::kStarvation && starvation_on &&
               ReservesForStarved(input, entry)) {
      // Still starved: keep the same nodes while every one is usable.
      keep = std::all_of(reservation.nodes.begin(), reservation.nodes.end(),
                         [&state](const std::string& node) {
                           const NodeState* slot = state.snapshot.FindNode(node);
                           return slot != nullptr && slot->schedulable_slot() && slot->info.ready &&
                                  !slot->info.unschedulable;
                         });
    }
    if (keep) {
      reservation.last_seen = input.now;
      kept.push_back(std::move(reservation));
    }
  }
  state.reservations = std::move(kept);
  RebuildReserved(state);

  // A restarting gang's hold lasts until it is placed again; while its new
  // members wait (or are still being created) it is seen, and kept.
  std::erase_if(state.restart_holds, [&](Reservation& hold) {
    auto it = state.entry_by_key.find(hold.group_key);
    if (it == state.entry_by_key.end()) {
      return false;  // not seen: kept until forgotten
    }
    const Entry& entry = state.entries[it->second];
    if (entry.placed || entry.running) {
      return true;
    }
    hold.last_seen = input.now;
    return false;
  });
  state.restart_held = state.restart_holds.empty()
                           ? nullptr
                           : std::make_unique<ReservedSlots>(state.snapshot, state.restart_holds);
}

void ReserveForStarved(const CycleInput& input, CycleState& state) {
  const StarvationSettings& settings = input.policy.starvation;
  if (settings.max_wait_seconds <= 0 || settings.max_reserved_groups <= 0) {
    return;
  }
  int32_t held = static_cast<int32_t>(
      std::count_if(state.reservations.begin(), state.reservations.end(),
                    [](const Reservation& r) { return r.cause == ReservationCause::kStarvation; }));
  std::vector<size_t> starved;
  for (size_t i = 0; i < state.entries.size(); ++i) {
    const Entry& entry = state.entries[i];
    if (entry.cause == WaitCause::kNoCapacity &&
        input.now - entry.group.creation_time >= seconds{settings.max_wait_seconds} &&
        ReservesForStarved(input, entry)) {
      starved.push_back(i);
    }
  }
  std::stable_sort(starved.begin(), starved.end(), [&state](size_t a, size_t b) {
    return GroupGoesFirst(state.entries[a].group, state.entries[b].group);
  });
  for (size_t index : starved) {
    Entry& entry = state.entries[index];
    if (const Reservation* reservation = FindReservation(state, entry.key)) {
      std::string nodes;
      for (const std::string& node : reservation->nodes) {
        nodes += (nodes.empty() ? "" : ", ") + node;
      }
      entry.notes.push_back("starved; nodes reserved for it: " + nodes);
      continue;
    }
    if (held >= settings.max_reserved_groups) {
      continue;
    }
    std::vector<uint8_t> unavailable = state.reserved->BlockedFor(entry.key);
    ReservationChoice choice =
        ChooseReservation(state.snapshot, entry.group, input.policy, input.planner, unavailable);
    if (!choice.possible) {
      entry.notes.push_back("starved, but no reservation can help: " + choice.reason);
      continue;
    }
    if (choice.slots.empty()) {
      continue;
    }
    Reservation reservation;
    reservation.group_key = entry.key;
    reservation.namespace_name = entry.group.namespace_name;
    reservation.group_name = entry.group.name;
    reservation.cause = ReservationCause::kStarvation;
    reservation.since = input.now;
    reservation.last_seen = input.now;
    std::string nodes;
    for (uint32_t slot : choice.slots) {
      reservation.nodes.push_back(state.snapshot.slots()[slot].info.name);
      nodes += (nodes.empty() ? "" : ", ") + reservation.nodes.back();
    }
    std::sort(reservation.nodes.begin(), reservation.nodes.end());
    state.reservations.push_back(std::move(reservation));
    RebuildReserved(state);
    ++held;
    entry.notes.push_back("starved; nodes reserved for it: " + nodes);
  }
}

}  // namespace hybridjob::scheduler::policy_stages
