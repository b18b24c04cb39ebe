#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/fair_share.h>

#include "policy_fixture.h"

namespace hybridjob::scheduler {
namespace {

using ::testing::ElementsAre;
using testing::kGi;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::Queue;
using testing::QueueSpecFor;

ResourceList Resources(int64_t milli_cpu, int64_t memory, int64_t gpus) {
  ResourceList list;
  list.milli_cpu = milli_cpu;
  list.memory = memory;
  if (gpus > 0) {
    list.SetScalar("nvidia.com/gpu", gpus);
  }
  return list;
}

TEST(DominantShareTest, IsTheLargestShareOverTheComparedResources) {
  std::vector<std::string> resources = DrfResources({"nvidia.com/gpu", "amd.com/gpu"});
  EXPECT_THAT(resources, ElementsAre("cpu", "memory", "nvidia.com/gpu", "amd.com/gpu"));
  ResourceList capacity = Resources(100000, 1000 * kGi, 40);
  EXPECT_DOUBLE_EQ(DominantShare(Resources(10000, 50 * kGi, 2), capacity, resources), 0.1);
  EXPECT_DOUBLE_EQ(DominantShare(Resources(1000, 10 * kGi, 10), capacity, resources), 0.25);
  // A resource the cluster has none of is left out.
  EXPECT_DOUBLE_EQ(DominantShare(Resources(0, 0, 4), Resources(1000, kGi, 0), resources), 0.0);
  EXPECT_DOUBLE_EQ(DominantShare({}, capacity, resources), 0.0);
}

TEST(DrfResourcesTest, DoesNotRepeatNames) {
  EXPECT_THAT(DrfResources({"cpu", "nvidia.com/gpu", "nvidia.com/gpu"}),
              ElementsAre("cpu", "memory", "nvidia.com/gpu"));
}

class FairShareTest : public ::testing::Test {
 protected:
  FairShareTest() : table_({Queue("a", 2.0), Queue("b", 1.0, /*guaranteed=*/4)}) {}

  FairShare Share() {
    return FairShare(table_, Resources(100000, 1000 * kGi, 20), DrfResources({"nvidia.com/gpu"}));
  }

  QueueTable table_;
};

TEST_F(FairShareTest, WeightDividesTheDominantShare) {
  FairShare share = Share();
  share.Add("a", Resources(1000, kGi, 4));
  share.Add("b", Resources(1000, kGi, 4));
  EXPECT_DOUBLE_EQ(share.WeightedShare("a"), 0.1);
  EXPECT_DOUBLE_EQ(share.WeightedShare("b"), 0.2);
  EXPECT_TRUE(share.GoesFirst(*share.Find("a"), *share.Find("b")));
  share.Remove("a", Resources(0, 0, 2));
  EXPECT_DOUBLE_EQ(share.WeightedShare("a"), 0.05);
  EXPECT_DOUBLE_EQ(share.WeightedShareOf(*share.Find("a"), Resources(0, 0, 8)), 0.2);
}

TEST_F(FairShareTest, AQueueBelowItsGuaranteeGoesFirst) {
  FairShare share = Share();
  share.Add("a", Resources(1000, kGi, 0));
  share.Add("b", Resources(1000, kGi, 3));
  EXPECT_TRUE(FairShare::BelowGuarantee(*share.Find("b")));
  EXPECT_FALSE(FairShare::BelowGuarantee(*share.Find("a")));
  EXPECT_TRUE(share.GoesFirst(*share.Find("b"), *share.Find("a")));
  share.Add("b", Resources(0, 0, 1));
  EXPECT_FALSE(FairShare::BelowGuarantee(*share.Find("b")));
  EXPECT_TRUE(share.GoesFirst(*share.Find("a"), *share.Find("b")));
}

TEST_F(FairShareTest, TiesGoByName) {
  FairShare share = Share();
  EXPECT_TRUE(share.GoesFirst(*share.Find("a"), *share.Find("default")));
  EXPECT_FALSE(share.GoesFirst(*share.Find("default"), *share.Find("a")));
}

TEST_F(FairShareTest, UnknownQueuesGetAnUnconfiguredAccount) {
  FairShare share = Share();
  EXPECT_EQ(share.Find("ghost"), nullptr);
  share.Add("ghost", Resources(0, 0, 2), 1);
  const QueueAccount* ghost = share.Find("ghost");
  ASSERT_NE(ghost, nullptr);
  EXPECT_FALSE(ghost->configured);
  EXPECT_EQ(ghost->pods, 1);
  EXPECT_DOUBLE_EQ(share.WeightedShare("ghost"), 0.1);
  EXPECT_EQ(share.accounts().size(), 4u);  // a, b, default, ghost
}

TEST(FairShareFromSnapshotTest, CountsManagedPodsByQueueAndOthersAsLostCapacity) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n0").Gpus(8).Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n1").Gpus(8).Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("cordoned").Gpus(8).Build()).ok());
  GroupSpec in_a = QueueSpecFor("a", {RoleSpec{"worker", 1, 2, 0}});
  ASSERT_TRUE(snapshot
                  .AddPod(PodBuilder("j-worker-0")
                              .Member("j", "worker", 0)
                              .Spec(in_a)
                              .Gpus(2)
                              .OnNode("n0")
                              .Build())
                  .ok());
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("lone").Gpus(1).OnNode("n1").Build()).ok());
  PodInfo foreign = PodBuilder("foreign").Gpus(4).OnNode("n1").Build();
  foreign.scheduler_name = "default-scheduler";
  ASSERT_TRUE(snapshot.AddPod(foreign).ok());
  // A pod on a node the snapshot has no object for still counts as usage.
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("orphan").Gpus(1).OnNode("vanished").Build()).ok());

  PolicyConfig policy;
  policy.scheduler_name = std::string(api::kDefaultSchedulerName);
  QueueTable table({Queue("a")});
  FairShare share =
      FairShare::FromSnapshot(snapshot, table, policy, DrfResources({"nvidia.com/gpu"}));
  EXPECT_EQ(share.capacity().Scalar("nvidia.com/gpu"), 24 - 4);
  EXPECT_EQ(share.Find("a")->used.Scalar("nvidia.com/gpu"), 2);
  EXPECT_EQ(share.Find("a")->pods, 1);
  EXPECT_EQ(share.Find("default")->used.Scalar("nvidia.com/gpu"), 2);
  EXPECT_DOUBLE_EQ(share.WeightedShare("a"), 0.1);

  // Without a scheduler name every pod is ours.
  policy.scheduler_name.clear();
  share = FairShare::FromSnapshot(snapshot, table, policy, DrfResources({"nvidia.com/gpu"}));
  EXPECT_EQ(share.capacity().Scalar("nvidia.com/gpu"), 24);
  EXPECT_EQ(share.Find("default")->used.Scalar("nvidia.com/gpu"), 6);
}

}  // namespace
}  // namespace hybridjob::scheduler
