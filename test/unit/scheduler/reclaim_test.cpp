#include <string>
#include <unordered_set>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/reclaim.h>

#include "policy_fixture.h"

namespace hybridjob::scheduler {
namespace {

using testing::At;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::Queue;
using testing::QueueSpecFor;
using ::testing::UnorderedElementsAre;

class ReclaimTest : public testing::PolicyTest {
 protected:
  // Queue b runs an elastic group "el" (worker min 2, max 8) with 8 one-GPU
  // members on n0; queue a has nothing running.
  void ElasticInB() {
    AddNodes("n", 1, 8);
    policy_.queues = {Queue("a"), Queue("b")};
    elastic_ = QueueSpecFor("b", {GroupRole{"worker", 2, 8, 0}});
    AddRunning("el", elastic_, "worker", 0, 8, 1, "n0");
  }

  // ElasticInB, and "big" (one GPU, queue a) waiting; refused evictions back
  // off as given.
  void BigWaitsForElasticInB(int64_t backoff, int64_t backoff_max) {
    ElasticInB();
    policy_.refused_eviction_backoff_seconds = backoff;
    policy_.refused_eviction_backoff_max_seconds = backoff_max;
    AddPending("big", QueueSpecFor("a", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
  }

  GroupSpec elastic_;
};

TEST_F(ReclaimTest, ElasticUnitsAreTheMembersAboveMinimumHighestIndexFirst) {
  AddNodes("n", 1, 8);
  GroupSpec spec = QueueSpecFor("b", {GroupRole{"ps", 1, 2, 1}, GroupRole{"worker", 2, 5, 0}});
  AddRunning("g", spec, "worker", 0, 5, 1, "n0");
  AddRunning("g", spec, "ps", 0, 2, 0, "n0");
  RunningGroups running = RunningGroups::FromSnapshot(snapshot_, policy_, {});
  ASSERT_EQ(running.groups().size(), 1u);
  const RunningGroup& group = running.groups()[0];
  EXPECT_TRUE(group.elastic_shape);
  EXPECT_EQ(group.queue, "b");
  std::vector<VictimUnit> units = ElasticUnits(running, 0, EvictionCause::kReclaim);
  std::vector<std::string> names;
  for (const VictimUnit& unit : units) {
    ASSERT_EQ(unit.pods.size(), 1u);
    names.push_back(unit.pods[0]->name);
  }
  EXPECT_THAT(names, ElementsAre("g-ps-1", "g-worker-4", "g-worker-3", "g-worker-2"));
}

TEST_F(ReclaimTest, RunningGroupsLeaveOutPodsAlreadyLeaving) {
  ElasticInB();
  RunningGroups running =
      RunningGroups::FromSnapshot(snapshot_, policy_, {"team/el-worker-7", "team/el-worker-6"});
  RunningGroup* group = running.Find("team/el");
  ASSERT_NE(group, nullptr);
  EXPECT_EQ(group->members.size(), 6u);
  EXPECT_EQ(group->leaving, 2);
  EXPECT_EQ(ElasticUnits(running, 0, EvictionCause::kReclaim).size(), 4u);
}

TEST_F(ReclaimTest, GroupsWithoutASpecOrWithStrangersAreOnlyEvictableWhole) {
  AddNodes("n", 1, 8);
  ASSERT_TRUE(snapshot_
                  .AddPod(testing::PodBuilder("loose-worker-0")
                              .Member("loose", "worker", 0)
                              .OnNode("n0")
                              .Build())
                  .ok());
  GroupSpec spec = QueueSpecFor("b", {GroupRole{"worker", 1, 2, 0}});
  AddRunning("odd", spec, "worker", 0, 2, 1, "n0");
  AddRunning("odd", spec, "evaluator", 0, 1, 1, "n0");
  RunningGroups running = RunningGroups::FromSnapshot(snapshot_, policy_, {});
  EXPECT_FALSE(running.Find("team/loose")->elastic_shape);
  EXPECT_EQ(running.Find("team/loose")->queue, "default");
  EXPECT_FALSE(running.Find("team/odd")->elastic_shape);
  for (size_t g = 0; g < running.groups().size(); ++g) {
    EXPECT_THAT(ElasticUnits(running, g, EvictionCause::kReclaim), IsEmpty());
  }
}

TEST_F(ReclaimTest, AllMinimumsZeroStillKeepsOneMember) {
  AddNodes("n", 1, 8);
  GroupSpec spec = QueueSpecFor("b", {GroupRole{"worker", 0, 3, 0}});
  AddRunning("g", spec, "worker", 0, 3, 1, "n0");
  RunningGroups running = RunningGroups::FromSnapshot(snapshot_, policy_, {});
  EXPECT_EQ(ElasticUnits(running, 0, EvictionCause::kReclaim).size(), 2u);
}

TEST_F(ReclaimTest, ShrinksHighestIndicesOnlyAsMuchAsNeededAndDoesNotPlaceTheWaiterYet) {
  ElasticInB();
  AddPending("big", QueueSpecFor("a", {GroupRole{"worker", 3, 3, 0}}), "worker", 0, 3, 1);

  PolicyCycleResult result = Run(At(1000));
  EXPECT_THAT(Evicted(result), ElementsAre("el-worker-7", "el-worker-6", "el-worker-5"));
  for (const Eviction& eviction : result.evictions) {
    EXPECT_EQ(eviction.cause, EvictionCause::kReclaim);
    EXPECT_EQ(eviction.for_group, "team/big");
    EXPECT_EQ(eviction.for_queue, "a");
    EXPECT_EQ(eviction.victim_group, "team/el");
    EXPECT_EQ(eviction.victim_queue, "b");
    EXPECT_EQ(eviction.node_name, "n0");
    EXPECT_EQ(eviction.uid, "uid-" + eviction.name);
  }
  EXPECT_EQ(result.evictions[0].message,
            "Reclaim: making room for team/big (queue a); team/el worker shrinks to 7 members "
            "(min 2)");
  const PolicyDecision* big = Find(result, "big");
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(big->cause, WaitCause::kEvicting);
  EXPECT_EQ(big->waiting_reason, "Evicting");
  EXPECT_FALSE(big->plan.placed());
  EXPECT_THAT(big->plan.assignments, IsEmpty());
  EXPECT_THAT(big->plan.reason, HasSubstr("evicting 3 pods to make room for it"));
  ASSERT_EQ(result.reservations.size(), 1u);
  EXPECT_EQ(result.reservations[0].group_key, "team/big");
  EXPECT_EQ(result.reservations[0].cause, ReservationCause::kEviction);
  EXPECT_THAT(result.reservations[0].nodes, ElementsAre("n0"));
  EXPECT_EQ(result.state.evictions.size(), 3u);

  // While the victims terminate, nothing more is evicted.
  result = Run(At(1010));
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_EQ(Find(result, "big")->cause, WaitCause::kEvicting);
  EXPECT_THAT(Find(result, "big")->plan.reason, HasSubstr("waiting for 3 evicted pods to end"));
  EXPECT_EQ(result.state.evictions.size(), 3u);

  // Once they are gone the group is placed and the reservation released.
  for (const InFlightEviction& eviction : result.state.evictions) {
    ASSERT_TRUE(snapshot_.RemovePod(eviction.namespace_name, eviction.name).ok());
  }
  result = Run(At(1020));
  EXPECT_TRUE(Find(result, "big")->plan.placed());
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(result.reservations, IsEmpty());
  EXPECT_THAT(result.state.evictions, IsEmpty());
}

TEST_F(ReclaimTest, TheReservationKeepsFreedCapacityForTheWaiter) {
  ElasticInB();
  policy_.queues.push_back(Queue("0-first"));  // sorts before "a": planned first on ties
  AddPending("big", QueueSpecFor("a", {GroupRole{"worker", 3, 3, 0}}), "worker", 0, 3, 1);
  PolicyCycleResult result = Run(At(1000));
  ASSERT_EQ(result.evictions.size(), 3u);
  ApplyEvictions(result);
  AddPending("sneaky", QueueSpecFor("0-first", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
  policy_.reclaim.enabled = false;  // sneaky could reclaim for itself; not the point here

  result = Run(At(1010));
  EXPECT_TRUE(Find(result, "big")->plan.placed());
  const PolicyDecision* sneaky = Find(result, "sneaky");
  ASSERT_NE(sneaky, nullptr);
  EXPECT_EQ(sneaky->cause, WaitCause::kNoCapacity);
  EXPECT_THAT(sneaky->plan.reason, HasSubstr("1 node is reserved for other groups"));
}

TEST_F(ReclaimTest, QueueFurthestOverItsShareGivesFirst) {
  AddNodes("n", 3, 8);
  policy_.queues = {Queue("a"), Queue("b"), Queue("c"), Queue("d", 100.0)};
  AddRunning("eb", QueueSpecFor("b", {GroupRole{"worker", 1, 8, 0}}), "worker", 0, 8, 1, "n0");
  AddRunning("ec", QueueSpecFor("c", {GroupRole{"worker", 1, 8, 0}}), "worker", 0, 7, 1, "n1");
  AddRunning("rd", QueueSpecFor("d", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1, "n1");
  AddRunning("fd", QueueSpecFor("d", {GroupRole{"worker", 8, 8, 0}}), "worker", 0, 8, 1, "n2");
  AddPending("wa", QueueSpecFor("a", {GroupRole{"worker", 4, 4, 0}}), "worker", 0, 4, 1);

  PolicyCycleResult result = Run();
  // b (8 GPUs) is over c (7): b gives one; then they are level and b, first by
  // name, gives again; then c; then b.
  EXPECT_THAT(Evicted(result),
              ElementsAre("eb-worker-7", "eb-worker-6", "ec-worker-6", "eb-worker-5"));
}

TEST_F(ReclaimTest, LowestRolePriorityGivesFirst) {
  AddNodes("n", 1, 6);
  policy_.queues = {Queue("a"), Queue("b")};
  GroupSpec spec = QueueSpecFor("b", {GroupRole{"chief", 1, 3, 1}, GroupRole{"worker", 1, 3, 0}});
  AddRunning("g", spec, "chief", 0, 3, 1, "n0");
  AddRunning("g", spec, "worker", 0, 3, 1, "n0");
  AddPending("w", QueueSpecFor("a", {GroupRole{"worker", 3, 3, 0}}), "worker", 0, 3, 1);

  PolicyCycleResult result = Run();
  EXPECT_THAT(Evicted(result), ElementsAre("g-worker-2", "g-worker-1", "g-chief-2"));
}

TEST_F(ReclaimTest, NeverTakesAQueueBelowItsGuaranteeAndThenTakesNothing) {
  AddNodes("n", 1, 8);
  policy_.queues = {Queue("a"), Queue("b", 1.0, /*guaranteed=*/6)};
  AddRunning("el", QueueSpecFor("b", {GroupRole{"worker", 1, 8, 0}}), "worker", 0, 8, 1, "n0");
  AddPending("needs3", QueueSpecFor("a", {GroupRole{"worker", 3, 3, 0}}), "worker", 0, 3, 1);

  PolicyCycleResult result = Run();
  EXPECT_THAT(result.evictions, IsEmpty());  // two would be allowed, three are needed
  EXPECT_EQ(Find(result, "needs3")->cause, WaitCause::kNoCapacity);
  EXPECT_THAT(result.reservations, IsEmpty());

  AddPending("needs2", QueueSpecFor("a", {GroupRole{"worker", 2, 2, 0}}), "worker", 0, 2, 1, 5);
  Forget("needs3-worker-0");
  Forget("needs3-worker-1");
  Forget("needs3-worker-2");
  result = Run();
  EXPECT_THAT(Evicted(result), ElementsAre("el-worker-7", "el-worker-6"));
}

TEST_F(ReclaimTest, AQueueWithinItsGuaranteeReclaimsEvenFromALowerShare) {
  AddNodes("n", 1, 8);
  // b's weight makes its share tiny; a is only entitled through its guarantee.
  policy_.queues = {Queue("a", 1.0, /*guaranteed=*/4), Queue("b", 10.0)};
  AddRunning("el", QueueSpecFor("b", {GroupRole{"worker", 1, 8, 0}}), "worker", 0, 8, 1, "n0");
  AddPending("w", QueueSpecFor("a", {GroupRole{"worker", 4, 4, 0}}), "worker", 0, 4, 1);
  PolicyCycleResult result = Run();
  EXPECT_EQ(result.evictions.size(), 4u);

  // Without the guarantee a would be over b's share: nothing to reclaim.
  state_ = {};
  policy_.queues = {Queue("a", 1.0), Queue("b", 10.0)};
  result = Run();
  EXPECT_THAT(result.evictions, IsEmpty());
}

TEST_F(ReclaimTest, WithinAQueueOnlyGroupsOfNoHigherPriorityGiveBack) {
  AddNodes("n", 1, 8);
  GroupSpec spec = QueueSpecFor("default", {GroupRole{"worker", 2, 8, 0}});
  AddRunning("high", spec, "worker", 0, 8, 1, "n0", /*priority=*/10);
  AddPending("low", QueueSpecFor("default", {GroupRole{"worker", 2, 2, 0}}), "worker", 0, 2, 1,
             /*created=*/0, /*priority=*/5);
  PolicyCycleResult result = Run();
  EXPECT_THAT(result.evictions, IsEmpty());

  AddPending("peer", QueueSpecFor("default", {GroupRole{"worker", 2, 2, 0}}), "worker", 0, 2, 1,
             /*created=*/0, /*priority=*/10);
  result = Run();
  EXPECT_THAT(Evicted(result), ElementsAre("high-worker-7", "high-worker-6"));
  EXPECT_EQ(result.evictions[0].for_group, "team/peer");
}

TEST_F(ReclaimTest, DropsVictimsThatTurnOutNotToBeNeeded) {
  AddNodes("n", 2, 4);
  policy_.queues = {Queue("a"), Queue("b"), Queue("c")};
  AddRunning("x", QueueSpecFor("b", {GroupRole{"worker", 3, 4, 0}}), "worker", 0, 4, 1, "n0");
  AddRunning("y", QueueSpecFor("c", {GroupRole{"worker", 2, 4, 0}}), "worker", 0, 4, 1, "n1");
  // One member that needs two GPUs on one node.
  AddPending("w", QueueSpecFor("a", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 2);

  PolicyCycleResult result = Run();
  // x-worker-3 went first (b and c level, b first by name) but freed a lone
  // GPU on n0 that the two-GPU member cannot use: it is dropped again.
  EXPECT_THAT(Evicted(result), ElementsAre("y-worker-3", "y-worker-2"));
}

TEST_F(ReclaimTest, AWaiterOverItsShareDoesNotReclaimFromALowerShare) {
  AddNodes("n", 2, 4);
  policy_.queues = {Queue("a"), Queue("b")};
  AddRunning("ra", QueueSpecFor("a", {GroupRole{"worker", 4, 4, 0}}), "worker", 0, 4, 1, "n0");
  AddRunning("el", QueueSpecFor("b", {GroupRole{"worker", 1, 4, 0}}), "worker", 0, 4, 1, "n1");
  AddPending("more", QueueSpecFor("a", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
  PolicyCycleResult result = Run();
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_EQ(Find(result, "more")->cause, WaitCause::kNoCapacity);
}

TEST_F(ReclaimTest, ReclaimCanBeTurnedOff) {
  ElasticInB();
  policy_.reclaim.enabled = false;
  AddPending("big", QueueSpecFor("a", {GroupRole{"worker", 3, 3, 0}}), "worker", 0, 3, 1);
  PolicyCycleResult result = Run();
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_EQ(Find(result, "big")->cause, WaitCause::kNoCapacity);
}

TEST_F(ReclaimTest, SeveralWaitersInOneCycleNeverShareVictims) {
  ElasticInB();
  AddPending("w1", QueueSpecFor("a", {GroupRole{"worker", 2, 2, 0}}), "worker", 0, 2, 1, 1);
  AddPending("w2", QueueSpecFor("a", {GroupRole{"worker", 2, 2, 0}}), "worker", 0, 2, 1, 2);
  PolicyCycleResult result = Run();
  EXPECT_THAT(Evicted(result),
              ElementsAre("el-worker-7", "el-worker-6", "el-worker-5", "el-worker-4"));
  EXPECT_EQ(result.evictions[0].for_group, "team/w1");
  EXPECT_EQ(result.evictions[2].for_group, "team/w2");
  EXPECT_EQ(Find(result, "w2")->cause, WaitCause::kEvicting);
}

TEST_F(ReclaimTest, ARefusedEvictionShieldsItsGroupForABackOffThatDoubles) {
  BigWaitsForElasticInB(/*backoff=*/10, /*backoff_max=*/300);
  PolicyCycleResult result = Run(At(1000));
  ASSERT_THAT(Evicted(result), ElementsAre("el-worker-7"));
  RecordRefusedEviction(state_, result.evictions[0], policy_, At(1000));
  EXPECT_THAT(state_.evictions, IsEmpty());
  ASSERT_EQ(state_.refused.size(), 1u);
  EXPECT_EQ(state_.refused[0].retry_after, At(1010));

  result = Run(At(1005));  // inside the back-off: no other member of el is taken either
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_EQ(Find(result, "big")->cause, WaitCause::kNoCapacity);
  result = Run(At(1010));
  ASSERT_THAT(Evicted(result), ElementsAre("el-worker-7"));

  RecordRefusedEviction(state_, result.evictions[0], policy_, At(1010));
  EXPECT_EQ(state_.refused[0].refusals, 2);
  EXPECT_EQ(state_.refused[0].retry_after, At(1030));
  EXPECT_THAT(Run(At(1029)).evictions, IsEmpty());
  EXPECT_THAT(Evicted(Run(At(1030))), ElementsAre("el-worker-7"));
}

TEST_F(ReclaimTest, ABackOffIsCappedAndForgottenAfterAQuietMaxPeriod) {
  BigWaitsForElasticInB(/*backoff=*/10, /*backoff_max=*/40);
  PolicyCycleResult result = Run(At(1000));
  ASSERT_EQ(result.evictions.size(), 1u);
  for (int i = 0; i < 5; ++i) {
    RecordRefusedEviction(state_, result.evictions[0], policy_, At(1000));
  }
  EXPECT_EQ(state_.refused[0].retry_after, At(1040));  // 10, 20, 40, then capped
  state_.evictions.clear();
  // Still remembered between retry_after and one max period later ...
  Run(At(1050));
  ASSERT_EQ(state_.refused.size(), 1u);
  // ... and forgotten after it, so the next refusal starts at 10 s again.
  policy_.reclaim.enabled = false;
  Run(At(1081));
  EXPECT_THAT(state_.refused, IsEmpty());
}

TEST_F(ReclaimTest, AShieldedGroupIsPassedOverForAnother) {
  AddNodes("n", 2, 8);
  policy_.queues = {Queue("a"), Queue("b")};
  elastic_ = QueueSpecFor("b", {GroupRole{"worker", 2, 8, 0}});
  AddRunning("el", elastic_, "worker", 0, 8, 1, "n0");
  AddRunning("other", elastic_, "worker", 0, 8, 1, "n1");
  AddPending("big", QueueSpecFor("a", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
  PolicyCycleResult result = Run(At(1000));
  ASSERT_EQ(result.evictions.size(), 1u);
  const std::string first = result.evictions[0].victim_group;
  RecordRefusedEviction(state_, result.evictions[0], policy_, At(1000));
  result = Run(At(1001));
  ASSERT_EQ(result.evictions.size(), 1u);
  EXPECT_NE(result.evictions[0].victim_group, first);
}

TEST_F(ReclaimTest, InFlightEvictionsAreForgottenAfterTheTimeout) {
  ElasticInB();
  policy_.eviction_timeout_seconds = 60;
  AddPending("big", QueueSpecFor("a", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
  PolicyCycleResult result = Run(At(1000));
  ASSERT_EQ(result.evictions.size(), 1u);
  result = Run(At(1030));
  EXPECT_THAT(result.evictions, IsEmpty());
  result = Run(At(1100));
  EXPECT_THAT(Evicted(result), ElementsAre("el-worker-7"));
}

// Queue trees: org holds team-a and team-b; other is a top-level queue.
class TreeReclaimTest : public testing::PolicyTest {
 protected:
  static QueueSpec Under(QueueSpec queue, const std::string& parent) {
    queue.parent = parent;
    return queue;
  }

  // An elastic group (worker min 1, max 8) of `members` one-GPU members on `node`.
  void Elastic(const std::string& job, const std::string& queue, int members,
               const std::string& node) {
    AddRunning(job, QueueSpecFor(queue, {GroupRole{"worker", 1, 8, 0}}), "worker", 0, members, 1,
               node);
  }
  // A rigid group of `members` one-GPU members on `node`.
  void Rigid(const std::string& job, const std::string& queue, int members,
             const std::string& node) {
    AddRunning(job, QueueSpecFor(queue, {GroupRole{"worker", members, members, 0}}), "worker", 0,
               members, 1, node);
  }
  void Waits(const std::string& job, const std::string& queue, int gpus) {
    AddPending(job, QueueSpecFor(queue, {GroupRole{"worker", gpus, gpus, 0}}), "worker", 0, gpus,
               1);
  }
};

TEST_F(TreeReclaimTest, TheSiblingGivesBeforeTheCousin) {
  AddNodes("n", 3, 8);
  policy_.queues = {Queue("org"), Under(Queue("team-a"), "org"), Under(Queue("team-b"), "org"),
                    Queue("other")};
  Elastic("eb", "team-b", 8, "n0");
  Elastic("eo", "other", 8, "n1");
  Elastic("ep", "other", 8, "n2");
  Waits("wa", "team-a", 2);

  PolicyCycleResult result = Run();
  // other is further over its share (16 of 24), but team-b is team-a's sibling.
  EXPECT_THAT(Evicted(result), ElementsAre("eb-worker-7", "eb-worker-6"));
  EXPECT_EQ(result.evictions[0].victim_queue, "team-b");
  EXPECT_EQ(result.evictions[0].for_queue, "team-a");

  // Flat, the same cluster takes from the queue furthest over its share.
  state_ = {};
  policy_.queues = {Queue("team-a"), Queue("team-b"), Queue("other")};
  result = Run();
  EXPECT_EQ(result.evictions.size(), 2u);
  for (const Eviction& eviction : result.evictions) {
    EXPECT_EQ(eviction.victim_queue, "other");
  }
}

TEST_F(TreeReclaimTest, AnOutsiderGivesOnlyWhileItsSubtreeIsOverTheWaitingSubtree) {
  AddNodes("n", 2, 8);
  policy_.queues = {Queue("org"), Under(Queue("team-a"), "org"), Under(Queue("team-b"), "org"),
                    Queue("other")};
  Rigid("rb", "team-b", 8, "n0");
  Elastic("eo", "other", 8, "n1");
  Waits("wa", "team-a", 2);

  PolicyCycleResult result = Run();
  // team-a alone is far below other, but org with team-a's two GPUs (10 of
  // 16) would be over other (8): other keeps what it has.
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_EQ(Find(result, "wa")->cause, WaitCause::kNoCapacity);
}

TEST_F(TreeReclaimTest, AnOutsiderOverTheWaitingSubtreeGives) {
  AddNodes("n", 2, 8);
  policy_.queues = {Queue("org"), Under(Queue("team-a"), "org"), Under(Queue("team-b"), "org"),
                    Queue("other")};
  Rigid("rb", "team-b", 4, "n0");
  Elastic("eo", "other", 4, "n0");
  Elastic("ep", "other", 8, "n1");
  Waits("wa", "team-a", 2);

  PolicyCycleResult result = Run();
  EXPECT_THAT(Evicted(result), ElementsAre("ep-worker-7", "ep-worker-6"));
}

TEST_F(TreeReclaimTest, AParentsGuaranteeIsKeptFromOutsideButItsChildrenShareIt) {
  AddNodes("n", 2, 8);
  // org is guaranteed 8; its children name no guarantee of their own.
  policy_.queues = {Queue("org", 1.0, /*guaranteed=*/8), Under(Queue("team-a"), "org"),
                    Under(Queue("team-b"), "org"), Queue("other", 1.0, /*guaranteed=*/12)};
  Elastic("eb", "team-b", 8, "n0");
  Rigid("ro", "other", 8, "n1");
  Waits("wo", "other", 2);

  PolicyCycleResult result = Run();
  // other is within its guarantee, but taking from team-b would take org
  // below its own.
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_EQ(Find(result, "wo")->cause, WaitCause::kNoCapacity);

  // Inside org the capacity moves: team-a takes from its sibling.
  Forget("wo-worker-0");
  Forget("wo-worker-1");
  Waits("wa", "team-a", 2);
  result = Run();
  EXPECT_THAT(Evicted(result), ElementsAre("eb-worker-7", "eb-worker-6"));
  EXPECT_EQ(result.evictions[0].for_queue, "team-a");

  // Without org's guarantee, other takes from team-b.
  state_ = {};
  Forget("wa-worker-0");
  Forget("wa-worker-1");
  Waits("wo2", "other", 2);
  policy_.queues[0] = Queue("org");
  result = Run();
  EXPECT_THAT(Evicted(result), ElementsAre("eb-worker-7", "eb-worker-6"));
  EXPECT_EQ(result.evictions[0].for_queue, "other");
}

TEST_F(TreeReclaimTest, AChildsGuaranteeIsKeptFromItsSiblings) {
  AddNodes("n", 1, 8);
  policy_.queues = {Queue("org"), Under(Queue("team-a"), "org"),
                    Under(Queue("team-b", 1.0, /*guaranteed=*/6), "org")};
  Elastic("eb", "team-b", 8, "n0");
  Waits("wa", "team-a", 3);
  PolicyCycleResult result = Run();
  EXPECT_THAT(result.evictions, IsEmpty());  // two may go, three are needed

  Forget("wa-worker-0");
  Forget("wa-worker-1");
  Forget("wa-worker-2");
  Waits("wa2", "team-a", 2);
  result = Run();
  EXPECT_THAT(Evicted(result), ElementsAre("eb-worker-7", "eb-worker-6"));
}

TEST_F(TreeReclaimTest, ASiblingHeldBackByTheParentsMaxTakesBackWhatTheOtherBorrowed) {
  AddNodes("n", 2, 8);
  policy_.queues = {Queue("org", 1.0, 0, /*max=*/8), Under(Queue("team-a"), "org"),
                    Under(Queue("team-b"), "org"), Queue("other")};
  Elastic("ea", "team-a", 8, "n0");
  Elastic("eo", "other", 8, "n1");
  Waits("wb", "team-b", 3);

  PolicyCycleResult result = Run(At(1000));
  // org's max, not the cluster, holds wb back: only what team-a borrowed
  // under org can make room, however far over its share other is.
  EXPECT_THAT(Evicted(result), ElementsAre("ea-worker-7", "ea-worker-6", "ea-worker-5"));
  EXPECT_EQ(Find(result, "wb")->cause, WaitCause::kEvicting);
  ASSERT_EQ(result.reservations.size(), 1u);
  EXPECT_THAT(result.reservations[0].nodes, ElementsAre("n0"));

  // While they end, wb waits for them; once they are gone it starts.
  result = Run(At(1010));
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_EQ(Find(result, "wb")->cause, WaitCause::kEvicting);
  for (const InFlightEviction& eviction : result.state.evictions) {
    ASSERT_TRUE(snapshot_.RemovePod(eviction.namespace_name, eviction.name).ok());
  }
  result = Run(At(1020));
  EXPECT_TRUE(Find(result, "wb")->plan.placed());
  EXPECT_EQ(QueueGpus("team-b"), 3);
  EXPECT_EQ(QueueGpus("team-a"), 5);
}

TEST_F(TreeReclaimTest, TheCousinGivesAfterTheSibling) {
  AddNodes("n", 3, 8);
  // org holds dept (team-a, team-b) and lab; team-a waits. team-b is its
  // sibling, lab a cousin.
  policy_.queues = {Queue("org"),
                    Under(Queue("dept"), "org"),
                    Under(Queue("team-a"), "dept"),
                    Under(Queue("team-b"), "dept"),
                    Under(Queue("lab"), "org"),
                    Queue("other")};
  AddRunning("eb", QueueSpecFor("team-b", {GroupRole{"worker", 4, 8, 0}}), "worker", 0, 5, 1, "n0");
  Elastic("el2", "lab", 3, "n0");
  Elastic("el", "lab", 8, "n1");
  Elastic("eo", "other", 8, "n2");
  Waits("wa", "team-a", 3);

  PolicyCycleResult result = Run();
  // team-b gives the one member it can spare, then lab (11 GPUs, over dept's
  // 7 with team-a's group) gives two. org is far over other: other keeps all.
  EXPECT_THAT(Evicted(result), ElementsAre("eb-worker-4", "el-worker-7", "el-worker-6"));
}

// Three racks of two 4-GPU nodes. Queue x, furthest over its share, runs
// "wide" (min 2): its minimum in r2, elastic members 2..9 filling r1. Queue
// y runs "narrow" (min 1): its minimum in r2, elastic members 1 and 2 in r0,
// which has 6 GPUs free. "rackbound" (queue a, guaranteed 8 GPUs) waits for
// 8 GPUs in one rack.
class TopologyReclaimTest : public testing::PolicyTest {
 protected:
  static constexpr char kRack[] = "example.com/rack";

  void SetUp() override {
    planner_.topology_levels = {kRack};
    for (const char* rack : {"r0", "r1", "r2"}) {
      for (int node = 0; node < 2; ++node) {
        ASSERT_TRUE(
            snapshot_
                .UpsertNode(testing::NodeBuilder(std::string(rack) + "-n" + std::to_string(node))
                                .Gpus(4)
                                .Label(kRack, rack)
                                .Build())
                .ok());
      }
    }
    policy_.queues = {Queue("a", 1.0, 8), Queue("x"), Queue("y")};
    GroupSpec wide = QueueSpecFor("x", {GroupRole{"worker", 2, 10, 0}});
    AddRunning("wide", wide, "worker", 0, 2, 1, "r2-n0");
    AddRunning("wide", wide, "worker", 2, 4, 1, "r1-n0");
    AddRunning("wide", wide, "worker", 6, 4, 1, "r1-n1");
    GroupSpec narrow = QueueSpecFor("y", {GroupRole{"worker", 1, 3, 0}});
    AddRunning("narrow", narrow, "worker", 0, 1, 1, "r2-n1");
    AddRunning("narrow", narrow, "worker", 1, 2, 1, "r0-n0");
  }

  GroupSpec RackBound(api::TopologyMode mode) {
    GroupSpec spec = QueueSpecFor("a", {GroupRole{"worker", 8, 8, 0}});
    spec.topology = api::TopologySpec{kRack, mode};
    return spec;
  }
};

TEST_F(TopologyReclaimTest, VictimsComeFromTheOneRackThatNeedsFewest) {
  AddPending("rackbound", RackBound(api::TopologyMode::kRequired), "worker", 0, 8, 1);
  PolicyCycleResult result = Run(At(1000));
  // Freeing r1 would take all 8 of wide's elastic members; r0 needs two.
  EXPECT_THAT(Evicted(result), UnorderedElementsAre("narrow-worker-2", "narrow-worker-1"));
  const PolicyDecision* waiting = Find(result, "rackbound");
  ASSERT_NE(waiting, nullptr);
  EXPECT_EQ(waiting->cause, WaitCause::kEvicting);
  EXPECT_THAT(waiting->plan.reason,
              HasSubstr("evicting 2 pods in example.com/rack=r0 to make room for it"));
  ASSERT_EQ(result.reservations.size(), 1u);
  EXPECT_THAT(result.reservations[0].nodes, ElementsAre("r0-n0"));

  // Once they are gone the gang lands in r0, whole.
  ApplyEvictions(result);
  result = Run(At(1040));
  const PolicyDecision* placed = Find(result, "rackbound");
  ASSERT_NE(placed, nullptr);
  ASSERT_TRUE(placed->plan.placed()) << placed->plan.reason;
  EXPECT_EQ(placed->plan.placement, std::string(kRack) + "=r0");
  EXPECT_THAT(result.evictions, IsEmpty());
}

TEST_F(TopologyReclaimTest, WithoutTopologyTheQueueFurthestOverItsShareGivesFirst) {
  // The same cluster for a gang that may span racks: the policy order stands.
  AddPending("anywhere", QueueSpecFor("a", {GroupRole{"worker", 8, 8, 0}}), "worker", 0, 8, 1);
  PolicyCycleResult result = Run(At(1000));
  EXPECT_THAT(Evicted(result), IsEmpty()) << "9 GPUs are free over the racks already";
  const PolicyDecision* placed = Find(result, "anywhere");
  ASSERT_NE(placed, nullptr);
  EXPECT_TRUE(placed->plan.placed()) << placed->plan.reason;
}

TEST_F(TopologyReclaimTest, AnElasticRoleGivesBackOnlyDownToItsFirstMemberOutsideTheRack) {
  // Only r1 can hold 8 once emptied of wide's members 2..9; narrow's members
  // in r0 are no use, and wide keeps its minimum in r2.
  ASSERT_TRUE(snapshot_.AddPod(testing::PodBuilder("other").Gpus(4).OnNode("r0-n1").Build()).ok());
  AddPending("rackbound", RackBound(api::TopologyMode::kRequired), "worker", 0, 8, 1);
  PolicyCycleResult result = Run(At(1000));
  EXPECT_THAT(
      Evicted(result),
      UnorderedElementsAre("wide-worker-9", "wide-worker-8", "wide-worker-7", "wide-worker-6",
                           "wide-worker-5", "wide-worker-4", "wide-worker-3", "wide-worker-2"));
  EXPECT_THAT(Find(result, "rackbound")->plan.reason, HasSubstr("in example.com/rack=r1"));
}

}  // namespace
}  // namespace hybridjob::scheduler
