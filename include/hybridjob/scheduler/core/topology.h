// Topology-aware placement, the pure parts the gang planner builds on.
//
// The scheduler is configured with topology levels, outermost first: node
// label keys such as topology.kubernetes.io/zone, example.com/rack,
// nvidia.com/gpu.clique, kubernetes.io/hostname. A domain of a level is the
// set of nodes sharing that label's value; nodes without the label belong to
// no domain of the level.
//
// A job's spec.topology names a level and a mode. The roles without an
// override form one unit (the gang) that keeps to one domain of the level; a
// role with an override of its own forms a unit of its own; a role whose
// override says None is placed anywhere. The planner chooses a domain per
// unit by best fit: among the domains with capacity for the unit's minimum,
// the one with the least left over, so large domains stay free for large
// gangs; ties go to the domain's label value, so the choice is deterministic.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/api/types.h>
#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/core/gpu_resources.h>
#include <hybridjob/scheduler/objects/objects.h>
#include <hybridjob/scheduler/objects/resources.h>

namespace hybridjob::scheduler {

struct NodeState;

struct TopologyDomain {
  std::string value;            // the level label's value on every node of the domain
  std::vector<uint32_t> slots;  // its nodes' snapshot slots, ascending
};

// The nodes of one level, grouped into domains.
struct TopologyLevelIndex {
  std::string key;
  std::vector<TopologyDomain> domains;  // by value
  std::vector<int32_t> domain_of_slot;  // index into domains; -1: no domain

  int32_t DomainOf(uint32_t slot) const {
    return slot < domain_of_slot.size() ? domain_of_slot[slot] : -1;
  }
};

// Groups the nodes (slots with a Node object) by the label `key`.
TopologyLevelIndex BuildTopologyLevel(const std::vector<NodeState>& slots, std::string_view key);

// A part of a gang that keeps to one domain: every role without an override
// (the gang's own unit, listed first), or one role with an override.
struct TopologyUnit {
  api::TopologySpec spec;     // Required or Preferred
  size_t level = 0;           // index of spec.level among the configured levels
  std::vector<size_t> roles;  // indices into GroupSpec::roles
  bool gang = false;          // the roles without an override (spec.topology)
};

// Whether the spec asks for any topology, the job's or a role's.
bool HasTopology(const GroupSpec& spec);

// The units of a group spec. InvalidArgument when a level is not one of
// `levels` (retrying will not help until the configuration changes).
Result<std::vector<TopologyUnit>> TopologyUnitsOf(const GroupSpec& spec,
                                                  const std::vector<std::string>& levels);

// What domain capacity is measured in: weighted GPUs (thousandths of a GPU)
// when the unit asks for any configured GPU resource, otherwise CPU
// (millicores).
struct CapacityMeasure {
  const GpuResources* gpu_resources = nullptr;
  bool gpus = false;

  int64_t Of(const ResourceList& resources) const;
  // Free on a node (allocatable minus requested, never negative).
  int64_t FreeOn(const NodeState& node) const;
  // "12 GPUs" or "3500m CPU".
  std::string Format(int64_t amount) const;
};

struct DomainFit {
  int32_t domain = -1;
  int64_t free = 0;
};

// Free capacity of every domain of `level`, in domain order.
std::vector<int64_t> FreeByDomain(const TopologyLevelIndex& level,
                                  const std::vector<NodeState>& slots,
                                  const CapacityMeasure& measure);

// The domains whose free capacity holds `need`, best fit first: least left
// over, then by label value.
std::vector<DomainFit> RankDomainsByFit(const TopologyLevelIndex& level,
                                        const std::vector<int64_t>& free_by_domain, int64_t need);

class Snapshot;
struct PodGroup;

// What one unit of a group asks of a domain: its minimum's capacity beyond
// what is bound.
struct UnitDemand {
  CapacityMeasure measure;
  int64_t need = 0;
  std::vector<uint32_t> bound_slots;  // nodes of the unit's bound members
};

UnitDemand DemandOf(const TopologyUnit& unit, const PodGroup& group, const Snapshot& snapshot,
                    const GpuResources& gpu_resources);

// The domain of `level` holding most of `bound_slots` (a running unit stays
// there), the first on a tie; -1 when none of them is in a domain.
int32_t MajorityDomain(const TopologyLevelIndex& level, const std::vector<uint32_t>& bound_slots);

// The unit that reclaim, preemption and starvation reservations keep to one
// domain: the Required unit with the largest missing minimum, the earliest
// (the gang's own first) on a tie; -1 when no Required unit misses anything.
int32_t ConfiningUnit(const std::vector<TopologyUnit>& units,
                      const std::vector<UnitDemand>& demands);

// A group's confining unit with what it misses.
struct ConfinedUnit {
  TopologyUnit unit;
  UnitDemand demand;
  std::string level_key;
};

// The confining unit of `group` under the configured `levels`; nullopt when
// the group asks for no topology, its topology cannot be read (the planner
// reports that), or no Required unit misses anything. `gpu_resources`
// must outlive the result (its demand's measure points at it).
std::optional<ConfinedUnit> ConfinedUnitOf(const PodGroup& group, const Snapshot& snapshot,
                                           const std::vector<std::string>& levels,
                                           const GpuResources& gpu_resources);

// "the gang" or "role <name>": how messages name a unit.
std::string UnitName(const TopologyUnit& unit, const GroupSpec& spec);

// The domains of `level` in which freeing capacity could make room for a
// unit: the majority domain of its bound members when it has some;
// otherwise every domain whose nodes (less the `blocked` ones, indexed by
// slot) have the allocatable capacity for its need, the most free first (the
// fewest victims), then by label value.
std::vector<int32_t> DomainsToClear(const TopologyLevelIndex& level,
                                    const std::vector<NodeState>& slots, const UnitDemand& demand,
                                    const std::vector<uint8_t>& blocked);

// How well a node continues a gang already placed elsewhere: for each level
// (0 = outermost) whose domain on this node holds members of the gang, the
// level's weight, inner levels weighing more, so the gang packs into the
// innermost domains first. `used[level][domain]` counts the gang's members.
int64_t TopologyAffinityScore(const std::vector<const TopologyLevelIndex*>& levels,
                              const std::vector<std::vector<int32_t>>& used, uint32_t slot);

}  // namespace hybridjob::scheduler
