#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include <hybridjob/scheduler/core/reclaim.h>
#include <hybridjob/scheduler/core/topology.h>

namespace hybridjob::scheduler {
namespace {

bool ByIndex(const PodInfo* a, const PodInfo* b) {
  return a->index != b->index ? a->index < b->index : a->name < b->name;
}

// Sets up a group's roles from its spec; false when a member does not fit the
// spec (unknown role, no index, an index past the maximum).
bool AssignRoles(RunningGroup& group, const GroupSpec& spec) {
  group.roles.clear();
  for (const GroupRole& role : spec.roles) {
    group.roles.push_back(
        RunningRole{role.name, role.min_replicas, role.max_replicas, role.priority, {}});
  }
  bool fits = true;
  for (const PodInfo* pod : group.members) {
    auto it = std::find_if(group.roles.begin(), group.roles.end(),
                           [pod](const RunningRole& role) { return role.name == pod->role; });
    if (it == group.roles.end() || pod->index < 0 || pod->index >= it->max_replicas) {
      fits = false;
      continue;
    }
    it->members.push_back(pod);
  }
  for (RunningRole& role : group.roles) {
    std::sort(role.members.begin(), role.members.end(), ByIndex);
  }
  return fits;
}

// The running totals of one search.
class Search {
 public:
  Search(Snapshot& snapshot, WhatIf& what_if, const RunningGroups& running, const FairShare& share,
         const EvictionRequest& request, const FitCheck& fits)
      : snapshot_(snapshot),
        what_if_(what_if),
        running_(running),
        share_(share),
        request_(request),
        fits_(fits),
        base_(what_if.Mark()) {
    waiting_account_.spec.name = request_.queue;
    waiting_account_.configured = false;
    waiting_path_ = share_.Path(request_.queue);
    CountFreeCapacity();
  }

  EvictionChoice Run();

 private:
  struct Chosen {
    VictimUnit unit;
    ResourceList useful;  // what it frees on nodes the waiting group may use
    bool dropped = false;
  };

  // Where a victim queue stands from the waiting queue in the queue tree.
  struct Relation {
    bool same = false;  // the waiting queue itself
    // Levels from the waiting queue up to the lowest common ancestor: 1 for
    // siblings (and top-level queues without a tree), 2 for cousins; the
    // waiting queue itself counts as 1, with its siblings.
    int32_t distance = 1;
    // The victim queue's path below the lowest common ancestor, the victim
    // queue first: what loses capacity, so whose guarantees are kept.
    std::vector<const QueueAccount*> below;
    // The children of the lowest common ancestor on the two paths: where the
    // share comparison is made.
    const QueueAccount* victim_side = nullptr;
    const QueueAccount* waiting_side = nullptr;
  };

  void CountFreeCapacity();
  bool Usable(const PodInfo& pod) const;
  bool InDomain(uint32_t slot) const;
  bool InDomain(const VictimUnit& unit) const;
  bool Covers(const ResourceList& freed) const;
  bool Check();
  bool CanCheck() const { return checks_ < request_.max_fit_checks; }
  const Relation& RelationOf(const std::string& queue);
  ResourceList Removed(const QueueAccount& account) const;
  bool OnWaitingPath(const QueueAccount& account) const;
  ResourceList UsedAfter(const QueueAccount& account) const;
  double ShareNow(const QueueAccount* account) const;
  ResourceList WaitingSideUsed(const QueueAccount& account) const;
  bool Entitled(const Relation& relation) const;
  bool GivesFirst(const std::string& a, const std::string& b);
  bool KeepsGuarantees(const Relation& relation, const ResourceList& requests) const;
  bool Allowed(const std::string& queue) const;
  bool CeilingMet(const std::vector<uint8_t>& left_out) const;
  bool Done(const ResourceList& freed, const std::vector<uint8_t>& left_out) const;
  void Take(VictimUnit unit);
  bool TryReclaim();
  bool TryPreemption();
  void Minimize();

  Snapshot& snapshot_;
  WhatIf& what_if_;
  const RunningGroups& running_;
  const FairShare& share_;
  const EvictionRequest& request_;
  const FitCheck& fits_;
  size_t base_;

