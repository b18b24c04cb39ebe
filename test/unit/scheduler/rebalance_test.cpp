// Fair elastic sharing: the targets of the queue tree (fair_targets.h) and the
// rebalancing stage that brings usage to them across cycles.
#include <hybridjob/scheduler/core/fair_targets.h>

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "policy_fixture.h"

namespace hybridjob::scheduler {
namespace {

using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::At;
using testing::Queue;
using testing::QueueSpecFor;

std::vector<double> Fill(double available, std::vector<ShareClaim> claims) {
  return WaterFill(available, claims);
}

TEST(WaterFillTest, SharesByWeightAndGivesWhatOneDoesNotAskForToTheOthers) {
  EXPECT_THAT(Fill(1.0, {{1, 0, 1}, {1, 0, 1}}), ElementsAre(DoubleNear(0.5, 1e-9), DoubleNear(0.5, 1e-9)));
  EXPECT_THAT(Fill(1.0, {{2, 0, 1}, {1, 0, 1}}),
              ElementsAre(DoubleNear(2.0 / 3, 1e-9), DoubleNear(1.0 / 3, 1e-9)));
  // The first asks for 0.1 only: the second gets the rest.
  EXPECT_THAT(Fill(1.0, {{1, 0, 0.1}, {1, 0, 1}}),
              ElementsAre(DoubleNear(0.1, 1e-9), DoubleNear(0.9, 1e-9)));
  // Everyone's demand fits: everyone gets it, nothing more.
  EXPECT_THAT(Fill(1.0, {{1, 0, 0.2}, {1, 0, 0.3}}),
              ElementsAre(DoubleNear(0.2, 1e-9), DoubleNear(0.3, 1e-9)));
  EXPECT_THAT(Fill(1.0, {}), IsEmpty());
}

TEST(WaterFillTest, GuaranteesComeFirstCappedByDemand) {
  // Guaranteed 0.75 with weight 1 against weight 1: the guarantee holds.
  EXPECT_THAT(Fill(1.0, {{1, 0.75, 1}, {1, 0, 1}}),
              ElementsAre(DoubleNear(0.75, 1e-9), DoubleNear(0.25, 1e-9)));
  // A guarantee above the demand is worth only the demand.
  EXPECT_THAT(Fill(1.0, {{1, 0.75, 0.1}, {1, 0, 1}}),
              ElementsAre(DoubleNear(0.1, 1e-9), DoubleNear(0.9, 1e-9)));
  // Guarantees worth more than there is are scaled alike.
  EXPECT_THAT(Fill(0.5, {{1, 0.5, 1}, {1, 0.5, 1}}),
              ElementsAre(DoubleNear(0.25, 1e-9), DoubleNear(0.25, 1e-9)));
}

// The cluster of the issue: 16 GPUs, org {team-a, team-b} and team-c.
class RebalanceTest : public testing::PolicyTest {
 protected:
  RebalanceTest() {
    AddNodes("n", 2, 8);
    policy_.queues = {Queue("org"), Under(Queue("team-a"), "org"), Under(Queue("team-b"), "org"),
                      Queue("team-c")};
    policy_.reclaim.min_resize_interval_seconds = 30;
  }

  static QueueSpec Under(QueueSpec queue, const std::string& parent) {
    queue.parent = parent;
    return queue;
  }

  static GroupSpec Elastic(const std::string& queue, int32_t max = 16, bool restarts = false) {
    GroupSpec spec = QueueSpecFor(queue, {GroupRole{"worker", 1, max, 0}});
    spec.resize_restarts = restarts;
    return spec;
  }

  // An elastic job with `running` members bound (spread over the nodes as
  // they fit) and the rest of 16 pending.
  void AddJob(const std::string& job, const GroupSpec& spec, int running, int first_node_gpus) {
    int on_n0 = std::min(running, first_node_gpus);
    AddRunning(job, spec, "worker", 0, on_n0, 1, "n0");
    AddRunning(job, spec, "worker", on_n0, running - on_n0, 1, "n1");
    AddPending(job, spec, "worker", running, spec.roles[0].max_replicas - running, 1);
  }

