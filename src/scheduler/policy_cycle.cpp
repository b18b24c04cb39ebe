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
#include <hybridjob/scheduler/cycle.h>
#include <hybridjob/scheduler/fair_share.h>
#include <hybridjob/scheduler/policy_cycle.h>
#include <hybridjob/scheduler/preemption.h>

#include "policy_cycle_internal.h"

namespace hybridjob::scheduler {
namespace policy_internal {

using std::chrono::seconds;

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

void PolicyCycle::PruneState() {
  for (const InFlightEviction& eviction : previous_.evictions) {
    if (now_ - eviction.issued > seconds{policy_.eviction_timeout_seconds}) {
      continue;
    }
    const PodInfo* pod = snapshot_.FindPod(eviction.namespace_name, eviction.name);
    if (pod == nullptr || (!eviction.uid.empty() && pod->uid != eviction.uid)) {
      continue;  // gone: its capacity is free
    }
    in_flight_.push_back(eviction);
    leaving_.insert(pod->Key());
    leaving_for_[eviction.for_group].push_back(pod);
  }
  for (const RefusedEviction& refusal : previous_.refused) {
    if (now_ - refusal.retry_after > seconds{policy_.refused_eviction_backoff_max_seconds}) {
      continue;  // quiet for long enough: the next refusal starts the back-off afresh
    }
    const PodInfo* pod = snapshot_.FindPod(refusal.namespace_name, refusal.name);
    if (pod == nullptr || (!refusal.uid.empty() && pod->uid != refusal.uid)) {
      continue;
    }
    refused_.push_back(refusal);
    if (now_ < refusal.retry_after) {
      shielding_.insert(pod->Key());
    }
  }
  for (const Reservation& reservation : previous_.reservations) {
    if (now_ - reservation.last_seen > seconds{policy_.reservation_forget_after_seconds}) {
      continue;
    }
    reservations_.push_back(reservation);
  }
  RebuildReserved();
}

void PolicyCycle::RebuildReserved() {
  reserved_ = std::make_unique<ReservedSlots>(snapshot_, reservations_);
}

Reservation* PolicyCycle::FindReservation(const std::string& key) {
  for (Reservation& reservation : reservations_) {
    if (reservation.group_key == key) {
      return &reservation;
    }
  }
  return nullptr;
}

void PolicyCycle::DropReservation(const std::string& key) {
  size_t before = reservations_.size();
  std::erase_if(reservations_,
                [&key](const Reservation& reservation) { return reservation.group_key == key; });
  if (reservations_.size() != before) {
    RebuildReserved();
  }
}

void PolicyCycle::Classify(std::vector<PodGroup> groups) {
  entries_.reserve(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    Entry entry;
    entry.group = std::move(groups[i]);
    entry.input_order = i;
    entry.key = GroupKey(entry.group);
    entry.lone = !entry.group.pending.empty() && entry.group.pending.front()->job_name.empty();
    entry.had_bound = !entry.group.bound.empty();
    if (entry.lone) {
      entry.queue = std::string(QueueOfPod(*entry.group.pending.front()));
    } else {
      entry.queue =
          entry.group.spec.queue.empty() ? std::string(api::kDefaultQueue) : entry.group.spec.queue;
    }
    entry.plan.next_start_slot = start_slot_;
    if (!entry.group.invalid_reason.empty() || entry.group.spec.roles.empty()) {
      entry.cause = WaitCause::kInvalid;
      entry.plan.outcome = PlanOutcome::kInvalid;
      entry.plan.reason = entry.group.invalid_reason.empty() ? "group spec has no roles"
                                                             : entry.group.invalid_reason;
    } else if (!entry.group.unsupported_reason.empty()) {
      entry.cause = WaitCause::kUnsupported;
      entry.plan.reason = entry.group.unsupported_reason;
    } else if (!entry.group.gated_reason.empty()) {
      entry.cause = WaitCause::kSchedulingGated;
      entry.plan.reason = entry.group.gated_reason;
    } else if (table_.Find(entry.queue) == nullptr) {
      entry.cause = WaitCause::kUnknownQueue;
      entry.plan.reason =
          "queue \"" + entry.queue + "\" is not configured; configured queues: " + table_.Names();
    } else if (!table_.IsLeaf(entry.queue)) {
      entry.cause = WaitCause::kNotLeafQueue;
      entry.plan.reason = "queue \"" + entry.queue + "\" has child queues (" +
                          ListNames(table_.Children(entry.queue)) + "); jobs run in a leaf queue";
    } else if (std::string refusal = NamespaceRefusal(entry); !refusal.empty()) {
      entry.cause = WaitCause::kNotAllowedInQueue;
      entry.plan.reason = std::move(refusal);
    } else {
      entry.running = ReachedMinimum(entry.group);
      if (!entry.running) {
        std::string missing;
        if (!entry.lone && entry.group.spec.ScheduleTimeoutSeconds() > 0) {
          missing = MissingMembers(entry.group);
        }
        Timestamp deadline =
            entry.group.creation_time + seconds{entry.group.spec.ScheduleTimeoutSeconds()};
        if (!missing.empty() && now_ < deadline) {
          entry.cause = WaitCause::kAssembling;
          entry.plan.reason = "waiting for member pods: " + missing;
        } else {
          entry.starting = true;
        }
      }
    }
    entry_by_key_.emplace(entry.key, entries_.size());
    entries_.push_back(std::move(entry));
  }
}

std::string PolicyCycle::NamespaceRefusal(const Entry& entry) const {
  const PodGroup& group = entry.group;
  const QueueSpec* refusing =
      table_.RefusesNamespace(entry.queue, group.namespace_name, group.namespace_labels);
  if (refusing == nullptr) {
    return {};
  }
  std::string through;
  if (refusing->name != entry.queue) {
    const QueueSpec* parent = table_.Parent(entry.queue);
    through = std::string(" (through its ") +
              (parent != nullptr && parent->name == refusing->name ? "parent" : "ancestor") +
              " \"" + refusing->name + "\")";
  }
  return "queue \"" + entry.queue + "\"" + through + " does not admit jobs of namespace \"" +
         group.namespace_name + "\"";
}

// "queue a", or "queue org (parent of a)" when a ceiling above the leaf is hit.
std::string PolicyCycle::DescribeQueue(const QueueAccount& account, std::string_view leaf) const {
  std::string out = "queue " + account.spec.name;
  if (account.spec.name != leaf) {
    const QueueSpec* parent = table_.Parent(leaf);
    bool direct = parent != nullptr && parent->name == account.spec.name;
    out += std::string(direct ? " (parent of " : " (ancestor of ") + std::string(leaf) + ")";
  }
  return out;
}

// What the group would put over the max of each ancestor of its queue, on
// the projected usage (evictions in flight gone).
std::vector<std::pair<std::string, ResourceList>> PolicyCycle::OverCeilings(
    const FairShare& projected, const Entry& entry) const {
  std::vector<std::pair<std::string, ResourceList>> out;
  for (const QueueAccount* account : projected.Path(entry.queue)) {
    if (account->spec.name == entry.queue) {
      continue;
    }
    ResourceList excess;
    ResourceList after = account->used + entry.need;
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

GroupPlan PolicyCycle::PlanWithReservations(const PodGroup& group, const std::string& key) {
  WhatIf what_if(snapshot_);
  reserved_->FillFor(what_if, key);
  GroupPlan plan = PlanGroup(snapshot_, group, planner_, start_slot_);
  start_slot_ = plan.next_start_slot;
  return plan;
}

bool PolicyCycle::Commit(Entry& entry, GroupPlan& plan) {
  if (Status status = CommitPlan(snapshot_, plan); !status.ok()) {
    entry.notes.push_back("could not assume the plan: " + status.ToString());
    return false;
  }
  share_.Add(entry.queue, PlanRequest(plan), static_cast<int64_t>(plan.assignments.size()));
  entry.assignments.insert(entry.assignments.end(), plan.assignments.begin(),
                           plan.assignments.end());
  entry.claim_decisions.insert(entry.claim_decisions.end(), plan.claim_decisions.begin(),
                               plan.claim_decisions.end());
  if (!plan.placement.empty()) {
    entry.placement = plan.placement;
  }
  return true;
}

void PolicyCycle::PlaceAtMinimum(Entry& entry) {
  entry.sequence = next_sequence_++;
  entry.need = MinimumRequest(entry.group);
  // Every ceiling on the way up bounds the leaf: a parent's max is shared by
  // its subtree.
  if (const QueueAccount* over = share_.FirstOverMax(entry.queue, entry.need)) {
    entry.cause = WaitCause::kOverQueueMax;
    entry.plan.reason = DescribeQueue(*over, entry.queue) + " would use " +
                        DescribeOverMax(over->spec.max, over->used + entry.need) +
                        " with this group's minimum";
    if (over->spec.name != entry.queue) {
      entry.ceiling_queue = over->spec.name;
    }
    return;
  }
  GroupPlan plan = PlanWithReservations(AtMinimum(entry.group), entry.key);
  if (!plan.placed()) {
    entry.cause =
        plan.outcome == PlanOutcome::kInvalid ? WaitCause::kInvalid : WaitCause::kNoCapacity;
    entry.plan = std::move(plan);
    size_t held = reserved_->CountHeldForOthers(entry.key);
    if (held > 0 && entry.cause == WaitCause::kNoCapacity) {
      entry.notes.push_back(Plural(held, "node is", "nodes are") + " reserved for other groups");
      entry.behind_reservations =
          PlanGroup(snapshot_, AtMinimum(entry.group), planner_, start_slot_).placed();
    }
    return;
  }
  ResourceList request = PlanRequest(plan);
  if (const QueueAccount* over = share_.FirstOverMax(entry.queue, request)) {
    entry.cause = WaitCause::kOverQueueMax;
    entry.plan.reason = DescribeQueue(*over, entry.queue) + " would use " +
                        DescribeOverMax(over->spec.max, over->used + request) +
                        " with this group's minimum";
    if (over->spec.name != entry.queue) {
      entry.ceiling_queue = over->spec.name;
    }
    return;
  }
  if (!Commit(entry, plan)) {
    entry.cause = WaitCause::kNoCapacity;
    entry.plan.reason = entry.notes.back();
    entry.notes.pop_back();
    return;
  }
  entry.placed = true;
  entry.cause = WaitCause::kNone;
  entry.plan = std::move(plan);
  placed_keys_.insert(entry.key);
  DropReservation(entry.key);
}

void PolicyCycle::PlaceMinimums() {
  std::map<std::string, std::vector<size_t>> by_queue;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].starting) {
      by_queue[entries_[i].queue].push_back(i);
    }
  }
  for (auto& [queue, list] : by_queue) {
    std::stable_sort(list.begin(), list.end(), [this](size_t a, size_t b) {
      return GroupGoesFirst(entries_[a].group, entries_[b].group);
    });
  }
  QueueTurns turns(share_, std::move(by_queue));
  while (std::optional<size_t> index = turns.Next()) {
    Entry& entry = entries_[*index];
    PlaceAtMinimum(entry);
    if (!HoldsUpItsQueue(entry)) {
      turns.Pass();
      continue;
    }
    for (size_t behind : turns.Close()) {
      WaitBehind(entries_[behind], entry);
    }
  }
}

bool PolicyCycle::HoldsUpItsQueue(const Entry& entry) const {
  const QueueSpec* queue = table_.Find(entry.queue);
  // One that can never start would hold its line for good: it steps aside.
  const bool never =
      entry.cause == WaitCause::kNoCapacity && entry.plan.shortfall == Shortfall::kNeverFits;
  return queue != nullptr && queue->order == QueueOrder::kStrictFifo && !never &&
         (entry.cause == WaitCause::kNoCapacity || entry.cause == WaitCause::kOverQueueMax);
}

void PolicyCycle::WaitBehind(Entry& entry, const Entry& head) {
  entry.sequence = next_sequence_++;
  entry.cause = WaitCause::kBehindQueueHead;
  entry.plan.reason = "queue " + entry.queue + " is StrictFIFO: waiting behind " + head.key +
                      ", which goes first and waits (" + std::string(WaitCauseName(head.cause)) +
                      ")";
}

RunningGroups& PolicyCycle::Running() {
  if (!running_.has_value()) {
    running_ = RunningGroups::FromSnapshot(snapshot_, policy_, leaving_);
    for (RunningGroup& group : running_->groups()) {
      group.placed_this_cycle = placed_keys_.contains(group.Key());
      if (!shielding_.empty()) {
        group.shielded =
            std::any_of(group.members.begin(), group.members.end(),
                        [this](const PodInfo* pod) { return shielding_.contains(pod->Key()); });
      }
    }
  }
  return *running_;
}

void PolicyCycle::EvictFor(Entry& entry, const EvictionChoice& choice) {
  RunningGroups& running = Running();
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
      Eviction eviction;
      eviction.namespace_name = pod->namespace_name;
      eviction.name = pod->name;
      eviction.uid = pod->uid;
      eviction.node_name = pod->node_name;
      eviction.role = pod->role;
      eviction.index = pod->index;
      eviction.cause = unit.cause;
      eviction.victim_group = victim.Key();
      eviction.victim_queue = victim.queue;
      eviction.for_group = entry.key;
      eviction.for_queue = entry.queue;
      eviction.message = message;
      evictions_.push_back(std::move(eviction));
      in_flight_.push_back(
          InFlightEviction{pod->namespace_name, pod->name, pod->uid, entry.key, unit.cause, now_});
      leaving_.insert(pod->Key());
      leaving_for_[entry.key].push_back(pod);
      nodes.insert(pod->node_name);
      names.push_back(pod->Key());
    }
    running.MarkLeaving(unit.group, unit.pods);
  }
  for (const PodInfo* pod : leaving_for_[entry.key]) {
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

  Reservation* reservation = FindReservation(entry.key);
  if (reservation == nullptr) {
    Reservation made;
    made.group_key = entry.key;
    made.namespace_name = entry.group.namespace_name;
    made.group_name = entry.group.name;
    made.since = now_;
    reservations_.push_back(std::move(made));
    reservation = &reservations_.back();
  }
  reservation->cause = ReservationCause::kEviction;
  reservation->last_seen = now_;
  nodes.insert(reservation->nodes.begin(), reservation->nodes.end());
  reservation->nodes.assign(nodes.begin(), nodes.end());
}

