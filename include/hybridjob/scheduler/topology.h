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
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/api/types.h>
#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/objects.h>
#include <hybridjob/scheduler/resources.h>

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

// The units of a group spec. InvalidArgument when a level is not one of
// `levels` (retrying will not help until the configuration changes).
Result<std::vector<TopologyUnit>> TopologyUnitsOf(const GroupSpec& spec,
                                                  const std::vector<std::string>& levels);

// What domain capacity is measured in: the configured GPU resources when the
// unit asks for any, otherwise CPU (millicores).
struct CapacityMeasure {
  const std::vector<std::string>* gpu_resource_names = nullptr;
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

// How well a node continues a gang already placed elsewhere: for each level
// (0 = outermost) whose domain on this node holds members of the gang, the
// level's weight, inner levels weighing more, so the gang packs into the
// innermost domains first. `used[level][domain]` counts the gang's members.
int64_t TopologyAffinityScore(const std::vector<const TopologyLevelIndex*>& levels,
                              const std::vector<std::vector<int32_t>>& used, uint32_t slot);

}  // namespace hybridjob::scheduler
