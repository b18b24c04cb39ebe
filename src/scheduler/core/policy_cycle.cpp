#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/waiting.h>
#include <hybridjob/common/backoff.h>
#include <hybridjob/scheduler/core/cycle.h>
#include <hybridjob/scheduler/core/fair_share.h>
#include <hybridjob/scheduler/core/policy_cycle.h>
#include <hybridjob/scheduler/core/preemption.h>

#include "policy_stages.h"

namespace hybridjob::scheduler {
namespace policy_stages {

std::string Plural(size_t count, std::string_view one, std::string_view many) {
  return std::to_string(count) + " " + std::string(count == 1 ? one : many);
}

std::string DescribeOverMax(const ResourceCeiling& max, const ResourceList& usage) {
  std::string_view name = max.FirstExceeded(usage);
  ResourceList used;
  used.Set(name, usage.Get(name));
  ResourceList limit;
  limit.Set(name, *max.Limit(name));
  return used.ToString() + " over its max " + limit.ToString();
}

std::string ListNames(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size() && i < 4; ++i) {
    out += (i == 0 ? "" : ", ") + names[i];
  }
  if (names.size() > 4) {
    out += ", ...";
  }
  return out;
}

QueueTurns::QueueTurns(const FairShare& share, std::map<std::string, std::vector<size_t>> lines)
    : share_(share) {
  for (auto& [queue, entries] : lines) {
    lines_.emplace(queue, Line{std::move(entries), 0});
  }
}

std::optional<size_t> QueueTurns::Next() {
  candidates_.clear();
  for (const auto& [queue, line] : lines_) {
    if (line.next < line.entries.size()) {
      candidates_.push_back(queue);
    }
  }
  std::string_view best = share_.NextQueue(candidates_);
  if (best.empty()) {
    current_ = nullptr;
    return std::nullopt;
  }
  current_ = &lines_.find(best)->second;
  return current_->entries[current_->next];
}

void QueueTurns::Pass() {
  if (current_ != nullptr) {
    ++current_->next;
  }
}

std::vector<size_t> QueueTurns::Close() {
  std::vector<size_t> behind;
  if (current_ != nullptr) {
    behind.assign(current_->entries.begin() + static_cast<ptrdiff_t>(current_->next) + 1,
                  current_->entries.end());
    current_->next = current_->entries.size();
  }
  return behind;
}

bool EvictionBook::LeavingFor(const std::string& key) const {
  auto it = leaving_for.find(key);
  return it != leaving_for.end() && !it->second.empty();
}

CycleState::CycleState(Snapshot& snapshot, const CycleInput& input, uint32_t start_slot,
                       QueueUsageMemo* queue_usage)
    : snapshot(snapshot),
      share(FairShare::FromSnapshot(snapshot, input.table, input.policy,
                                    input.planner.gpu_resources, queue_usage)),
      start_slot(start_slot),
      reserved(std::make_unique<ReservedSlots>(snapshot, reservations)) {}

void RebuildReserved(CycleState& state) {
  state.reserved = std::make_unique<ReservedSlots>(state.snapshot, state.reservations);
}

Reservation* FindReservation(CycleState& state, const std::string& key) {
  for (Reservation& reservation : state.reservations) {
    if (reservation.group_key == key) {
      return &reservation;
    }
  }
  return nullptr;
}

void DropReservation(CycleState& state, const std::string& key) {
  size_t before = state.reservations.size();
  std::erase_if(state.reservations,
                [&key](const Reservation& reservation) { return reservation.group_key == key; });
  if (state.reservations.size() != before) {
    RebuildReserved(state);
  }
}

GroupPlan PlanWithReservations(const CycleInput& input, CycleState& state, const PodGroup& group,
                               const std::string& key, bool growth) {
  WhatIf what_if(state.snapshot);
  state.reserved->FillFor(what_if, key);
  if (growth && state.restart_held != nullptr) {
    state.restart_held->FillFor(what_if, key);
  }
  GroupPlan plan = PlanGroup(state.snapshot, group, input.planner, state.start_slot);
  state.start_slot = plan.next_start_slot;
  return plan;
}

void DecideEviction(const CycleInput& input, CycleState& state, const PodInfo& pod,
                    const RunningGroup& victim, const Entry& for_entry, EvictionCause cause,
                    std::string message, bool rebalance) {
  Eviction eviction;
  eviction.namespace_name = pod.namespace_name;
  eviction.name = pod.name;
  eviction.uid = pod.uid;
  eviction.node_name = pod.node_name;
  eviction.role = pod.role;
  eviction.index = pod.index;
  eviction.cause = cause;
  eviction.victim_group = victim.Key();
  eviction.victim_queue = victim.queue;
  eviction.for_group = for_entry.key;
  eviction.for_queue = for_entry.queue;
  eviction.rebalance = rebalance;
  eviction.message = std::move(message);
  state.evictions.decided.push_back(std::move(eviction));
  state.evictions.in_flight.push_back(InFlightEviction{pod.namespace_name, pod.name, pod.uid,
                                                       for_entry.key, cause, input.now, rebalance});
  state.evictions.leaving.insert(pod.Key());
  state.evictions.leaving_for[for_entry.key].push_back(&pod);
}

bool Commit(CycleState& state, Entry& entry, GroupPlan& plan) {
  if (Status status = CommitPlan(state.snapshot, plan); !status.ok()) {
    entry.notes.push_back("could not assume the plan: " + status.ToString());
    return false;
  }
  state.share.Add(entry.queue, PlanRequest(plan), static_cast<int64_t>(plan.assignments.size()));
  entry.assignments.insert(entry.assignments.end(), plan.assignments.begin(),
                           plan.assignments.end());
  entry.claim_decisions.insert(entry.claim_decisions.end(), plan.claim_decisions.begin(),
                               plan.claim_decisions.end());
  if (!plan.placement.empty()) {
    entry.placement = plan.placement;
  }
  return true;
}

RunningGroups& Running(const CycleInput& input, CycleState& state) {
  if (!state.running.has_value()) {
    state.running =
        RunningGroups::FromSnapshot(state.snapshot, input.policy, state.evictions.leaving);
    for (RunningGroup& group : state.running->groups()) {
      group.placed_this_cycle = state.placed_keys.contains(group.Key());
      group.service_level = RunningServiceLevel(input, state, group);
      if (!state.evictions.shielding.empty()) {
        group.shielded =
            std::any_of(group.members.begin(), group.members.end(), [&state](const PodInfo* pod) {
              return state.evictions.shielding.contains(pod->Key());
            });
      }
    }
  }
  return *state.running;
}

PodGroup Current(const Snapshot& snapshot, const Entry& entry) {
  PodGroup current = entry.group;
  current.bound = snapshot.GroupMembers(entry.group.namespace_name, entry.group.name);
  std::unordered_set<const PodInfo*> assigned;
  for (const Assignment& assignment : entry.assignments) {
    assigned.insert(assignment.pod);
  }
  std::erase_if(current.pending, [&](const PodInfo* pod) { return assigned.contains(pod); });
  return current;
}

std::string DescribeQueue(const QueueTable& table, const QueueAccount& account,
                          std::string_view leaf) {
  std::string out = "queue " + account.spec.name;
  if (account.spec.name != leaf) {
    const QueueSpec* parent = table.Parent(leaf);
    bool direct = parent != nullptr && parent->name == account.spec.name;
    out += std::string(direct ? " (parent of " : " (ancestor of ") + std::string(leaf) + ")";
  }
  return out;
}

}  // namespace policy_stages

