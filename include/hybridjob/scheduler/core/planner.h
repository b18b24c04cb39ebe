// The gang planner: places a whole pod group or nothing.
//
// Seed algorithm, per group:
//  1. place every role at its minimum (members already bound count toward it);
//  2. if that worked, grow roles toward their maximum, higher role priority
//     first, round-robin among roles of the same priority;
//  3. if a role stays below its minimum, nothing is placed and the group waits,
//     with a reason; otherwise the plan lists pod -> node, lowest indices first,
//     so the members of each role are always indices 0..k-1.
//
// With spec.topology (topology.h), each topology unit keeps to one domain of
// its level: the planner tries the domains that have room, best fit first,
// and plans the whole group in each until one holds every minimum. A
// Preferred unit then falls back to one domain of an outer level and finally
// to the whole cluster, and grows past its domain once the domain is full.
// Among feasible nodes, those sharing inner domains with the gang win.
//
// Within step 1 the order is free (every minimum must be met), so roles whose
// pods have required pod affinity go last, after the pods they follow. For each
// pod, the nodes this group already uses are examined first, then a window of
// the cluster (see percentage_of_nodes_to_score); filters run as in
// kube-scheduler and the best score wins, earlier candidates on ties.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/core/gpu_resources.h>
#include <hybridjob/scheduler/core/scorers.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/core/volumes.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {

struct PlannerConfig {
  PackingPolicy packing = PackingPolicy::kGpuBinPacking;
  // Scalar resources counted as GPUs, with their weights: packing, domain
  // capacity, fair share and the reasons count weighted GPUs.
  GpuResources gpu_resources;
  // The node label naming a node's GPU model: the waiting reasons count free
  // GPUs per model ("12 GPUs free (8 H100, 4 A100)"). Empty: not counted.
  std::string gpu_model_label = "nvidia.com/gpu.product";
  // Share of nodes to find feasible per pod before choosing among them; 0 adapts
  // to the cluster size like kube-scheduler, 100 examines every node.
  int32_t percentage_of_nodes_to_score = 0;
  // The floor for the count above.
  int32_t min_feasible_nodes_to_find = 100;
  int64_t packing_weight = 1;
  int64_t node_affinity_weight = 1;
  // Node label keys, outermost first (topology.h); jobs name one in
  // spec.topology.
  std::vector<std::string> topology_levels;
};

// One pod group as the planner sees it. Pods are owned by the caller and must
// outlive the plan.
struct PodGroup {
  std::string namespace_name;
  // The job-name label, or the pod's own name for a pod outside any group.
  std::string name;
  GroupSpec spec;
  std::vector<const PodInfo*> pending;  // unbound members this scheduler owns
  std::vector<const PodInfo*> bound;    // members already on nodes (in the snapshot)
  // Non-empty when the group cannot be planned at all (bad group-spec).
  std::string invalid_reason;
  // Non-empty while a member of a group that has not started is held by a
  // scheduling gate (the API server would refuse its binding): the gang waits
  // until every gate is gone. Gated members of a running group are left out
  // of `pending` instead; they join when their gates are removed.
  std::string gated_reason;
  // Non-empty when a pending member asks for something this scheduler does not
  // allocate (spec.resourceClaims): the group is never placed blindly.
  std::string unsupported_reason;
  // Why the group may not be placed now (either reason above), or empty.
  const std::string& HeldReason() const {
    return unsupported_reason.empty() ? gated_reason : unsupported_reason;
  }
  // Labels of the group's namespace, for the queues' namespaceSelector (set
  // from the members' PodInfo::namespace_labels).
  LabelMap namespace_labels;
  // False when a member may not preempt others (its PriorityClass or
  // spec.preemptionPolicy says Never); it may still be preempted.
  bool preempts = true;
  // Queue order: highest pod priority first, then the oldest member.
  int32_t priority = 0;
  Timestamp creation_time{};
};

enum class PlanOutcome : uint8_t {
  kPlaced,   // every role reached its minimum: bind the assignments
  kWait,     // not now; retry when the cluster changes
  kInvalid,  // the group itself is wrong; retrying will not help
};

std::string_view PlanOutcomeName(PlanOutcome outcome);

struct Assignment {
  const PodInfo* pod = nullptr;
  std::string node_name;
};

struct RoleSummary {
  std::string name;
  int32_t min_replicas = 0;
  int32_t max_replicas = 0;
  int32_t bound = 0;  // members already bound before this plan
  // Members this plan places; in a waiting plan, how many fitted before the
  // planner gave up.
  int32_t placed = 0;
};

// Why a waiting plan fell short, for the waiting reason codes (waiting.h).
enum class Shortfall : uint8_t {
  kNone,        // placed, or invalid
  kMembers,     // member pods are missing for a minimum
  kCapacity,    // the nodes that admit the members lack free capacity
  kFragmented,  // those nodes have enough free in total, not where a member fits
  kNeverFits,   // more than those nodes could hold even empty
  kTopology,    // the cluster holds the minimum, no single required domain does
  kVolumes,     // nodes have room, the members' claims get no volume there
};

struct GroupPlan {
  PlanOutcome outcome = PlanOutcome::kWait;
  // Role by role in group-spec order, lowest index first.
  std::vector<Assignment> assignments;
  // Pending members left out of a placed group: beyond what fitted, or past a
  // gap in the role's indices (placing them would break the 0..k-1 numbering).
  std::vector<const PodInfo*> surplus;
  // Pending pods the group spec has no place for: an unknown role, an index at
  // or beyond the role's maximum, or an index another member already has.
  // Neither placed nor surplus.
  std::vector<const PodInfo*> ignored;
  std::vector<RoleSummary> roles;
  // For a placed plan: what the binder must do, before binding any member,
  // for the members' claims that are not bound yet (see volumes.h).
  std::vector<ClaimDecision> claim_decisions;
  // For a placed plan of a group with spec.topology: where each topology unit
  // went, e.g. "example.com/rack=r1" or "example.com/rack: 2 domains"; a role
  // with a unit of its own is named ("ps: example.com/zone=z1").
  std::string placement;
  // Why the group waits or is invalid, e.g.
  // "worker: 3 of min 4 placeable; 6 GPUs free, largest node has 2; ...".
  std::string reason;
  Shortfall shortfall = Shortfall::kNone;
  // Where the next scan should start, to rotate through large clusters.
  uint32_t next_start_slot = 0;

  bool placed() const { return outcome == PlanOutcome::kPlaced; }
};

// Plans one group against the snapshot. The snapshot serves as scratch space
// and is returned exactly as it was; apply a placed plan with CommitPlan.
// Scans for nodes begin at `start_slot`.
GroupPlan PlanGroup(Snapshot& snapshot, const PodGroup& group, const PlannerConfig& config,
                    uint32_t start_slot = 0);

// Assumes every assignment of a placed plan into the snapshot. On failure the
// snapshot is left as before the call.
Status CommitPlan(Snapshot& snapshot, const GroupPlan& plan);

}  // namespace hybridjob::scheduler