  // Cycles at `now`, each carrying out the last one's evictions (the pods
  // go; their members come back pending, as the controller recreates them).
  PolicyCycleResult Settle(int64_t now, int cycles = 4) {
    PolicyCycleResult result;
    for (int i = 0; i < cycles; ++i) {
      result = Run(At(now));
      evictions_ += static_cast<int>(result.evictions.size());
      ApplyEvictions(result);
    }
    return result;
  }

  int evictions_ = 0;
};

TEST_F(RebalanceTest, TargetsFollowTheTreeAndWhatEachQueueAsksFor) {
  AddJob("a", Elastic("team-a"), 14, 8);
  AddJob("b", Elastic("team-b"), 1, 0);
  AddJob("c", Elastic("team-c"), 1, 0);
  PolicyCycleResult result = Run(At(1000));
  auto fair_gpus = [&result](const std::string& name) {
    for (const QueueStatus& status : result.queues) {
      if (status.name == name) {
        return status.fair_share * 16;
      }
    }
    return -1.0;
  };
  EXPECT_THAT(fair_gpus("org"), DoubleNear(8, 1e-6));
  EXPECT_THAT(fair_gpus("team-a"), DoubleNear(4, 1e-6));
  EXPECT_THAT(fair_gpus("team-b"), DoubleNear(4, 1e-6));
  EXPECT_THAT(fair_gpus("team-c"), DoubleNear(8, 1e-6));
}

TEST_F(RebalanceTest, TargetsGiveWhatAQueueDoesNotAskForToTheOthers) {
  AddJob("a", Elastic("team-a"), 14, 8);
  AddJob("b", Elastic("team-b", /*max=*/2), 1, 0);
  PolicyCycleResult result = Run(At(1000));
  for (const QueueStatus& status : result.queues) {
    if (status.name == "team-b") {
      EXPECT_THAT(status.fair_share * 16, DoubleNear(2, 1e-6)) << "it asks for 2";
    } else if (status.name == "team-a") {
      EXPECT_THAT(status.fair_share * 16, DoubleNear(14, 1e-6)) << "team-c asks for nothing";
    }
  }
}

TEST_F(RebalanceTest, ThreeTeamsReachFourFourEightAndStayThere) {
  AddJob("a", Elastic("team-a"), 14, 8);
  AddJob("b", Elastic("team-b"), 1, 0);
  AddJob("c", Elastic("team-c"), 1, 0);

  PolicyCycleResult first = Run(At(1000));
  ASSERT_EQ(first.evictions.size(), 10u) << "a gives back 10 of its 14 in one decision";
  for (const Eviction& eviction : first.evictions) {
    EXPECT_EQ(eviction.victim_group, "team/a");
    EXPECT_TRUE(eviction.rebalance);
    EXPECT_EQ(eviction.cause, EvictionCause::kReclaim);
    EXPECT_THAT(eviction.message, HasSubstr("rebalancing to fair shares"));
  }
  ASSERT_EQ(first.rebalanced.size(), 1u);
  EXPECT_EQ(first.rebalanced[0].job_name, "a");
  EXPECT_EQ(first.rebalanced[0].message,
            "rebalanced: 3 workers to queue team-b (share 4 of 16 GPUs); 7 workers to queue "
            "team-c (share 8 of 16 GPUs)");
  ApplyEvictions(first);
  Settle(1002);
  EXPECT_EQ(QueueGpus("team-a"), 4);
  EXPECT_EQ(QueueGpus("team-b"), 4);
  EXPECT_EQ(QueueGpus("team-c"), 8);

  // Long after, with every job still asking for more: nothing moves.
  evictions_ = 0;
  Settle(1100);
  Settle(1200);
  EXPECT_EQ(evictions_, 0);
  EXPECT_EQ(QueueGpus("team-a"), 4);
  EXPECT_EQ(QueueGpus("team-b"), 4);
  EXPECT_EQ(QueueGpus("team-c"), 8);
}

TEST_F(RebalanceTest, TheReceiverTakesEachFreedPlaceBeforeTheVictimRegrows) {
  AddJob("a", Elastic("team-a"), 14, 8);
  AddJob("c", Elastic("team-c"), 2, 0);
  PolicyCycleResult first = Run(At(1000));
  ASSERT_EQ(first.evictions.size(), 6u);  // 8 / 8
  for (const InFlightEviction& eviction : first.state.evictions) {
    EXPECT_TRUE(eviction.rebalance);
    EXPECT_EQ(eviction.for_group, "team/c");
  }
  // The victims go one at a time; a's recreated members, first in line in
  // their queue's order, never take their place.
  int c = 2;
  for (const Eviction& eviction : first.evictions) {
    ASSERT_TRUE(snapshot_.RemovePod(eviction.namespace_name, eviction.name).ok());
    Run(At(1001));
    EXPECT_EQ(QueueGpus("team-c"), ++c);
  }
  Settle(1002);
  EXPECT_EQ(QueueGpus("team-a"), 8);
  EXPECT_EQ(QueueGpus("team-c"), 8);
}

TEST_F(RebalanceTest, ASecondJobInAQueueSplitsItsShareWithoutTouchingTheOthers) {
  AddJob("a", Elastic("team-a"), 4, 4);
  AddJob("b", Elastic("team-b"), 4, 4);
  AddRunning("c1", Elastic("team-c"), "worker", 0, 7, 1, "n1");
  AddPending("c1", Elastic("team-c"), "worker", 7, 9, 1);
  AddRunning("c2", Elastic("team-c"), "worker", 0, 1, 1, "n1");
  AddPending("c2", Elastic("team-c"), "worker", 1, 15, 1);

  Settle(1000);
  EXPECT_EQ(QueueGpus("team-a"), 4);
  EXPECT_EQ(QueueGpus("team-b"), 4);
  EXPECT_EQ(QueueGpus("team-c"), 8);
  EXPECT_EQ(evictions_, 3);
  EXPECT_EQ(snapshot_.GroupMembers("team", "c1").size(), 4u);
  EXPECT_EQ(snapshot_.GroupMembers("team", "c2").size(), 4u);
}

TEST_F(RebalanceTest, ANewJobInAQueueGetsHalfOfItAtOnceAndKeepsWhatWasFreedForIt) {
  AddJob("a", Elastic("team-a"), 4, 4);
  AddJob("b", Elastic("team-b"), 4, 4);
  AddRunning("c1", Elastic("team-c"), "worker", 0, 8, 1, "n1");
  AddPending("c1", Elastic("team-c"), "worker", 8, 8, 1);
  AddPending("c2", Elastic("team-c"), "worker", 0, 16, 1);

  PolicyCycleResult first = Run(At(1000));
  EXPECT_EQ(first.evictions.size(), 4u) << "one for c2's minimum, three to rebalance";
  ApplyEvictions(first);
  // c1 is older, so first in its queue's line to grow; the places freed for
  // c2 stay c2's even before c2 has started.
  Settle(1001);
  EXPECT_EQ(snapshot_.GroupMembers("team", "c1").size(), 4u);
  EXPECT_EQ(snapshot_.GroupMembers("team", "c2").size(), 4u);
  EXPECT_EQ(QueueGpus("team-a"), 4);
  EXPECT_EQ(QueueGpus("team-b"), 4);
  EXPECT_EQ(evictions_, 0);
  EXPECT_THAT(state_.owed, IsEmpty());
}

TEST_F(RebalanceTest, WithinTheToleranceNothingMoves) {
  policy_.reclaim.share_tolerance = 0.3;
  AddJob("a", Elastic("team-a"), 5, 5);
  AddJob("b", Elastic("team-b"), 3, 3);
  AddJob("c", Elastic("team-c"), 8, 0);
  Settle(1000);
  EXPECT_EQ(evictions_, 0) << "team-b uses 3 of 4, within 30 %";

  policy_.reclaim.share_tolerance = 0.1;
  Settle(1001);
  EXPECT_EQ(evictions_, 1);
  EXPECT_EQ(QueueGpus("team-a"), 4);
  EXPECT_EQ(QueueGpus("team-b"), 4);
}

TEST_F(RebalanceTest, AGroupResizedRecentlyIsLeftAloneUntilTheIntervalPasses) {
  AddJob("a", Elastic("team-a"), 14, 8);
  AddJob("c", Elastic("team-c"), 2, 0);
  state_.resizes = {GroupResize{"team/a", At(990)}};
  Settle(1000);
  EXPECT_EQ(evictions_, 0) << "a grew 10 s ago";
  Settle(1019);
  EXPECT_EQ(evictions_, 0);
  Settle(1021);
  EXPECT_EQ(evictions_, 6);
  EXPECT_EQ(QueueGpus("team-a"), 8);
  EXPECT_EQ(QueueGpus("team-c"), 8);
}

TEST_F(RebalanceTest, ARigidFrameworkIsNeverShrunkToGrowAnother) {
  AddJob("a", Elastic("team-a", 16, /*restarts=*/true), 14, 8);
  AddJob("c", Elastic("team-c"), 2, 0);
  Settle(1000);
  EXPECT_EQ(evictions_, 0);
  EXPECT_EQ(QueueGpus("team-a"), 14);
}

TEST_F(RebalanceTest, ItCanBeTurnedOff) {
  policy_.reclaim.rebalance = false;
  AddJob("a", Elastic("team-a"), 14, 8);
  AddJob("c", Elastic("team-c"), 2, 0);
  Settle(1000);
  EXPECT_EQ(evictions_, 0);
}

TEST_F(RebalanceTest, AGuaranteeAboveTheWeightedShareHolds) {
  policy_.queues[3].guaranteed.SetScalar("nvidia.com/gpu", 12);  // team-c
  AddJob("a", Elastic("team-a"), 8, 8);
  AddJob("c", Elastic("team-c"), 8, 0);
  Settle(1000);
  EXPECT_EQ(QueueGpus("team-a"), 4);
  EXPECT_EQ(QueueGpus("team-c"), 12);
}

TEST_F(RebalanceTest, NoQueueIsPushedBelowItsShareOrAJobBelowItsMinimum) {
  // team-b asks for more than it has, but every other queue is at or below
  // its own share: nothing may move.
  AddJob("a", Elastic("team-a"), 4, 4);
  AddJob("b", Elastic("team-b"), 4, 4);
  GroupSpec rigid_min = QueueSpecFor("team-c", {GroupRole{"worker", 8, 16, 0}});
  AddJob("c", rigid_min, 8, 0);
  Settle(1000);
  EXPECT_EQ(evictions_, 0);
}

// A gang whose resize restarts it (TensorFlow) left its nodes and its new
// members are not there yet: nobody's growth takes them meanwhile.
class RestartHoldTest : public testing::PolicyTest {
 protected:
  RestartHoldTest() {
    AddNodes("n", 2, 8);
    tf_ = QueueSpecFor("default", {GroupRole{"worker", 8, 8, 0}});
    tf_.resize_restarts = true;
    elastic_ = QueueSpecFor("default", {GroupRole{"worker", 1, 16, 0}});
    AddRunning("tf", tf_, "worker", 0, 8, 1, "n0");
    AddRunning("el", elastic_, "worker", 0, 8, 1, "n1");
    AddPending("el", elastic_, "worker", 8, 8, 1);
  }

