#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/fair_share.h>

#include "policy_fixture.h"

namespace hybridjob::scheduler {
namespace {

using ::testing::ElementsAre;
using testing::kGi;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::Queue;
using testing::QueueSpecFor;
using testing::RemoveListedPod;

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
  GpuResources gpus;  // nvidia.com/gpu, weight 1
  ResourceList capacity = Resources(100000, 1000 * kGi, 40);
  EXPECT_DOUBLE_EQ(DominantShare(Resources(10000, 50 * kGi, 2), capacity, gpus), 0.1);
  EXPECT_DOUBLE_EQ(DominantShare(Resources(1000, 10 * kGi, 10), capacity, gpus), 0.25);
  // A resource the cluster has none of is left out.
  EXPECT_DOUBLE_EQ(DominantShare(Resources(0, 0, 4), Resources(1000, kGi, 0), gpus), 0.0);
  EXPECT_DOUBLE_EQ(DominantShare({}, capacity, gpus), 0.0);
}

TEST(DominantShareTest, CountsEveryGpuResourceTogetherByItsWeight) {
  Result<GpuResources> gpus = GpuResources::Make(
      {{"nvidia.com/gpu", 1}, {"nvidia.com/mig-1g.10gb", 0.125}}, "gpuResources");
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  // 8 whole GPUs and 7 GPUs cut into 56 slices: 15 GPUs.
  ResourceList capacity = Resources(1000000, 10000 * kGi, 8);
  capacity.SetScalar("nvidia.com/mig-1g.10gb", 56);
  ResourceList slices;
  slices.SetScalar("nvidia.com/mig-1g.10gb", 24);  // 3 GPUs
  EXPECT_DOUBLE_EQ(DominantShare(slices, capacity, *gpus), 0.2);
  ResourceList mixed = Resources(0, 0, 3);
  mixed.SetScalar("nvidia.com/mig-1g.10gb", 24);  // 6 GPUs
  EXPECT_DOUBLE_EQ(DominantShare(mixed, capacity, *gpus), 0.4);
  // Unweighted, the slices would be 24 of 56: a larger share than the 3
  // GPUs they are worth.
  EXPECT_GT(DominantShare(slices, capacity,
                          GpuResources::Uniform({"nvidia.com/gpu", "nvidia.com/mig-1g.10gb"})),
            0.2);
}

class FairShareTest : public ::testing::Test {
 protected:
  FairShareTest() : table_({Queue("a", 2.0), Queue("b", 1.0, /*guaranteed=*/4)}) {}

  FairShare Share() { return FairShare(table_, Resources(100000, 1000 * kGi, 20), GpuResources()); }

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
  EXPECT_TRUE(share.BelowGuarantee(*share.Find("b")));
  EXPECT_FALSE(share.BelowGuarantee(*share.Find("a")));
  EXPECT_TRUE(share.GoesFirst(*share.Find("b"), *share.Find("a")));
  share.Add("b", Resources(0, 0, 1));
  EXPECT_FALSE(share.BelowGuarantee(*share.Find("b")));
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

// org (weight 2) holds team-a (weight 2, max 6) and team-b; other is outside.
class FairShareTreeTest : public ::testing::Test {
 protected:
  static QueueSpec Under(QueueSpec queue, const std::string& parent) {
    queue.parent = parent;
    return queue;
  }

  FairShareTreeTest()
      : table_({Queue("org", 2.0, 0, /*max=*/8), Under(Queue("team-a", 2.0, 0, 6), "org"),
                Under(Queue("team-b"), "org"), Queue("other")}) {}

  FairShare Share() { return FairShare(table_, Resources(100000, 1000 * kGi, 24), GpuResources()); }