  QueueAccount waiting_account_;  // stands in when the waiting queue has no account
  std::vector<const QueueAccount*> waiting_path_;  // the waiting queue, then its ancestors
  std::map<std::string, Relation> relations_;      // by victim queue
  ResourceList free_;   // free capacity on usable nodes before the search
  ResourceList freed_;  // released by chosen victims on usable nodes
  // Taken from each queue by chosen victims; a parent's includes its subtree's.
  std::map<std::string, ResourceList, std::less<>> removed_;
  std::vector<Chosen> chosen_;
  std::unordered_set<const PodInfo*> chosen_pods_;
  std::set<std::pair<size_t, int32_t>> exhausted_;  // (group, role) that may give no more
  int32_t checks_ = 0;
};

void Search::CountFreeCapacity() {
  const std::vector<NodeState>& slots = snapshot_.slots();
  for (uint32_t slot = 0; slot < slots.size(); ++slot) {
    const NodeState& node = slots[slot];
    if (!node.schedulable_slot() || !InDomain(slot)) {
      continue;
    }
    ForEachResource(request_.need, [&](std::string_view name, int64_t amount) {
      if (amount > 0) {
        int64_t free = node.info.allocatable.Get(name) - node.requested.Get(name);
        if (free > 0) {
          free_.Set(name, free_.Get(name) + free);
        }
      }
    });
  }
}

bool Search::Usable(const PodInfo& pod) const {
  std::optional<uint32_t> slot = snapshot_.FindNodeSlot(pod.node_name);
  if (!slot.has_value() || !snapshot_.slots()[*slot].schedulable_slot()) {
    return false;
  }
  const std::vector<uint8_t>* blocked = request_.blocked_slots;
  return InDomain(*slot) &&
         (blocked == nullptr || *slot >= blocked->size() || (*blocked)[*slot] == 0);
}

bool Search::InDomain(uint32_t slot) const {
  const std::vector<uint8_t>* domain = request_.domain_slots;
  return domain == nullptr || (slot < domain->size() && (*domain)[slot] != 0);
}

// Whether a unit may be taken in a search kept to one domain: an elastic
// member inside it, a whole gang with a member inside it.
bool Search::InDomain(const VictimUnit& unit) const {
  if (request_.domain_slots == nullptr) {
    return true;
  }
  return std::any_of(unit.pods.begin(), unit.pods.end(), [this](const PodInfo* pod) {
    std::optional<uint32_t> slot = snapshot_.FindNodeSlot(pod->node_name);
    return slot.has_value() && InDomain(*slot);
  });
}

bool Search::Covers(const ResourceList& freed) const {
  bool covers = true;
  ForEachResource(request_.need, [&](std::string_view name, int64_t amount) {
    if (amount > 0 && free_.Get(name) + freed.Get(name) < amount) {
      covers = false;
    }
  });
  return covers;
}

bool Search::Check() {
  ++checks_;
  return fits_();
}

const Search::Relation& Search::RelationOf(const std::string& queue) {
  auto [it, inserted] = relations_.try_emplace(queue);
  Relation& relation = it->second;
  if (!inserted) {
    return relation;
  }
  const QueueAccount* waiting = waiting_path_.empty() ? &waiting_account_ : waiting_path_.front();
  auto [victim_side, waiting_side] = share_.Parting(queue, request_.queue);
  if (queue == request_.queue || victim_side == nullptr) {
    // The waiting queue itself (or, in a configuration changed under running
    // pods, one on its path): its own lower-priority groups give back as
    // today, and its guarantee counts the waiting group in.
    relation.same = true;
    relation.distance = 1;
    const QueueAccount* account = share_.Find(queue);
    relation.victim_side = account;
    relation.waiting_side = waiting;
    if (account != nullptr) {
      relation.below.push_back(account);
    }
    return relation;
  }
  relation.distance = std::max(1, share_.Distance(request_.queue, queue));
  relation.victim_side = victim_side;
  relation.waiting_side = waiting_side;
  for (const QueueAccount* account : share_.Path(queue)) {
    relation.below.push_back(account);
    if (account == victim_side) {
      break;
    }
  }
  return relation;
}

ResourceList Search::Removed(const QueueAccount& account) const {
  auto it = removed_.find(account.spec.name);
  return it == removed_.end() ? ResourceList{} : it->second;
}

bool Search::OnWaitingPath(const QueueAccount& account) const {
  return std::find(waiting_path_.begin(), waiting_path_.end(), &account) != waiting_path_.end();
}

ResourceList Search::UsedAfter(const QueueAccount& account) const {
  ResourceList used = account.used - Removed(account);
  if (OnWaitingPath(account)) {
    used += request_.need;  // the waiting group lands in this subtree
  }
  return used;
}

double Search::ShareNow(const QueueAccount* account) const {
  return account == nullptr ? 0 : share_.WeightedShareOf(*account, UsedAfter(*account));
}

// The waiting side's usage with the waiting group in, less what its other
// queues already gave back (capacity that moved inside the subtree). The
// waiting queue's own victims are not subtracted: a queue is compared as it
// will stand with the group placed, not as it shrinks for it.
ResourceList Search::WaitingSideUsed(const QueueAccount& account) const {
  ResourceList used = account.used + request_.need - Removed(account);
  if (!waiting_path_.empty()) {
    used += Removed(*waiting_path_.front());
  }
  return used;
}

// The victim side gives back only while its subtree is over the waiting
// side's share (the waiting group counted in), or while the waiting side
// stays within its guarantee: the flat rule, applied to the two children of
// the lowest common ancestor.
bool Search::Entitled(const Relation& relation) const {
  if (relation.same) {
    return true;
  }
  const QueueAccount& waiting = *relation.waiting_side;
  ResourceList waiting_used = WaitingSideUsed(waiting);
  if (WithinGuarantee(AsGpuEquivalents(waiting_used, share_.gpus()),
                      AsGpuEquivalents(request_.need, share_.gpus()), waiting.spec.guaranteed)) {
    return true;
  }
  return ShareNow(relation.victim_side) > share_.WeightedShareOf(waiting, waiting_used);
}

// Closest to the waiting queue first (siblings, then cousins, ...); at the
// same distance the queue furthest over its share, compared top-down where
// the two paths part, then by name.
bool Search::GivesFirst(const std::string& a, const std::string& b) {
  int32_t distance_a = RelationOf(a).distance;
  int32_t distance_b = RelationOf(b).distance;
  if (distance_a != distance_b) {
    return distance_a < distance_b;
  }
  auto [side_a, side_b] = share_.Parting(a, b);
  if (side_a == nullptr) {
    side_a = share_.Find(a);
    side_b = share_.Find(b);
  }
  double share_a = ShareNow(side_a);
  double share_b = ShareNow(side_b);
  if (share_a != share_b) {
    return share_a > share_b;
  }
  return a < b;
}

bool Search::KeepsGuarantees(const Relation& relation, const ResourceList& requests) const {
  return std::all_of(
      relation.below.begin(), relation.below.end(), [&](const QueueAccount* account) {
        return KeepsGuarantee(
            AsGpuEquivalents(UsedAfter(*account) - requests, share_.gpus(), /*round_up=*/false),
            AsGpuEquivalents(requests, share_.gpus()), account->spec.guaranteed);
      });
}

// Whether victims may come from `queue`: anywhere, unless an ancestor's max
// holds the group back; then only from within that ancestor's subtree.
bool Search::Allowed(const std::string& queue) const {
  if (request_.within_queue.empty()) {
    return true;
  }
  for (const QueueAccount* account : share_.Path(queue)) {
    if (account->spec.name == request_.within_queue) {
      return true;
    }
  }
  return false;
}

// Whether the chosen victims (but those flagged in `left_out`) take enough
// from every queue whose max holds the group back.
bool Search::CeilingMet(const std::vector<uint8_t>& left_out) const {
  for (const auto& [queue, excess] : request_.over_ceiling) {
    ResourceList taken;
    for (size_t i = 0; i < chosen_.size(); ++i) {
      if (chosen_[i].dropped || (i < left_out.size() && left_out[i] != 0)) {
        continue;
      }
      for (const QueueAccount* account :
           share_.Path(running_.groups()[chosen_[i].unit.group].queue)) {
        if (account->spec.name == queue) {
          taken += chosen_[i].unit.requests;
          break;
        }
      }
    }
    bool enough = true;
    const ResourceList taken_as_limits = AsGpuEquivalents(taken, share_.gpus(), /*round_up=*/false);
    ForEachResource(excess, [&](std::string_view name, int64_t amount) {
      if (amount > 0 && taken_as_limits.Get(name) < amount) {
        enough = false;
      }
    });
    if (!enough) {
      return false;
    }
  }
  return true;
}

// Whether the search may stop to check the fit: the capacity is there and
// no ceiling is left in the way.
bool Search::Done(const ResourceList& freed, const std::vector<uint8_t>& left_out) const {
  return Covers(freed) && CeilingMet(left_out);
}

void Search::Take(VictimUnit unit) {
  Chosen chosen;
  for (const PodInfo* pod : unit.pods) {
    what_if_.Release(*pod);
    chosen_pods_.insert(pod);
    if (Usable(*pod)) {
      chosen.useful += pod->requests;
    }
  }
  freed_ += chosen.useful;
  const std::string& queue = running_.groups()[unit.group].queue;
  std::vector<const QueueAccount*> path = share_.Path(queue);
  if (path.empty()) {
    removed_[queue] += unit.requests;
  }
  for (const QueueAccount* account : path) {
    removed_[account->spec.name] += unit.requests;
  }
  chosen.unit = std::move(unit);
  chosen_.push_back(std::move(chosen));
}

bool Search::TryReclaim() {
  // Candidates per queue, each list in victim order within its queue.
  std::map<std::string, std::vector<VictimUnit>> lists;
  const std::vector<RunningGroup>& groups = running_.groups();
  for (size_t g = 0; g < groups.size(); ++g) {
    const RunningGroup& group = groups[g];
    if (group.placed_this_cycle || group.shielded || group.Key() == request_.group_key) {
      continue;
    }
    if (group.queue == request_.queue && group.priority > request_.priority) {
      continue;  // within a queue, only groups of no higher priority give back
    }
    if (group.queue == request_.queue && group.priority == request_.priority &&
        request_.service_level >= 0 && group.service_level <= request_.service_level) {
      continue;  // and by attained service, only the more served
    }
    if (!Allowed(group.queue)) {
      continue;
    }
    std::vector<VictimUnit> units = ElasticUnits(running_, g, EvictionCause::kReclaim);
    std::vector<VictimUnit>& list = lists[group.queue];
    std::move(units.begin(), units.end(), std::back_inserter(list));
  }
  for (auto& [queue, list] : lists) {
    std::stable_sort(list.begin(), list.end(), [&](const VictimUnit& a, const VictimUnit& b) {
      const RunningGroup& ga = groups[a.group];
      const RunningGroup& gb = groups[b.group];
      // In an AttainedService queue the most served give back first.
      if (ga.service_level != gb.service_level) {
        return ga.service_level > gb.service_level;
      }
      int32_t role_a = ga.roles[static_cast<size_t>(a.role)].priority;
      int32_t role_b = gb.roles[static_cast<size_t>(b.role)].priority;
      if (role_a != role_b) {
        return role_a < role_b;
      }
      if (a.pods.front()->index != b.pods.front()->index) {
        return a.pods.front()->index > b.pods.front()->index;
      }
      if (ga.priority != gb.priority) {
        return ga.priority < gb.priority;
      }
      return a.group < b.group;
    });
  }
  std::map<std::string, size_t> next;
  while (true) {
    // The entitled queue closest to the waiting one, then furthest over its
    // share, gives the next victim.
    const std::string* best = nullptr;
    for (auto& [queue, list] : lists) {
      if (next[queue] >= list.size() || !Entitled(RelationOf(queue))) {
        continue;
      }
      if (best == nullptr || GivesFirst(queue, *best)) {
        best = &queue;
      }
    }
    if (best == nullptr) {
      return false;
    }
    std::vector<VictimUnit>& list = lists[*best];
    VictimUnit& unit = list[next[*best]++];
    std::pair<size_t, int32_t> role_key{unit.group, unit.role};
    if (exhausted_.contains(role_key)) {
      continue;
    }
    if (!InDomain(unit)) {
      exhausted_.insert(role_key);  // lower indices would leave a gap
      continue;
    }
    if (!KeepsGuarantees(RelationOf(*best), unit.requests)) {
      exhausted_.insert(role_key);  // lower indices would leave a gap
      continue;
    }
    Take(std::move(unit));
    if (Done(freed_, {})) {
      if (!CanCheck()) {
        return false;
      }
      if (Check()) {
        return true;
      }
    }
  }
}

bool Search::TryPreemption() {
  for (const VictimUnit& candidate : request_.preemption_candidates) {
    VictimUnit unit = candidate;
    if (!unit.whole()) {
      if (chosen_pods_.contains(unit.pods.front())) {
        continue;
      }
      if (exhausted_.contains({unit.group, unit.role})) {
        continue;
      }
    } else {
      std::erase_if(unit.pods, [&](const PodInfo* pod) { return chosen_pods_.contains(pod); });
      if (unit.pods.empty()) {
        continue;
      }
      unit.requests = ResourceList{};
      for (const PodInfo* pod : unit.pods) {
        unit.requests += pod->requests;
      }
    }
    if (!InDomain(unit)) {
      if (!unit.whole()) {
        exhausted_.insert({unit.group, unit.role});
      }
      continue;
    }
    const std::string& queue = running_.groups()[unit.group].queue;
    if (!Allowed(queue)) {
      continue;
    }
    if (!KeepsGuarantees(RelationOf(queue), unit.requests)) {
      if (!unit.whole()) {
        exhausted_.insert({unit.group, unit.role});
      }
      continue;
    }
    Take(std::move(unit));
    if (Done(freed_, {})) {
      if (!CanCheck()) {
        return false;
      }
      if (Check()) {
        return true;
      }
    }
  }
  return false;
}

void Search::Minimize() {
  // The last victim was needed with every other in place; try each earlier
  // one, latest first, that can go without breaking a role's 0..k-1 run or
  // leaving part of a gang chosen whole.
  for (size_t i = chosen_.size() - 1; i-- > 0;) {
    if (!CanCheck()) {
      break;
    }
    const VictimUnit& unit = chosen_[i].unit;
    if (!unit.whole()) {
      bool pinned = false;
      for (const Chosen& other : chosen_) {
        if (other.dropped || &other.unit == &unit || other.unit.group != unit.group) {
          continue;
        }
        if (other.unit.whole() || (other.unit.role == unit.role &&
                                   other.unit.pods.front()->index < unit.pods.front()->index)) {
          pinned = true;
          break;
        }
      }
      if (pinned) {
        continue;
      }
    }
    std::vector<uint8_t> without(chosen_.size(), 0);
    without[i] = 1;
    if (!Done(freed_ - chosen_[i].useful, without)) {
      continue;
    }
    what_if_.RollbackTo(base_);
    for (size_t j = 0; j < chosen_.size(); ++j) {
      if (j != i && !chosen_[j].dropped) {
        for (const PodInfo* pod : chosen_[j].unit.pods) {
          what_if_.Release(*pod);
        }
      }
    }
    if (Check()) {
      chosen_[i].dropped = true;
      freed_ -= chosen_[i].useful;
    }
  }
}

EvictionChoice Search::Run() {
  EvictionChoice choice;
  bool fits = !request_.known_not_to_fit && Done(freed_, {}) && CanCheck() && Check();
  if (!fits && request_.reclaim) {
    fits = TryReclaim();
  }
  if (!fits && !request_.preemption_candidates.empty()) {
    fits = TryPreemption();
  }
  if (fits && chosen_.size() > 1) {
    Minimize();
  }
  what_if_.RollbackTo(base_);
  choice.fits = fits;
  choice.fit_checks = checks_;
  if (fits) {
    for (Chosen& chosen : chosen_) {
      if (!chosen.dropped) {
        choice.victims.push_back(std::move(chosen.unit));
      }
    }
  }
  return choice;
}

}  // namespace

std::string_view EvictionCauseName(EvictionCause cause) {
  switch (cause) {
    case EvictionCause::kReclaim:
      return "Reclaim";
    case EvictionCause::kPreemption:
      return "Preemption";
  }
  return "Unknown";
}

std::string RunningGroup::Key() const {
  std::string key = PodKey(namespace_name, name);
  if (single_pod) {
    key += "|pod";
  }
  return key;
}

ResourceList RunningGroup::Requests() const {
  ResourceList total;
  for (const PodInfo* pod : members) {
    total += pod->requests;
  }
  return total;
}

RunningGroups RunningGroups::FromSnapshot(const Snapshot& snapshot, const PolicyConfig& policy,
                                          const std::unordered_set<std::string>& leaving) {
  RunningGroups out;
  for (const NodeState& node : snapshot.slots()) {
    if (!node.in_use) {
      continue;
    }
    for (const PodInfo* pod : node.pods) {
      if (!IsManagedPod(*pod, policy)) {
        continue;
      }
      bool single = pod->job_name.empty();
      std::string key = PodKey(pod->namespace_name, single ? pod->name : pod->job_name);
      if (single) {
        key += "|pod";
      }
      auto [it, inserted] = out.index_.emplace(std::move(key), out.groups_.size());
      if (inserted) {
        RunningGroup group;
        group.namespace_name = pod->namespace_name;
        group.name = single ? pod->name : pod->job_name;
        group.single_pod = single;
        group.priority = pod->priority;
        group.creation_time = pod->creation_time;
        out.groups_.push_back(std::move(group));
      }
      RunningGroup& group = out.groups_[it->second];
      group.priority = std::max(group.priority, pod->priority);
      group.creation_time = std::min(group.creation_time, pod->creation_time);
      if (leaving.contains(pod->Key())) {
        ++group.leaving;
      } else {
        group.members.push_back(pod);
      }
    }
  }
  for (RunningGroup& group : out.groups_) {
    std::sort(group.members.begin(), group.members.end(),
              [](const PodInfo* a, const PodInfo* b) { return a->name < b->name; });
    const PodInfo* with_spec = nullptr;
    for (const PodInfo* pod : group.members) {
      if (pod->group_spec.has_value()) {
        with_spec = pod;
        break;
      }
    }
    group.queue = group.members.empty() ? std::string(api::kDefaultQueue)
                                        : std::string(QueueOfPod(*group.members.front()));
    if (with_spec != nullptr) {
      group.queue = std::string(QueueOfPod(*with_spec));
    }
    if (with_spec != nullptr && with_spec->controller.has_value() &&
        with_spec->controller->kind == "HybridJob") {
      group.job_uid = with_spec->controller->uid;
    }
    if (group.single_pod || with_spec == nullptr) {
      group.elastic_shape = false;
      continue;
    }
    group.resize_restarts = with_spec->group_spec->resize_restarts;
    group.elastic_shape = AssignRoles(group, *with_spec->group_spec);
  }
  return out;
}

RunningGroup* RunningGroups::Find(std::string_view key) {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &groups_[it->second];
}

void RunningGroups::MarkLeaving(size_t group, const std::vector<const PodInfo*>& pods) {
  RunningGroup& running = groups_[group];
  for (const PodInfo* pod : pods) {
    auto erase = [pod](std::vector<const PodInfo*>& list) {
      auto it = std::find(list.begin(), list.end(), pod);
      if (it == list.end()) {
        return false;
      }
      list.erase(it);
      return true;
    };
    if (erase(running.members)) {
      ++running.leaving;
    }
    for (RunningRole& role : running.roles) {
      erase(role.members);
    }
  }
}

std::vector<VictimUnit> ElasticUnits(const RunningGroups& running, size_t group,
                                     EvictionCause cause) {
  std::vector<VictimUnit> units;
  const RunningGroup& running_group = running.groups()[group];
  if (!running_group.elastic_shape) {
    return units;
  }
  // A group whose minimums are all 0 still keeps one member (the lowest index
  // of its highest-priority role, which would go last anyway): shrinking it
  // to nothing would stop it, which is not what reclaim is for.
  const PodInfo* keep = nullptr;
  int32_t minimums = 0;
  const RunningRole* first = nullptr;
  for (const RunningRole& role : running_group.roles) {
    minimums += role.min_replicas;
    if (!role.members.empty() && (first == nullptr || role.priority > first->priority)) {
      first = &role;
    }
  }
  if (minimums == 0 && first != nullptr) {
    keep = first->members.front();
  }
  for (size_t r = 0; r < running_group.roles.size(); ++r) {
    const RunningRole& role = running_group.roles[r];
    int64_t staying = static_cast<int64_t>(role.members.size());
    for (int64_t k = staying - 1; k >= role.min_replicas && k >= 0; --k) {
      const PodInfo* pod = role.members[static_cast<size_t>(k)];
      if (pod != keep) {
        units.push_back(VictimUnit{group, static_cast<int32_t>(r), {pod}, pod->requests, cause});
      }
    }
  }
  return units;
}

EvictionChoice FindEvictions(Snapshot& snapshot, WhatIf& what_if, const RunningGroups& running,
                             const FairShare& share, const EvictionRequest& request,
                             const FitCheck& fits) {
  Search search(snapshot, what_if, running, share, request, fits);
  return search.Run();
}

EvictionScope EvictionScopeOf(const PodGroup& group, Snapshot& snapshot,
                              const PlannerConfig& planner, const std::vector<uint8_t>& blocked) {
  EvictionScope scope;
  std::optional<ConfinedUnit> confined =
      ConfinedUnitOf(group, snapshot, planner.topology_levels, planner.gpu_resources);
  if (!confined.has_value()) {
    return scope;
  }
  scope.level = &snapshot.TopologyLevel(confined->level_key);
  scope.domains = DomainsToClear(*scope.level, snapshot.slots(), confined->demand, blocked);
  scope.whole_group = confined->unit.roles.size() == group.spec.roles.size();
  return scope;
}

EvictionChoice FindEvictionsInScope(Snapshot& snapshot, WhatIf& what_if,
                                    const RunningGroups& running, const FairShare& share,
                                    const EvictionRequest& request, const FitCheck& fits,
                                    const EvictionScope& scope) {
  if (scope.level == nullptr) {
    return FindEvictions(snapshot, what_if, running, share, request, fits);
  }
  EvictionChoice best;
  int32_t budget = 2 * request.max_fit_checks;
  auto pods_of = [](const EvictionChoice& choice) {
    size_t pods = 0;
    for (const VictimUnit& unit : choice.victims) {
      pods += unit.pods.size();
    }
    return pods;
  };
  const size_t tried = std::min(scope.domains.size(), kMaxEvictionDomains);
  for (size_t i = 0; i < tried && budget > 0; ++i) {
    const TopologyDomain& domain = scope.level->domains[static_cast<size_t>(scope.domains[i])];
    std::vector<uint8_t> inside(snapshot.slots().size(), 0);
    for (uint32_t slot : domain.slots) {
      inside[slot] = 1;
    }
    EvictionRequest within = request;
    within.domain_slots = &inside;
    within.max_fit_checks = std::min(request.max_fit_checks, budget);
    EvictionChoice choice = FindEvictions(snapshot, what_if, running, share, within, fits);
    budget -= choice.fit_checks;
    best.fit_checks += choice.fit_checks;
    if (choice.fits && (!best.fits || pods_of(choice) < pods_of(best))) {
      const int32_t checks = best.fit_checks;
      best = std::move(choice);
      best.fit_checks = checks;
      best.domain = scope.level->key + "=" + domain.value;
    }
  }
  if (best.fits || (scope.whole_group && tried == scope.domains.size())) {
    return best;
  }
  EvictionRequest anywhere = request;
  anywhere.max_fit_checks = std::max(budget, 0);
  if (anywhere.max_fit_checks == 0) {
    return best;
  }
  EvictionChoice choice = FindEvictions(snapshot, what_if, running, share, anywhere, fits);
  choice.fit_checks += best.fit_checks;
  return choice;
}

}  // namespace hybridjob::scheduler