  // The controller deleted every tf member for a restart.
  void TfLeaves(Timestamp now) {
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(snapshot_.RemovePod("team", "tf-worker-" + std::to_string(i)).ok());
      HoldForRestart(state_, "team/tf", "team", "tf", "n0", now);
    }
  }

  GroupSpec tf_;
  GroupSpec elastic_;
};

TEST_F(RestartHoldTest, ARestartingGangKeepsItsNodesFromOthersGrowth) {
  TfLeaves(At(1000));
  ASSERT_EQ(state_.restart_holds.size(), 1u);
  EXPECT_EQ(state_.restart_holds[0].nodes, std::vector<std::string>{"n0"});
  Run(At(1001));
  Run(At(1030));
  EXPECT_EQ(snapshot_.GroupMembers("team", "el").size(), 8u) << "n0 stays free for tf";
  EXPECT_EQ(state_.restart_holds.size(), 1u);

  // Its new members arrive and are placed; then el may grow again.
  AddPending("tf", tf_, "worker", 0, 8, 1, /*created=*/1031);
  PolicyCycleResult placed = Run(At(1031));
  const PolicyDecision* tf = Find(placed, "tf");
  ASSERT_NE(tf, nullptr);
  EXPECT_EQ(tf->plan.outcome, PlanOutcome::kPlaced);
  EXPECT_THAT(state_.restart_holds, IsEmpty());
}

TEST_F(RestartHoldTest, AHoldWhoseGangNeverComesBackIsForgotten) {
  TfLeaves(At(1000));
  Run(At(1000 + kRestartHoldSeconds - 1));
  EXPECT_EQ(snapshot_.GroupMembers("team", "el").size(), 8u);
  Run(At(1000 + kRestartHoldSeconds + 1));
  EXPECT_EQ(snapshot_.GroupMembers("team", "el").size(), 16u) << "the hold ran out";
  EXPECT_THAT(state_.restart_holds, IsEmpty());
}

TEST_F(RestartHoldTest, APlacementAtAMinimumIsNotHeldBack) {
  TfLeaves(At(1000));
  GroupSpec small = QueueSpecFor("default", {GroupRole{"worker", 4, 4, 0}});
  AddPending("small", small, "worker", 0, 4, 1);
  PolicyCycleResult result = Run(At(1001));
  const PolicyDecision* decision = Find(result, "small");
  ASSERT_NE(decision, nullptr);
  EXPECT_EQ(decision->plan.outcome, PlanOutcome::kPlaced);
}

// Guarantees and maxima of queues count GPUs weighted: whole GPUs and MIG
// slices of weight 0.125 are one measure.
constexpr const char* kSlice = "nvidia.com/mig-1g.10gb";

GpuResources WholeAndSlices() {
  Result<GpuResources> gpus = GpuResources::Make({{"nvidia.com/gpu", 1.0}, {kSlice, 0.125}}, "");
  EXPECT_TRUE(gpus.ok());
  return gpus.ok() ? *gpus : GpuResources();
}

ResourceList Slices(int64_t count) {
  ResourceList list;
  list.SetScalar(kSlice, count);
  return list;
}

TEST(GpuWeightsTest, AmountsAreComparedWithLimitsAsWeightedGpus) {
  const GpuResources gpus = WholeAndSlices();
  ResourceList nine = Slices(9);
  EXPECT_EQ(AsGpuEquivalents(nine, gpus).Scalar("nvidia.com/gpu"), 2) << "1.125 GPUs, rounded up";
  EXPECT_EQ(AsGpuEquivalents(nine, gpus, false).Scalar("nvidia.com/gpu"), 1);
  EXPECT_EQ(AsGpuEquivalents(nine, gpus).Scalar(kSlice), 9);
  ResourceList mixed = Slices(4);
  mixed.SetScalar("nvidia.com/gpu", 1);
  EXPECT_EQ(AsGpuEquivalents(mixed, gpus).Scalar(kSlice), 12) << "1.5 GPUs in slices";
  EXPECT_EQ(AsGpuEquivalents(ResourceList{}, gpus).Scalar("nvidia.com/gpu"), 0);
}

TEST(GpuWeightsTest, AGuaranteeOfWholeGpusIsMetBySlices) {
  QueueSpec a = Queue("a");
  a.guaranteed.SetScalar("nvidia.com/gpu", 1);
  QueueTable table({a, Queue("b")});
  ResourceList capacity = Slices(16);
  FairShare share(table, capacity, WholeAndSlices());
  share.Add("a", Slices(4));
  EXPECT_TRUE(share.BelowGuarantee(*share.Find("a"))) << "half a GPU of one";
  share.Add("a", Slices(4));
  EXPECT_FALSE(share.BelowGuarantee(*share.Find("a")));
  EXPECT_EQ(share.FirstOverMax("a", Slices(100)), nullptr);
}

class GpuWeightedQueuesTest : public testing::PolicyTest {
 protected:
  GpuWeightedQueuesTest() {
    planner_.gpu_resources = WholeAndSlices();
    for (int n = 0; n < 2; ++n) {
      EXPECT_TRUE(snapshot_
                      .UpsertNode(testing::NodeBuilder("m" + std::to_string(n))
                                      .Scalar(kSlice, 16)
                                      .Build())
                      .ok());
    }
  }

