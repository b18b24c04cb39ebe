// The policy cycle as stages, on the controller planner's model: a read-only
// CycleInput, one explicit CycleState, and each stage a free function that
// reads the input and works on the state. PlanCycleWithPolicies
// (policy_cycle.cpp) runs them in order:
//
//   CarryOver -> Classify -> PlaceMinimums -> ChooseEvictions
//     -> KeepReservations -> ReserveForStarved -> Grow -> Rebalance -> Decide
//
// Whatever one stage decides that a later one needs is in the state: the
// entries' causes and plans, the evictions, the reservations. Private to the
// scheduler core.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <hybridjob/scheduler/core/cycle.h>
#include <hybridjob/scheduler/core/fair_share.h>
#include <hybridjob/scheduler/core/fair_targets.h>
#include <hybridjob/scheduler/core/policy_cycle.h>
#include <hybridjob/scheduler/core/preemption.h>

namespace hybridjob::scheduler::policy_stages {

// What the cycle reads and never changes.
struct CycleInput {
  CycleInput(const PolicyConfig& policy, const PlannerConfig& planner, Timestamp now)
      : policy(policy), planner(planner), now(now), table(policy.queues) {}

  const PolicyConfig& policy;
  const PlannerConfig& planner;
  Timestamp now;
  QueueTable table;  // policy.queues as a tree
};

// One input group through the cycle.
struct Entry {
  PodGroup group;
  std::string key;
  std::string queue;
  size_t input_order = 0;
  int64_t sequence = -1;   // when it was planned; -1: never
  bool lone = false;       // a pod outside any group
  bool had_bound = false;  // members were bound before this cycle
  bool running = false;    // every role had its minimum before this cycle
  bool starting = false;   // to be placed at its minimum in this cycle
  WaitCause cause = WaitCause::kNone;
  GroupPlan plan;       // the plan at minimum (placed or not), or a plan carrying the reason
  bool placed = false;  // placed at its minimum in this cycle
  std::vector<Assignment> assignments;         // everything committed in this cycle
  std::vector<ClaimDecision> claim_decisions;  // what those commits decided for unbound claims
  std::string placement;  // the last commit's topology placement (GroupPlan::placement)
  int32_t grown = 0;
  ResourceList need;  // MinimumRequest
  // The ancestor of its queue whose max holds it back (kOverQueueMax): reclaim
  // within that ancestor's subtree may still make room for it.
  std::string ceiling_queue;
  std::vector<std::string> notes;  // appended to the reason
  // It would have been placed at its minimum but for nodes reserved for others.
  bool behind_reservations = false;
  int32_t queue_position = 0;  // in its queue's line of groups waiting to start
  // Its attained-service level in an AttainedService queue (promoted to 0
  // once it waited too long); -1 in a queue of another order.
  int32_t service_level = -1;
};

// Waits for capacity the cluster could never give it, whatever ends.
inline bool NeverStarts(const Entry& entry) {
  return entry.cause == WaitCause::kNoCapacity && entry.plan.shortfall == Shortfall::kNeverFits;
}

// Evictions: those of earlier cycles whose pods are still there, those
// decided in this one, and the refusals that shield groups for a while.
struct EvictionBook {
  std::vector<InFlightEviction> in_flight;  // earlier cycles' and this one's
  std::unordered_set<std::string> leaving;  // pod keys
  // The pods leaving for each waiting group, by group key.
  std::unordered_map<std::string, std::vector<const PodInfo*>> leaving_for;
  std::vector<Eviction> decided;  // in this cycle
  std::vector<RefusedEviction> refused;
  std::unordered_set<std::string> shielding;  // pod keys of groups a refusal shields now
  // Members each group may grow first (PolicyState::owed): its rebalancing
  // victims that are gone.
  std::unordered_map<std::string, PolicyState::OwedGrowth> owed_growth;

  // Whether pods are leaving for the group `key`.
  bool LeavingFor(const std::string& key) const;
};

// The one state the stages pass along. Placements are committed into the
// snapshot and counted in `share` as they are made.
struct CycleState {
  CycleState(Snapshot& snapshot, const CycleInput& input, uint32_t start_slot,
             QueueUsageMemo* queue_usage);

