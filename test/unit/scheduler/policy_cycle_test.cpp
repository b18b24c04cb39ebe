#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/policy_cycle.h>

#include "policy_fixture.h"

namespace hybridjob::scheduler {
namespace {

using testing::At;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::Queue;
using testing::QueueSpecFor;

class PolicyCycleTest : public testing::PolicyTest {};

TEST_F(PolicyCycleTest, WithoutQueuesEverythingRunsInDefaultLikeRunCycle) {
  AddNodes("n", 2, 4);
  GroupSpec spec = QueueSpecFor("default", {GroupRole{"worker", 3, 3, 0}});
  AddPending("early", spec, "worker", 0, 3, 2, /*created=*/100);
  AddPending("late", spec, "worker", 0, 3, 2, /*created=*/200);

  PolicyCycleResult result = Run();
  ASSERT_EQ(result.decisions.size(), 2u);
  EXPECT_EQ(result.decisions[0].group.name, "early");
  EXPECT_TRUE(result.decisions[0].plan.placed());
  EXPECT_EQ(result.decisions[0].plan.assignments.size(), 3u);
  EXPECT_EQ(result.decisions[1].group.name, "late");
  EXPECT_EQ(result.decisions[1].cause, WaitCause::kNoCapacity);
  EXPECT_FALSE(result.decisions[1].plan.placed());
  EXPECT_THAT(result.decisions[1].plan.reason, HasSubstr("worker: 1 of min 3 placeable"));
  EXPECT_THAT(result.evictions, IsEmpty());
  ASSERT_EQ(result.queues.size(), 1u);
  EXPECT_EQ(result.queues[0].name, "default");
  EXPECT_EQ(result.queues[0].used.Scalar("nvidia.com/gpu"), 6);
  EXPECT_EQ(result.queues[0].placed_groups, 1);
  EXPECT_EQ(result.queues[0].waiting_groups, 1);
}

TEST_F(PolicyCycleTest, AReplacementAboveAMemberThatSucceededStarts) {
  AddNodes("n", 1, 4);
  GroupSpec spec = QueueSpecFor("default", {GroupRole{"worker", 1, 2, 0}});
  spec.roles[0].completed = {0};
  AddPending("r", spec, "worker", 1, 1, 1);

  PolicyCycleResult result = Run();
  const PolicyDecision* r = Find(result, "r");
  ASSERT_NE(r, nullptr);
  ASSERT_TRUE(r->plan.placed()) << r->plan.reason;
  ASSERT_EQ(r->plan.assignments.size(), 1u);
  EXPECT_EQ(r->plan.assignments[0].pod->index, 1);
}

TEST_F(PolicyCycleTest, UnknownQueueLeavesTheGroupQueuedWithAReason) {
  AddNodes("n", 1, 8);
  policy_.queues = {Queue("research")};
  AddPending("lost", QueueSpecFor("nowhere", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);

  PolicyCycleResult result = Run();
  const PolicyDecision* lost = Find(result, "lost");
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->cause, WaitCause::kUnknownQueue);
  EXPECT_EQ(lost->plan.outcome, PlanOutcome::kWait);
  EXPECT_EQ(lost->plan.reason,
            "queue \"nowhere\" is not configured; configured queues: default, research");
  EXPECT_THAT(lost->plan.assignments, IsEmpty());
  EXPECT_EQ(WaitCauseName(lost->cause), "UnknownQueue");
}

TEST_F(PolicyCycleTest, LonePodsGoToTheDefaultQueue) {
  AddNodes("n", 1, 8);
  policy_.queues = {Queue("research")};
  pods_.push_back(std::make_unique<PodInfo>(PodBuilder("solo").Gpus(1).Build()));

  PolicyCycleResult result = Run();
  const PolicyDecision* solo = Find(result, "solo");
  ASSERT_NE(solo, nullptr);
  EXPECT_TRUE(solo->plan.placed());
  EXPECT_EQ(solo->queue, "default");
  EXPECT_EQ(QueueGpus("default"), 1);
}

TEST_F(PolicyCycleTest, InvalidAndAssemblingGroupsAreReportedNotPlanned) {
  AddNodes("n", 1, 8);
  GroupSpec spec = QueueSpecFor("default", {GroupRole{"worker", 2, 4, 0}}, /*timeout=*/300);
  AddPending("young", spec, "worker", 0, 2, 1, /*created=*/900);
  pods_.push_back(std::make_unique<PodInfo>(
      PodBuilder("broken-worker-0").Member("broken", "worker", 0).Build()));

  PolicyCycleResult result = Run(At(1000));
  const PolicyDecision* young = Find(result, "young");
  ASSERT_NE(young, nullptr);
  EXPECT_EQ(young->cause, WaitCause::kAssembling);
  EXPECT_THAT(young->plan.reason, HasSubstr("waiting for member pods: worker has 2 of 4"));
  const PolicyDecision* broken = Find(result, "broken");
  ASSERT_NE(broken, nullptr);
  EXPECT_EQ(broken->cause, WaitCause::kInvalid);
  EXPECT_EQ(broken->plan.outcome, PlanOutcome::kInvalid);
  EXPECT_THAT(broken->plan.reason, HasSubstr("no group-spec annotation"));

  // Past the schedule timeout the group is planned with the members it has.
  result = Run(At(1300));
  young = Find(result, "young");
  ASSERT_NE(young, nullptr);
  EXPECT_TRUE(young->plan.placed());
  EXPECT_EQ(young->plan.assignments.size(), 2u);
}

TEST_F(PolicyCycleTest, WeightedDrfSharesGpusTwoToOne) {
  AddNodes("n", 3, 10);
  policy_.queues = {Queue("a", 2.0), Queue("b", 1.0)};
  for (int i = 0; i < 40; ++i) {
    std::string suffix = (i < 10 ? "0" : "") + std::to_string(i);
    AddPending("a" + suffix, QueueSpecFor("a", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
    AddPending("b" + suffix, QueueSpecFor("b", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
  }
  PolicyCycleResult result = Run();
  EXPECT_EQ(QueueGpus("a"), 20);
  EXPECT_EQ(QueueGpus("b"), 10);
  ASSERT_EQ(result.queues.size(), 3u);
  EXPECT_EQ(result.queues[0].name, "a");
  EXPECT_DOUBLE_EQ(result.queues[0].dominant_share, 20.0 / 30.0);
  EXPECT_DOUBLE_EQ(result.queues[0].weighted_share, 10.0 / 30.0);
  EXPECT_DOUBLE_EQ(result.queues[1].weighted_share, 10.0 / 30.0);
  EXPECT_EQ(result.queues[0].waiting_groups, 20);
  EXPECT_EQ(result.queues[1].waiting_groups, 30);
}

TEST_F(PolicyCycleTest, DrfComparesDominantResourcesAcrossCpuAndMemory) {
  // The DRF paper's example: 9 cpus and 18Gi; a's tasks want <1 cpu, 4Gi>,
  // b's <3 cpus, 1Gi>. DRF gives a three tasks and b two.
  ASSERT_TRUE(
      snapshot_.UpsertNode(NodeBuilder("n0").Cpu(9000).Memory(18 * testing::kGi).Build()).ok());
  policy_.queues = {Queue("a"), Queue("b")};
  for (int i = 0; i < 6; ++i) {
    std::string index = std::to_string(i);
    pods_.push_back(
        std::make_unique<PodInfo>(PodBuilder("a" + index + "-task-0")
                                      .Member("a" + index, "task", 0)
                                      .Spec(QueueSpecFor("a", {GroupRole{"task", 1, 1, 0}}))
                                      .Cpu(1000)
                                      .Memory(4 * testing::kGi)
                                      .Build()));
    pods_.push_back(
        std::make_unique<PodInfo>(PodBuilder("b" + index + "-task-0")
                                      .Member("b" + index, "task", 0)
                                      .Spec(QueueSpecFor("b", {GroupRole{"task", 1, 1, 0}}))
                                      .Cpu(3000)
                                      .Memory(testing::kGi)
                                      .Build()));
  }
  PolicyCycleResult result = Run();
  int placed_a = 0;
  int placed_b = 0;
  for (const PolicyDecision& decision : result.decisions) {
    if (decision.plan.placed()) {
      (decision.queue == "a" ? placed_a : placed_b) += 1;
    }
  }
  EXPECT_EQ(placed_a, 3);
  EXPECT_EQ(placed_b, 2);
}

TEST_F(PolicyCycleTest, QueueBelowItsGuaranteeGoesFirst) {
  AddNodes("n", 1, 4);
  // b is already far ahead in share, but a heavy weight makes a look richer
  // than b; a guarantee still puts a first.
  policy_.queues = {Queue("a", 0.1, /*guaranteed=*/2), Queue("b", 1.0)};
  AddRunning("bx", QueueSpecFor("b", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1, "n0");
  AddRunning("ax", QueueSpecFor("a", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1, "n0");
  AddPending("a1", QueueSpecFor("a", {GroupRole{"worker", 2, 2, 0}}), "worker", 0, 2, 1, 100);
  AddPending("b1", QueueSpecFor("b", {GroupRole{"worker", 2, 2, 0}}), "worker", 0, 2, 1, 50);

  PolicyCycleResult result = Run();
  EXPECT_TRUE(Find(result, "a1")->plan.placed());
  EXPECT_EQ(Find(result, "b1")->cause, WaitCause::kNoCapacity);
}

TEST_F(PolicyCycleTest, IdleGuaranteeIsLentUpToTheBorrowersMax) {
  AddNodes("n", 4, 8);
  policy_.queues = {Queue("a", 1.0, /*guaranteed=*/16), Queue("b", 1.0, 0, /*max=*/24)};
  for (int i = 0; i < 32; ++i) {
    std::string suffix = (i < 10 ? "0" : "") + std::to_string(i);
    AddPending("b" + suffix, QueueSpecFor("b", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
  }
  PolicyCycleResult result = Run();
  EXPECT_EQ(QueueGpus("b"), 24);
  int over_max = 0;
  for (const PolicyDecision& decision : result.decisions) {
    if (decision.cause == WaitCause::kOverQueueMax) {
      ++over_max;
      EXPECT_EQ(decision.plan.reason,
                "queue b would use nvidia.com/gpu=25 over its max nvidia.com/gpu=24 with this "
                "group's minimum");
    }
  }
  EXPECT_EQ(over_max, 8);
}

TEST_F(PolicyCycleTest, ElasticGroupStartsAtMinimumWhileAnotherWaitsThenGrows) {
  AddNodes("n", 1, 8);
  AddPending("elastic", QueueSpecFor("default", {GroupRole{"worker", 2, 8, 0}}), "worker", 0, 8, 1,
             /*created=*/100);
  AddPending("rigid", QueueSpecFor("default", {GroupRole{"worker", 6, 6, 0}}), "worker", 0, 6, 1,
             /*created=*/200);

  PolicyCycleResult result = Run();
  const PolicyDecision* elastic = Find(result, "elastic");
  const PolicyDecision* rigid = Find(result, "rigid");
  ASSERT_NE(elastic, nullptr);
  ASSERT_NE(rigid, nullptr);
  EXPECT_TRUE(rigid->plan.placed());
  EXPECT_TRUE(elastic->plan.placed());
  // Nothing waits after both started, but the cluster is full: no growth.
  EXPECT_THAT(AssignedNames(*elastic), ElementsAre("elastic-worker-0", "elastic-worker-1"));
  EXPECT_EQ(elastic->plan.surplus.size(), 6u);
  EXPECT_EQ(elastic->grown, 0);
}

TEST_F(PolicyCycleTest, GroupsGrowTowardMaxWhenNothingWaits) {
  AddNodes("n", 1, 8);
  AddPending("elastic",
             QueueSpecFor("default", {GroupRole{"ps", 1, 1, 1}, GroupRole{"worker", 2, 10, 0}}),
             "worker", 0, 10, 1);
  AddPending("elastic",
             QueueSpecFor("default", {GroupRole{"ps", 1, 1, 1}, GroupRole{"worker", 2, 10, 0}}),
             "ps", 0, 1, 0);
  PolicyCycleResult result = Run();
  const PolicyDecision* elastic = Find(result, "elastic");
  ASSERT_NE(elastic, nullptr);
  EXPECT_TRUE(elastic->plan.placed());
  EXPECT_EQ(elastic->plan.assignments.size(), 9u);  // ps + 8 workers on 8 GPUs
  EXPECT_EQ(elastic->grown, 6);
  ASSERT_EQ(elastic->plan.roles.size(), 2u);
  EXPECT_EQ(elastic->plan.roles[1].placed, 8);
  EXPECT_EQ(elastic->plan.roles[1].max_replicas, 10);
  EXPECT_THAT(elastic->plan.surplus.size(), 2u);
  EXPECT_EQ(elastic->plan.surplus[0]->name, "elastic-worker-8");
}

TEST_F(PolicyCycleTest, RunningGroupsGrowFairlyAcrossQueues) {
  AddNodes("n", 2, 8);
  policy_.queues = {Queue("a", 1.0), Queue("b", 1.0)};
  GroupSpec spec_a = QueueSpecFor("a", {GroupRole{"worker", 2, 10, 0}});
  GroupSpec spec_b = QueueSpecFor("b", {GroupRole{"worker", 2, 10, 0}});
  AddRunning("ga", spec_a, "worker", 0, 2, 1, "n0");
  AddRunning("gb", spec_b, "worker", 0, 2, 1, "n1");
  AddPending("ga", spec_a, "worker", 2, 8, 1);
  AddPending("gb", spec_b, "worker", 2, 8, 1);

  PolicyCycleResult result = Run();
  const PolicyDecision* ga = Find(result, "ga");
  const PolicyDecision* gb = Find(result, "gb");
  ASSERT_NE(ga, nullptr);
  ASSERT_NE(gb, nullptr);
  EXPECT_EQ(ga->grown, 6);
  EXPECT_EQ(gb->grown, 6);
  EXPECT_EQ(ga->cause, WaitCause::kNone);
  // A running group keeps its other members pending: they may grow later.
  EXPECT_THAT(ga->plan.surplus, IsEmpty());
  EXPECT_THAT(AssignedNames(*ga), ElementsAre("ga-worker-2", "ga-worker-3", "ga-worker-4",
                                              "ga-worker-5", "ga-worker-6", "ga-worker-7"));
}

TEST_F(PolicyCycleTest, WithRoomForEveryoneEveryGroupGrowsFully) {
  AddNodes("n", 3, 8);
  policy_.queues = {Queue("a", 1.0), Queue("b", 1.0)};
  GroupSpec spec_a = QueueSpecFor("a", {GroupRole{"worker", 2, 6, 0}});
  GroupSpec spec_b = QueueSpecFor("b", {GroupRole{"worker", 2, 6, 0}});
  AddRunning("ga", spec_a, "worker", 0, 2, 1, "n0");
  AddRunning("gb", spec_b, "worker", 0, 2, 1, "n1");
  AddPending("ga", spec_a, "worker", 2, 4, 1);
  AddPending("gb", spec_b, "worker", 2, 4, 1);
  PolicyCycleResult result = Run();
  EXPECT_EQ(Find(result, "ga")->grown, 4);
  EXPECT_EQ(Find(result, "gb")->grown, 4);
}

TEST_F(PolicyCycleTest, GrowthFollowsWeights) {
  AddNodes("n", 2, 12);
  policy_.queues = {Queue("a", 2.0), Queue("b", 1.0)};
  GroupSpec spec_a = QueueSpecFor("a", {GroupRole{"worker", 1, 24, 0}});
  GroupSpec spec_b = QueueSpecFor("b", {GroupRole{"worker", 1, 24, 0}});
  AddRunning("ga", spec_a, "worker", 0, 1, 1, "n0");
  AddRunning("gb", spec_b, "worker", 0, 1, 1, "n1");
  AddPending("ga", spec_a, "worker", 1, 23, 1);
  AddPending("gb", spec_b, "worker", 1, 23, 1);

  Run();
  EXPECT_EQ(QueueGpus("a"), 16);
  EXPECT_EQ(QueueGpus("b"), 8);
}

TEST_F(PolicyCycleTest, GrowthIsDeferredWhileAGroupWaitsForCapacity) {
  AddNodes("n", 1, 8);
  GroupSpec elastic = QueueSpecFor("default", {GroupRole{"worker", 2, 8, 0}});
  AddRunning("run", elastic, "worker", 0, 4, 1, "n0", /*priority=*/5);
  AddPending("run", elastic, "worker", 4, 4, 1);
  // A rigid gang needing 6 GPUs cannot start (4 free), and cannot reclaim
  // from a group of higher priority in its own queue.
  AddPending("wait", QueueSpecFor("default", {GroupRole{"worker", 6, 6, 0}}), "worker", 0, 6, 1);

  PolicyCycleResult result = Run();
  EXPECT_EQ(Find(result, "wait")->cause, WaitCause::kNoCapacity);
  const PolicyDecision* run = Find(result, "run");
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(run->cause, WaitCause::kGrowthDeferred);
  EXPECT_FALSE(run->plan.placed());
  EXPECT_THAT(run->plan.reason, HasSubstr("growth deferred"));
}

TEST_F(PolicyCycleTest, AGroupThatCouldNeverFitDoesNotBlockGrowth) {
  AddNodes("n", 1, 8);
  GroupSpec elastic = QueueSpecFor("default", {GroupRole{"worker", 2, 8, 0}});
  AddRunning("run", elastic, "worker", 0, 4, 1, "n0");
  AddPending("run", elastic, "worker", 4, 4, 1);
  AddPending("huge", QueueSpecFor("default", {GroupRole{"worker", 2, 2, 0}}), "worker", 0, 2, 16);

  PolicyCycleResult result = Run();
  EXPECT_EQ(Find(result, "huge")->cause, WaitCause::kNoCapacity);
  EXPECT_EQ(Find(result, "run")->grown, 4);
}

TEST_F(PolicyCycleTest, GrowthStopsAtTheQueueMax) {
  AddNodes("n", 1, 8);
  policy_.queues = {Queue("a", 1.0, 0, /*max=*/5)};
  GroupSpec spec = QueueSpecFor("a", {GroupRole{"worker", 2, 8, 0}});
  AddPending("g", spec, "worker", 0, 8, 1);
  PolicyCycleResult result = Run();
  const PolicyDecision* g = Find(result, "g");
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->plan.assignments.size(), 5u);
  EXPECT_THAT(g->plan.reason, HasSubstr("queue a reached its max"));
  EXPECT_EQ(QueueGpus("a"), 5);
}

TEST_F(PolicyCycleTest, GrowthCanBeTurnedOff) {
  AddNodes("n", 1, 8);
  policy_.reclaim.growth = false;
  GroupSpec elastic = QueueSpecFor("default", {GroupRole{"worker", 2, 8, 0}});
  AddRunning("run", elastic, "worker", 0, 2, 1, "n0");
  AddPending("run", elastic, "worker", 2, 6, 1);
  PolicyCycleResult result = Run();
  EXPECT_EQ(Find(result, "run")->cause, WaitCause::kNoRoomToGrow);
  EXPECT_EQ(Find(result, "run")->grown, 0);
}

TEST_F(PolicyCycleTest, GroupWithEveryMinimumZeroStartsWithOneMember) {
  AddNodes("n", 1, 2);
  AddPending("zero", QueueSpecFor("default", {GroupRole{"worker", 0, 4, 0}}), "worker", 0, 4, 1);
  // Something that waits keeps "zero" from growing past its start.
  AddPending("wait", QueueSpecFor("default", {GroupRole{"worker", 2, 2, 0}}), "worker", 0, 2, 1,
             /*created=*/10);
  PolicyCycleResult result = Run();
  const PolicyDecision* zero = Find(result, "zero");
  ASSERT_NE(zero, nullptr);
  EXPECT_TRUE(zero->plan.placed());
  EXPECT_THAT(AssignedNames(*zero), ElementsAre("zero-worker-0"));
}

TEST_F(PolicyCycleTest, RunningGroupBelowItsMinimumIsToppedUpFirst) {
  AddNodes("n", 1, 8);
  GroupSpec spec = QueueSpecFor("default", {GroupRole{"worker", 3, 4, 0}});
  AddRunning("hurt", spec, "worker", 0, 2, 1, "n0");
  AddPending("hurt", spec, "worker", 2, 2, 1);
  PolicyCycleResult result = Run();
  const PolicyDecision* hurt = Find(result, "hurt");
  ASSERT_NE(hurt, nullptr);
  EXPECT_TRUE(hurt->plan.placed());
  EXPECT_THAT(AssignedNames(*hurt), ElementsAre("hurt-worker-2", "hurt-worker-3"));
  EXPECT_EQ(hurt->grown, 1);
  EXPECT_THAT(hurt->plan.surplus, IsEmpty());
}

// Queue trees: org holds team-a and team-b; other is a top-level queue.
class QueueTreeTest : public testing::PolicyTest {
 protected:
  static QueueSpec Under(QueueSpec queue, const std::string& parent) {
    queue.parent = parent;
    return queue;
  }

  // `count` one-GPU single-member jobs <prefix>00.. in `queue`.
  void AddSmallJobs(const std::string& prefix, const std::string& queue, int count) {
    for (int i = 0; i < count; ++i) {
      std::string suffix = (i < 10 ? "0" : "") + std::to_string(i);
      AddPending(prefix + suffix, QueueSpecFor(queue, {GroupRole{"worker", 1, 1, 0}}), "worker", 0,
                 1, 1);
    }
  }

  static const QueueStatus* Row(const PolicyCycleResult& result, const std::string& name) {
    for (const QueueStatus& status : result.queues) {
      if (status.name == name) {
        return &status;
      }
    }
    return nullptr;
  }
};

TEST_F(QueueTreeTest, AParentCeilingStopsAChildBeforeItsOwnMax) {
  AddNodes("n", 3, 8);
  policy_.queues = {Queue("org", 1.0, 0, /*max=*/8), Under(Queue("team-a", 1.0, 0, 12), "org"),
                    Under(Queue("team-b"), "org"), Queue("other")};
  AddSmallJobs("a", "team-a", 10);
  AddSmallJobs("o", "other", 4);

  PolicyCycleResult result = Run();
  EXPECT_EQ(QueueGpus("team-a"), 8);
  EXPECT_EQ(QueueGpus("other"), 4);
  int over_max = 0;
  for (const PolicyDecision& decision : result.decisions) {
    if (decision.cause == WaitCause::kOverQueueMax) {
      ++over_max;
      EXPECT_EQ(decision.queue, "team-a");
      EXPECT_EQ(decision.plan.reason,
                "queue org (parent of team-a) would use nvidia.com/gpu=9 over its max "
                "nvidia.com/gpu=8 with this group's minimum");
    }
  }
  EXPECT_EQ(over_max, 2);
}

TEST_F(QueueTreeTest, SiblingsShareByWeightUnderTheParentAndOutsidersGetTheirShare) {
  AddNodes("n", 3, 8);
  // At the top org (weight 2) and other (1) share 24 GPUs 16:8; in org,
  // team-a (2) and team-b (1) share org's 16 about 2:1.
  policy_.queues = {Queue("org", 2.0), Under(Queue("team-a", 2.0), "org"),
                    Under(Queue("team-b", 1.0), "org"), Queue("other", 1.0)};
  AddSmallJobs("a", "team-a", 30);
  AddSmallJobs("b", "team-b", 30);
  AddSmallJobs("o", "other", 30);

  PolicyCycleResult result = Run();
  EXPECT_EQ(QueueGpus("team-a"), 11);
  EXPECT_EQ(QueueGpus("team-b"), 5);
  EXPECT_EQ(QueueGpus("other"), 8);

  const QueueStatus* org = Row(result, "org");
  ASSERT_NE(org, nullptr);
  EXPECT_FALSE(org->leaf);
  EXPECT_EQ(org->parent, "");
  EXPECT_EQ(org->used.Scalar("nvidia.com/gpu"), 16);
  EXPECT_DOUBLE_EQ(org->weighted_share, 16.0 / 24 / 2);
  EXPECT_EQ(org->placed_groups, 16);
  EXPECT_EQ(org->waiting_groups, 44);
  const QueueStatus* team_a = Row(result, "team-a");
  ASSERT_NE(team_a, nullptr);
  EXPECT_TRUE(team_a->leaf);
  EXPECT_EQ(team_a->parent, "org");
  EXPECT_EQ(team_a->placed_groups, 11);
  EXPECT_EQ(team_a->waiting_groups, 19);
}

// The example of docs/scheduler-policies.md ("Queue tree").
class DocumentedTreeTest : public QueueTreeTest {
 protected:
  DocumentedTreeTest() {
    AddNodes("n", 2, 8);
    policy_.queues = {Queue("org", 2.0, /*guaranteed=*/8, /*max=*/12),
                      Under(Queue("team-a", 2.0, 4), "org"), Under(Queue("team-b", 1.0, 4), "org"),
                      Queue("team-c")};
    EXPECT_TRUE(ValidateQueues(policy_.queues).ok());
  }
};

TEST_F(DocumentedTreeTest, ThreeTeamsShareSixteenGpus) {
  AddSmallJobs("a", "team-a", 16);
  AddSmallJobs("b", "team-b", 16);
  AddSmallJobs("c", "team-c", 16);
  Run();
  EXPECT_EQ(QueueGpus("team-a"), 7);
  EXPECT_EQ(QueueGpus("team-b"), 4);
  EXPECT_EQ(QueueGpus("team-c"), 5);
}

TEST_F(DocumentedTreeTest, TheParentsMaxBoundsItsChildrenTogether) {
  AddSmallJobs("a", "team-a", 16);
  AddSmallJobs("b", "team-b", 16);
  Run();
  EXPECT_EQ(QueueGpus("team-a"), 8);
  EXPECT_EQ(QueueGpus("team-b"), 4);
}

TEST_F(QueueTreeTest, GrowthStopsAtAParentsMaxAndGoesOnOutsideIt) {
  AddNodes("n", 2, 12);
  policy_.queues = {Queue("org", 1.0, 0, /*max=*/10), Under(Queue("team-a"), "org"),
                    Under(Queue("team-b"), "org"), Queue("other")};
  for (const auto& [job, queue, node] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"ga", "team-a", "n0"}, {"gb", "team-b", "n0"}, {"go", "other", "n1"}}) {
    GroupSpec spec = QueueSpecFor(queue, {GroupRole{"worker", 1, 24, 0}});
    AddRunning(job, spec, "worker", 0, 1, 1, node);
    AddPending(job, spec, "worker", 1, 23, 1);
  }

  PolicyCycleResult result = Run();
  EXPECT_EQ(QueueGpus("team-a"), 5);
  EXPECT_EQ(QueueGpus("team-b"), 5);
  EXPECT_EQ(QueueGpus("other"), 14);
  EXPECT_THAT(Find(result, "ga")->plan.reason,
              HasSubstr("queue org (parent of team-a) reached its max"));
}

TEST_F(QueueTreeTest, JobsRunOnlyInLeafQueues) {
  AddNodes("n", 1, 8);
  policy_.queues = {Queue("org"), Under(Queue("team-b"), "org"), Under(Queue("team-a"), "org"),
                    Queue("other")};
  policy_.starvation.max_wait_seconds = 60;
  AddRunning("el", QueueSpecFor("other", {GroupRole{"worker", 1, 8, 0}}), "worker", 0, 8, 1, "n0");
  AddPending("lost", QueueSpecFor("org", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);

  PolicyCycleResult result = Run(At(1000));
  const PolicyDecision* lost = Find(result, "lost");
  ASSERT_NE(lost, nullptr);
  EXPECT_EQ(lost->cause, WaitCause::kNotLeafQueue);
  EXPECT_EQ(WaitCauseName(lost->cause), "ParentQueue");
  EXPECT_EQ(lost->plan.outcome, PlanOutcome::kWait);
  EXPECT_EQ(lost->plan.reason,
            "queue \"org\" has child queues (team-a, team-b); jobs run in a leaf queue");
  // It never makes anyone give back, nor holds nodes.
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_THAT(result.reservations, IsEmpty());
  EXPECT_EQ(Row(result, "org")->waiting_groups, 1);
}

TEST_F(QueueTreeTest, AQueueAdmitsOnlyTheNamespacesItAndItsAncestorsAdmit) {
  AddNodes("n", 1, 8);
  QueueSpec vip = Queue("vip");
  vip.namespaces = {"ml"};
  QueueSpec org = Queue("org");
  LabelSelector gold;
  gold.requirements.push_back(SelectorRequirement{"tier", SelectorOperator::kIn, {"gold"}});
  org.namespace_selector = gold;
  QueueSpec fallback = Queue("default");
  fallback.namespaces = {"ml"};
  policy_.queues = {vip, org, Under(Queue("open"), "org"), fallback};
  AddPending("v", QueueSpecFor("vip", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
  AddPending("silver", QueueSpecFor("open", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
  AddPending("gold", QueueSpecFor("open", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1);
  pods_.push_back(std::make_unique<PodInfo>(PodBuilder("solo").Gpus(1).Build()));
  for (auto& pod : pods_) {
    if (pod->job_name == "gold") {
      pod->namespace_labels = LabelMap{{"tier", "gold"}};
    } else {
      pod->namespace_labels = LabelMap{{"tier", "silver"}};
    }
  }

  PolicyCycleResult result = Run();
  const PolicyDecision* v = Find(result, "v");
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->cause, WaitCause::kNotAllowedInQueue);
  EXPECT_EQ(WaitCauseName(v->cause), "NotAllowedInQueue");
  EXPECT_EQ(v->plan.reason, "queue \"vip\" does not admit jobs of namespace \"team\"");
  const PolicyDecision* silver = Find(result, "silver");
  ASSERT_NE(silver, nullptr);
  EXPECT_EQ(silver->cause, WaitCause::kNotAllowedInQueue);
  EXPECT_EQ(silver->plan.reason,
            "queue \"open\" (through its parent \"org\") does not admit jobs of namespace "
            "\"team\"");
  EXPECT_TRUE(Find(result, "gold")->plan.placed());
  // Pods outside any group go through the same check.
  const PolicyDecision* solo = Find(result, "solo");
  ASSERT_NE(solo, nullptr);
  EXPECT_EQ(solo->cause, WaitCause::kNotAllowedInQueue);
  EXPECT_EQ(solo->plan.reason, "queue \"default\" does not admit jobs of namespace \"team\"");
  EXPECT_EQ(QueueGpus("open"), 1);
  EXPECT_THAT(result.evictions, IsEmpty());
}

TEST_F(QueueTreeTest, AFlatConfigurationReportsTopLevelLeaves) {
  AddNodes("n", 1, 8);
  policy_.queues = {Queue("a"), Queue("b")};
  AddSmallJobs("a", "a", 2);
  PolicyCycleResult result = Run();
  ASSERT_EQ(result.queues.size(), 3u);
  for (const QueueStatus& status : result.queues) {
    EXPECT_TRUE(status.leaf);
    EXPECT_EQ(status.parent, "");
  }
  EXPECT_EQ(Row(result, "a")->placed_groups, 2);
}

}  // namespace
}  // namespace hybridjob::scheduler

namespace hybridjob::scheduler {
namespace {

Eviction Victim(const std::string& group, const std::string& role, int32_t index) {
  Eviction eviction;
  eviction.victim_group = group;
  eviction.role = role;
  eviction.index = index;
  eviction.name = group + "-" + role + "-" + std::to_string(index);
  return eviction;
}

// The first mark a job's controller sees must already say the role's final
// size: the lowest evicted index of each role goes first, numerically.
TEST(OrderForMarkingTest, LowestIndexOfEachRoleFirst) {
  std::vector<Eviction> evictions = {
      Victim("team/tf", "worker", 14), Victim("team/tf", "worker", 9),
      Victim("team/a", "worker", 3),   Victim("team/tf", "worker", 10),
      Victim("team/tf", "ps", 1),      Victim("team/tf", "worker", 7)};
  OrderForMarking(evictions);
  std::vector<std::string> names;
  for (const Eviction& eviction : evictions) {
    names.push_back(eviction.name);
  }
  EXPECT_THAT(names, ElementsAre("team/a-worker-3", "team/tf-ps-1", "team/tf-worker-7",
                                 "team/tf-worker-9", "team/tf-worker-10", "team/tf-worker-14"));
}

class QueueOrderTest : public testing::PolicyTest {
 protected:
  // Four 4-GPU nodes. In queue `line`: `first` (1 GPU) and the gang `big`
  // (3 x 4 GPUs), older than `small` (1 GPU); queue `other` has `side`
  // (1 GPU). Three nodes are busy with a rigid group of `other`.
  void SetUpLine(QueueOrder order) {
    AddNodes("n", 4, 4);
    QueueSpec line = Queue("line");
    line.order = order;
    policy_.queues = {line, Queue("other")};
    policy_.reclaim.enabled = false;
    GroupSpec busy = QueueSpecFor("other", {GroupRole{"worker", 3, 3, 0}});
    for (int i = 0; i < 3; ++i) {
      AddRunning("busy", busy, "worker", i, 1, 4, "n" + std::to_string(i));
    }
    AddPending("first", QueueSpecFor("line", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1,
               /*created=*/100);
    AddPending("big", QueueSpecFor("line", {GroupRole{"worker", 3, 3, 0}}), "worker", 0, 3, 4,
               /*created=*/200);
    AddPending("small", QueueSpecFor("line", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1,
               /*created=*/300);
    AddPending("side", QueueSpecFor("other", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1,
               /*created=*/400);
  }
};

TEST_F(QueueOrderTest, BestEffortFifoLetsSmallGroupsPastAWaitingGang) {
  SetUpLine(QueueOrder::kBestEffortFifo);
  PolicyCycleResult result = Run();
  EXPECT_TRUE(Find(result, "first")->plan.placed());
  EXPECT_EQ(Find(result, "big")->cause, WaitCause::kNoCapacity);
  EXPECT_TRUE(Find(result, "small")->plan.placed());
  EXPECT_TRUE(Find(result, "side")->plan.placed());
}

TEST_F(QueueOrderTest, StrictFifoStartsNothingBehindAWaitingGang) {
  SetUpLine(QueueOrder::kStrictFifo);
  PolicyCycleResult result = Run();
  // Ahead of the gang: starts. The gang waits, and so does everything behind
  // it in its queue, though it would fit; other queues are not held up.
  EXPECT_TRUE(Find(result, "first")->plan.placed());
  EXPECT_EQ(Find(result, "big")->cause, WaitCause::kNoCapacity);
  const PolicyDecision* small = Find(result, "small");
  ASSERT_NE(small, nullptr);
  EXPECT_EQ(small->cause, WaitCause::kBehindQueueHead);
  EXPECT_FALSE(small->plan.placed());
  EXPECT_THAT(small->plan.assignments, IsEmpty());
  EXPECT_EQ(small->plan.reason,
            "queue line is StrictFIFO: waiting behind team/big, which goes first and waits "
            "(NoCapacity)");
  EXPECT_EQ(WaitCauseName(small->cause), "BehindQueueHead");
  EXPECT_EQ(small->waiting_reason, "FairShareOrder");
  EXPECT_EQ(small->queue_position, 2);
  EXPECT_EQ(Find(result, "big")->waiting_reason, "InsufficientCapacity");
  EXPECT_EQ(Find(result, "big")->queue_position, 1);
  EXPECT_TRUE(Find(result, "side")->plan.placed());
  EXPECT_EQ(QueueGpus("line"), 1);

  // Once the gang fits it starts, and the line moves on in the same cycle.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(snapshot_.RemovePod("team", "busy-worker-" + std::to_string(i)).ok());
  }
  result = Run();
  EXPECT_TRUE(Find(result, "big")->plan.placed());
  EXPECT_TRUE(Find(result, "small")->plan.placed());
}

TEST_F(QueueOrderTest, AStrictFifoHeadOverItsQueueMaxHoldsUpItsQueue) {
  AddNodes("n", 2, 4);
  QueueSpec line = Queue("line", 1.0, 0, /*max_gpus=*/4);
  line.order = QueueOrder::kStrictFifo;
  policy_.queues = {line};
  AddRunning("running", QueueSpecFor("line", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 2,
             "n0");
  AddPending("wide", QueueSpecFor("line", {GroupRole{"worker", 2, 2, 0}}), "worker", 0, 2, 2,
             /*created=*/100);
  AddPending("narrow", QueueSpecFor("line", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1,
             /*created=*/200);
  PolicyCycleResult result = Run();
  EXPECT_EQ(Find(result, "wide")->cause, WaitCause::kOverQueueMax);
  EXPECT_EQ(Find(result, "narrow")->cause, WaitCause::kBehindQueueHead);
  EXPECT_THAT(Find(result, "narrow")->plan.reason, HasSubstr("(OverQueueMax)"));
}

TEST_F(QueueOrderTest, AStrictFifoHeadStillReclaimsWhileTheLineWaits) {
  AddNodes("n", 1, 4);
  QueueSpec line = Queue("line");
  line.order = QueueOrder::kStrictFifo;
  policy_.queues = {line, Queue("other")};
  AddRunning("elastic", QueueSpecFor("other", {GroupRole{"worker", 1, 4, 0}}), "worker", 0, 4, 1,
             "n0");
  AddPending("head", QueueSpecFor("line", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 2,
             /*created=*/100);
  AddPending("next", QueueSpecFor("line", {GroupRole{"worker", 1, 1, 0}}), "worker", 0, 1, 1,
             /*created=*/200);
  PolicyCycleResult result = Run();
  EXPECT_EQ(Find(result, "head")->cause, WaitCause::kEvicting);
  EXPECT_THAT(Evicted(result), ElementsAre("elastic-worker-3", "elastic-worker-2"));
  EXPECT_EQ(Find(result, "next")->cause, WaitCause::kBehindQueueHead);
}

class EvictionOrderTest : public testing::PolicyTest {};

TEST_F(EvictionOrderTest, EvictionsCarryTheVictimsRoleAndIndex) {
  AddNodes("n", 1, 8);
  policy_.queues = {testing::Queue("a"), testing::Queue("b")};
  AddRunning("el", QueueSpecFor("b", {GroupRole{"worker", 2, 8, 0}}), "worker", 0, 8, 1, "n0");
  AddPending("big", QueueSpecFor("a", {GroupRole{"worker", 3, 3, 0}}), "worker", 0, 3, 1);
  PolicyCycleResult result = Run();
  ASSERT_EQ(result.evictions.size(), 3u);
  std::vector<Eviction> evictions = result.evictions;
  OrderForMarking(evictions);
  std::vector<int32_t> indices;
  for (const Eviction& eviction : evictions) {
    EXPECT_EQ(eviction.role, "worker");
    indices.push_back(eviction.index);
  }
  EXPECT_THAT(indices, ElementsAre(5, 6, 7));
}

}  // namespace
}  // namespace hybridjob::scheduler
