// The policy cycle's working state, shared by its stages: policy_cycle.cpp
// (classification, placement at minimum, reclaim, starvation reservations and
// the run), policy_growth.cpp (growing elastic groups) and
// policy_decision.cpp (the per-group decisions and queue statuses). Private
// to the scheduler core; the public entry point is PlanCycleWithPolicies.
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

#include <hybridjob/scheduler/cycle.h>
#include <hybridjob/scheduler/fair_share.h>
#include <hybridjob/scheduler/policy_cycle.h>
#include <hybridjob/scheduler/preemption.h>

namespace hybridjob::scheduler::policy_internal {

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
};

// "3 pods" / "1 pod".
std::string Plural(size_t count, std::string_view one, std::string_view many);
// "nvidia.com/gpu 40 over its max 32"
std::string DescribeOverMax(const ResourceCeiling& max, const ResourceList& usage);
// "a, b" of up to four names, then ", ...".
std::string ListNames(const std::vector<std::string>& names);

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

class PolicyCycle {
 public:
  PolicyCycle(Snapshot& snapshot, const PolicyConfig& policy, const PlannerConfig& planner,
              Timestamp now, const PolicyState& previous, uint32_t start_slot,
              QueueUsageMemo* queue_usage)
      : snapshot_(snapshot),
        policy_(policy),
        planner_(planner),
        now_(now),
        previous_(previous),
        table_(policy.queues),
        share_(
            FairShare::FromSnapshot(snapshot, table_, policy, planner.gpu_resources, queue_usage)),
        start_slot_(start_slot) {}

  PolicyCycleResult Run(std::vector<PodGroup> groups);

 private:
  void PruneState();
  void Classify(std::vector<PodGroup> groups);
  void PlaceMinimums();
  void PlaceAtMinimum(Entry& entry);
  // A strict FIFO queue's group that waits for capacity or for its queue's
  // max: nobody behind it in the queue starts in this cycle.
  bool HoldsUpItsQueue(const Entry& entry) const;
  void WaitBehind(Entry& entry, const Entry& head);
  void ChooseEvictions();
  void EvictFor(Entry& entry, const EvictionChoice& choice);
  void UpdateReservations();
  void ReserveForStarved();
  void Grow();
  bool SomethingWaitsForCapacity();
  bool AmpleCapacityFor(const std::vector<size_t>& growers) const;
  void GrowFully(Entry& entry);
  bool GrowOneMember(Entry& entry, std::vector<uint8_t>& blocked_roles,
                     std::vector<int32_t>& grown_in_role);
  PodGroup Current(const Entry& entry) const;
  bool Commit(Entry& entry, GroupPlan& plan);
  GroupPlan PlanWithReservations(const PodGroup& group, const std::string& key);
  void RebuildReserved();
  Reservation* FindReservation(const std::string& key);
  void DropReservation(const std::string& key);
  RunningGroups& Running();
  void NumberQueueLines();
  PolicyDecision Decide(Entry& entry) const;
  void FillQueues(PolicyCycleResult& result) const;
  std::string DescribeQueue(const QueueAccount& account, std::string_view leaf) const;
  std::string NamespaceRefusal(const Entry& entry) const;
  std::vector<std::pair<std::string, ResourceList>> OverCeilings(const FairShare& projected,
                                                                 const Entry& entry) const;

  Snapshot& snapshot_;
  const PolicyConfig& policy_;
  const PlannerConfig& planner_;
  Timestamp now_;
  const PolicyState& previous_;
  QueueTable table_;
  FairShare share_;
  uint32_t start_slot_;
  int64_t next_sequence_ = 0;

  std::vector<Entry> entries_;
  std::unordered_map<std::string, size_t> entry_by_key_;
  std::unordered_set<std::string> placed_keys_;

  // In-flight evictions whose pods are still there, and by whom they were made.
  std::vector<InFlightEviction> in_flight_;
  std::unordered_set<std::string> leaving_;                                   // pod keys
  std::unordered_map<std::string, std::vector<const PodInfo*>> leaving_for_;  // group key
  std::vector<Eviction> evictions_;  // decided in this cycle
  // Refusals still remembered, and the pods whose groups they shield now.
  std::vector<RefusedEviction> refused_;
  std::unordered_set<std::string> shielding_;  // pod keys

  std::vector<Reservation> reservations_;
  std::unique_ptr<ReservedSlots> reserved_;
  std::optional<RunningGroups> running_;
};

}  // namespace hybridjob::scheduler::policy_internal
