#include <algorithm>
#include <map>
#include <optional>

#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/core/topology.h>

namespace hybridjob::scheduler {

TopologyLevelIndex BuildTopologyLevel(const std::vector<NodeState>& slots, std::string_view key) {
  TopologyLevelIndex index;
  index.key = std::string(key);
  index.domain_of_slot.assign(slots.size(), -1);
  std::map<std::string_view, std::vector<uint32_t>> by_value;
  for (uint32_t slot = 0; slot < slots.size(); ++slot) {
    if (!slots[slot].schedulable_slot()) {
      continue;
    }
    if (const std::string* value = slots[slot].info.labels.Find(key)) {
      by_value[*value].push_back(slot);
    }
  }
  index.domains.reserve(by_value.size());
  for (auto& [value, members] : by_value) {
    const auto domain = static_cast<int32_t>(index.domains.size());
    for (uint32_t slot : members) {
      index.domain_of_slot[slot] = domain;
    }
    index.domains.push_back(TopologyDomain{std::string(value), std::move(members)});
  }
  return index;
}

bool HasTopology(const GroupSpec& spec) {
  return spec.topology.has_value() ||
         std::any_of(spec.roles.begin(), spec.roles.end(),
                     [](const GroupRole& role) { return role.topology.has_value(); });
}

Result<std::vector<TopologyUnit>> TopologyUnitsOf(const GroupSpec& spec,
                                                  const std::vector<std::string>& levels) {
  std::vector<TopologyUnit> units;
  auto level_of = [&](const api::TopologySpec& topology, std::string_view field) -> Result<size_t> {
    auto found = std::find(levels.begin(), levels.end(), topology.level);
    if (found != levels.end()) {
      return static_cast<size_t>(found - levels.begin());
    }
    std::string known;
    for (const std::string& level : levels) {
      known += (known.empty() ? "" : ", ") + level;
    }
    return InvalidArgument(std::string(field) + " \"" + topology.level +
                           "\" is not a topology level of this scheduler" +
                           (levels.empty() ? std::string(" (it has none configured)")
                                           : " (its levels: " + known + ")"));
  };
  if (spec.topology && spec.topology->mode != api::TopologyMode::kNone) {
    Result<size_t> level = level_of(*spec.topology, "spec.topology.level");
    if (!level.ok()) {
      return level.status();
    }
    TopologyUnit gang{*spec.topology, *level, {}, /*gang=*/true};
    for (size_t i = 0; i < spec.roles.size(); ++i) {
      if (!spec.roles[i].topology) {
        gang.roles.push_back(i);
      }
    }
    if (!gang.roles.empty()) {
      units.push_back(std::move(gang));
    }
  }
  for (size_t i = 0; i < spec.roles.size(); ++i) {
    const std::optional<api::TopologySpec>& own = spec.roles[i].topology;
    if (!own || own->mode == api::TopologyMode::kNone) {
      continue;
    }
    Result<size_t> level = level_of(*own, "role " + spec.roles[i].name + ": topology.level");
    if (!level.ok()) {
      return level.status();
    }
    units.push_back(TopologyUnit{*own, *level, {i}});
  }
  return units;
}

int64_t CapacityMeasure::Of(const ResourceList& resources) const {
  return gpus ? gpu_resources->MilliGpus(resources) : resources.milli_cpu;
}

int64_t CapacityMeasure::FreeOn(const NodeState& node) const {
  return std::max<int64_t>(0, Of(node.info.allocatable) - Of(node.requested));
}

std::string CapacityMeasure::Format(int64_t amount) const {
  if (gpus) {
    return FormatGpuCount(amount);
  }
  return std::to_string(amount) + "m CPU";
}

std::vector<int64_t> FreeByDomain(const TopologyLevelIndex& level,
                                  const std::vector<NodeState>& slots,
                                  const CapacityMeasure& measure) {
  std::vector<int64_t> free(level.domains.size(), 0);
  for (size_t d = 0; d < level.domains.size(); ++d) {
    for (uint32_t slot : level.domains[d].slots) {
      const NodeState& node = slots[slot];
      if (node.schedulable_slot() && node.info.ready && !node.info.unschedulable) {
        free[d] += measure.FreeOn(node);
      }
    }
  }
  return free;
}

std::vector<DomainFit> RankDomainsByFit(const TopologyLevelIndex& level,
                                        const std::vector<int64_t>& free_by_domain, int64_t need) {
  std::vector<DomainFit> fits;
  for (size_t d = 0; d < free_by_domain.size() && d < level.domains.size(); ++d) {
    if (free_by_domain[d] >= need) {
      fits.push_back(DomainFit{static_cast<int32_t>(d), free_by_domain[d]});
    }
  }
  // Domains are in value order already: a stable sort on what is left over
  // keeps that order among equals.
  std::stable_sort(fits.begin(), fits.end(),
                   [](const DomainFit& a, const DomainFit& b) { return a.free < b.free; });
  return fits;
}

int64_t TopologyAffinityScore(const std::vector<const TopologyLevelIndex*>& levels,
                              const std::vector<std::vector<int32_t>>& used, uint32_t slot) {
  int64_t score = 0;
  for (size_t l = 0; l < levels.size() && l < used.size(); ++l) {
    const int32_t domain = levels[l]->DomainOf(slot);
    if (domain >= 0 && static_cast<size_t>(domain) < used[l].size() && used[l][domain] > 0) {
      score += static_cast<int64_t>(l) + 1;
    }
  }
  return score;
}

UnitDemand DemandOf(const TopologyUnit& unit, const PodGroup& group, const Snapshot& snapshot,
                    const GpuResources& gpu_resources) {
  UnitDemand demand;
  demand.measure.gpu_resources = &gpu_resources;
  struct RoleDemand {
    int32_t bound = 0;
    const PodInfo* pending = nullptr;
  };
  std::vector<RoleDemand> roles(unit.roles.size());
  auto role_of = [&](const PodInfo& pod) -> RoleDemand* {
    for (size_t i = 0; i < unit.roles.size(); ++i) {
      if (group.spec.roles[unit.roles[i]].name == pod.role) {
        return &roles[i];
      }
    }
    return nullptr;
  };
  for (const PodInfo* pod : group.bound) {
    if (RoleDemand* role = role_of(*pod)) {
      ++role->bound;
      if (std::optional<uint32_t> slot = snapshot.FindNodeSlot(pod->node_name)) {
        demand.bound_slots.push_back(*slot);
      }
    }
  }
  for (const PodInfo* pod : group.pending) {
    if (RoleDemand* role = role_of(*pod); role != nullptr && role->pending == nullptr) {
      role->pending = pod;
      demand.measure.gpus |= gpu_resources.AnyIn(pod->requests);
    }
  }
  for (size_t i = 0; i < unit.roles.size(); ++i) {
    const int32_t missing = group.spec.roles[unit.roles[i]].min_replicas - roles[i].bound;
    if (missing > 0 && roles[i].pending != nullptr) {
      demand.need += missing * demand.measure.Of(roles[i].pending->requests);
    }
  }
  return demand;
}

int32_t MajorityDomain(const TopologyLevelIndex& level, const std::vector<uint32_t>& bound_slots) {
  std::vector<int32_t> members(level.domains.size(), 0);
  for (uint32_t slot : bound_slots) {
    if (int32_t domain = level.DomainOf(slot); domain >= 0) {
      ++members[domain];
    }
  }
  auto most = std::max_element(members.begin(), members.end());
  return most == members.end() || *most == 0 ? -1 : static_cast<int32_t>(most - members.begin());
}

int32_t ConfiningUnit(const std::vector<TopologyUnit>& units,
                      const std::vector<UnitDemand>& demands) {
  int32_t chosen = -1;
  for (size_t u = 0; u < units.size() && u < demands.size(); ++u) {
    if (units[u].spec.mode != api::TopologyMode::kRequired || demands[u].need <= 0) {
      continue;
    }
    if (chosen < 0 || demands[u].need > demands[static_cast<size_t>(chosen)].need) {
      chosen = static_cast<int32_t>(u);
    }
  }
  return chosen;
}

std::optional<ConfinedUnit> ConfinedUnitOf(const PodGroup& group, const Snapshot& snapshot,
                                           const std::vector<std::string>& levels,
                                           const GpuResources& gpu_resources) {
  if (levels.empty() || !HasTopology(group.spec)) {
    return std::nullopt;
  }
  Result<std::vector<TopologyUnit>> units = TopologyUnitsOf(group.spec, levels);
  if (!units.ok() || units->empty()) {
    return std::nullopt;
  }
  std::vector<UnitDemand> demands;
  for (const TopologyUnit& unit : *units) {
    demands.push_back(DemandOf(unit, group, snapshot, gpu_resources));
  }
  const int32_t index = ConfiningUnit(*units, demands);
  if (index < 0) {
    return std::nullopt;
  }
  ConfinedUnit confined{std::move((*units)[static_cast<size_t>(index)]),
                        std::move(demands[static_cast<size_t>(index)]), ""};
  confined.level_key = levels[confined.unit.level];
  return confined;
}

std::string UnitName(const TopologyUnit& unit, const GroupSpec& spec) {
  return unit.gang ? std::string("the gang") : "role " + spec.roles[unit.roles.front()].name;
}

std::vector<int32_t> DomainsToClear(const TopologyLevelIndex& level,
                                    const std::vector<NodeState>& slots, const UnitDemand& demand,
                                    const std::vector<uint8_t>& blocked) {
  if (!demand.bound_slots.empty()) {
    const int32_t majority = MajorityDomain(level, demand.bound_slots);
    return majority < 0 ? std::vector<int32_t>{} : std::vector<int32_t>{majority};
  }
  struct Candidate {
    int32_t domain = 0;
    int64_t free = 0;
  };
  std::vector<Candidate> candidates;
  for (size_t d = 0; d < level.domains.size(); ++d) {
    int64_t capacity = 0;
    int64_t free = 0;
    for (uint32_t slot : level.domains[d].slots) {
      if (slot < blocked.size() && blocked[slot] != 0) {
        continue;
      }
      capacity += demand.measure.Of(slots[slot].info.allocatable);
      free += demand.measure.FreeOn(slots[slot]);
    }
    if (capacity >= demand.need) {
      candidates.push_back(Candidate{static_cast<int32_t>(d), free});
    }
  }
  // Domains are in label-value order, so a stable sort breaks ties by value.
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.free > b.free; });
  std::vector<int32_t> out;
  out.reserve(candidates.size());
  for (const Candidate& candidate : candidates) {
    out.push_back(candidate.domain);
  }
  return out;
}

}  // namespace hybridjob::scheduler