  void AddSliceJob(const std::string& job, const std::string& queue, int min, int max) {
    GroupSpec spec = QueueSpecFor(queue, {GroupRole{"worker", min, max, 0}});
    for (int i = 0; i < max; ++i) {
      pods_.push_back(std::make_unique<PodInfo>(testing::PodBuilder(job + "-worker-" +
                                                                    std::to_string(i))
                                                    .Member(job, "worker", i)
                                                    .Spec(spec)
                                                    .Scalar(kSlice, 1)
                                                    .Build()));
    }
  }

  int64_t Slices(const std::string& queue) const {
    int64_t total = 0;
    for (const NodeState& node : snapshot_.slots()) {
      for (const PodInfo* pod : node.pods) {
        total += QueueOfPod(*pod) == queue ? pod->requests.Scalar(kSlice) : 0;
      }
    }
    return total;
  }
};

TEST_F(GpuWeightedQueuesTest, AMaxOfWholeGpusHoldsThatManyGpusOfSlices) {
  QueueSpec capped = Queue("capped");
  capped.max.Set("nvidia.com/gpu", 1);
  policy_.queues = {capped};
  AddSliceJob("m", "capped", 1, 12);
  Run(At(1000));
  EXPECT_EQ(Slices("capped"), 8) << "8 slices of 0.125 are the queue's 1 GPU";

  AddSliceJob("n", "capped", 2, 2);
  PolicyCycleResult result = Run(At(1001));
  const PolicyDecision* waiting = Find(result, "n");
  ASSERT_NE(waiting, nullptr);
  EXPECT_EQ(waiting->cause, WaitCause::kOverQueueMax);
  EXPECT_THAT(waiting->plan.reason, HasSubstr("nvidia.com/gpu=2 over its max nvidia.com/gpu=1"));
}

TEST_F(GpuWeightedQueuesTest, FairSharesCountSlicesAsGpus) {
  QueueSpec a = Queue("a");
  a.guaranteed.SetScalar("nvidia.com/gpu", 3);  // 24 of the 32 slices
  policy_.queues = {a, Queue("b")};
  AddSliceJob("x", "a", 1, 32);
  AddSliceJob("y", "b", 1, 32);
  PolicyCycleResult result = Run(At(1000));
  for (const QueueStatus& status : result.queues) {
    if (status.name == "a") {
      EXPECT_THAT(status.fair_share, DoubleNear(0.75, 1e-6));
    } else if (status.name == "b") {
      EXPECT_THAT(status.fair_share, DoubleNear(0.25, 1e-6));
    }
  }
}

}  // namespace
}  // namespace hybridjob::scheduler