void PolicyCycle::ChooseEvictions() {
  bool reclaim = policy_.reclaim.enabled;
  bool preempt = policy_.preemption.enabled;
  // Groups short of capacity, and groups an ancestor's max holds back: what
  // a sibling borrowed under that ancestor can be taken back for them.
  std::vector<size_t> waiting;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& entry = entries_[i];
    if (entry.cause == WaitCause::kNoCapacity ||
        (entry.cause == WaitCause::kOverQueueMax && !entry.ceiling_queue.empty())) {
      waiting.push_back(i);
    }
  }
  std::sort(waiting.begin(), waiting.end(),
            [this](size_t a, size_t b) { return entries_[a].sequence < entries_[b].sequence; });
  if (waiting.empty()) {
    return;
  }
  // Projected usage: what each queue uses once the evictions in flight end.
  std::optional<FairShare> projected;
  int32_t searches = 0;
  bool changed_reservations = false;
  for (size_t index : waiting) {
    Entry& entry = entries_[index];
    auto leaving_it = leaving_for_.find(entry.key);
    bool has_in_flight = leaving_it != leaving_for_.end() && !leaving_it->second.empty();
    if (!has_in_flight && (!reclaim && !preempt)) {
      continue;
    }
    if (!has_in_flight && searches >= policy_.reclaim.max_groups_per_cycle) {
      continue;
    }
    RunningGroups& running = Running();
    if (!projected.has_value()) {
      projected = share_;
      for (const auto& [group, pods] : leaving_for_) {
        for (const PodInfo* pod : pods) {
          projected->Remove(QueueOfPod(*pod), pod->requests, 1);
        }
      }
    }
    EvictionRequest request;
    request.group_key = entry.key;
    request.queue = entry.queue;
    request.priority = entry.group.priority;
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
    std::vector<uint8_t> blocked = reserved_->BlockedFor(entry.key);
    request.blocked_slots = &blocked;
    PodGroup at_minimum = AtMinimum(entry.group);
    EvictionChoice choice;
    {
      WhatIf what_if(snapshot_);
      reserved_->FillFor(what_if, entry.key);
      if (has_in_flight) {
        for (const PodInfo* pod : leaving_it->second) {
          what_if.Release(*pod);
        }
      }
      FitCheck fits = [&]() { return PlanGroup(snapshot_, at_minimum, planner_).placed(); };
      // A gang that must keep to one topology domain takes its victims
      // inside one, scoped on the state after the edits above.
      const EvictionScope scope = EvictionScopeOf(at_minimum, snapshot_, planner_, blocked);
      choice = FindEvictionsInScope(snapshot_, what_if, running, *projected, request, fits, scope);
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
        if (Reservation* reservation = FindReservation(entry.key)) {
          reservation->last_seen = now_;
        }
      }
      continue;
    }
    for (const VictimUnit& unit : choice.victims) {
      projected->Remove(running.groups()[unit.group].queue, unit.requests,
                        static_cast<int64_t>(unit.pods.size()));
    }
    projected->Add(entry.queue, entry.need);
    EvictFor(entry, choice);
    changed_reservations = true;
  }
  if (changed_reservations) {
    RebuildReserved();
  }
}