  QueueTable table_;
};

TEST_F(FairShareTreeTest, AParentUsesWhatItsSubtreeUses) {
  FairShare share = Share();
  share.Add("team-a", Resources(0, 0, 4), 4);
  share.Add("team-b", Resources(0, 0, 2), 1);
  EXPECT_EQ(share.Find("org")->used.Scalar("nvidia.com/gpu"), 6);
  EXPECT_EQ(share.Find("org")->pods, 5);
  EXPECT_EQ(share.Find("team-a")->used.Scalar("nvidia.com/gpu"), 4);
  EXPECT_FALSE(share.Find("org")->leaf);
  EXPECT_TRUE(share.Find("team-a")->leaf);
  // Its own weight divides the subtree's dominant share.
  EXPECT_DOUBLE_EQ(share.WeightedShare("org"), 6.0 / 24 / 2);
  share.Remove("team-b", Resources(0, 0, 2), 1);
  EXPECT_EQ(share.Find("org")->used.Scalar("nvidia.com/gpu"), 4);
  EXPECT_EQ(share.Find("org")->pods, 4);

  std::vector<std::string> path;
  for (const QueueAccount* account : share.Path("team-a")) {
    path.push_back(account->spec.name);
  }
  EXPECT_THAT(path, ElementsAre("team-a", "org"));
  EXPECT_EQ(share.Parent(*share.Find("team-a")), share.Find("org"));
  EXPECT_EQ(share.Parent(*share.Find("other")), nullptr);
}

TEST_F(FairShareTreeTest, EveryCeilingOnTheWayUpBoundsALeaf) {
  FairShare share = Share();
  share.Add("team-b", Resources(0, 0, 4));
  share.Add("team-a", Resources(0, 0, 2));
  // team-a's own max (6) would allow 4 more; org's (8) allows 2.
  EXPECT_EQ(share.FirstOverMax("team-a", Resources(0, 0, 2)), nullptr);
  EXPECT_EQ(share.FirstOverMax("team-a", Resources(0, 0, 3)), share.Find("org"));
  share.Remove("team-b", Resources(0, 0, 4));
  EXPECT_EQ(share.FirstOverMax("team-a", Resources(0, 0, 5)), share.Find("team-a"));
  EXPECT_EQ(share.FirstOverMax("other", Resources(0, 0, 24)), nullptr);
}

TEST_F(FairShareTreeTest, RelationsInTheTree) {
  FairShare share = Share();
  EXPECT_EQ(share.Distance("team-a", "team-b"), 1);
  EXPECT_EQ(share.Distance("team-a", "other"), 2);
  EXPECT_EQ(share.Distance("other", "team-a"), 1);
  EXPECT_EQ(share.Distance("team-a", "team-a"), 0);
  EXPECT_EQ(share.Distance("team-a", "org"), 1);
  auto [a, b] = share.Parting("team-a", "team-b");
  EXPECT_EQ(a, share.Find("team-a"));
  EXPECT_EQ(b, share.Find("team-b"));
  std::tie(a, b) = share.Parting("team-a", "other");
  EXPECT_EQ(a, share.Find("org"));
  EXPECT_EQ(b, share.Find("other"));
  std::tie(a, b) = share.Parting("team-a", "org");
  EXPECT_EQ(a, nullptr);
  EXPECT_EQ(b, nullptr);
}

TEST_F(FairShareTreeTest, TurnsGoTopDownBySubtreeShares) {
  FairShare share = Share();
  share.Add("team-a", Resources(0, 0, 10));
  share.Add("team-b", Resources(0, 0, 2));
  share.Add("other", Resources(0, 0, 5));
  // team-b has the lowest share of the leaves, but org's subtree (12 GPUs,
  // weight 2: 6) is above other (5): other's turn.
  EXPECT_EQ(share.NextQueue({"team-a", "team-b", "other"}), "other");
  share.Add("other", Resources(0, 0, 2));
  // Now org goes first, and in it team-b (2) before team-a (10 / weight 2).
  EXPECT_EQ(share.NextQueue({"team-a", "team-b", "other"}), "team-b");
  EXPECT_EQ(share.NextQueue({"team-a", "other"}), "team-a");
  EXPECT_EQ(share.NextQueue({}), "");
  // Without a tree it is the queue that GoesFirst.
  QueueTable flat({Queue("a", 2.0), Queue("b")});
  FairShare flat_share(flat, Resources(100000, 1000 * kGi, 24), GpuResources());
  flat_share.Add("a", Resources(0, 0, 4));
  flat_share.Add("b", Resources(0, 0, 3));
  EXPECT_EQ(flat_share.NextQueue({"a", "b"}), "a");
  EXPECT_EQ(flat_share.NextQueue({"b", "default"}), "default");
}

TEST_F(FairShareTreeTest, ASubtreeBelowItsGuaranteeGoesFirst) {
  // team-b is guaranteed 4, so org is too: org goes first while its subtree
  // uses less, however high its share.
  QueueTable table({Queue("org"), Under(Queue("team-a"), "org"),
                    Under(Queue("team-b", 1.0, 4), "org"), Queue("other")});
  FairShare share(table, Resources(100000, 1000 * kGi, 24), GpuResources());
  share.Add("team-a", Resources(0, 0, 3));
  EXPECT_TRUE(share.BelowGuarantee(*share.Find("org")));
  EXPECT_EQ(share.NextQueue({"team-a", "other"}), "team-a");
  share.Add("team-a", Resources(0, 0, 1));
  EXPECT_FALSE(share.BelowGuarantee(*share.Find("org")));
  EXPECT_EQ(share.NextQueue({"team-a", "other"}), "other");
}

TEST(FairShareFromSnapshotTest, CountsManagedPodsByQueueAndOthersAsLostCapacity) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n0").Gpus(8).Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n1").Gpus(8).Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("cordoned").Gpus(8).Build()).ok());
  GroupSpec in_a = QueueSpecFor("a", {GroupRole{"worker", 1, 2, 0}});
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
  FairShare share = FairShare::FromSnapshot(snapshot, table, policy, GpuResources());
  EXPECT_EQ(share.capacity().Scalar("nvidia.com/gpu"), 24 - 4);
  EXPECT_EQ(share.Find("a")->used.Scalar("nvidia.com/gpu"), 2);
  EXPECT_EQ(share.Find("a")->pods, 1);
  EXPECT_EQ(share.Find("default")->used.Scalar("nvidia.com/gpu"), 2);
  EXPECT_DOUBLE_EQ(share.WeightedShare("a"), 0.1);

  // Without a scheduler name every pod is ours.
  policy.scheduler_name.clear();
  share = FairShare::FromSnapshot(snapshot, table, policy, GpuResources());
  EXPECT_EQ(share.capacity().Scalar("nvidia.com/gpu"), 24);
  EXPECT_EQ(share.Find("default")->used.Scalar("nvidia.com/gpu"), 6);
}