  Snapshot& snapshot;
  FairShare share;
  uint32_t start_slot;  // where the planner's next node scan starts
  int64_t next_sequence = 0;

  std::vector<Entry> entries;
  std::unordered_map<std::string, size_t> entry_by_key;
  std::unordered_set<std::string> placed_keys;  // placed at their minimum in this cycle

  EvictionBook evictions;

  std::vector<Reservation> reservations;
  // The slots `reservations` hold: RebuildReserved after changing them.
  std::unique_ptr<ReservedSlots> reserved;

  std::optional<RunningGroups> running;  // built on first use (Running)

  // Nodes held for restarting gangs (PolicyState::restart_holds), against
  // others' growth; null when none.
  std::vector<Reservation> restart_holds;
  std::unique_ptr<ReservedSlots> restart_held;

  // Groups resized within the min resize interval before this cycle.
  std::vector<GroupResize> resizes;
  // The fair-share targets, on the usage once the evictions in flight end
  // (built on first use: Targets).
  std::optional<FairTargets> targets;
  std::vector<PolicyCycleResult::Rebalanced> rebalanced;

  // Attained service (attained_service.h), accounted up to now; empty when
  // no queue is ordered by it.
  bool service_on = false;  // some queue is ordered by attained service
  std::vector<ServiceRecord> service;
  std::unordered_map<std::string, size_t> service_index;  // by group key
  std::vector<double> service_thresholds;
};

// ---- the stages, in order ---------------------------------------------------

// What still holds of the previous cycle's state: evictions whose pods are
// still there (within the eviction timeout), refusals still remembered (and
// the pods they shield now), the reservations.
void CarryOver(const CycleInput& input, const PolicyState& previous, CycleState& state);

// One entry per group, with its queue, and why it cannot be planned (invalid,
// unsupported, gated, unknown or parent queue, refused namespace, still
// assembling); the others are running or starting. Reservations of groups
// not among them and not seen for reservationForgetAfterSeconds are
// forgotten.
void Classify(const CycleInput& input, std::vector<PodGroup> groups, CycleState& state);

// Starting groups placed at their minimum, queue by queue in weighted-DRF
// turns, within a queue by priority then age; a StrictFIFO queue stops at a
// head that waits.
void PlaceMinimums(const CycleInput& input, CycleState& state);

// Victims, by reclaim or preemption, for the groups that could not reach
// their minimum; their nodes are reserved for the group they make room for.
void ChooseEvictions(const CycleInput& input, CycleState& state);

// Reservations kept for groups that still need them (evictions under way, a
// starved group whose nodes are all still usable); the others are dropped.
// Restart holds are kept until their gang is placed again.
void KeepReservations(const CycleInput& input, CycleState& state);

// Nodes reserved for groups that waited for capacity longer than
// starvation.maxWaitSeconds.
void ReserveForStarved(const CycleInput& input, CycleState& state);

// Running and just-placed groups grow toward their maximum, when nothing
// waits for capacity it could get: fully when there is room for all, else
// one member at a time to the queue whose turn it is.
void Grow(const CycleInput& input, CycleState& state);

// Running (and just-placed) groups below their fair share, in queues below
// theirs, get elastic members of groups over their share reclaimed for them:
// never a group below its own share, one whose framework restarts on a
// resize, or one resized within reclaim.minResizeIntervalSeconds. The freed
// places are owed to the group: once the victims are gone, Grow places its
// members there before anyone else grows. After Grow, so that capacity
// growth can give goes to the growers, not to evictions.
void Rebalance(const CycleInput& input, CycleState& state);

// The result: one decision per group (planned ones in the order they were
// planned), every queue's status, the evictions, reservations and the state
// for the next cycle. Takes what it hands out from `state`.
PolicyCycleResult Decide(const CycleInput& input, CycleState& state);

// ---- attained service (policy_service.cpp) ---------------------------------

// The previous cycle's service records, accounted up to now (part of
// CarryOver).
// Whether `queue` orders its groups by attained service.
bool OrderedByService(const CycleInput& input, std::string_view queue);
void CarryOverService(const CycleInput& input, const PolicyState& previous, CycleState& state);
// Each entry of an AttainedService queue gets its level, and a record when
// it has none yet (part of Classify).
void LevelEntries(const CycleInput& input, CycleState& state);
// A line of one queue's entries, already by priority then age, put in the
// queue's order: for an AttainedService queue, by priority, then level, then
// age. Other queues' lines are left as they are.
void OrderLine(const CycleInput& input, const CycleState& state, std::vector<size_t>& line);
// The level of a running group of an AttainedService queue; -1 otherwise.
int32_t RunningServiceLevel(const CycleInput& input, const CycleState& state,
                            const RunningGroup& group);
// The records for the next cycle: what each group holds after this one, and
// the records of groups gone long enough dropped (part of Decide).
std::vector<ServiceRecord> SettleService(const CycleInput& input, CycleState& state);

// ---- shared by the stages ---------------------------------------------------

// Turns across queues over per-queue lines of entries (each line in the
// order its groups go), the queue whose turn it is chosen by weighted DRF
// (FairShare::NextQueue, on the shares as they stand at each call). The
// placement at minimum and the growth stages both take their turns here.
class QueueTurns {
 public:
  QueueTurns(const FairShare& share, std::map<std::string, std::vector<size_t>> lines);