void OrderForMarking(std::vector<Eviction>& evictions) {
  std::stable_sort(evictions.begin(), evictions.end(), [](const Eviction& a, const Eviction& b) {
    return std::tie(a.victim_group, a.role, a.index) < std::tie(b.victim_group, b.role, b.index);
  });
}

std::string_view WaitingReasonCode(WaitCause cause, Shortfall shortfall, bool holds_reservation,
                                   bool behind_reservations) {
  switch (cause) {
    case WaitCause::kNone:
    case WaitCause::kAssembling:
    case WaitCause::kGrowthDeferred:
    case WaitCause::kNoRoomToGrow:
      return {};
    case WaitCause::kInvalid:
      return api::kInvalidGroupReason;
    case WaitCause::kUnknownQueue:
      return api::kReasonUnknownQueue;
    case WaitCause::kNotLeafQueue:
      return api::kReasonParentQueue;
    case WaitCause::kNotAllowedInQueue:
      return api::kReasonNotAllowedInQueue;
    case WaitCause::kSchedulingGated:
      return api::kReasonGated;
    case WaitCause::kUnsupported:
      return api::kReasonUnsupported;
    case WaitCause::kOverQueueMax:
      return api::kReasonQueueLimit;
    case WaitCause::kEvicting:
      return api::kReasonEvicting;
    case WaitCause::kBehindQueueHead:
      return api::kReasonFairShareOrder;
    case WaitCause::kNoCapacity:
      break;
  }
  if (shortfall == Shortfall::kNeverFits) {
    return api::kReasonNeverFits;  // no reservation or turn would change that
  }
  if (holds_reservation) {
    return api::kReasonReserved;
  }
  if (behind_reservations) {
    return api::kReasonFairShareOrder;
  }
  switch (shortfall) {
    case Shortfall::kMembers:
      return api::kReasonMembersMissing;
    case Shortfall::kTopology:
      return api::kReasonTopologyUnsatisfiable;
    case Shortfall::kVolumes:
      return api::kReasonWaitingForVolumes;
    case Shortfall::kFragmented:
      return api::kReasonFragmented;
    default:
      return api::kReasonInsufficientCapacity;
  }
}

