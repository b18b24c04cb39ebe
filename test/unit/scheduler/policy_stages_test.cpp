// Single stages of the policy cycle, each on a state set up by hand or by the
// stages before it: what one stage decides, apart from the others.
#include "scheduler/core/policy_stages.h"

#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy_fixture.h"

namespace hybridjob::scheduler::policy_stages {
namespace {

using testing::At;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::PodBuilder;
using testing::Queue;
using testing::QueueSpecFor;

class PolicyStagesTest : public testing::PolicyTest {
 protected:
  // The input and a fresh state for a cycle at `now`, over the pending pods.
  void Start(Timestamp now = At(1000)) {
    input_ = std::make_unique<CycleInput>(policy_, planner_, now);
    state_of_cycle_ = std::make_unique<CycleState>(snapshot_, *input_, 0, nullptr);
  }
  void ClassifyPending() { Classify(*input_, BuildGroups(Pending(), snapshot_), *state_of_cycle_); }

  const Entry& EntryOf(const std::string& name) {
    for (const Entry& entry : state_of_cycle_->entries) {
      if (entry.group.name == name) {
        return entry;
      }
    }
    ADD_FAILURE() << "no entry " << name;
    static const Entry none;
    return none;
  }

  CycleState& state() { return *state_of_cycle_; }
  const CycleInput& input() { return *input_; }

