// One scheduling cycle with queues, fair share, elastic reclaim and growth,
// priority preemption and starvation control. Pure: the caller (the
// scheduler's shell, or a trace simulator in virtual time) owns the snapshot,
// carries PolicyState from one cycle to the next, and carries out what the
// cycle decides: bind the placed plans (already assumed into the snapshot),
// evict the victims, report why groups wait.
//
// A cycle:
//  1. Starting groups (and running groups below a role's minimum) are placed
//     at their minimum, across queues in weighted-DRF order (a queue below its
//     guarantee first, then the lowest weighted dominant share; in a queue
//     tree, top-down among siblings, each subtree's usage against its own
//     weight), within a queue by priority then age. A group whose minimum
//     would take its queue or an ancestor over max waits; a group naming an
//     unknown queue, a parent queue, or a queue that does not admit its
//     namespace waits. No group but the holder is placed on a reserved node.
//  2. For groups that still cannot reach their minimum, elastic reclaim (and,
//     when enabled, priority preemption) chooses victims: the fewest, in
//     policy order, after which the group fits (reclaim.h, preemption.h). A
//     group held back by an ancestor's max takes them from inside that
//     ancestor only.
//     The group is not placed in this cycle: the capacity frees when the
//     victims are gone, and their nodes are reserved for it meanwhile.
//  3. Groups waiting for capacity longer than starvation.maxWaitSeconds get
//     the nodes they need reserved (starvation.h).
//  4. If no group waits for capacity it could ever get, running groups (and
//     those started in step 1) grow toward their maximum, one member at a
//     time to the queue whose turn it is (as in step 1), within the max of
//     the queue and of each ancestor.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/queues.h>
#include <hybridjob/scheduler/core/reclaim.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/core/starvation.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {

class QueueUsageMemo;  // fair_share.h

// An eviction the cycle decided, to be carried out through the Eviction API
// (policy/v1beta1 Eviction of the pod, with the pod's uid as a precondition and
// without a grace period override, so the pod's own
// terminationGracePeriodSeconds applies).
struct Eviction {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string node_name;
  std::string role;  // the victim's role and index labels (index -1 when missing)
  int32_t index = -1;
  EvictionCause cause = EvictionCause::kReclaim;
  std::string victim_group;  // key of the victim's group (RunningGroup::Key)
  std::string victim_queue;
  std::string for_group;  // key of the waiting group it makes room for (GroupKey)
  std::string for_queue;
  // Reclaimed to bring `for_group` up to its fair share (it is running and
  // grows), not for a waiting group's minimum.
  bool rebalance = false;
  // For the Event and the pod's DisruptionTarget condition, e.g.
  // "Reclaim: making room for team/big (queue a); team/elastic worker shrinks
  // to 6 members (min 2)".
  std::string message;
};

// An eviction decided by an earlier cycle; its pod may still be terminating.
struct InFlightEviction {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string for_group;
  EvictionCause cause = EvictionCause::kReclaim;
  Timestamp issued{};
  // Made to let `for_group` grow to its fair share (Eviction::rebalance):
  // once the pod is gone, the group grows one member into its place before
  // anyone else grows.
  bool rebalance = false;

  friend bool operator==(const InFlightEviction&, const InFlightEviction&) = default;
};

// An eviction the API refused (a PodDisruptionBudget, say). Until
// `retry_after` no pod of the victim's group is chosen again, so a budget
// that keeps refusing costs one request and one Event per back-off period,
// not one per cycle.
struct RefusedEviction {
  std::string namespace_name;
  std::string name;
  std::string uid;
  int32_t refusals = 0;  // in a row; doubles the back-off each time
  Timestamp retry_after{};

  friend bool operator==(const RefusedEviction&, const RefusedEviction&) = default;
};

// What the policies carry from one cycle to the next: plain data, valid
// across snapshot changes. The caller stores the result's state and hands it
// back, after RecordRefusedEviction for each eviction the API refused.
// When a group's size last changed (grown while running, or members
// evicted): rebalancing leaves it alone for reclaim.minResizeIntervalSeconds.
struct GroupResize {
  std::string group_key;
  Timestamp at{};

  friend bool operator==(const GroupResize&, const GroupResize&) = default;
};

struct PolicyState {
  std::vector<InFlightEviction> evictions;
  std::vector<Reservation> reservations;
  std::vector<RefusedEviction> refused;
  std::vector<GroupResize> resizes;  // within the last min resize interval
  // Members groups may grow before anyone else: their rebalancing victims
  // are gone and the places are theirs (kept a while if they cannot grow yet).
  struct OwedGrowth {
    std::string group_key;
    int32_t members = 0;
    Timestamp since{};

    friend bool operator==(const OwedGrowth&, const OwedGrowth&) = default;
  };
  std::vector<OwedGrowth> owed;
  // Nodes a gang whose resize restarts it just left while its job goes on
  // (it is restarting): no other group grows onto them until it is placed
  // again, or for kRestartHoldSeconds without seeing it. Placements at a
  // minimum are not held back. Filled by the caller (HoldForRestart).
  std::vector<Reservation> restart_holds;
  // Attained service of the groups of AttainedService queues: accounted by
  // each cycle; the caller may seed it (records read back after a restart)
  // and persist it. Sorted by key.
  std::vector<ServiceRecord> service;

  friend bool operator==(const PolicyState&, const PolicyState&) = default;
};