// Queue usage and capacity, as the accounts say them, for comparing a
// memoized FromSnapshot with a fresh one.
std::vector<std::tuple<std::string, int64_t, int64_t, int64_t>> Accounts(const FairShare& share) {
  std::vector<std::tuple<std::string, int64_t, int64_t, int64_t>> out;
  out.emplace_back("capacity", share.capacity().milli_cpu,
                   share.capacity().Scalar("nvidia.com/gpu"), 0);
  for (const QueueAccount& account : share.accounts()) {
    out.emplace_back(account.spec.name, account.used.milli_cpu,
                     account.used.Scalar("nvidia.com/gpu"), account.pods);
  }
  return out;
}

TEST(FairShareFromSnapshotTest, TheMemoAgreesWithAFreshSumThroughEveryKindOfChange) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n0").Gpus(8).Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n1").Gpus(8).Build()).ok());
  GroupSpec in_a = QueueSpecFor("a", {GroupRole{"worker", 1, 4, 0}});
  GroupSpec in_b = QueueSpecFor("b", {GroupRole{"worker", 1, 4, 0}});
  PolicyConfig policy;
  policy.scheduler_name = std::string(api::kDefaultSchedulerName);
  QueueTable table({Queue("a"), Queue("b")});
  QueueUsageMemo memo;
  auto expect_agreement = [&](const std::string& after) {
    FairShare fresh = FairShare::FromSnapshot(snapshot, table, policy, GpuResources());
    FairShare memoized = FairShare::FromSnapshot(snapshot, table, policy, GpuResources(), &memo);
    EXPECT_EQ(Accounts(memoized), Accounts(fresh)) << "after " << after;
  };
  expect_agreement("nodes only");

  ASSERT_TRUE(snapshot
                  .AddPod(PodBuilder("a-worker-0")
                              .Member("a", "worker", 0)
                              .Spec(in_a)
                              .Gpus(2)
                              .OnNode("n0")
                              .Build())
                  .ok());
  expect_agreement("a pod bound");
  EXPECT_EQ(FairShare::FromSnapshot(snapshot, table, policy, GpuResources(), &memo)
                .Find("a")
                ->used.Scalar("nvidia.com/gpu"),
            2);

  PodInfo foreign = PodBuilder("foreign").Gpus(3).OnNode("n1").Build();
  foreign.scheduler_name = "default-scheduler";
  ASSERT_TRUE(snapshot.AddPod(foreign).ok());
  expect_agreement("another scheduler's pod");

  // Tentative placements count while open and stop counting once rolled back.
  PodInfo tentative = PodBuilder("b-worker-0").Member("b", "worker", 0).Spec(in_b).Gpus(4).Build();
  const size_t mark = snapshot.TentativeMark();
  snapshot.PlaceTentatively(tentative, *snapshot.FindNodeSlot("n1"));
  expect_agreement("a tentative placement");
  snapshot.RollbackTentative(mark);
  expect_agreement("its rollback");

  // The same pod again, now in queue b (a replacement is a removal and an add).
  ASSERT_TRUE(snapshot
                  .AddPod(PodBuilder("a-worker-0")
                              .Member("a", "worker", 0)
                              .Spec(in_b)
                              .Gpus(2)
                              .OnNode("n0")
                              .Build())
                  .ok());
  expect_agreement("a pod replaced");
  ASSERT_TRUE(snapshot.RemovePod("team", "a-worker-0").ok());
  expect_agreement("a pod removed");

  // A node's object changes: its allocatable counts anew.
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n1").Gpus(6).Build()).ok());
  expect_agreement("a node's allocatable changed");

  // A node goes and another takes its slot, with pods of its own.
  ASSERT_TRUE(snapshot.RemoveNode("n0").ok());
  expect_agreement("a node removed");
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n2").Gpus(8).Build()).ok());
  ASSERT_TRUE(snapshot
                  .AddPod(PodBuilder("b-worker-1")
                              .Member("b", "worker", 1)
                              .Spec(in_b)
                              .Gpus(1)
                              .OnNode("n2")
                              .Build())
                  .ok());
  expect_agreement("a new node in a reused slot");

  // Another scheduler name makes other pods ours.
  policy.scheduler_name.clear();
  expect_agreement("the scheduler name changed");

  // Two snapshots built alike have the same slots and pod versions; the memo
  // tells them apart and sums the second one afresh.
  auto one_pod = [&](Snapshot& built, int64_t gpus) {
    ASSERT_TRUE(built.UpsertNode(NodeBuilder("n").Gpus(8).Build()).ok());
    ASSERT_TRUE(built
                    .AddPod(PodBuilder("a-worker-0")
                                .Member("a", "worker", 0)
                                .Spec(in_a)
                                .Gpus(gpus)
                                .OnNode("n")
                                .Build())
                    .ok());
  };
  Snapshot first;
  one_pod(first, 2);
  Snapshot second;
  one_pod(second, 5);
  ASSERT_EQ(first.slots()[0].pods_version, second.slots()[0].pods_version);
  QueueUsageMemo shared;
  EXPECT_EQ(FairShare::FromSnapshot(first, table, policy, GpuResources(), &shared)
                .Find("a")
                ->used.Scalar("nvidia.com/gpu"),
            2);
  EXPECT_EQ(FairShare::FromSnapshot(second, table, policy, GpuResources(), &shared)
                .Find("a")
                ->used.Scalar("nvidia.com/gpu"),
            5);
}

