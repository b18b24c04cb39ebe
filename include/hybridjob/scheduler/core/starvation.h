// Starvation control: a group that has waited for capacity longer than
// starvation.maxWaitSeconds gets the nodes it needs reserved. No other group
// is placed on a reserved node, so as the pods there end the node drains, and
// the group fits within the longest remaining run time of those pods instead
// of losing every freed GPU to a stream of smaller groups.
//
// Reservations also hold the nodes of victims evicted for a waiting group
// (cause kEviction), so the capacity they free goes to that group.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/queues.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/core/what_if.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {

enum class ReservationCause : uint8_t {
  kStarvation,  // the group waited longer than starvation.maxWaitSeconds
  kEviction,    // victims were evicted for the group: their nodes wait for it
};

// "Starvation" or "Eviction".
std::string_view ReservationCauseName(ReservationCause cause);

// Nodes held for one waiting group until it is placed.
struct Reservation {
  std::string group_key;  // GroupKey() of the group
  std::string namespace_name;
  std::string group_name;
  ReservationCause cause = ReservationCause::kStarvation;
  std::vector<std::string> nodes;  // sorted
  Timestamp since{};               // when the reservation was made
  Timestamp last_seen{};           // the last cycle the group was seen waiting

  friend bool operator==(const Reservation&, const Reservation&) = default;
};

// Which slots of a snapshot reservations hold, and for whom.
class ReservedSlots {
 public:
  ReservedSlots(const Snapshot& snapshot, const std::vector<Reservation>& reservations);

  bool empty() const { return reserved_.empty(); }
  // The group key holding the slot, or nullptr.
  const std::string* Holder(uint32_t slot) const;
  // Slots held for another group than `group_key`, as FindEvictions wants them.
  std::vector<uint8_t> BlockedFor(std::string_view group_key) const;
  // How many slots are held for another group than `group_key`.
  size_t CountHeldForOthers(std::string_view group_key) const;
  // Makes every slot held for another group than `group_key` full on `what_if`.
  void FillFor(WhatIf& what_if, std::string_view group_key) const;

 private:
  const Snapshot& snapshot_;
  std::vector<std::string> holders_;     // per reservation
  std::vector<int32_t> holder_by_slot_;  // index into holders_, -1: free
  std::vector<uint32_t> reserved_;       // slots held by someone
};

struct ReservationChoice {
  // Whether the group's minimum fits the cluster once every pod this scheduler
  // placed is gone; when not, a reservation could never help.
  bool possible = false;
  std::vector<uint32_t> slots;  // the nodes to hold
  std::string reason;           // why not possible
};

// The nodes to hold for a starved group: its missing minimum, largest members
// first, fitted first-fit into what each node offers once this scheduler's
// pods are gone (allocatable less the requests of other schedulers' pods),
// among the nodes that pass the static filters for the member and are not
// `unavailable` (indexed by slot; may be shorter than the slot table), nodes
// with the most free GPUs (then cpu) now first. A Required topology unit
// (the largest, when several are) is held inside one domain of its level,
// the domains tried in DomainsToClear order. Host ports and inter-pod
// affinity are not considered: the planner checks those when the group is
// placed.
ReservationChoice ChooseReservation(const Snapshot& snapshot, const PodGroup& group,
                                    const PolicyConfig& policy, const PlannerConfig& planner,
                                    const std::vector<uint8_t>& unavailable);

}  // namespace hybridjob::scheduler