std::string_view WaitCauseName(WaitCause cause) {
  switch (cause) {
    case WaitCause::kNone:
      return "None";
    case WaitCause::kAssembling:
      return "Assembling";
    case WaitCause::kInvalid:
      return "Invalid";
    case WaitCause::kUnknownQueue:
      return "UnknownQueue";
    case WaitCause::kNotLeafQueue:
      return "ParentQueue";
    case WaitCause::kNotAllowedInQueue:
      return "NotAllowedInQueue";
    case WaitCause::kSchedulingGated:
      return "SchedulingGated";
    case WaitCause::kUnsupported:
      return "UnsupportedResourceClaims";
    case WaitCause::kOverQueueMax:
      return "OverQueueMax";
    case WaitCause::kNoCapacity:
      return "NoCapacity";
    case WaitCause::kEvicting:
      return "Evicting";
    case WaitCause::kGrowthDeferred:
      return "GrowthDeferred";
    case WaitCause::kNoRoomToGrow:
      return "NoRoomToGrow";
    case WaitCause::kBehindQueueHead:
      return "BehindQueueHead";
  }
  return "Unknown";
}

PolicyCycleResult PlanCycleWithPolicies(Snapshot& snapshot, std::vector<PodGroup> groups,
                                        const PolicyConfig& policy, const PlannerConfig& planner,
                                        Timestamp now, const PolicyState& previous,
                                        uint32_t start_slot, QueueUsageMemo* queue_usage) {
  using namespace policy_stages;
  const CycleInput input(policy, planner, now);
  CycleState state(snapshot, input, start_slot, queue_usage);
  CarryOver(input, previous, state);
  Classify(input, std::move(groups), state);
  PlaceMinimums(input, state);
  ChooseEvictions(input, state);
  KeepReservations(input, state);
  ReserveForStarved(input, state);
  Grow(input, state);
  Rebalance(input, state);
  return Decide(input, state);
}

void HoldForRestart(PolicyState& state, const std::string& group_key,
                    const std::string& namespace_name, const std::string& group_name,
                    const std::string& node, Timestamp now) {
  auto it = std::find_if(state.restart_holds.begin(), state.restart_holds.end(),
                         [&](const Reservation& hold) { return hold.group_key == group_key; });
  if (it == state.restart_holds.end()) {
    Reservation hold;
    hold.group_key = group_key;
    hold.namespace_name = namespace_name;
    hold.group_name = group_name;
    hold.cause = ReservationCause::kEviction;
    hold.since = now;
    it = state.restart_holds.insert(state.restart_holds.end(), std::move(hold));
  }
  it->last_seen = now;
  if (std::find(it->nodes.begin(), it->nodes.end(), node) == it->nodes.end()) {
    it->nodes.push_back(node);
    std::sort(it->nodes.begin(), it->nodes.end());
  }
}

void RecordRefusedEviction(PolicyState& state, const Eviction& eviction, const PolicyConfig& policy,
                           Timestamp now) {
  std::erase_if(state.evictions, [&](const InFlightEviction& e) { return e.uid == eviction.uid; });
  auto it = std::find_if(state.refused.begin(), state.refused.end(),
                         [&](const RefusedEviction& r) { return r.uid == eviction.uid; });
  if (it == state.refused.end()) {
    it = state.refused.insert(
        state.refused.end(), RefusedEviction{eviction.namespace_name, eviction.name, eviction.uid});
  }
  it->refusals = std::min(it->refusals + 1, 30);
  it->retry_after =
      now + ExponentialBackoff(std::chrono::seconds{policy.refused_eviction_backoff_seconds},
                               std::chrono::seconds{policy.refused_eviction_backoff_max_seconds},
                               it->refusals - 1);
}

}  // namespace hybridjob::scheduler