void PolicyCycle::UpdateReservations() {
  bool starvation_on =
      policy_.starvation.max_wait_seconds > 0 && policy_.starvation.max_reserved_groups > 0;
  std::vector<Reservation> kept;
  for (Reservation& reservation : reservations_) {
    auto it = entry_by_key_.find(reservation.group_key);
    if (it == entry_by_key_.end()) {
      kept.push_back(std::move(reservation));  // not seen: kept until forgotten
      continue;
    }
    const Entry& entry = entries_[it->second];
    bool in_flight = leaving_for_.contains(entry.key) && !leaving_for_.at(entry.key).empty();
    bool keep = false;
    if (entry.placed || entry.running) {
      keep = false;
    } else if (entry.cause == WaitCause::kEvicting || in_flight) {
      keep = true;
    } else if (entry.cause == WaitCause::kNoCapacity &&
               reservation.cause == ReservationCause::kStarvation && starvation_on) {
      // Still starved: keep the same nodes while every one is usable.
      keep = std::all_of(reservation.nodes.begin(), reservation.nodes.end(),
                         [this](const std::string& node) {
                           const NodeState* state = snapshot_.FindNode(node);
                           return state != nullptr && state->schedulable_slot() &&
                                  state->info.ready && !state->info.unschedulable;
                         });
    }
    if (keep) {
      reservation.last_seen = now_;
      kept.push_back(std::move(reservation));
    }
  }
  reservations_ = std::move(kept);
  RebuildReserved();
}