enum class WaitCause : uint8_t {
  kNone,               // placed, or grown
  kAssembling,         // member pods are still being created
  kInvalid,            // the group itself is wrong; retrying will not help
  kUnknownQueue,       // the group names a queue the configuration does not have
  kNotLeafQueue,       // the group names a queue that has child queues
  kNotAllowedInQueue,  // the queue (or an ancestor) does not admit the group's namespace
  kSchedulingGated,    // a member still has scheduling gates (spec.schedulingGates)
  kUnsupported,        // a member asks for what this scheduler does not allocate (DRA)
  kOverQueueMax,       // its minimum would take its queue over max
  kNoCapacity,         // it cannot reach its minimum now
  kEvicting,           // victims are being evicted to make room for it
  kGrowthDeferred,     // a running group's extra members wait: others wait for capacity
  kNoRoomToGrow,       // a running group's extra members fit nowhere, or queue max is reached
  kBehindQueueHead,    // its queue is StrictFIFO and a group ahead of it waits
};

// The order in which a cycle's victims are marked before any is evicted: by
// victim group and role, lowest index first. Victims of a role are its highest
// indices, so the first mark a job's controller sees already gives the role's
// final size, and a job that restarts on a new membership restarts once.
void OrderForMarking(std::vector<Eviction>& evictions);

// "Assembling", "UnknownQueue", ...: for conditions and metrics.
std::string_view WaitCauseName(WaitCause cause);

// Why a group that has not reached its minimums waits, as users read it:
// one of the codes of api/waiting.h, or empty for a group that is placed,
// running, or still assembling its members. `holds_reservation`: nodes are
// reserved for the group; `behind_reservations`: it would fit but for nodes
// reserved for others.
std::string_view WaitingReasonCode(WaitCause cause, Shortfall shortfall, bool holds_reservation,
                                   bool behind_reservations);

struct PolicyDecision {
  PodGroup group;
  // Placed: the assignments are committed to the snapshot (bind them). For a
  // group that had no member bound, pending members left out are surplus, as
  // RunCycle reports them; a group with bound members keeps its other pending
  // members pending (they may grow later). Otherwise kWait or kInvalid with
  // the reason.
  GroupPlan plan;
  std::string queue;
  WaitCause cause = WaitCause::kNone;
  // Assignments beyond the roles' minimums.
  int32_t grown = 0;
  // For a group waiting to start: WaitingReasonCode's code, and its place in
  // its queue's line (1 goes next; 0: not in line: held by a gate, refused
  // by the queue, or never fitting).
  std::string_view waiting_reason;
  int32_t queue_position = 0;
};

// One row per queue, parents included: a parent's usage, shares and group
// counts are its whole subtree's.
struct QueueStatus {
  std::string name;
  std::string parent;  // empty for a top-level queue
  bool leaf = true;    // has no child queue: jobs run in it
  bool configured = true;
  double weight = 1.0;
  ResourceList used;  // after this cycle's placements
  ResourceList guaranteed;
  ResourceCeiling max;
  double dominant_share = 0;
  double weighted_share = 0;
  // The dominant share the queue is entitled to for what every queue asks
  // for now (fair_targets.h).
  double fair_share = 0;
  int32_t waiting_groups = 0;
  int32_t placed_groups = 0;
};

struct PolicyCycleResult {
  // One per input group: planned groups in the order they were planned, then
  // the others (assembling, invalid, unknown or parent queue, ...).
  std::vector<PolicyDecision> decisions;
  std::vector<Eviction> evictions;        // decided in this cycle: carry them out
  std::vector<Reservation> reservations;  // held after this cycle
  PolicyState state;                      // hand back to the next cycle
  std::vector<QueueStatus> queues;        // sorted by name
  // One per group rebalancing shrank in this cycle, for an Event on its job:
  // "rebalanced: 2 workers to queue team-b (share 4 of 16 GPUs)".
  struct Rebalanced {
    std::string namespace_name;
    std::string job_name;
    std::string job_uid;  // empty when no HybridJob owns the group
    std::string message;
  };
  std::vector<Rebalanced> rebalanced;
  uint32_t next_start_slot = 0;
};

// How long a restart hold lasts without its group being seen.
inline constexpr int64_t kRestartHoldSeconds = 60;

// Holds `node` for the restarting group `group_key` (namespace/name).
void HoldForRestart(PolicyState& state, const std::string& group_key,
                    const std::string& namespace_name, const std::string& group_name,
                    const std::string& node, Timestamp now);

// Takes a refused eviction out of the evictions in flight and shields its
// group from further evictions for the back-off of its refusal count
// (refused_eviction_backoff_seconds, doubling, at most
// refused_eviction_backoff_max_seconds).
void RecordRefusedEviction(PolicyState& state, const Eviction& eviction, const PolicyConfig& policy,
                           Timestamp now);

// Runs one cycle over `groups` (from BuildGroups; every pending group, so
// reservations follow their holders). The snapshot must have no tentative
// placement open; placed plans are assumed into it.
// `queue_usage`, when given, keeps per-node queue usage from one call to the
// next on the same snapshot (see QueueUsageMemo).
PolicyCycleResult PlanCycleWithPolicies(Snapshot& snapshot, std::vector<PodGroup> groups,
                                        const PolicyConfig& policy, const PlannerConfig& planner,
                                        Timestamp now, const PolicyState& previous = {},
                                        uint32_t start_slot = 0,
                                        QueueUsageMemo* queue_usage = nullptr);

}  // namespace hybridjob::scheduler
