#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/cluster_totals.h>

#include "builders.h"

namespace hybridjob::scheduler {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::RemoveListedPod;

TEST(ResourceTotalsTest, SumTheSchedulableNodesOnly) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n0").Cpu(4000).Gpus(8).Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n1").Cpu(2000).Gpus(4).Build()).ok());
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("a").Cpu(500).Gpus(2).OnNode("n0").Build()).ok());
  // A pod on a node without an object (a placeholder) counts nowhere.
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("b").Cpu(700).Gpus(1).OnNode("gone").Build()).ok());
  const std::vector<ResourceTotal> totals = SumResourceTotals(snapshot, GpuResources());
  ASSERT_EQ(totals.size(), 3u);
  EXPECT_EQ(totals[0], (ResourceTotal{"cpu", 6000, 500}));
  EXPECT_EQ(totals[1].resource, "memory");
  EXPECT_EQ(totals[2], (ResourceTotal{"nvidia.com/gpu", 12, 2}));
}

// The memo is the fresh sum after every change: pods come and go (tentative
// ones too), node objects change, go and come back, and the GPU resources
// are reconfigured.
TEST(ResourceTotalsTest, TheMemoAgreesWithAFreshSumThroughRandomChanges) {
  std::mt19937 random(11);
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<uint32_t>(n)); };
  Snapshot snapshot;
  ResourceTotalsMemo memo;
  GpuResources gpus;
  std::vector<std::string> pods;
  for (int step = 0; step < 500; ++step) {
    const std::string node = "n" + std::to_string(pick(40));
    switch (pick(6)) {
      case 0:
      case 1: {
        const std::string name = "p" + std::to_string(step);
        ASSERT_TRUE(snapshot
                        .AddPod(PodBuilder(name)
                                    .Cpu(100 * (1 + pick(8)))
                                    .Gpus(pick(3))
                                    .Scalar("amd.com/gpu", pick(2))
                                    .OnNode(node)
                                    .Build())
                        .ok());
        pods.push_back(name);
        break;
      }
      case 2:
        ASSERT_TRUE(RemoveListedPod(snapshot, pods, random()).ok());
        break;
      case 3:
        ASSERT_TRUE(snapshot
                        .UpsertNode(NodeBuilder(node)
                                        .Cpu(1000 * (1 + pick(64)))
                                        .Gpus(pick(9))
                                        .Scalar("amd.com/gpu", pick(4))
                                        .Build())
                        .ok());
        break;
      case 4:
        (void)snapshot.RemoveNode(node);  // NotFound for a node without an object
        break;
      default: {
        const size_t mark = snapshot.TentativeMark();
        if (auto slot = snapshot.FindNodeSlot(node); slot && snapshot.slots()[*slot].has_node) {
          // The snapshot keeps a pointer to a tentative pod until the rollback.
          const PodInfo tentative = PodBuilder("t").Cpu(300).Gpus(1).Build();
          snapshot.PlaceTentatively(tentative, *slot);
          EXPECT_EQ(memo.Update(snapshot, gpus), SumResourceTotals(snapshot, gpus));
          snapshot.RollbackTentative(mark);
        }
        break;
      }
    }
    if (step == 250) {
      gpus = GpuResources::Uniform({"amd.com/gpu", "nvidia.com/gpu"});
    }
    EXPECT_EQ(memo.Update(snapshot, gpus), SumResourceTotals(snapshot, gpus)) << "step " << step;
  }
}

}  // namespace
}  // namespace hybridjob::scheduler