void PolicyCycle::ReserveForStarved() {
  const StarvationSettings& settings = policy_.starvation;
  if (settings.max_wait_seconds <= 0 || settings.max_reserved_groups <= 0) {
    return;
  }
  int32_t held = static_cast<int32_t>(
      std::count_if(reservations_.begin(), reservations_.end(),
                    [](const Reservation& r) { return r.cause == ReservationCause::kStarvation; }));
  std::vector<size_t> starved;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& entry = entries_[i];
    if (entry.cause == WaitCause::kNoCapacity &&
        now_ - entry.group.creation_time >= seconds{settings.max_wait_seconds}) {
      starved.push_back(i);
    }
  }
  std::stable_sort(starved.begin(), starved.end(), [this](size_t a, size_t b) {
    return GroupGoesFirst(entries_[a].group, entries_[b].group);
  });
  for (size_t index : starved) {
    Entry& entry = entries_[index];
    if (const Reservation* reservation = FindReservation(entry.key)) {
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
    std::vector<uint8_t> unavailable = reserved_->BlockedFor(entry.key);
    ReservationChoice choice =
        ChooseReservation(snapshot_, entry.group, policy_, planner_, unavailable);
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
    reservation.since = now_;
    reservation.last_seen = now_;
    std::string nodes;
    for (uint32_t slot : choice.slots) {
      reservation.nodes.push_back(snapshot_.slots()[slot].info.name);
      nodes += (nodes.empty() ? "" : ", ") + reservation.nodes.back();
    }
    std::sort(reservation.nodes.begin(), reservation.nodes.end());
    reservations_.push_back(std::move(reservation));
    RebuildReserved();
    ++held;
    entry.notes.push_back("starved; nodes reserved for it: " + nodes);
  }
}

