// The first stages: what carries over from the previous cycle, each group
// classified, and starting groups placed at their minimum.
#include <algorithm>
#include <map>
#include <optional>

#include <hybridjob/api/labels.h>

#include "policy_stages.h"

namespace hybridjob::scheduler::policy_stages {
namespace {

using std::chrono::seconds;

// Why the entry's queue (or an ancestor) does not admit its namespace; empty
// when it does.
std::string NamespaceRefusal(const QueueTable& table, const Entry& entry) {
  const PodGroup& group = entry.group;
  const QueueSpec* refusing =
      table.RefusesNamespace(entry.queue, group.namespace_name, group.namespace_labels);
  if (refusing == nullptr) {
    return {};
  }
  std::string through;
  if (refusing->name != entry.queue) {
    const QueueSpec* parent = table.Parent(entry.queue);
    through = std::string(" (through its ") +
              (parent != nullptr && parent->name == refusing->name ? "parent" : "ancestor") +
              " \"" + refusing->name + "\")";
  }
  return "queue \"" + entry.queue + "\"" + through + " does not admit jobs of namespace \"" +
         group.namespace_name + "\"";
}

void PlaceAtMinimum(const CycleInput& input, CycleState& state, Entry& entry) {
  entry.sequence = state.next_sequence++;
  entry.need = MinimumRequest(entry.group);
  // Every ceiling on the way up bounds the leaf: a parent's max is shared by
  // its subtree.
  if (const QueueAccount* over = state.share.FirstOverMax(entry.queue, entry.need)) {
    entry.cause = WaitCause::kOverQueueMax;
    entry.plan.reason = DescribeQueue(input.table, *over, entry.queue) + " would use " +
                        DescribeOverMax(over->spec.max, AsGpuEquivalents(over->used + entry.need,
                                                                         state.share.gpus())) +
                        " with this group's minimum";
    if (over->spec.name != entry.queue) {
      entry.ceiling_queue = over->spec.name;
    }
    return;
  }
  GroupPlan plan = PlanWithReservations(input, state, AtMinimum(entry.group), entry.key);
  if (!plan.placed()) {
    entry.cause =
        plan.outcome == PlanOutcome::kInvalid ? WaitCause::kInvalid : WaitCause::kNoCapacity;
    entry.plan = std::move(plan);
    size_t held = state.reserved->CountHeldForOthers(entry.key);
    if (held > 0 && entry.cause == WaitCause::kNoCapacity) {
      entry.notes.push_back(Plural(held, "node is", "nodes are") + " reserved for other groups");
      entry.behind_reservations =
          PlanGroup(state.snapshot, AtMinimum(entry.group), input.planner, state.start_slot)
              .placed();
    }
    return;
  }
  ResourceList request = PlanRequest(plan);
  if (const QueueAccount* over = state.share.FirstOverMax(entry.queue, request)) {
    entry.cause = WaitCause::kOverQueueMax;
    entry.plan.reason = DescribeQueue(input.table, *over, entry.queue) + " would use " +
                        DescribeOverMax(over->spec.max, AsGpuEquivalents(over->used + request,
                                                                         state.share.gpus())) +
                        " with this group's minimum";
    if (over->spec.name != entry.queue) {
      entry.ceiling_queue = over->spec.name;
    }
    return;
  }
  if (!Commit(state, entry, plan)) {
    entry.cause = WaitCause::kNoCapacity;
    entry.plan.reason = entry.notes.back();
    entry.notes.pop_back();
    return;
  }
  entry.placed = true;
  entry.cause = WaitCause::kNone;
  entry.plan = std::move(plan);
  state.placed_keys.insert(entry.key);
  DropReservation(state, entry.key);
}

// A strict FIFO queue's group that waits for capacity or for its queue's
// max: nobody behind it in the queue starts in this cycle.
bool HoldsUpItsQueue(const QueueTable& table, const Entry& entry) {
  const QueueSpec* queue = table.Find(entry.queue);
  // One that can never start would hold its line for good: it steps aside.
  return queue != nullptr && queue->order == QueueOrder::kStrictFifo && !NeverStarts(entry) &&
         (entry.cause == WaitCause::kNoCapacity || entry.cause == WaitCause::kOverQueueMax);
}

void WaitBehind(CycleState& state, Entry& entry, const Entry& head) {
  entry.sequence = state.next_sequence++;
  entry.cause = WaitCause::kBehindQueueHead;
  entry.plan.reason = "queue " + entry.queue + " is StrictFIFO: waiting behind " + head.key +
                      ", which goes first and waits (" + std::string(WaitCauseName(head.cause)) +
                      ")";
}

}  // namespace

void CarryOver(const CycleInput& input, const PolicyState& previous, CycleState& state) {
  for (const PolicyState::OwedGrowth& owed : previous.owed) {
    if (input.now - owed.since < seconds{input.policy.reservation_forget_after_seconds}) {
      state.evictions.owed_growth[owed.group_key] = owed;
    }
  }
  for (const InFlightEviction& eviction : previous.evictions) {
    if (input.now - eviction.issued > seconds{input.policy.eviction_timeout_seconds}) {
      continue;
    }
    const PodInfo* pod = state.snapshot.FindPod(eviction.namespace_name, eviction.name);
    if (pod == nullptr || (!eviction.uid.empty() && pod->uid != eviction.uid)) {
      if (eviction.rebalance) {
        PolicyState::OwedGrowth& owed = state.evictions.owed_growth[eviction.for_group];
        owed.group_key = eviction.for_group;
        ++owed.members;
        owed.since = input.now;
      }
      continue;  // gone: its capacity is free
    }
    state.evictions.in_flight.push_back(eviction);
    state.evictions.leaving.insert(pod->Key());
    state.evictions.leaving_for[eviction.for_group].push_back(pod);
  }
  for (const RefusedEviction& refusal : previous.refused) {
    if (input.now - refusal.retry_after >
        seconds{input.policy.refused_eviction_backoff_max_seconds}) {
      continue;  // quiet for long enough: the next refusal starts the back-off afresh
    }
    const PodInfo* pod = state.snapshot.FindPod(refusal.namespace_name, refusal.name);
    if (pod == nullptr || (!refusal.uid.empty() && pod->uid != refusal.uid)) {
      continue;
    }
    state.evictions.refused.push_back(refusal);
    if (input.now < refusal.retry_after) {
      state.evictions.shielding.insert(pod->Key());
    }
  }
  for (const GroupResize& resize : previous.resizes) {
    if (input.now - resize.at < seconds{input.policy.reclaim.min_resize_interval_seconds}) {
      state.resizes.push_back(resize);
    }
  }
  for (const Reservation& hold : previous.restart_holds) {
    if (input.now - hold.last_seen < seconds{kRestartHoldSeconds}) {
      state.restart_holds.push_back(hold);
    }
  }
  // Every reservation carries over; Classify forgets those of groups not
  // among this cycle's. (Forgetting here, by the time since it was last
  // seen, would drop the reservation of a group that waited all along
  // whenever cycles are far apart, as in a trace replay, and let others onto
  // its nodes before it is made again.)
  state.reservations = previous.reservations;
  RebuildReserved(state);
  CarryOverService(input, previous, state);
}

void Classify(const CycleInput& input, std::vector<PodGroup> groups, CycleState& state) {
  state.entries.reserve(groups.size());
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
    entry.plan.next_start_slot = state.start_slot;
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
    } else if (input.table.Find(entry.queue) == nullptr) {
      entry.cause = WaitCause::kUnknownQueue;
      entry.plan.reason = "queue \"" + entry.queue +
                          "\" is not configured; configured queues: " + input.table.Names();
    } else if (!input.table.IsLeaf(entry.queue)) {
      entry.cause = WaitCause::kNotLeafQueue;
      entry.plan.reason = "queue \"" + entry.queue + "\" has child queues (" +
                          ListNames(input.table.Children(entry.queue)) +
                          "); jobs run in a leaf queue";
    } else if (std::string refusal = NamespaceRefusal(input.table, entry); !refusal.empty()) {
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
        if (!missing.empty() && input.now < deadline) {
          entry.cause = WaitCause::kAssembling;
          entry.plan.reason = "waiting for member pods: " + missing;
        } else {
          entry.starting = true;
        }
      }
    }
    state.entry_by_key.emplace(entry.key, state.entries.size());
    state.entries.push_back(std::move(entry));
  }
  LevelEntries(input, state);
  const size_t carried = state.reservations.size();
  std::erase_if(state.reservations, [&](const Reservation& reservation) {
    return !state.entry_by_key.contains(reservation.group_key) &&
           input.now - reservation.last_seen >
               seconds{input.policy.reservation_forget_after_seconds};
  });
  if (state.reservations.size() != carried) {
    RebuildReserved(state);
  }
}

void PlaceMinimums(const CycleInput& input, CycleState& state) {
  std::map<std::string, std::vector<size_t>> by_queue;
  for (size_t i = 0; i < state.entries.size(); ++i) {
    if (state.entries[i].starting) {
      by_queue[state.entries[i].queue].push_back(i);
    }
  }
  for (auto& [queue, list] : by_queue) {
    std::stable_sort(list.begin(), list.end(), [&state](size_t a, size_t b) {
      return GroupGoesFirst(state.entries[a].group, state.entries[b].group);
    });
    OrderLine(input, state, list);
  }
  QueueTurns turns(state.share, std::move(by_queue));
  while (std::optional<size_t> index = turns.Next()) {
    Entry& entry = state.entries[*index];
    PlaceAtMinimum(input, state, entry);
    if (!HoldsUpItsQueue(input.table, entry)) {
      turns.Pass();
      continue;
    }
    for (size_t behind : turns.Close()) {
      WaitBehind(state, state.entries[behind], entry);
    }
  }
}

}  // namespace hybridjob::scheduler::policy_stages