  std::unique_ptr<CycleInput> input_;
  std::unique_ptr<CycleState> state_of_cycle_;
};

TEST_F(PolicyStagesTest, CarryOverKeepsWhatStillHolds) {
  AddNodes("n", 2, 8);
  GroupSpec spec = QueueSpecFor("default", {GroupRole{"worker", 1, 4, 0}});
  AddRunning("el", spec, "worker", 0, 3, 1, "n0");
  policy_.eviction_timeout_seconds = 100;
  policy_.reservation_forget_after_seconds = 50;
  policy_.refused_eviction_backoff_max_seconds = 300;
  const PodInfo* still_there = snapshot_.FindPod("team", "el-worker-0");
  const PodInfo* shielded = snapshot_.FindPod("team", "el-worker-1");
  ASSERT_NE(still_there, nullptr);
  ASSERT_NE(shielded, nullptr);

  PolicyState previous;
  previous.evictions = {
      {"team", "el-worker-0", still_there->uid, "team/big", EvictionCause::kReclaim, At(950)},
      {"team", "gone", "uid-gone", "team/big", EvictionCause::kReclaim, At(950)},
      {"team", "el-worker-2", "another-uid", "team/big", EvictionCause::kReclaim, At(950)},
      {"team", "el-worker-0", still_there->uid, "team/old", EvictionCause::kReclaim, At(800)},
  };
  previous.refused = {{"team", "el-worker-1", shielded->uid, 1, At(1010)},
                      {"team", "el-worker-2", "", 3, At(600)}};
  Reservation fresh{"team/big", "team",  "big",  ReservationCause::kEviction,
                    {"n1"},     At(900), At(990)};
  Reservation stale{"team/old", "team",  "old",  ReservationCause::kStarvation,
                    {"n0"},     At(100), At(900)};
  previous.reservations = {fresh, stale};

  Start(At(1000));
  CarryOver(input(), previous, state());
  ASSERT_EQ(state().evictions.in_flight.size(), 1u) << "gone, another uid and timed out are not";
  EXPECT_EQ(state().evictions.in_flight[0].name, "el-worker-0");
  EXPECT_TRUE(state().evictions.leaving.contains(still_there->Key()));
  EXPECT_TRUE(state().evictions.LeavingFor("team/big"));
  EXPECT_FALSE(state().evictions.LeavingFor("team/old"));
  ASSERT_EQ(state().evictions.refused.size(), 1u) << "quiet for longer than the back-off max";
  EXPECT_TRUE(state().evictions.shielding.contains(shielded->Key())) << "still backing off";
  EXPECT_THAT(state().reservations, ElementsAre(fresh, stale));
  // A group not among the cycle's, not seen for longer than the forget time,
  // loses its reservation before anything is placed.
  Classify(input(), {}, state());
  EXPECT_THAT(state().reservations, ElementsAre(fresh));
  ASSERT_NE(state().reserved, nullptr);
  EXPECT_EQ(state().reserved->CountHeldForOthers("team/other"), 1u);
}

TEST_F(PolicyStagesTest, ClassifySaysWhichGroupsAreNotPlannedAndWhy) {
  AddNodes("n", 1, 8);
  policy_.queues = {Queue("research"), Queue("org"), Queue("child")};
  policy_.queues[2].parent = "org";
  AddPending("unknown", QueueSpecFor("nowhere", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
  AddPending("parent", QueueSpecFor("org", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
  // Two of three members exist and the timeout has not passed.
  AddPending("assembling", QueueSpecFor("research", {GroupRole{"worker", 3, 3, 0}}, 600), "worker",
             0, 2, 1, /*created=*/900);
  AddPending("ready", QueueSpecFor("research", {GroupRole{"worker", 2, 2, 0}}), "worker", 0, 2, 1);
  GroupSpec elastic = QueueSpecFor("research", {GroupRole{"worker", 1, 4, 0}});
  AddRunning("running", elastic, "worker", 0, 1, 1, "n0");
  AddPending("running", elastic, "worker", 1, 1, 1);

  Start();
  ClassifyPending();
  EXPECT_EQ(EntryOf("unknown").cause, WaitCause::kUnknownQueue);
  EXPECT_EQ(EntryOf("parent").cause, WaitCause::kNotLeafQueue);
  EXPECT_THAT(EntryOf("parent").plan.reason, HasSubstr("has child queues (child)"));
  EXPECT_EQ(EntryOf("assembling").cause, WaitCause::kAssembling);
  EXPECT_FALSE(EntryOf("assembling").starting);
  EXPECT_TRUE(EntryOf("ready").starting);
  EXPECT_EQ(EntryOf("ready").cause, WaitCause::kNone);
  EXPECT_TRUE(EntryOf("running").running);
  EXPECT_FALSE(EntryOf("running").starting);
  EXPECT_EQ(state().entries.size(), state().entry_by_key.size());
}

TEST_F(PolicyStagesTest, PlaceMinimumsPlacesInTurnsAndAStrictFifoHeadHoldsItsLine) {
  AddNodes("n", 1, 4);
  QueueSpec line = Queue("line");
  line.order = QueueOrder::kStrictFifo;
  policy_.queues = {line, Queue("other")};
  AddRunning("busy", QueueSpecFor("other", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 2,
             "n0");
  // 3 GPUs: not now (2 are free), but once "busy" ends.
  AddPending("head", QueueSpecFor("line", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 3,
             /*created=*/100);
  AddPending("next", QueueSpecFor("line", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1,
             /*created=*/200);
  AddPending("small", QueueSpecFor("other", {GroupRole{"worker", 2, 4, 0}}), "worker", 0, 4, 1);

  Start();
  ClassifyPending();
  PlaceMinimums(input(), state());
  EXPECT_EQ(EntryOf("head").cause, WaitCause::kNoCapacity);
  EXPECT_EQ(EntryOf("next").cause, WaitCause::kBehindQueueHead);
  EXPECT_THAT(EntryOf("next").plan.reason, HasSubstr("waiting behind team/head"));
  const Entry& small = EntryOf("small");
  EXPECT_TRUE(small.placed);
  EXPECT_EQ(small.assignments.size(), 2u) << "its minimum only: growth is a later stage";
  EXPECT_TRUE(state().placed_keys.contains(small.key));
  EXPECT_EQ(state().share.Find("other")->used.Scalar("nvidia.com/gpu"), 4);
  EXPECT_LT(EntryOf("head").sequence, small.sequence) << "the queue below its share went first";
}

TEST_F(PolicyStagesTest, ChooseEvictionsReclaimsForAGroupShortOfItsMinimum) {
  AddNodes("n", 1, 8);
  policy_.queues = {Queue("a"), Queue("b")};
  AddRunning("el", QueueSpecFor("b", {GroupRole{"worker", 2, 8, 0}}), "worker", 0, 8, 1, "n0");
  AddPending("big", QueueSpecFor("a", {GroupRole{"worker", 3, 3, 0}}), "worker", 0, 3, 1);

  Start();
  ClassifyPending();
  PlaceMinimums(input(), state());
  ASSERT_EQ(EntryOf("big").cause, WaitCause::kNoCapacity);
  ChooseEvictions(input(), state());
  const Entry& big = EntryOf("big");
  EXPECT_EQ(big.cause, WaitCause::kEvicting);
  EXPECT_THAT(big.plan.reason, HasSubstr("evicting 3 pods to make room for it"));
  ASSERT_EQ(state().evictions.decided.size(), 3u);
  for (const Eviction& eviction : state().evictions.decided) {
    EXPECT_EQ(eviction.for_group, "team/big");
    EXPECT_EQ(eviction.victim_queue, "b");
  }
  EXPECT_EQ(state().evictions.in_flight.size(), 3u);
  EXPECT_TRUE(state().evictions.LeavingFor("team/big"));
  Reservation* reservation = FindReservation(state(), "team/big");
  ASSERT_NE(reservation, nullptr);
  EXPECT_EQ(reservation->cause, ReservationCause::kEviction);
  EXPECT_THAT(reservation->nodes, ElementsAre("n0"));
  EXPECT_EQ(state().reserved->CountHeldForOthers("team/el"), 1u) << "the slots follow";
}

TEST_F(PolicyStagesTest, KeepReservationsKeepsOnlyThoseStillNeeded) {
  AddNodes("n", 2, 4);
  policy_.starvation.max_wait_seconds = 60;
  GroupSpec one = QueueSpecFor("default", {GroupRole{"worker", 1, 1, 0}});
  AddPending("evicting", one, "worker", 0, 1, 1);
  AddPending("starved", one, "worker", 0, 1, 1);
  AddPending("placed", one, "worker", 0, 1, 1);
  GroupSpec elastic = QueueSpecFor("default", {GroupRole{"worker", 1, 2, 0}});
  AddRunning("running", elastic, "worker", 0, 1, 1, "n0");
  AddPending("running", elastic, "worker", 1, 1, 1);
  PolicyState previous;
  for (const char* name : {"evicting", "starved", "placed", "running", "unseen"}) {
    previous.reservations.push_back({std::string("team/") + name,
                                     "team",
                                     name,
                                     ReservationCause::kStarvation,
                                     {"n1"},
                                     At(900),
                                     At(990)});
  }
  previous.reservations[0].cause = ReservationCause::kEviction;

  Start(At(1000));
  CarryOver(input(), previous, state());
  ClassifyPending();
  // What the stages before would have decided.
  auto entry = [&](const std::string& name) -> Entry& {
    return state().entries[state().entry_by_key.at("team/" + name)];
  };
  entry("evicting").cause = WaitCause::kEvicting;
  entry("starved").cause = WaitCause::kNoCapacity;
  entry("placed").placed = true;
  KeepReservations(input(), state());
  std::vector<std::string> kept;
  for (const Reservation& reservation : state().reservations) {
    kept.push_back(reservation.group_key);
    EXPECT_EQ(reservation.last_seen, reservation.group_key == "team/unseen" ? At(990) : At(1000))
        << reservation.group_key;
  }
  EXPECT_THAT(kept, ElementsAre("team/evicting", "team/starved", "team/unseen"))
      << "a placed or running group needs none; an unseen one's is kept until forgotten";

  // A starved group's reservation goes once one of its nodes cannot be used.
  ASSERT_TRUE(
      snapshot_.UpsertNode(testing::NodeBuilder("n1").Gpus(4).Unschedulable().Build()).ok());
  KeepReservations(input(), state());
  kept.clear();
  for (const Reservation& reservation : state().reservations) {
    kept.push_back(reservation.group_key);
  }
  EXPECT_THAT(kept, ElementsAre("team/evicting", "team/unseen"));
}

TEST_F(PolicyStagesTest, ReserveForStarvedHoldsNodesForAGroupThatWaitedTooLong) {
  AddNodes("n", 2, 4);
  policy_.starvation.max_wait_seconds = 60;
  policy_.starvation.max_reserved_groups = 1;
  policy_.reclaim.enabled = false;
  GroupSpec rigid = QueueSpecFor("default", {GroupRole{"worker", 2, 2, 0}});
  AddRunning("small", QueueSpecFor("default", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1,
             "n0");
  AddRunning("other", QueueSpecFor("default", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1,
             "n1");
  AddPending("starved", rigid, "worker", 0, 2, 4, /*created=*/100);
  AddPending("recent", rigid, "worker", 0, 2, 4, /*created=*/990);

  Start(At(1000));
  ClassifyPending();
  PlaceMinimums(input(), state());
  ASSERT_EQ(EntryOf("starved").cause, WaitCause::kNoCapacity);
  ReserveForStarved(input(), state());
  ASSERT_EQ(state().reservations.size(), 1u);
  EXPECT_EQ(state().reservations[0].group_key, "team/starved");
  EXPECT_EQ(state().reservations[0].cause, ReservationCause::kStarvation);
  EXPECT_EQ(state().reservations[0].nodes.size(), 2u);
  EXPECT_THAT(EntryOf("starved").notes, ElementsAre(HasSubstr("starved; nodes reserved for it")));
  EXPECT_THAT(EntryOf("recent").notes, IsEmpty());
}

TEST_F(PolicyStagesTest, AnAttainedServiceQueueReservesForTheStarvedOnlyWhenAsked) {
  AddNodes("n", 4, 4);
  policy_.starvation.max_wait_seconds = 60;
  policy_.starvation.max_reserved_groups = 2;
  policy_.reclaim.enabled = false;
  QueueSpec served = Queue("served");
  served.order = QueueOrder::kAttainedService;
  policy_.queues = {served, Queue("fifo")};
  GroupRole one{"worker", 1, 1, 0};
  for (int n = 0; n < 4; ++n) {  // a GPU in use on every node: neither gang fits
    AddRunning("small-" + std::to_string(n), QueueSpecFor("fifo", {one}), "worker", 0, 1, 1,
               "n" + std::to_string(n));
  }
  AddPending("starved-served", QueueSpecFor("served", {GroupRole{"worker", 2, 2, 0}}), "worker", 0,
             2, 4, /*created=*/100);
  AddPending("starved-fifo", QueueSpecFor("fifo", {GroupRole{"worker", 2, 2, 0}}), "worker", 0, 2,
             4, /*created=*/100);

  auto reserved_for = [this] {
    Start(At(1000));
    ClassifyPending();
    PlaceMinimums(input(), state());
    EXPECT_EQ(EntryOf("starved-served").cause, WaitCause::kNoCapacity);
    ReserveForStarved(input(), state());
    std::vector<std::string> groups;
    for (const Reservation& reservation : state().reservations) {
      groups.push_back(reservation.group_key);
    }
    return groups;
  };
  // By default only the other queue's starved group: the order's promotion
  // is its starvation guard.
  EXPECT_THAT(reserved_for(), ElementsAre("team/starved-fifo"));
  EXPECT_THAT(EntryOf("starved-served").notes, IsEmpty());

  policy_.attained_service.reserve_for_starved = true;
  EXPECT_THAT(reserved_for(),
              ::testing::UnorderedElementsAre("team/starved-fifo", "team/starved-served"));

  // A reservation made while asked for goes once the setting is off.
  policy_.attained_service.reserve_for_starved = false;
  PolicyState previous;
  previous.reservations = state().reservations;
  Start(At(1010));
  CarryOver(input(), previous, state());
  ClassifyPending();
  for (const char* name : {"starved-served", "starved-fifo"}) {
    state().entries[state().entry_by_key.at(std::string("team/") + name)].cause =
        WaitCause::kNoCapacity;  // as PlaceMinimums finds them
  }
  KeepReservations(input(), state());
  std::vector<std::string> kept;
  for (const Reservation& reservation : state().reservations) {
    kept.push_back(reservation.group_key);
  }
  EXPECT_THAT(kept, ElementsAre("team/starved-fifo"));
}

TEST_F(PolicyStagesTest, GrowGrowsRunningGroupsTowardTheirMaximum) {
  AddNodes("n", 1, 8);
  GroupSpec elastic = QueueSpecFor("default", {GroupRole{"worker", 2, 8, 0}});
  AddRunning("run", elastic, "worker", 0, 4, 1, "n0");
  AddPending("run", elastic, "worker", 4, 4, 1);

  Start();
  ClassifyPending();
  Grow(input(), state());
  EXPECT_EQ(EntryOf("run").grown, 4);
  EXPECT_EQ(EntryOf("run").assignments.size(), 4u);
  EXPECT_EQ(EntryOf("run").cause, WaitCause::kNone);
}

TEST_F(PolicyStagesTest, GrowDefersWhileAGroupWaitsForCapacityItCouldGet) {
  AddNodes("n", 1, 8);
  GroupSpec elastic = QueueSpecFor("default", {GroupRole{"worker", 2, 8, 0}});
  AddRunning("run", elastic, "worker", 0, 4, 1, "n0", /*priority=*/5);
  AddPending("run", elastic, "worker", 4, 4, 1);
  AddPending("wait", QueueSpecFor("default", {GroupRole{"worker", 6, 6, 0}}), "worker", 0, 6, 1);

  Start();
  ClassifyPending();
  PlaceMinimums(input(), state());
  ASSERT_EQ(EntryOf("wait").cause, WaitCause::kNoCapacity);
  Grow(input(), state());
  EXPECT_EQ(EntryOf("run").cause, WaitCause::kGrowthDeferred);
  EXPECT_EQ(EntryOf("run").grown, 0);
  EXPECT_THAT(EntryOf("run").assignments, IsEmpty());
}

TEST_F(PolicyStagesTest, DecideListsPlannedGroupsFirstAndNumbersQueueLines) {
  AddNodes("n", 1, 4);
  AddRunning("busy", QueueSpecFor("default", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 2,
             "n0");
  AddPending("fits", QueueSpecFor("default", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 2,
             /*created=*/300);
  AddPending("first", QueueSpecFor("default", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 4,
             /*created=*/100);
  AddPending("second", QueueSpecFor("default", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 3,
             /*created=*/200);
  AddPending("lost", QueueSpecFor("nowhere", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);

  Start();
  ClassifyPending();
  PlaceMinimums(input(), state());
  PolicyCycleResult result = Decide(input(), state());
  std::vector<std::string> order;
  for (const PolicyDecision& decision : result.decisions) {
    order.push_back(decision.group.name);
  }
  EXPECT_THAT(order, ElementsAre("first", "second", "fits", "lost"))
      << "planned in the order they went, then the rest in input order";
  EXPECT_EQ(result.decisions[0].cause, WaitCause::kNoCapacity);
  EXPECT_TRUE(result.decisions[2].plan.placed());
  EXPECT_EQ(result.decisions[0].queue_position, 1);
  EXPECT_EQ(result.decisions[1].queue_position, 2);
  EXPECT_EQ(result.decisions[3].queue_position, 0) << "not in any line";
  const QueueStatus* row = nullptr;
  for (const QueueStatus& queue : result.queues) {
    row = queue.name == "default" ? &queue : row;
  }
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->placed_groups, 1);
  EXPECT_EQ(row->waiting_groups, 2);
}

}  // namespace
}  // namespace hybridjob::scheduler::policy_stages