PolicyCycleResult PolicyCycle::Run(std::vector<PodGroup> groups) {
  PruneState();
  Classify(std::move(groups));
  PlaceMinimums();
  ChooseEvictions();
  UpdateReservations();
  ReserveForStarved();
  Grow();

  PolicyCycleResult result;
  std::vector<size_t> order(entries_.size());
  for (size_t i = 0; i < order.size(); ++i) {
    order[i] = i;
  }
  std::stable_sort(order.begin(), order.end(), [this](size_t a, size_t b) {
    const Entry& ea = entries_[a];
    const Entry& eb = entries_[b];
    if ((ea.sequence < 0) != (eb.sequence < 0)) {
      return ea.sequence >= 0;
    }
    return ea.sequence != eb.sequence ? ea.sequence < eb.sequence : ea.input_order < eb.input_order;
  });
  FillQueues(result);
  NumberQueueLines();
  for (size_t index : order) {
    result.decisions.push_back(Decide(entries_[index]));
  }
  result.evictions = std::move(evictions_);
  result.reservations = reservations_;
  result.state.evictions = std::move(in_flight_);
  result.state.reservations = std::move(reservations_);
  result.state.refused = std::move(refused_);
  result.next_start_slot = start_slot_;
  return result;
}

}  // namespace policy_internal

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
  policy_internal::PolicyCycle cycle(snapshot, policy, planner, now, previous, start_slot,
                                     queue_usage);
  return cycle.Run(std::move(groups));
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
