// Rebalancing: capacity flows back from groups (and queues) over their fair
// share to running groups below theirs, one elastic member at a time.
//
// A move takes one elastic member u of a victim group V for the next pending
// member m of a receiver R. It is allowed only when, at the level where V's
// and R's paths part (their leaf queue's groups, or the children of their
// lowest common queue), R's side is below its target by more than the
// tolerance; every node on V's side (V, and its queues below the parting
// level) keeps at least its target without u; every node on R's side stays
// within its target with m; and m fits on u's node once u (and whatever else
// this cycle freed there for R) is gone. So no queue or group is pushed below
// its fair share or above it, and each move shrinks the distance between
// usage and targets: shares converge and do not oscillate.
#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <hybridjob/scheduler/core/predicates.h>

#include "policy_stages.h"

namespace hybridjob::scheduler::policy_stages {
namespace {

constexpr double kEpsilon = 1e-9;
// Moves decided in one cycle: bounds the cycle's cost on huge clusters; the
// next cycle goes on.
constexpr int32_t kMaxMovesPerCycle = 256;

// The usage the targets are judged on: this cycle's, less the pods leaving,
// plus the minimums of groups waiting for their evictions.
FairShare Projected(const CycleState& state) {
  FairShare projected = state.share;
  for (const auto& [group, pods] : state.evictions.leaving_for) {
    for (const PodInfo* pod : pods) {
      projected.Remove(QueueOfPod(*pod), pod->requests, 1);
    }
  }
  for (const Entry& entry : state.entries) {
    if (entry.cause == WaitCause::kEvicting) {
      projected.Add(entry.queue, entry.need);
    }
  }
  return projected;
}

// What the entry's pending members still not assigned ask for.
ResourceList Unassigned(const Entry& entry) {
  std::unordered_set<const PodInfo*> assigned;
  for (const Assignment& assignment : entry.assignments) {
    assigned.insert(assignment.pod);
  }
  ResourceList wanted;
  for (const PodInfo* pod : entry.group.pending) {
    if (!assigned.contains(pod)) {
      wanted += pod->requests;
    }
  }
  return wanted;
}

// Whether the entry asks for capacity it could get here: not a lone pod, not
// a group refused by its queue or never fitting.
bool Asks(const Entry& entry) {
  return !entry.lone && entry.cause != WaitCause::kInvalid &&
         entry.cause != WaitCause::kUnknownQueue && entry.cause != WaitCause::kNotLeafQueue &&
         entry.cause != WaitCause::kNotAllowedInQueue && !NeverStarts(entry);
}

// The entry's own part of its group's demand: what its pending members ask
// for; a group waiting for its evictions counts its minimum as used.
GroupDemand EntryDemand(const Entry& entry) {
  GroupDemand demand;
  demand.key = entry.key;
  demand.queue = entry.queue;
  demand.wanted = Unassigned(entry);
  if (entry.cause == WaitCause::kEvicting) {
    demand.used = entry.need;
    demand.wanted -= entry.need;
  }
  return demand;
}

std::vector<GroupDemand> Demands(const CycleInput& input, CycleState& state) {
  std::map<std::string, GroupDemand> by_key;
  {
    for (const RunningGroup& group : Running(input, state).groups()) {
      if (group.single_pod) {
        continue;
      }
      GroupDemand& demand = by_key[group.Key()];
      demand.key = group.Key();
      demand.queue = group.queue;
      demand.used = group.Requests();
    }
  }
  for (const Entry& entry : state.entries) {
    if (Asks(entry)) {
      GroupDemand of_entry = EntryDemand(entry);
      GroupDemand& demand = by_key[entry.key];
      demand.key = entry.key;
      demand.queue = entry.queue;
      demand.used += of_entry.used;
      demand.wanted = std::move(of_entry.wanted);
    }
  }
  std::vector<GroupDemand> out;
  out.reserve(by_key.size());
  for (auto& [key, demand] : by_key) {
    out.push_back(std::move(demand));
  }
  return out;
}

// One side of a move: the group and its queues below the parting level.
struct Side {
  std::string group;
  std::vector<std::string> queues;  // leaf first
};

// The two sides of a move from `victim_queue` to `receiver_queue`.
std::pair<Side, Side> Sides(const FairShare& share, const std::string& victim_group,
                            const std::string& victim_queue, const std::string& receiver_group,
                            const std::string& receiver_queue) {
  Side victim{victim_group, {}};
  Side receiver{receiver_group, {}};
  if (victim_queue == receiver_queue) {
    return {victim, receiver};
  }
  std::vector<const QueueAccount*> from = share.Path(victim_queue);
  std::vector<const QueueAccount*> to = share.Path(receiver_queue);
  std::set<std::string> common;
  for (const QueueAccount* a : from) {
    for (const QueueAccount* b : to) {
      if (a == b) {
        common.insert(a->spec.name);
      }
    }
  }
  for (const QueueAccount* account : from) {
    if (common.contains(account->spec.name)) {
      break;
    }
    victim.queues.push_back(account->spec.name);
  }
  for (const QueueAccount* account : to) {
    if (common.contains(account->spec.name)) {
      break;
    }
    receiver.queues.push_back(account->spec.name);
  }
  return {victim, receiver};
}

// A receiver and the members it would take, in the order it takes them.
struct Receiver {
  size_t entry = 0;
  std::vector<const PodInfo*> members;
  size_t next = 0;
  bool triggered = false;  // below its target by more than the tolerance
};

// The pending members a receiver would grow by: higher role priority first,
// lowest index first; for a group still waiting for its minimum, the members
// beyond it.
std::vector<const PodInfo*> GrowthMembers(const Entry& entry) {
  std::unordered_set<const PodInfo*> assigned;
  for (const Assignment& assignment : entry.assignments) {
    assigned.insert(assignment.pod);
  }
  std::vector<const PodInfo*> members;
  for (const PodInfo* pod : entry.group.pending) {
    if (!assigned.contains(pod) && entry.group.spec.FindRole(pod->role) != nullptr) {
      members.push_back(pod);
    }
  }
  auto priority = [&entry](const PodInfo* pod) {
    return entry.group.spec.FindRole(pod->role)->priority;
  };
  std::sort(members.begin(), members.end(), [&](const PodInfo* a, const PodInfo* b) {
    if (priority(a) != priority(b)) {
      return priority(a) > priority(b);
    }
    return a->index != b->index ? a->index < b->index : a->name < b->name;
  });
  if (entry.cause == WaitCause::kEvicting) {
    std::map<std::string, int32_t> skipped;
    std::erase_if(members, [&](const PodInfo* pod) {
      const GroupRole* role = entry.group.spec.FindRole(pod->role);
      return skipped[pod->role]++ < role->min_replicas;
    });
  }
  return members;
}

// Whether `pod` fits on the node once `credit` (freed for its group and not
// yet promised) is counted free there.
bool FitsWithCredit(const PodInfo& pod, const NodeState& node, const ResourceList& credit) {
  if (!node.schedulable_slot() || !RunStaticFilters(pod, node).ok()) {
    return false;
  }
  bool fits = true;
  ForEachResource(pod.requests, [&](std::string_view name, int64_t amount) {
    if (name == "pods" || amount <= 0) {
      return;
    }
    int64_t free = node.info.allocatable.Get(name) - node.requested.Get(name) + credit.Get(name);
    if (amount > free) {
      fits = false;
    }
  });
  return fits;
}

std::string TargetText(const FairShare& share, double target) {
  int64_t capacity = share.gpus().MilliGpus(share.capacity());
  if (capacity > 0) {
    auto of = static_cast<int64_t>(std::llround(target * static_cast<double>(capacity)));
    return "share " + FormatMilliGpus(of) + " of " + FormatGpuCount(capacity);
  }
  return "share " + std::to_string(static_cast<int>(std::lround(target * 100))) +
         "% of the cluster";
}

}  // namespace

FairTargets QueueTargets(const CycleState& state) {
  std::vector<GroupDemand> demands;
  for (const Entry& entry : state.entries) {
    if (Asks(entry)) {
      demands.push_back(EntryDemand(entry));
    }
  }
  return ComputeFairTargets(Projected(state), demands, /*per_group=*/false);
}

const FairTargets& Targets(const CycleInput& input, CycleState& state) {
  if (!state.targets.has_value()) {
    FairShare projected = Projected(state);
    state.targets = ComputeFairTargets(projected, Demands(input, state));
  }
  return *state.targets;
}

void Rebalance(const CycleInput& input, CycleState& state) {
  const ReclaimSettings& settings = input.policy.reclaim;
  if (!settings.enabled || !settings.rebalance || !settings.growth) {
    return;
  }
  // Receivers: running or just-placed groups with members left that growth
  // found no room for, and groups whose minimum is being made room for. A
  // group whose growth waits for others' minimums is not one.
  std::vector<size_t> candidates;
  std::unordered_set<std::string> grown_now;
  for (size_t i = 0; i < state.entries.size(); ++i) {
    const Entry& entry = state.entries[i];
    if (entry.grown > 0) {
      grown_now.insert(entry.key);
    }
    if (entry.lone || entry.group.pending.size() <= entry.assignments.size()) {
      continue;
    }
    if (((entry.running || entry.placed) &&
         (entry.cause == WaitCause::kNone || entry.cause == WaitCause::kNoRoomToGrow)) ||
        entry.cause == WaitCause::kEvicting) {
      candidates.push_back(i);
    }
  }
  if (candidates.empty()) {
    return;
  }
  FairShare projected = Projected(state);
  // Cheap first: a receiver at its queue's target or above it can only gain
  // from groups of its own queue, and only while it is below the target.
  {
    FairTargets queues = QueueTargets(state);
    const double keep = 1 - settings.share_tolerance;
    bool any = false;
    for (size_t i : candidates) {
      const Entry& entry = state.entries[i];
      ResourceList used = entry.cause == WaitCause::kEvicting ? entry.need : ResourceList{};
      for (const PodInfo* pod : entry.group.bound) {
        if (!state.evictions.leaving.contains(pod->Key())) {
          used += pod->requests;
        }
      }
      for (const Assignment& assignment : entry.assignments) {
        used += assignment.pod->requests;
      }
      double share = DominantShare(used, projected.capacity(), projected.gpus());
      for (const QueueAccount* account : projected.Path(entry.queue)) {
        double target = queues.Queue(account->spec.name);
        if (DominantShare(account->used, projected.capacity(), projected.gpus()) <
                target * keep - kEpsilon ||
            (account->spec.name == entry.queue && share < target * keep - kEpsilon)) {
          any = true;
        }
      }
    }
    if (!any) {
      return;
    }
  }
  const FairTargets& targets = Targets(input, state);
  RunningGroups& running = Running(input, state);

  // Every group's usage as the moves change it; queues' in `projected`.
  std::unordered_map<std::string, ResourceList> group_used;
  for (const RunningGroup& group : running.groups()) {
    group_used[group.Key()] = group.Requests();
  }
  std::vector<Receiver> receivers;
  for (size_t i : candidates) {
    Entry& entry = state.entries[i];
    Receiver receiver;
    receiver.entry = i;
    receiver.members = GrowthMembers(entry);
    if (receiver.members.empty()) {
      continue;
    }
    if (entry.cause == WaitCause::kEvicting) {
      group_used[entry.key] += entry.need;
    }
    receivers.push_back(std::move(receiver));
  }
  // Victims: each group's elastic members, lowest role priority and highest
  // index first.
  std::unordered_set<std::string> recently_resized;
  for (const GroupResize& resize : state.resizes) {
    recently_resized.insert(resize.group_key);
  }
  std::unordered_set<std::string> shrunk_now;
  for (const Eviction& eviction : state.evictions.decided) {
    shrunk_now.insert(eviction.victim_group);
  }
  struct Victim {
    size_t group = 0;
    std::vector<VictimUnit> units;
    size_t next = 0;
  };
  std::vector<Victim> victims;
  for (size_t g = 0; g < running.groups().size(); ++g) {
    const RunningGroup& group = running.groups()[g];
    if (group.single_pod || !group.elastic_shape || group.resize_restarts ||
        group.placed_this_cycle || group.shielded || grown_now.contains(group.Key()) ||
        (recently_resized.contains(group.Key()) && !shrunk_now.contains(group.Key()))) {
      continue;
    }
    std::vector<VictimUnit> units = ElasticUnits(running, g, EvictionCause::kReclaim);
    if (units.empty()) {
      continue;
    }
    std::stable_sort(units.begin(), units.end(),
                     [&group](const VictimUnit& a, const VictimUnit& b) {
                       const RunningRole& ra = group.roles[static_cast<size_t>(a.role)];
                       const RunningRole& rb = group.roles[static_cast<size_t>(b.role)];
                       if (ra.priority != rb.priority) {
                         return ra.priority < rb.priority;
                       }
                       return a.pods.front()->index > b.pods.front()->index;
                     });
    victims.push_back(Victim{g, std::move(units), 0});
  }
  if (victims.empty()) {
    return;
  }

  auto share_of = [&projected](const ResourceList& used) {
    return DominantShare(used, projected.capacity(), projected.gpus());
  };
  const double keep = 1 - settings.share_tolerance;
  // The receiver's side is below its target at the parting level.
  // Once below by more than the tolerance, a receiver is filled up to its
  // target: the tolerance is a band, so shares settle rather than hover.
  auto below = [&](const Side& side) {
    if (!side.queues.empty()) {
      const std::string& top = side.queues.back();
      return share_of(projected.Account(top).used) < targets.Queue(top) - kEpsilon;
    }
    return share_of(group_used[side.group]) < targets.Group(side.group) - kEpsilon;
  };
  for (Receiver& receiver : receivers) {
    const Entry& entry = state.entries[receiver.entry];
    receiver.triggered =
        share_of(group_used[entry.key]) < targets.Group(entry.key) * keep - kEpsilon;
    for (const QueueAccount* account : projected.Path(entry.queue)) {
      if (share_of(account->used) < targets.Queue(account->spec.name) * keep - kEpsilon) {
        receiver.triggered = true;
      }
    }
  }
  auto victim_side_holds = [&](const Side& side, const ResourceList& amount) {
    ResourceList after = group_used[side.group];
    after -= amount;
    if (share_of(after) < targets.Group(side.group) - kEpsilon) {
      return false;
    }
    for (const std::string& queue : side.queues) {
      ResourceList queue_after = projected.Account(queue).used;
      queue_after -= amount;
      if (share_of(queue_after) < targets.Queue(queue) - kEpsilon) {
        return false;
      }
    }
    return true;
  };
  auto receiver_side_holds = [&](const Side& side, const ResourceList& amount) {
    if (share_of(group_used[side.group] + amount) > targets.Group(side.group) + kEpsilon) {
      return false;
    }
    for (const std::string& queue : side.queues) {
      if (share_of(projected.Account(queue).used + amount) > targets.Queue(queue) + kEpsilon) {
        return false;
      }
    }
    return true;
  };
  // How far over its target the victim's side is at the parting level.
  auto over_by = [&](const Side& side) {
    if (!side.queues.empty()) {
      const std::string& top = side.queues.back();
      return share_of(projected.Account(top).used) - targets.Queue(top);
    }
    return share_of(group_used[side.group]) - targets.Group(side.group);
  };

  // Per node: what this cycle freed there for each receiver, less what its
  // members were promised.
  std::map<std::pair<size_t, uint32_t>, ResourceList> credit;
  std::map<std::pair<std::string, std::string>, std::map<std::string, int32_t>> moved;
  std::vector<uint8_t> done(receivers.size(), 0);
  int32_t moves = 0;
  while (moves < kMaxMovesPerCycle) {
    // The receiver furthest below its own target goes first.
    std::optional<size_t> pick;
    double lowest = 0;
    for (size_t r = 0; r < receivers.size(); ++r) {
      if (done[r] != 0 || !receivers[r].triggered ||
          receivers[r].next >= receivers[r].members.size()) {
        continue;
      }
      const Entry& entry = state.entries[receivers[r].entry];
      double target = targets.Group(entry.key);
      if (target <= kEpsilon) {
        continue;
      }
      double ratio = share_of(group_used[entry.key]) / target;
      if (!pick.has_value() || ratio < lowest) {
        pick = r;
        lowest = ratio;
      }
    }
    if (!pick.has_value()) {
      break;
    }
    Receiver& receiver = receivers[*pick];
    Entry& entry = state.entries[receiver.entry];
    const PodInfo* member = receiver.members[receiver.next];
    // The best victim for this member: the nearest in the tree, then the
    // side furthest over its target, then the fewest members taken. A member
    // larger than one unit takes the victim's next units on the same node
    // until it fits there.
    struct Choice {
      size_t victim = 0;
      uint32_t slot = 0;
      size_t units = 0;
      int32_t distance = 0;
      double over = 0;
    };
    std::optional<Choice> best;
    for (size_t v = 0; v < victims.size(); ++v) {
      Victim& victim = victims[v];
      if (victim.next >= victim.units.size()) {
        continue;
      }
      const RunningGroup& group = running.groups()[victim.group];
      if (group.Key() == entry.key) {
        continue;
      }
      if (group.queue == entry.queue && group.priority > entry.group.priority) {
        continue;  // within a queue, never from a group of higher priority
      }
      auto [victim_side, receiver_side] =
          Sides(projected, group.Key(), group.queue, entry.key, entry.queue);
      if (!below(receiver_side) || !receiver_side_holds(receiver_side, member->requests)) {
        continue;
      }
      const NodeState* node =
          state.snapshot.FindNode(victim.units[victim.next].pods.front()->node_name);
      if (node == nullptr) {
        continue;
      }
      const auto slot = static_cast<uint32_t>(node - state.snapshot.slots().data());
      if (const std::string* holder = state.reserved->Holder(slot);
          holder != nullptr && *holder != entry.key) {
        continue;  // what frees there is someone else's
      }
      ResourceList freed = credit[{*pick, slot}];
      ResourceList taken;
      size_t units = 0;
      bool fits = false;
      for (size_t u = victim.next; u < victim.units.size(); ++u) {
        const VictimUnit& unit = victim.units[u];
        if (unit.pods.front()->node_name != node->info.name ||
            !victim_side_holds(victim_side, taken + unit.requests)) {
          break;
        }
        taken += unit.requests;
        freed += unit.requests;
        ++units;
        if (FitsWithCredit(*member, *node, freed)) {
          fits = true;
          break;
        }
      }
      if (!fits) {
        continue;
      }
      const int32_t distance = projected.Distance(entry.queue, group.queue);
      const double over = over_by(victim_side);
      if (!best.has_value() || distance < best->distance ||
          (distance == best->distance && over > best->over + kEpsilon) ||
          (distance == best->distance && std::abs(over - best->over) <= kEpsilon &&
           units < best->units)) {
        best = Choice{v, slot, units, distance, over};
      }
    }
    if (!best.has_value()) {
      done[*pick] = 1;  // nothing may or can move to it now
      continue;
    }
    Victim& victim = victims[best->victim];
    RunningGroup& group = running.groups()[victim.group];
    credit[{*pick, best->slot}] -= member->requests;
    group_used[entry.key] += member->requests;
    projected.Add(entry.queue, member->requests, 1);
    ++receiver.next;
    for (size_t taken = 0; taken < best->units; ++taken) {
      const VictimUnit unit = victim.units[victim.next++];
      credit[{*pick, best->slot}] += unit.requests;
      group_used[group.Key()] -= unit.requests;
      projected.Remove(group.queue, unit.requests, static_cast<int64_t>(unit.pods.size()));
      ++moves;

      const PodInfo* pod = unit.pods.front();
      const RunningRole& role = group.roles[static_cast<size_t>(unit.role)];
      ++moved[{group.Key(), entry.queue}][role.name];
      DecideEviction(input, state, *pod, group, entry, EvictionCause::kReclaim,
                     "Reclaim: rebalancing to fair shares, for " + entry.key + " (queue " +
                         entry.queue + ", " + TargetText(projected, targets.Queue(entry.queue)) +
                         "); " + group.Key() + " " + role.name + " shrinks to " +
                         std::to_string(role.members.size() - 1) + " members (min " +
                         std::to_string(role.min_replicas) + ")",
                     /*rebalance=*/true);
      running.MarkLeaving(victim.group, unit.pods);
    }
  }
  // One line per shrunk group and receiving queue, for the job's Event.
  std::map<std::string, std::vector<std::string>> lines;
  for (const auto& [key, roles] : moved) {
    std::string what;
    for (const auto& [role, count] : roles) {
      what +=
          (what.empty() ? "" : ", ") + std::to_string(count) + " " + role + (count == 1 ? "" : "s");
    }
    lines[key.first].push_back(what + " to queue " + key.second + " (" +
                               TargetText(projected, targets.Queue(key.second)) + ")");
  }
  for (const auto& [key, parts] : lines) {
    const RunningGroup* group = running.Find(key);
    if (group == nullptr) {
      continue;
    }
    std::string message = "rebalanced: ";
    for (size_t i = 0; i < parts.size(); ++i) {
      message += (i == 0 ? "" : "; ") + parts[i];
    }
    state.rebalanced.push_back({group->namespace_name, group->name, group->job_uid, message});
  }
}

}  // namespace hybridjob::scheduler::policy_stages