// The memo's sums are the fresh ones exactly: the same capacity entries and
// the same queues in the same order, through random changes spread over
// several blocks of slots.
TEST(FairShareFromSnapshotTest, TheMemoSumsEqualAFreshSumAcrossBlocks) {
  std::mt19937 random(7);
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<uint32_t>(n)); };
  Snapshot snapshot;
  const int kNodes = 3 * static_cast<int>(QueueUsageMemo::kBlockSlots) + 5;
  for (int n = 0; n < kNodes; ++n) {
    ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n" + std::to_string(n)).Gpus(8).Build()).ok());
  }
  PolicyConfig policy;
  policy.scheduler_name = std::string(api::kDefaultSchedulerName);
  QueueUsageMemo memo;
  std::vector<std::string> pods;
  for (int step = 0; step < 400; ++step) {
    const std::string node = "n" + std::to_string(pick(kNodes + 10));  // some have no object
    switch (pick(5)) {
      case 0:
      case 1: {
        const std::string queue = std::string(1, static_cast<char>('a' + pick(4)));
        const std::string name = "p" + std::to_string(step);
        PodInfo pod = PodBuilder(name)
                          .Member(queue + std::to_string(pick(20)), "worker", 0)
                          .Spec(QueueSpecFor(queue, {GroupRole{"worker", 1, 1, 0}}))
                          .Gpus(1 + pick(3))
                          .OnNode(node)
                          .Build();
        if (pick(4) == 0) {
          pod.scheduler_name = "default-scheduler";
        }
        ASSERT_TRUE(snapshot.AddPod(pod).ok());
        pods.push_back(name);
        break;
      }
      case 2:
        ASSERT_TRUE(RemoveListedPod(snapshot, pods, random()).ok());
        break;
      case 3:
        ASSERT_TRUE(
            snapshot
                .UpsertNode(
                    NodeBuilder(node).Gpus(pick(9)).Scalar("example.com/fpga", pick(2)).Build())
                .ok());
        break;
      default:
        (void)snapshot.RemoveNode(node);  // NotFound for a node without an object
        break;
    }
    if (step % 3 != 0) {
      continue;  // the memo also sees several changes at once
    }
    const SnapshotSums fresh = SumSnapshot(snapshot, policy);
    const SnapshotSums& kept = memo.Sums(snapshot, policy);
    ASSERT_TRUE(kept.capacity == fresh.capacity) << "step " << step;
    ASSERT_EQ(kept.usage.size(), fresh.usage.size()) << "step " << step;
    for (size_t q = 0; q < fresh.usage.size(); ++q) {
      EXPECT_EQ(kept.usage[q].queue, fresh.usage[q].queue) << "step " << step;
      EXPECT_TRUE(kept.usage[q].requests == fresh.usage[q].requests) << "step " << step;
      EXPECT_EQ(kept.usage[q].pods, fresh.usage[q].pods) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace hybridjob::scheduler
