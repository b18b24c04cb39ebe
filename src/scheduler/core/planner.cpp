#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/predicates.h>
#include <hybridjob/scheduler/core/topology.h>

namespace hybridjob::scheduler {
namespace {

// Per-node verdict of the static filters for one pod class.
constexpr uint8_t kVerdictUnknown = 0;
constexpr uint8_t kVerdictPass = 1;
constexpr uint8_t kVerdictFail = 2;

// Members of a role are usually identical but for their index; pods of one
// class share the cached static verdicts and the inter-pod affinity counts.
struct PodClass {
  const PodInfo* representative = nullptr;
  std::vector<uint8_t> static_verdict;
  // Only when some required (anti-)affinity rule can apply to the class.
  std::optional<InterPodAffinityState> affinity;
};

// Where a role's members may go: one domain of a topology level, or anywhere.
struct NodeScope {
  const TopologyLevelIndex* level = nullptr;  // nullptr: anywhere
  int32_t domain = -1;

  bool anywhere() const { return level == nullptr; }
  bool Contains(uint32_t slot) const { return anywhere() || level->DomainOf(slot) == domain; }
};

// The topology side of one planning attempt: every configured level (for the
// affinity score), the group's units and the domain chosen for each.
struct TopologyChoice {
  std::vector<const TopologyLevelIndex*> levels;
  std::vector<TopologyUnit> units;
  std::vector<NodeScope> scopes;  // per unit
};

struct RoleState {
  const GroupRole* spec = nullptr;
  size_t spec_order = 0;
  std::vector<const PodInfo*> pending;  // placeable in this order: lowest index first
  // Pending pods past a gap in the indices: placing them would break the
  // 0..k-1 numbering, so they are surplus of a placed plan.
  std::vector<const PodInfo*> past_gap;
  int32_t missing_index = -1;          // the first index with no member, when there is a gap
  std::vector<uint32_t> placed_slots;  // node slot of pending[i] for i < next
  size_t next = 0;                     // pending[0..next) are placed
  int32_t bound = 0;
  bool blocked = false;
  PodClass* last_class = nullptr;
  int32_t unit = -1;  // topology unit, or -1
  NodeScope scope;

  int32_t placed() const { return static_cast<int32_t>(next); }
  int32_t total() const { return bound + placed(); }
  bool CanGrow() const { return !blocked && total() < spec->max_replicas && next < pending.size(); }
};

// Of the nodes examined for a member that did not fit: those that would take
// it, and those that would but for its claims.
struct RejectionCounts {
  size_t available = 0;
  size_t volumes = 0;
};

bool PendingOrder(const PodInfo* a, const PodInfo* b) {
  // Pods without an index label go last; names break ties deterministically.
  auto rank = [](const PodInfo* pod) {
    return pod->index < 0 ? std::numeric_limits<int64_t>::max() : int64_t{pod->index};
  };
  if (rank(a) != rank(b)) {
    return rank(a) < rank(b);
  }
  return a->name < b->name;
}

void CollectSelectorKeys(const std::vector<PodAffinityTerm>& terms, std::set<std::string>* keys) {
  for (const PodAffinityTerm& term : terms) {
    if (term.label_selector.has_value()) {
      for (const SelectorRequirement& requirement : term.label_selector->requirements) {
        keys->insert(requirement.key);
      }
    }
  }
}

// Rolls tentative placements back however the planner exits.
class TentativeScope {
 public:
  explicit TentativeScope(Snapshot& snapshot)
      : snapshot_(snapshot), mark_(snapshot.TentativeMark()) {}
  ~TentativeScope() { snapshot_.RollbackTentative(mark_); }
  TentativeScope(const TentativeScope&) = delete;
  TentativeScope& operator=(const TentativeScope&) = delete;

  void Rollback() { snapshot_.RollbackTentative(mark_); }

 private:
  Snapshot& snapshot_;
  size_t mark_;
};

class GroupPlanner {
 public:
  GroupPlanner(Snapshot& snapshot, const PodGroup& group, const PlannerConfig& config,
               uint32_t start_slot, const TopologyChoice* topology = nullptr)
      : snapshot_(snapshot), group_(group), config_(config), topology_(topology) {
    size_t slot_count = snapshot_.slots().size();
    start_slot_ = slot_count == 0 ? 0 : start_slot % slot_count;
    touched_flag_.assign(slot_count, 0);
    check_volumes_ = snapshot_.storage().tracked();
    nodes_to_find_ = NumFeasibleNodesToFind(
        snapshot_.node_count(), config_.percentage_of_nodes_to_score,
        static_cast<size_t>(std::max(config_.min_feasible_nodes_to_find, 1)));
  }

  GroupPlan Run();
  // The topology unit of the role whose minimum did not fit, or -1 (no unit,
  // or the plan did not fail for want of room).
  int32_t failed_unit() const { return failed_unit_; }