  // The entry at the head of the line whose turn it is; nullopt once every
  // line is done.
  std::optional<size_t> Next();
  // The head's turn is over: the one behind it is next in its line.
  void Pass();
  // Nobody else in the line of the last head gets a turn (a strict FIFO
  // queue whose head waits); returns who was behind it, in order.
  std::vector<size_t> Close();

 private:
  struct Line {
    std::vector<size_t> entries;
    size_t next = 0;  // the head
  };
  const FairShare& share_;
  std::map<std::string, Line, std::less<>> lines_;
  std::vector<std::string_view> candidates_;
  Line* current_ = nullptr;  // the line of the last head
};

void RebuildReserved(CycleState& state);
Reservation* FindReservation(CycleState& state, const std::string& key);
// Drops the group's reservation, if any, and rebuilds the reserved slots.
void DropReservation(CycleState& state, const std::string& key);

// The group planned with every node reserved for another group full; for
// `growth`, also every node held for another group's restart.
GroupPlan PlanWithReservations(const CycleInput& input, CycleState& state, const PodGroup& group,
                               const std::string& key, bool growth = false);
// Records that `pod` of `victim` is evicted in this cycle for `for_entry`:
// the decision, the eviction in flight, and the pod as leaving for it.
void DecideEviction(const CycleInput& input, CycleState& state, const PodInfo& pod,
                    const RunningGroup& victim, const Entry& for_entry, EvictionCause cause,
                    std::string message, bool rebalance = false);
// Assumes the plan into the snapshot and counts it in the share; false (with
// a note on the entry) when the snapshot refuses it.
bool Commit(CycleState& state, Entry& entry, GroupPlan& plan);
// The running groups, with this cycle's leaving pods apart (built once).
RunningGroups& Running(const CycleInput& input, CycleState& state);
// The fair-share targets of this cycle (fair_targets.h), built on first use.
const FairTargets& Targets(const CycleInput& input, CycleState& state);
// The queues' targets alone, without the running groups (cheap).
FairTargets QueueTargets(const CycleState& state);
// The entry's group as it now stands: its bound members, and its pending
// ones not yet assigned in this cycle.
PodGroup Current(const Snapshot& snapshot, const Entry& entry);

// "queue a", or "queue org (parent of a)" when a ceiling above the leaf is hit.
std::string DescribeQueue(const QueueTable& table, const QueueAccount& account,
                          std::string_view leaf);
// "3 pods" / "1 pod".
std::string Plural(size_t count, std::string_view one, std::string_view many);
// "nvidia.com/gpu 40 over its max 32"
std::string DescribeOverMax(const ResourceCeiling& max, const ResourceList& usage);
// "a, b" of up to four names, then ", ...".
std::string ListNames(const std::vector<std::string>& names);

}  // namespace hybridjob::scheduler::policy_stages
