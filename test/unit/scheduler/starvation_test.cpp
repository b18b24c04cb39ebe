#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/starvation.h>

#include "policy_fixture.h"

namespace hybridjob::scheduler {
namespace {

using testing::At;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::QueueSpecFor;

class StarvationTest : public testing::PolicyTest {
 protected:
  // A one-GPU pod outside any gang, on `node`.
  void AddSmallRunning(const std::string& name, const std::string& node) {
    ASSERT_TRUE(snapshot_.AddPod(PodBuilder(name).Gpus(1).OnNode(node).Build()).ok());
  }
  std::vector<std::string> NodeNames(const ReservationChoice& choice) const {
    std::vector<std::string> nodes;
    for (uint32_t slot : choice.slots) {
      nodes.push_back(snapshot_.slots()[slot].info.name);
    }
    return nodes;
  }
  PodGroup GangGroup(const std::string& job, int32_t members, int64_t gpus) {
    GroupSpec spec = QueueSpecFor("default", {GroupRole{"worker", members, members, 0}});
    AddPending(job, spec, "worker", 0, members, gpus);
    for (PodGroup& group : BuildGroups(Pending(), snapshot_)) {
      if (group.name == job) {
        return group;
      }
    }
    ADD_FAILURE() << "no group " << job;
    return {};
  }
};

TEST_F(StarvationTest, ChoosesTheNodesWithTheMostFreeGpusFirst) {
  AddNodes("n", 4, 8);
  for (int i = 0; i < 6; ++i) {
    AddSmallRunning("a" + std::to_string(i), "n0");
  }
  for (int i = 0; i < 2; ++i) {
    AddSmallRunning("b" + std::to_string(i), "n1");
  }
  for (int i = 0; i < 8; ++i) {
    AddSmallRunning("c" + std::to_string(i), "n2");
  }
  for (int i = 0; i < 4; ++i) {
    AddSmallRunning("d" + std::to_string(i), "n3");
  }
  PodGroup gang = GangGroup("gang", 2, 8);
  ReservationChoice choice = ChooseReservation(snapshot_, gang, policy_, planner_, {});
  ASSERT_TRUE(choice.possible);
  // n1 has 6 free, n3 4: they drain soonest.
  EXPECT_THAT(NodeNames(choice), ElementsAre("n1", "n3"));

  std::vector<uint8_t> unavailable(snapshot_.slots().size(), 0);
  unavailable[*snapshot_.FindNodeSlot("n1")] = 1;
  choice = ChooseReservation(snapshot_, gang, policy_, planner_, unavailable);
  EXPECT_THAT(NodeNames(choice), ElementsAre("n0", "n3"));
}

TEST_F(StarvationTest, SmallMembersShareReservedNodes) {
  AddNodes("n", 4, 8);
  PodGroup gang = GangGroup("gang", 12, 1);
  ReservationChoice choice = ChooseReservation(snapshot_, gang, policy_, planner_, {});
  ASSERT_TRUE(choice.possible);
  EXPECT_EQ(choice.slots.size(), 2u);
}

TEST_F(StarvationTest, ImpossibleWhenNoNodeCouldEverHoldAMember) {
  AddNodes("n", 4, 8);
  PodGroup gang = GangGroup("gang", 1, 16);
  ReservationChoice choice = ChooseReservation(snapshot_, gang, policy_, planner_, {});
  EXPECT_FALSE(choice.possible);
  EXPECT_THAT(choice.reason, HasSubstr("fits no node even with every pod of this scheduler gone"));
}

TEST_F(StarvationTest, OtherSchedulersPodsStayInTheWay) {
  AddNodes("n", 1, 8);
  policy_.scheduler_name = "gang-scheduler";
  PodInfo foreign = PodBuilder("daemon").Gpus(2).OnNode("n0").Build();
  foreign.scheduler_name = "default-scheduler";
  ASSERT_TRUE(snapshot_.AddPod(foreign).ok());
  EXPECT_TRUE(ChooseReservation(snapshot_, GangGroup("six", 6, 1), policy_, planner_, {}).possible);
  EXPECT_FALSE(
      ChooseReservation(snapshot_, GangGroup("seven", 7, 1), policy_, planner_, {}).possible);
}

TEST_F(StarvationTest, AStarvedGroupGetsNodesReservedAndOthersStayOff) {
  AddNodes("n", 2, 8);
  policy_.starvation.max_wait_seconds = 300;
  for (int i = 0; i < 4; ++i) {
    AddSmallRunning("x" + std::to_string(i), "n0");
    AddSmallRunning("y" + std::to_string(i), "n1");
  }
  // 8 free GPUs, but 4 per node: the 8-GPU member fits nowhere.
  AddPending("gang", QueueSpecFor("default", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 8,
             /*created=*/0);
  PolicyCycleResult result = Run(At(100));
  EXPECT_THAT(result.reservations, IsEmpty());  // not starved yet

  result = Run(At(400));
  ASSERT_EQ(result.reservations.size(), 1u);
  const Reservation& reservation = result.reservations[0];
  EXPECT_EQ(reservation.group_key, "team/gang");
  EXPECT_EQ(reservation.cause, ReservationCause::kStarvation);
  EXPECT_EQ(reservation.since, At(400));
  ASSERT_EQ(reservation.nodes.size(), 1u);
  std::string reserved = reservation.nodes[0];
  EXPECT_THAT(Find(result, "gang")->plan.reason, HasSubstr("starved; nodes reserved for it: "));
  EXPECT_EQ(Find(result, "gang")->waiting_reason, "Reserved");

  // A small group may not land on the reserved node, only on the other one.
  pods_.push_back(std::make_unique<PodInfo>(PodBuilder("small").Gpus(1).Created(500).Build()));
  result = Run(At(500));
  const PolicyDecision* small = Find(result, "small");
  ASSERT_NE(small, nullptr);
  ASSERT_TRUE(small->plan.placed());
  EXPECT_NE(small->plan.assignments[0].node_name, reserved);
  // One that would fit only on the reserved node waits its turn.
  pods_.push_back(std::make_unique<PodInfo>(PodBuilder("wide").Gpus(4).Created(500).Build()));
  result = Run(At(500));
  ASSERT_NE(Find(result, "wide"), nullptr);
  EXPECT_EQ(Find(result, "wide")->cause, WaitCause::kNoCapacity);
  EXPECT_EQ(Find(result, "wide")->waiting_reason, "FairShareOrder");
  EXPECT_EQ(Find(result, "gang")->waiting_reason, "Reserved");
  Forget("wide");
  ASSERT_EQ(result.reservations.size(), 1u);
  EXPECT_EQ(result.reservations[0].nodes[0], reserved);  // stable across cycles
  EXPECT_EQ(result.reservations[0].since, At(400));
  EXPECT_EQ(result.reservations[0].last_seen, At(500));

  // The reserved node drains; the gang takes it and the reservation ends.
  for (const char* prefix : {"x", "y"}) {
    std::string node = std::string(prefix) == "x" ? "n0" : "n1";
    if (node != reserved) {
      continue;
    }
    for (int i = 0; i < 4; ++i) {
      ASSERT_TRUE(snapshot_.RemovePod("team", std::string(prefix) + std::to_string(i)).ok());
    }
  }
  result = Run(At(600));
  ASSERT_TRUE(Find(result, "gang")->plan.placed());
  EXPECT_EQ(Find(result, "gang")->plan.assignments[0].node_name, reserved);
  EXPECT_THAT(result.reservations, IsEmpty());
}

TEST_F(StarvationTest, OnlyMaxReservedGroupsHoldNodesAtOnce) {
  AddNodes("n", 4, 8);
  policy_.starvation.max_wait_seconds = 10;
  for (int n = 0; n < 4; ++n) {
    AddSmallRunning("s" + std::to_string(n), "n" + std::to_string(n));
  }
  AddPending("g1", QueueSpecFor("default", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 8, 1);
  AddPending("g2", QueueSpecFor("default", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 8, 2);
  PolicyCycleResult result = Run(At(100));
  ASSERT_EQ(result.reservations.size(), 1u);
  EXPECT_EQ(result.reservations[0].group_key, "team/g1");

  policy_.starvation.max_reserved_groups = 2;
  result = Run(At(110));
  ASSERT_EQ(result.reservations.size(), 2u);
  EXPECT_NE(result.reservations[0].nodes, result.reservations[1].nodes);

  // Turning starvation control off drops the reservations.
  policy_.starvation.max_wait_seconds = 0;
  result = Run(At(120));
  EXPECT_THAT(result.reservations, IsEmpty());
}

TEST_F(StarvationTest, ReservationsOfGroupsNoLongerSeenAreForgotten) {
  AddNodes("n", 1, 8);
  Reservation stale;
  stale.group_key = "team/gone";
  stale.nodes = {"n0"};
  stale.since = At(0);
  stale.last_seen = At(100);
  state_.reservations = {stale};
  policy_.reservation_forget_after_seconds = 120;
  pods_.push_back(std::make_unique<PodInfo>(PodBuilder("small").Gpus(1).Build()));
  PolicyCycleResult result = Run(At(200));
  EXPECT_FALSE(Find(result, "small")->plan.placed());
  EXPECT_EQ(result.reservations.size(), 1u);
  result = Run(At(300));
  EXPECT_TRUE(Find(result, "small")->plan.placed());
  EXPECT_THAT(result.reservations, IsEmpty());
}

TEST_F(StarvationTest, AReservationOutlivesALongGapBetweenCyclesWhileItsGroupWaits) {
  // Cycles far apart (a trace replay runs one per event): the starved gang
  // was last seen 900 s ago, but it is among this cycle's groups, so its
  // node stays reserved and a newcomer is not placed there.
  AddNodes("n", 1, 8);
  AddSmallRunning("busy", "n0");
  AddPending("big", QueueSpecFor("default", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 8);
  Reservation held;
  held.group_key = "team/big";
  held.namespace_name = "team";
  held.group_name = "big";
  held.cause = ReservationCause::kStarvation;
  held.nodes = {"n0"};
  held.since = At(0);
  held.last_seen = At(100);
  state_.reservations = {held};
  policy_.starvation.max_wait_seconds = 60;
  policy_.reservation_forget_after_seconds = 120;
  pods_.push_back(std::make_unique<PodInfo>(PodBuilder("small").Gpus(1).Build()));
  PolicyCycleResult result = Run(At(1000));
  EXPECT_FALSE(Find(result, "small")->plan.placed());
  ASSERT_EQ(result.reservations.size(), 1u);
  EXPECT_EQ(result.reservations[0].group_key, "team/big");
}

// A 32-GPU gang under a stream of 1-GPU jobs, in virtual time: 8 nodes of 8
// GPUs, always full, with more 1-GPU jobs arriving than ending. Without
// starvation control every freed GPU goes to a small job and the gang never
// starts; with it, the gang starts within maxWaitSeconds plus the longest
// small job.
class StreamSimulation {
 public:
  StreamSimulation(int64_t max_wait_seconds, int32_t gang_members, int64_t gpus_per_member) {
    policy_.starvation.max_wait_seconds = max_wait_seconds;
    for (int n = 0; n < 8; ++n) {
      (void)snapshot_.UpsertNode(NodeBuilder("n" + std::to_string(n)).Gpus(8).Build());
    }
    // Full at the start: 64 jobs ending over the first 1,000 s.
    for (int i = 0; i < 64; ++i) {
      PodInfo pod = PodBuilder("pre-" + std::to_string(i))
                        .Gpus(1)
                        .OnNode("n" + std::to_string(i % 8))
                        .Build();
      (void)snapshot_.AddPod(pod);
      ends_.push_back({10 + (i * 157) % 1000, pod.name});
    }
    // A backlog of 20 small jobs already queued.
    for (int i = 0; i < 20; ++i) {
      AddSmall(0);
    }
    GroupSpec spec = QueueSpecFor("default", {GroupRole{"worker", gang_members, gang_members, 0}});
    for (int i = 0; i < gang_members; ++i) {
      pending_.push_back(std::make_unique<PodInfo>(PodBuilder("gang-worker-" + std::to_string(i))
                                                       .Member("gang", "worker", i)
                                                       .Spec(spec)
                                                       .Gpus(gpus_per_member)
                                                       .Created(kGangArrival)
                                                       .Build()));
    }
  }

  static constexpr int64_t kGangArrival = 100;
  static constexpr int64_t kLongestSmallJob = 1000;

  // Runs until `horizon`; returns when the gang started, if it did.
  std::optional<int64_t> RunUntil(int64_t horizon) {
    for (int64_t t = 0; t <= horizon; t += 10) {
      // Jobs that ended leave the cluster.
      std::vector<std::pair<int64_t, std::string>> still;
      for (const auto& [end, name] : ends_) {
        if (end <= t) {
          (void)snapshot_.RemovePod("team", name);
        } else {
          still.emplace_back(end, name);
        }
      }
      ends_ = std::move(still);
      if (t > 0) {
        AddSmall(t);  // one arrival per 10 s; ~0.08 jobs/s end
      }
      std::vector<const PodInfo*> pending;
      for (const auto& pod : pending_) {
        if (pod->creation_time <= At(t) && snapshot_.FindPod("team", pod->name) == nullptr &&
            !started_.contains(pod->name)) {
          pending.push_back(pod.get());
        }
      }
      PolicyCycleResult result = PlanCycleWithPolicies(snapshot_, BuildGroups(pending, snapshot_),
                                                       policy_, planner_, At(t), state_);
      state_ = result.state;
      EXPECT_THAT(result.evictions, IsEmpty());
      for (const PolicyDecision& decision : result.decisions) {
        if (!decision.plan.placed()) {
          continue;
        }
        for (const Assignment& assignment : decision.plan.assignments) {
          started_[assignment.pod->name] = t;
          if (decision.group.name == "gang") {
            continue;  // runs past the horizon
          }
          ends_.push_back({t + durations_[assignment.pod->name], assignment.pod->name});
        }
        if (decision.group.name == "gang") {
          return t;
        }
      }
    }
    return std::nullopt;
  }

 private:
  void AddSmall(int64_t t) {
    std::string name = "small-" + std::to_string(next_small_);
    durations_[name] = 600 + (next_small_ * 131) % (kLongestSmallJob - 600 + 1);
    ++next_small_;
    pending_.push_back(std::make_unique<PodInfo>(PodBuilder(name).Gpus(1).Created(t).Build()));
  }

  Snapshot snapshot_;
  PolicyConfig policy_;
  PlannerConfig planner_;
  PolicyState state_;
  std::vector<std::unique_ptr<PodInfo>> pending_;
  std::vector<std::pair<int64_t, std::string>> ends_;
  std::map<std::string, int64_t> durations_;
  std::map<std::string, int64_t> started_;
  int next_small_ = 0;
};

TEST(StarvationStreamTest, WithoutReservationsTheGangStarves) {
  StreamSimulation simulation(/*max_wait_seconds=*/0, 4, 8);
  EXPECT_EQ(simulation.RunUntil(4000), std::nullopt);
}

TEST(StarvationStreamTest, ReservationsLetAFourByEightGpuGangRunInBoundedTime) {
  constexpr int64_t kMaxWait = 300;
  StreamSimulation simulation(kMaxWait, 4, 8);
  std::optional<int64_t> started = simulation.RunUntil(4000);
  ASSERT_TRUE(started.has_value());
  EXPECT_LE(*started,
            StreamSimulation::kGangArrival + kMaxWait + StreamSimulation::kLongestSmallJob + 10);
}

TEST(StarvationStreamTest, ReservationsLetAThirtyTwoByOneGpuGangRunInBoundedTime) {
  constexpr int64_t kMaxWait = 300;
  StreamSimulation simulation(kMaxWait, 32, 1);
  std::optional<int64_t> started = simulation.RunUntil(4000);
  ASSERT_TRUE(started.has_value());
  EXPECT_LE(*started,
            StreamSimulation::kGangArrival + kMaxWait + StreamSimulation::kLongestSmallJob + 10);
}

TEST(StarvationStreamTest, WithoutReservationsTheThirtyTwoByOneGangStarvesToo) {
  StreamSimulation simulation(/*max_wait_seconds=*/0, 32, 1);
  EXPECT_EQ(simulation.RunUntil(4000), std::nullopt);
}

TEST_F(StarvationTest, ARequiredRackGangIsReservedInsideOneRack) {
  const std::string rack = "example.com/rack";
  planner_.topology_levels = {rack};
  // Free GPUs now: r0-n0 4, r0-n1 0; r1-n0 3, r1-n1 1.
  for (const char* name : {"r0-n0", "r0-n1", "r1-n0", "r1-n1"}) {
    ASSERT_TRUE(
        snapshot_.UpsertNode(NodeBuilder(name).Gpus(4).Label(rack, std::string(name, 2)).Build())
            .ok());
  }
  for (int i = 0; i < 4; ++i) {
    AddSmallRunning("b" + std::to_string(i), "r0-n1");
  }
  AddSmallRunning("c0", "r1-n0");
  for (int i = 0; i < 3; ++i) {
    AddSmallRunning("d" + std::to_string(i), "r1-n1");
  }
  GroupSpec spec = QueueSpecFor("default", {GroupRole{"worker", 2, 2, 0}});
  spec.topology = api::TopologySpec{rack, api::TopologyMode::kRequired};
  AddPending("gang", spec, "worker", 0, 2, 4);
  PodGroup gang;
  for (PodGroup& group : BuildGroups(Pending(), snapshot_)) {
    gang = group;
  }
  // Without topology the two nodes with the most free GPUs now (r0-n0,
  // r1-n0) would be held, over two racks; with it, both nodes of r0.
  ReservationChoice choice = ChooseReservation(snapshot_, gang, policy_, planner_, {});
  ASSERT_TRUE(choice.possible) << choice.reason;
  EXPECT_THAT(NodeNames(choice), ElementsAre("r0-n0", "r0-n1"));

  // With r0-n1 held for another group, r0 cannot hold both members: r1.
  std::vector<uint8_t> unavailable(snapshot_.slots().size(), 0);
  unavailable[*snapshot_.FindNodeSlot("r0-n1")] = 1;
  choice = ChooseReservation(snapshot_, gang, policy_, planner_, unavailable);
  ASSERT_TRUE(choice.possible) << choice.reason;
  EXPECT_THAT(NodeNames(choice), ElementsAre("r1-n0", "r1-n1"));

  // And with a node held in each rack, no rack can ever hold it.
  unavailable[*snapshot_.FindNodeSlot("r1-n1")] = 1;
  choice = ChooseReservation(snapshot_, gang, policy_, planner_, unavailable);
  EXPECT_FALSE(choice.possible);
  EXPECT_THAT(choice.reason,
              HasSubstr("no single example.com/rack domain holds the gang's minimum even with "
                        "every pod of this scheduler gone"));
}

}  // namespace
}  // namespace hybridjob::scheduler