 private:
  void SetUpRoles(GroupPlan& plan);
  std::string MissingMinimum() const;
  bool PlaceMinimums();
  void Grow();
  void GrowRound();
  void CountTopologyUse(uint32_t slot);
  bool TryPlaceNext(RoleState& role);
  PodClass& ClassFor(RoleState& role, const PodInfo& pod);
  bool SameClass(const PodInfo& a, const PodInfo& b) const;
  bool Feasible(const PodInfo& pod, PodClass& pod_class, uint32_t slot);
  std::optional<uint32_t> ChooseNode(const PodInfo& pod, PodClass& pod_class,
                                     const NodeScope& scope);
  void Place(const PodInfo& pod, uint32_t slot);
  uint8_t StaticVerdict(PodClass& pod_class, uint32_t slot);
  VolumeVerdict CheckVolumes(const PodInfo& pod, const NodeInfo& node) const;
  std::string DescribeRejections(const PodInfo& pod, PodClass& pod_class, RejectionCounts& counts);
  Shortfall ClassifyShortfall(const RejectionCounts& counts, std::string& never_fits);
  std::string DescribeFreeGpus(PodClass& pod_class);
  void FillSummaries(GroupPlan& plan) const;
  void FillPlacedPlan(GroupPlan& plan) const;

  Snapshot& snapshot_;
  const PodGroup& group_;
  const PlannerConfig& config_;
  const TopologyChoice* topology_ = nullptr;
  // Per configured level and domain: members of this group placed there.
  std::vector<std::vector<int32_t>> topology_use_;
  std::vector<int64_t> topology_scores_;
  int32_t failed_unit_ = -1;
  uint32_t start_slot_ = 0;
  size_t nodes_to_find_ = 0;
  size_t last_scan_length_ = 0;

  std::vector<RoleState> roles_;
  std::vector<std::unique_ptr<PodClass>> classes_;
  bool group_has_anti_affinity_ = false;
  std::vector<std::string> relevant_label_keys_;

  std::vector<uint8_t> touched_flag_;  // per slot: this plan placed a pod there
  std::vector<uint32_t> touched_slots_;
  std::vector<uint32_t> candidates_;
  std::vector<int64_t> packing_scores_;
  std::vector<int64_t> affinity_scores_;

  RoleState* failed_role_ = nullptr;
  bool check_volumes_ = false;
  VolumePlan volume_plan_;  // claims decided by the members placed so far
};

VolumeVerdict GroupPlanner::CheckVolumes(const PodInfo& pod, const NodeInfo& node) const {
  if (!check_volumes_ || pod.claims.empty()) {
    return {};
  }
  return CheckPodVolumes(pod, node, snapshot_.storage(), volume_plan_,
                         [this](std::string_view key) { return snapshot_.ClaimUsersOf(key); });
}

void GroupPlanner::SetUpRoles(GroupPlan& plan) {
  roles_.reserve(group_.spec.roles.size());
  for (size_t i = 0; i < group_.spec.roles.size(); ++i) {
    RoleState role;
    role.spec = &group_.spec.roles[i];
    role.spec_order = i;
    roles_.push_back(std::move(role));
  }
  auto find_role = [this](const std::string& name) -> RoleState* {
    for (RoleState& role : roles_) {
      if (role.spec->name == name) {
        return &role;
      }
    }
    return nullptr;
  };
  if (topology_ != nullptr) {
    for (size_t u = 0; u < topology_->units.size(); ++u) {
      for (size_t role_index : topology_->units[u].roles) {
        roles_[role_index].unit = static_cast<int32_t>(u);
        roles_[role_index].scope = topology_->scopes[u];
      }
    }
    topology_use_.resize(topology_->levels.size());
    for (size_t l = 0; l < topology_->levels.size(); ++l) {
      topology_use_[l].assign(topology_->levels[l]->domains.size(), 0);
    }
  }
  // Bound members and members that succeeded fill their places.
  std::vector<std::set<int32_t>> taken_indices(roles_.size());
  for (const RoleState& role : roles_) {
    taken_indices[role.spec_order].insert(role.spec->completed.begin(), role.spec->completed.end());
  }
  for (const PodInfo* pod : group_.bound) {
    if (RoleState* role = find_role(pod->role)) {
      ++role->bound;
      taken_indices[role->spec_order].insert(pod->index);
    }
    if (topology_ != nullptr) {
      if (std::optional<uint32_t> slot = snapshot_.FindNodeSlot(pod->node_name)) {
        CountTopologyUse(*slot);
      }
    }
  }
  std::set<std::string> selector_keys;
  for (const PodInfo* pod : group_.pending) {
    RoleState* role = find_role(pod->role);
    if (role == nullptr) {
      plan.ignored.push_back(pod);
      continue;
    }
    role->pending.push_back(pod);
    group_has_anti_affinity_ |= !pod->required_pod_anti_affinity.empty();
    CollectSelectorKeys(pod->required_pod_affinity, &selector_keys);
    CollectSelectorKeys(pod->required_pod_anti_affinity, &selector_keys);
  }
  for (RoleState& role : roles_) {
    std::sort(role.pending.begin(), role.pending.end(), PendingOrder);
    // Keep the pods that continue the run of indices from 0 (bound and
    // succeeded members fill their own places); duplicates and indices beyond the maximum are
    // ignored, and everything after the first gap waits as surplus.
    std::set<int32_t>& taken = taken_indices[role.spec_order];
    std::vector<const PodInfo*> placeable;
    int32_t next_index = 0;
    for (const PodInfo* pod : role.pending) {
      if (pod->index < 0) {
        placeable.push_back(pod);  // a pod outside the index scheme, e.g. a lone pod
        continue;
      }
      if (pod->index >= role.spec->max_replicas || taken.count(pod->index) > 0) {
        plan.ignored.push_back(pod);
        continue;
      }
      while (taken.count(next_index) > 0) {
        ++next_index;
      }
      if (pod->index == next_index && role.past_gap.empty()) {
        placeable.push_back(pod);
        taken.insert(pod->index);
      } else {
        if (role.past_gap.empty()) {
          role.missing_index = next_index;
        }
        role.past_gap.push_back(pod);
      }
    }
    role.pending = std::move(placeable);
  }
  for (const auto& [key, uses] : snapshot_.anti_affinity_selector_keys()) {
    selector_keys.insert(key);
  }
  relevant_label_keys_.assign(selector_keys.begin(), selector_keys.end());
}

std::string GroupPlanner::MissingMinimum() const {
  for (const RoleState& role : roles_) {
    int64_t available = role.bound + static_cast<int64_t>(role.pending.size());
    if (available < role.spec->min_replicas) {
      std::string reason = role.spec->name + ": only " + std::to_string(available) + " of min " +
                           std::to_string(role.spec->min_replicas) + " members exist";
      if (role.missing_index >= 0) {
        reason += " in index order (index " + std::to_string(role.missing_index) + " is missing)";
      }
      return reason;
    }
  }
  return {};
}

bool GroupPlanner::SameClass(const PodInfo& a, const PodInfo& b) const {
  if (&a == &b) {
    return true;
  }
  if (a.namespace_name != b.namespace_name || a.node_selector != b.node_selector ||
      a.required_node_affinity != b.required_node_affinity || a.tolerations != b.tolerations ||
      a.required_pod_affinity != b.required_pod_affinity ||
      a.required_pod_anti_affinity != b.required_pod_anti_affinity) {
    return false;
  }
  // Labels matter to affinity only through keys some selector looks at.
  for (const std::string& key : relevant_label_keys_) {
    const std::string* value_a = a.labels.Find(key);
    const std::string* value_b = b.labels.Find(key);
    if ((value_a == nullptr) != (value_b == nullptr) ||
        (value_a != nullptr && *value_a != *value_b)) {
      return false;
    }
  }
  return true;
}

PodClass& GroupPlanner::ClassFor(RoleState& role, const PodInfo& pod) {
  if (role.last_class != nullptr && SameClass(*role.last_class->representative, pod)) {
    return *role.last_class;
  }
  for (const std::unique_ptr<PodClass>& existing : classes_) {
    if (SameClass(*existing->representative, pod)) {
      role.last_class = existing.get();
      return *existing;
    }
  }
  auto created = std::make_unique<PodClass>();
  created->representative = &pod;
  created->static_verdict.assign(snapshot_.slots().size(), kVerdictUnknown);
  if (!pod.required_pod_affinity.empty() || !pod.required_pod_anti_affinity.empty() ||
      group_has_anti_affinity_ || !snapshot_.pods_with_required_anti_affinity().empty()) {
    created->affinity = InterPodAffinityState::Build(pod, snapshot_);
  }
  classes_.push_back(std::move(created));
  role.last_class = classes_.back().get();
  return *classes_.back();
}

uint8_t GroupPlanner::StaticVerdict(PodClass& pod_class, uint32_t slot) {
  uint8_t& verdict = pod_class.static_verdict[slot];
  if (verdict == kVerdictUnknown) {
    verdict = RunStaticFilters(*pod_class.representative, snapshot_.slots()[slot]).ok()
                  ? kVerdictPass
                  : kVerdictFail;
  }
  return verdict;
}

bool GroupPlanner::Feasible(const PodInfo& pod, PodClass& pod_class, uint32_t slot) {
  if (StaticVerdict(pod_class, slot) != kVerdictPass) {
    return false;
  }
  const NodeState& node = snapshot_.slots()[slot];
  if (!CheckResources(pod, node).ok()) {
    return false;
  }
  if (!pod.host_ports.empty() && !CheckHostPorts(pod, node).ok()) {
    return false;
  }
  if (pod_class.affinity.has_value() && !pod_class.affinity->Check(node.info).ok()) {
    return false;
  }
  return CheckVolumes(pod, node.info).ok();
}

std::optional<uint32_t> GroupPlanner::ChooseNode(const PodInfo& pod, PodClass& pod_class,
                                                 const NodeScope& scope) {
  const std::vector<NodeState>& slots = snapshot_.slots();
  size_t slot_count = slots.size();
  candidates_.clear();
  // Nodes this group already uses come first: they keep the gang close and win
  // ties, which is what packing wants.
  for (uint32_t slot : touched_slots_) {
    if (scope.Contains(slot) && Feasible(pod, pod_class, slot)) {
      candidates_.push_back(slot);
    }
  }
  if (scope.anywhere()) {
    size_t scanned = 0;
    for (; scanned < slot_count && candidates_.size() < nodes_to_find_; ++scanned) {
      uint32_t slot = static_cast<uint32_t>((start_slot_ + scanned) % slot_count);
      if (touched_flag_[slot] == 0 && Feasible(pod, pod_class, slot)) {
        candidates_.push_back(slot);
      }
    }
    last_scan_length_ = scanned;
  } else {
    // Within one domain, rotated like the whole cluster.
    const std::vector<uint32_t>& domain = scope.level->domains[scope.domain].slots;
    const size_t offset = domain.empty() ? 0 : start_slot_ % domain.size();
    for (size_t scanned = 0; scanned < domain.size() && candidates_.size() < nodes_to_find_;
         ++scanned) {
      uint32_t slot = domain[(offset + scanned) % domain.size()];
      if (touched_flag_[slot] == 0 && Feasible(pod, pod_class, slot)) {
        candidates_.push_back(slot);
      }
    }
  }
  if (candidates_.empty()) {
    return std::nullopt;
  }
  if (candidates_.size() == 1) {
    return candidates_.front();
  }
  packing_scores_.resize(candidates_.size());
  for (size_t i = 0; i < candidates_.size(); ++i) {
    packing_scores_[i] =
        PackingScore(config_.packing, pod, slots[candidates_[i]], config_.gpu_resources);
  }
  NormalizeScores(packing_scores_);
  bool use_affinity = !pod.preferred_node_affinity.empty() && config_.node_affinity_weight != 0;
  if (use_affinity) {
    affinity_scores_.resize(candidates_.size());
    for (size_t i = 0; i < candidates_.size(); ++i) {
      affinity_scores_[i] = PreferredNodeAffinityScore(pod, slots[candidates_[i]].info);
    }
    NormalizeScores(affinity_scores_);
  }
  // A topology-bound gang keeps close first (inner domains it already uses),
  // then the usual scores decide.
  topology_scores_.assign(candidates_.size(), 0);
  if (topology_ != nullptr) {
    for (size_t i = 0; i < candidates_.size(); ++i) {
      topology_scores_[i] = TopologyAffinityScore(topology_->levels, topology_use_, candidates_[i]);
    }
  }
  size_t best = 0;
  int64_t best_topology = std::numeric_limits<int64_t>::min();
  int64_t best_score = std::numeric_limits<int64_t>::min();
  for (size_t i = 0; i < candidates_.size(); ++i) {
    int64_t score = config_.packing_weight * packing_scores_[i];
    if (use_affinity) {
      score += config_.node_affinity_weight * affinity_scores_[i];
    }
    if (topology_scores_[i] > best_topology ||
        (topology_scores_[i] == best_topology && score > best_score)) {
      best_topology = topology_scores_[i];
      best_score = score;
      best = i;
    }
  }
  return candidates_[best];
}

void GroupPlanner::Place(const PodInfo& pod, uint32_t slot) {
  // Decided before the pod is accounted on the node, as Feasible saw it.
  for (const ClaimDecision& decision : CheckVolumes(pod, snapshot_.slots()[slot].info).decisions) {
    volume_plan_.Add(decision);
  }
  snapshot_.PlaceTentatively(pod, slot);
  CountTopologyUse(slot);
  if (touched_flag_[slot] == 0) {
    touched_flag_[slot] = 1;
    touched_slots_.push_back(slot);
  }
  const NodeInfo& node = snapshot_.slots()[slot].info;
  for (const std::unique_ptr<PodClass>& pod_class : classes_) {
    if (pod_class->affinity.has_value()) {
      pod_class->affinity->AddPod(pod, node);
    }
  }
}

void GroupPlanner::CountTopologyUse(uint32_t slot) {
  if (topology_ == nullptr) {
    return;
  }
  for (size_t l = 0; l < topology_->levels.size(); ++l) {
    const int32_t domain = topology_->levels[l]->DomainOf(slot);
    if (domain >= 0) {
      ++topology_use_[l][domain];
    }
  }
}

bool GroupPlanner::TryPlaceNext(RoleState& role) {
  const PodInfo& pod = *role.pending[role.next];
  PodClass& pod_class = ClassFor(role, pod);
  std::optional<uint32_t> slot = ChooseNode(pod, pod_class, role.scope);
  if (!slot.has_value()) {
    return false;
  }
  Place(pod, *slot);
  role.placed_slots.push_back(*slot);
  ++role.next;
  return true;
}

bool GroupPlanner::PlaceMinimums() {
  // Every minimum must be met, so the order is free: roles whose pods need
  // other pods nearby (required pod affinity) go after the rest, so the pods
  // they follow are already placed; then higher priority first.
  auto needs_others = [](const RoleState* role) {
    return !role->pending.empty() && !role->pending.front()->required_pod_affinity.empty();
  };
  std::vector<RoleState*> order;
  for (RoleState& role : roles_) {
    order.push_back(&role);
  }
  std::stable_sort(order.begin(), order.end(), [&](const RoleState* a, const RoleState* b) {
    if (needs_others(a) != needs_others(b)) {
      return !needs_others(a);
    }
    return a->spec->priority > b->spec->priority;
  });
  for (RoleState* role : order) {
    while (role->total() < role->spec->min_replicas) {
      if (!TryPlaceNext(*role)) {
        failed_role_ = role;
        failed_unit_ = role->unit;
        return false;
      }
    }
  }
  return true;
}

void GroupPlanner::Grow() {
  GrowRound();
  // A Preferred unit that filled its domain grows on outside it, as close as
  // the affinity score can keep it.
  bool widened = false;
  for (RoleState& role : roles_) {
    if (role.unit >= 0 && !role.scope.anywhere() &&
        topology_->units[role.unit].spec.mode == api::TopologyMode::kPreferred) {
      role.scope = NodeScope{};
      role.blocked = false;
      widened = true;
    }
  }
  if (widened) {
    GrowRound();
  }
}

void GroupPlanner::GrowRound() {
  std::vector<RoleState*> order;
  for (RoleState& role : roles_) {
    order.push_back(&role);
  }
  std::stable_sort(order.begin(), order.end(), [](const RoleState* a, const RoleState* b) {
    return a->spec->priority > b->spec->priority;
  });
  for (size_t tier_begin = 0; tier_begin < order.size();) {
    size_t tier_end = tier_begin;
    while (tier_end < order.size() &&
           order[tier_end]->spec->priority == order[tier_begin]->spec->priority) {
      ++tier_end;
    }
    // One member per role per round, so equal-priority roles grow evenly.
    bool progress = true;
    while (progress) {
      progress = false;
      for (size_t i = tier_begin; i < tier_end; ++i) {
        RoleState& role = *order[i];
        if (!role.CanGrow()) {
          continue;
        }
        if (TryPlaceNext(role)) {
          progress = true;
        } else {
          // Members of a role share one shape: if this one fits nowhere, the
          // next will not either.
          role.blocked = true;
        }
      }
    }
    tier_begin = tier_end;
  }
}

std::string GroupPlanner::DescribeRejections(const PodInfo& pod, PodClass& pod_class,
                                             RejectionCounts& out) {
  std::optional<InterPodAffinityState> fresh_affinity;
  const InterPodAffinityState* affinity =
      pod_class.affinity.has_value() ? &*pod_class.affinity : nullptr;
  if (affinity == nullptr) {
    fresh_affinity = InterPodAffinityState::Build(pod, snapshot_);
    affinity = &*fresh_affinity;
  }
  std::unordered_map<std::string, int> counts;
  size_t nodes = 0;
  size_t available = 0;
  for (const NodeState& node : snapshot_.slots()) {
    if (!node.schedulable_slot()) {
      continue;
    }
    ++nodes;
    FilterResult result = RunFilters(pod, node, *affinity);
    if (!result.ok()) {
      ++counts[result.Message()];
    } else if (VolumeVerdict volumes = CheckVolumes(pod, node.info); !volumes.ok()) {
      ++counts[volumes.Message()];
      ++out.volumes;
    } else {
      ++available;
    }
  }
  out.available = available;
  std::vector<std::pair<std::string, int>> sorted(counts.begin(), counts.end());
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  std::string text =
      std::to_string(available) + "/" + std::to_string(nodes) + " nodes are available";
  for (size_t i = 0; i < sorted.size(); ++i) {
    text += i == 0 ? ": " : ", ";
    text += std::to_string(sorted[i].second) + " " + sorted[i].first;
  }
  return text;
}

std::string GroupPlanner::DescribeFreeGpus(PodClass& pod_class) {
  int64_t free_total = 0;
  int64_t largest = 0;
  // Free GPUs by the nodes' GPU model label, when some node has one.
  std::vector<std::pair<std::string_view, int64_t>> by_model;
  bool any_model = false;
  const std::vector<NodeState>& slots = snapshot_.slots();
  for (uint32_t slot = 0; slot < slots.size(); ++slot) {
    if (StaticVerdict(pod_class, slot) != kVerdictPass) {
      continue;
    }
    const NodeState& node = slots[slot];
    int64_t free = config_.gpu_resources.MilliGpus(node.info.allocatable) -
                   config_.gpu_resources.MilliGpus(node.requested);
    free = std::max<int64_t>(free, 0);
    free_total += free;
    largest = std::max(largest, free);
    const std::string* model =
        config_.gpu_model_label.empty() ? nullptr : node.info.labels.Find(config_.gpu_model_label);
    any_model |= model != nullptr;
    if (free > 0) {
      const std::string_view name = model != nullptr ? std::string_view(*model) : "unlabelled";
      auto it = std::find_if(by_model.begin(), by_model.end(),
                             [&](const auto& entry) { return entry.first == name; });
      if (it == by_model.end()) {
        by_model.emplace_back(name, free);
      } else {
        it->second += free;
      }
    }
  }
  std::string text = FormatGpuCount(free_total) + " free";
  if (any_model && !by_model.empty()) {
    // "(8 H100, 4 A100)": the most free first, then by name.
    std::sort(by_model.begin(), by_model.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    text += " (";
    for (size_t i = 0; i < by_model.size(); ++i) {
      text += (i == 0 ? "" : ", ") + FormatMilliGpus(by_model[i].second) + " " +
              std::string(by_model[i].first);
    }
    text += ")";
  }
  return text + ", largest node has " + FormatMilliGpus(largest);
}

// Run on the snapshot as it was before this group. A role (or the gang) that
// the nodes admitting its members could not hold even empty never fits; the
// sums make that a sure verdict, never a guess (nodes shared by roles only
// make the real bound lower).
Shortfall GroupPlanner::ClassifyShortfall(const RejectionCounts& counts, std::string& never_fits) {
  const std::vector<NodeState>& slots = snapshot_.slots();
  std::vector<uint8_t> admits(slots.size(), 0);
  ResourceList need;
  for (RoleState& role : roles_) {
    const int32_t missing = role.spec->min_replicas - role.bound;
    if (missing <= 0 || role.pending.empty()) {
      continue;
    }
    const PodInfo& pod = *role.pending.front();
    PodClass& pod_class = ClassFor(role, pod);
    int64_t fit_empty = 0;
    size_t admitting = 0;
    for (uint32_t slot = 0; slot < slots.size(); ++slot) {
      if (!slots[slot].schedulable_slot() || !RunLastingFilters(pod, slots[slot].info).ok()) {
        continue;
      }
      ++admitting;
      const uint8_t now = StaticVerdict(pod_class, slot) == kVerdictPass ? 1 : 2;
      admits[slot] = admits[slot] == 1 ? 1 : now;
      if (fit_empty < missing) {
        fit_empty += CopiesThatFit(pod.requests, slots[slot].info.allocatable,
                                   pod.host_ports.empty() ? missing : 1);
      }
    }
    if (fit_empty < missing) {
      ResourceList each = pod.requests;
      each.pods = 0;  // every pod asks for one: not news
      never_fits = "never fits: " + role.spec->name + " needs " + std::to_string(missing) +
                   " more member" + (missing == 1 ? "" : "s") + " (" + each.ToString() +
                   " each), and the " + std::to_string(admitting) + " node" +
                   (admitting == 1 ? "" : "s") + " that admit" + (admitting == 1 ? "s" : "") +
                   " it could hold " + std::to_string(fit_empty) + " even empty";
      return Shortfall::kNeverFits;
    }
    for (int32_t i = 0; i < missing; ++i) {
      need += pod.requests;
    }
  }
  // admits: 1 the node may take a member now, 2 only once it is Ready or
  // uncordoned again.
  ResourceList ever;
  ResourceList allocatable;
  ResourceList used;
  for (uint32_t slot = 0; slot < slots.size(); ++slot) {
    if (admits[slot] != 0) {
      ever += slots[slot].info.allocatable;
    }
    if (admits[slot] == 1) {
      allocatable += slots[slot].info.allocatable;
      used += slots[slot].requested;
    }
  }
  if (std::string_view short_of = FirstInsufficientResource(need, {}, ever); !short_of.empty()) {
    ResourceList needed;
    needed.Set(short_of, need.Get(short_of));
    ResourceList offered;
    offered.Set(short_of, ever.Get(short_of));
    never_fits = "never fits: the minimum needs " + needed.ToString() +
                 " more, and the nodes that admit its members have " + offered.ToString() +
                 " in all";
    return Shortfall::kNeverFits;
  }
  if (counts.available == 0 && counts.volumes > 0) {
    return Shortfall::kVolumes;
  }
  return FirstInsufficientResource(need, used, allocatable).empty() ? Shortfall::kFragmented
                                                                    : Shortfall::kCapacity;
}

void GroupPlanner::FillSummaries(GroupPlan& plan) const {
  for (const RoleState& role : roles_) {
    plan.roles.push_back(RoleSummary{role.spec->name, role.spec->min_replicas,
                                     role.spec->max_replicas, role.bound, role.placed()});
  }
}

void GroupPlanner::FillPlacedPlan(GroupPlan& plan) const {
  const std::vector<NodeState>& slots = snapshot_.slots();
  for (const RoleState& role : roles_) {
    for (size_t i = 0; i < role.next; ++i) {
      plan.assignments.push_back(
          Assignment{role.pending[i], slots[role.placed_slots[i]].info.name});
    }
    plan.surplus.insert(plan.surplus.end(),
                        role.pending.begin() + static_cast<ptrdiff_t>(role.next),
                        role.pending.end());
    plan.surplus.insert(plan.surplus.end(), role.past_gap.begin(), role.past_gap.end());
  }
  plan.claim_decisions = volume_plan_.decisions();
}

GroupPlan GroupPlanner::Run() {
  GroupPlan plan;
  plan.next_start_slot = start_slot_;
  if (!group_.invalid_reason.empty()) {
    plan.outcome = PlanOutcome::kInvalid;
    plan.reason = group_.invalid_reason;
    return plan;
  }
  if (group_.spec.roles.empty()) {
    plan.outcome = PlanOutcome::kInvalid;
    plan.reason = "group spec has no roles";
    return plan;
  }
  SetUpRoles(plan);
  if (std::string missing = MissingMinimum(); !missing.empty()) {
    plan.outcome = PlanOutcome::kWait;
    plan.reason = std::move(missing);
    plan.shortfall = Shortfall::kMembers;
    FillSummaries(plan);
    return plan;
  }

  TentativeScope tentative(snapshot_);
  bool reached_minimums = PlaceMinimums();
  if (reached_minimums) {
    Grow();
    plan.outcome = PlanOutcome::kPlaced;
    FillPlacedPlan(plan);
  } else {
    RoleState& role = *failed_role_;
    const PodInfo& pod = *role.pending[role.next];
    PodClass& pod_class = ClassFor(role, pod);
    RejectionCounts counts;
    std::string rejections = DescribeRejections(pod, pod_class, counts);
    tentative.Rollback();  // free capacity is reported as it was before this group
    plan.outcome = PlanOutcome::kWait;
    std::string never_fits;
    plan.shortfall = ClassifyShortfall(counts, never_fits);
    plan.reason = never_fits.empty() ? "" : never_fits + "; ";
    plan.reason += role.spec->name + ": " + std::to_string(role.total()) + " of min " +
                   std::to_string(role.spec->min_replicas) + " placeable; ";
    if (config_.gpu_resources.AnyIn(pod.requests)) {
      plan.reason += DescribeFreeGpus(pod_class) + "; ";
    }
    plan.reason += rejections;
  }
  FillSummaries(plan);
  size_t slot_count = snapshot_.slots().size();
  if (slot_count > 0) {
    plan.next_start_slot = static_cast<uint32_t>((start_slot_ + last_scan_length_) % slot_count);
  }
  return plan;
}

// Each try at a domain plans the whole group; this many at most per group
// before it waits, saying no domain holds it.
constexpr size_t kMaxTopologyAttempts = 16;
// Domains tried per unit at one level, best fit first.
constexpr size_t kMaxDomainsPerLevel = 8;

// "rack" for example.com/rack: how messages name a level.
std::string_view LevelName(std::string_view key) {
  const size_t slash = key.rfind('/');
  return slash == std::string_view::npos ? key : key.substr(slash + 1);
}

// The scopes a unit may be planned in, in the order to try them.
std::vector<NodeScope> CandidateScopes(const TopologyUnit& unit, const UnitDemand& demand,
                                       const std::vector<const TopologyLevelIndex*>& levels,
                                       const std::vector<NodeState>& slots) {
  const TopologyLevelIndex* level = levels[unit.level];
  const bool preferred = unit.spec.mode == api::TopologyMode::kPreferred;
  std::vector<NodeScope> scopes;
  if (!demand.bound_slots.empty()) {
    // A running unit stays where most of its members are. Members bound
    // outside every domain (placed before the level was configured) leave
    // the unit where it is: anywhere.
    if (const int32_t majority = MajorityDomain(*level, demand.bound_slots); majority >= 0) {
      scopes.push_back(NodeScope{level, majority});
    }
    if (preferred || scopes.empty()) {
      scopes.push_back(NodeScope{});
    }
    return scopes;
  }
  auto add_best_fits = [&](const TopologyLevelIndex* index) {
    std::vector<DomainFit> fits =
        RankDomainsByFit(*index, FreeByDomain(*index, slots, demand.measure), demand.need);
    for (size_t i = 0; i < fits.size() && i < kMaxDomainsPerLevel; ++i) {
      scopes.push_back(NodeScope{index, fits[i].domain});
    }
  };
  add_best_fits(level);
  if (preferred) {
    for (size_t outer = unit.level; outer-- > 0;) {
      add_best_fits(levels[outer]);
    }
    scopes.push_back(NodeScope{});
  }
  return scopes;
}

// Why a Required unit fits the cluster but no single domain.
std::string NoDomainReason(const TopologyUnit& unit, const UnitDemand& demand,
                           const TopologyLevelIndex& level, const std::vector<NodeState>& slots,
                           const GroupSpec& spec) {
  const std::string level_name(LevelName(level.key));
  std::string reason =
      "topology: no single " + level.key + " domain holds " + UnitName(unit, spec) + "'s minimum";
  if (level.domains.empty()) {
    return reason + ": no node has the label " + level.key;
  }
  const std::vector<int64_t> free = FreeByDomain(level, slots, demand.measure);
  const auto largest = std::max_element(free.begin(), free.end());
  const TopologyDomain& domain = level.domains[largest - free.begin()];
  reason += ": largest " + level_name + " (" + domain.value + ") has " +
            demand.measure.Format(*largest) + " free; ";
  reason +=
      (unit.gang ? "the gang needs " : "the role needs ") + demand.measure.Format(demand.need);
  if (*largest >= demand.need) {
    reason += " (its nodes' free capacity is too fragmented, or they do not suit the members)";
  }
  return reason;
}

// What the largest domain of the level offers with every node empty.
int64_t LargestDomainCapacity(const TopologyLevelIndex& level, const std::vector<NodeState>& slots,
                              const CapacityMeasure& measure) {
  int64_t largest = 0;
  for (const TopologyDomain& domain : level.domains) {
    int64_t capacity = 0;
    for (uint32_t slot : domain.slots) {
      const NodeState& node = slots[slot];
      if (node.schedulable_slot() && node.info.ready && !node.info.unschedulable) {
        capacity += measure.Of(node.info.allocatable);
      }
    }
    largest = std::max(largest, capacity);
  }
  return largest;
}

// Where a placed plan put each unit.
std::string DescribePlacement(const TopologyChoice& choice, const GroupPlan& plan,
                              const PodGroup& group, Snapshot& snapshot) {
  std::string out;
  for (size_t u = 0; u < choice.units.size(); ++u) {
    const TopologyUnit& unit = choice.units[u];
    const TopologyLevelIndex& level = *choice.levels[unit.level];
    auto in_unit = [&](const PodInfo& pod) {
      return std::any_of(unit.roles.begin(), unit.roles.end(),
                         [&](size_t role) { return group.spec.roles[role].name == pod.role; });
    };
    std::set<int32_t> domains;
    auto count = [&](const PodInfo& pod, std::string_view node_name) {
      if (!in_unit(pod)) {
        return;
      }
      if (std::optional<uint32_t> slot = snapshot.FindNodeSlot(node_name)) {
        domains.insert(level.DomainOf(*slot));
      }
    };
    for (const PodInfo* pod : group.bound) {
      count(*pod, pod->node_name);
    }
    for (const Assignment& assignment : plan.assignments) {
      count(*assignment.pod, assignment.node_name);
    }
    if (domains.empty()) {
      continue;
    }
    if (!out.empty()) {
      out += "; ";
    }
    if (!unit.gang) {
      out += group.spec.roles[unit.roles.front()].name + ": ";
    }
    if (domains.size() == 1 && *domains.begin() >= 0) {
      out += level.key + "=" + level.domains[*domains.begin()].value;
    } else {
      out += level.key + ": " + std::to_string(domains.size()) + " domains";
    }
  }
  return out;
}

GroupPlan PlanWithTopology(Snapshot& snapshot, const PodGroup& group, const PlannerConfig& config,
                           uint32_t start_slot, std::vector<TopologyUnit> units) {
  TopologyChoice choice;
  for (const std::string& key : config.topology_levels) {
    choice.levels.push_back(&snapshot.TopologyLevel(key));
  }
  choice.units = std::move(units);
  const size_t unit_count = choice.units.size();
  std::vector<UnitDemand> demands;
  std::vector<std::vector<NodeScope>> candidates;
  for (const TopologyUnit& unit : choice.units) {
    demands.push_back(DemandOf(unit, group, snapshot, config.gpu_resources));
    candidates.push_back(CandidateScopes(unit, demands.back(), choice.levels, snapshot.slots()));
  }

  // Try the candidates in order; when a unit's minimum does not fit, move
  // that unit to its next domain, the units after it back to their first.
  std::vector<size_t> tried(unit_count, 0);
  std::optional<size_t> unsatisfied;
  GroupPlan last;
  for (size_t attempt = 0; attempt < kMaxTopologyAttempts; ++attempt) {
    for (size_t u = 0; u < unit_count; ++u) {
      if (tried[u] >= candidates[u].size()) {
        unsatisfied = u;
      }
    }
    if (unsatisfied) {
      break;
    }
    choice.scopes.clear();
    for (size_t u = 0; u < unit_count; ++u) {
      choice.scopes.push_back(candidates[u][tried[u]]);
    }
    GroupPlanner planner(snapshot, group, config, start_slot, &choice);
    last = planner.Run();
    const int32_t failed = planner.failed_unit();
    if (last.placed()) {
      last.placement = DescribePlacement(choice, last, group, snapshot);
      return last;
    }
    if (last.outcome != PlanOutcome::kWait || failed < 0) {
      return last;  // not a question of domains
    }
    unsatisfied = static_cast<size_t>(failed);
    ++tried[*unsatisfied];
    for (size_t u = *unsatisfied + 1; u < unit_count; ++u) {
      tried[u] = 0;
    }
    if (tried[*unsatisfied] < candidates[*unsatisfied].size()) {
      unsatisfied.reset();
    }
  }
  const size_t u = unsatisfied.value_or(0);

  // No domain held it: if the cluster as a whole would, say so; otherwise
  // the cluster's own reason stands.
  GroupPlanner anywhere(snapshot, group, config, start_slot);
  GroupPlan plan = anywhere.Run();
  if (!plan.placed()) {
    return plan;
  }
  GroupPlan waiting;
  waiting.outcome = PlanOutcome::kWait;
  waiting.roles = last.roles.empty() ? plan.roles : last.roles;
  if (last.roles.empty()) {
    for (RoleSummary& role : waiting.roles) {
      role.placed = 0;
    }
  }
  waiting.next_start_slot = plan.next_start_slot;
  const TopologyLevelIndex& level = *choice.levels[choice.units[u].level];
  waiting.reason = NoDomainReason(choice.units[u], demands[u], level, snapshot.slots(), group.spec);
  waiting.shortfall = Shortfall::kTopology;
  if (const int64_t largest = LargestDomainCapacity(level, snapshot.slots(), demands[u].measure);
      largest < demands[u].need) {
    waiting.shortfall = Shortfall::kNeverFits;
    waiting.reason = "never fits: the largest " + level.key + " domain has " +
                     demands[u].measure.Format(largest) + " even empty; " + waiting.reason;
  }
  return waiting;
}

}  // namespace

std::string_view PlanOutcomeName(PlanOutcome outcome) {
  switch (outcome) {
    case PlanOutcome::kPlaced:
      return "Placed";
    case PlanOutcome::kWait:
      return "Wait";
    case PlanOutcome::kInvalid:
      return "Invalid";
  }
  return "Unknown";
}

GroupPlan PlanGroup(Snapshot& snapshot, const PodGroup& group, const PlannerConfig& config,
                    uint32_t start_slot) {
  if (group.invalid_reason.empty() && !group.spec.roles.empty() && HasTopology(group.spec)) {
    Result<std::vector<TopologyUnit>> units = TopologyUnitsOf(group.spec, config.topology_levels);
    if (!units.ok()) {
      GroupPlan plan;
      plan.outcome = PlanOutcome::kInvalid;
      plan.reason = units.status().message();
      plan.next_start_slot = start_slot;
      return plan;
    }
    if (!units->empty()) {
      return PlanWithTopology(snapshot, group, config, start_slot, std::move(*units));
    }
  }
  GroupPlanner planner(snapshot, group, config, start_slot);
  return planner.Run();
}

Status CommitPlan(Snapshot& snapshot, const GroupPlan& plan) {
  if (!plan.placed()) {
    return InvalidArgument("only a placed plan can be committed");
  }
  for (size_t i = 0; i < plan.assignments.size(); ++i) {
    const Assignment& assignment = plan.assignments[i];
    Status status = snapshot.AssumePod(*assignment.pod, assignment.node_name);
    if (!status.ok()) {
      for (size_t j = i; j-- > 0;) {
        const PodInfo& undo = *plan.assignments[j].pod;
        (void)snapshot.RemovePod(undo.namespace_name, undo.name);
      }
      return status;
    }
  }
  AssumeClaimDecisions(snapshot.storage(), plan.claim_decisions);
  return Status::Ok();
}

}  // namespace hybridjob::scheduler
