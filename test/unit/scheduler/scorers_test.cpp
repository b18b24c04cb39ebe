#include <vector>

#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/scorers.h>

#include "builders.h"

namespace hybridjob::scheduler {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::TermRequiring;

const GpuResources kGpuNames;  // nvidia.com/gpu, weight 1

class ScorersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("empty8").Gpus(8).Build()).ok());
    ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("busy8").Gpus(8).Build()).ok());
    ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("cpu").Cpu(8000).Build()).ok());
    ASSERT_TRUE(snapshot_.AddPod(PodBuilder("x").Gpus(6).Cpu(4000).OnNode("busy8").Build()).ok());
    ASSERT_TRUE(snapshot_.AddPod(PodBuilder("y").Cpu(4000).OnNode("cpu").Build()).ok());
  }
  const NodeState& Node(std::string_view name) { return *snapshot_.FindNode(name); }

  Snapshot snapshot_;
};

TEST(GpuWeightScorerTest, SlicesPackOntoTheNodeLeftWithFewestWeightedGpus) {
  constexpr char kSlice[] = "nvidia.com/mig-1g.10gb";
  Snapshot snapshot;
  // whole: 4 free GPUs and 2 free slices; sliced: 7 free slices (0.875 GPU).
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("whole").Gpus(4).Scalar(kSlice, 2).Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("sliced").Scalar(kSlice, 7).Build()).ok());
  PodInfo pod = PodBuilder("p").Scalar(kSlice, 1).Build();
  Result<GpuResources> weighted =
      GpuResources::Make({{"nvidia.com/gpu", 1}, {kSlice, 0.125}}, "gpuResources");
  ASSERT_TRUE(weighted.ok()) << weighted.status().ToString();
  const NodeState& whole = *snapshot.FindNode("whole");
  const NodeState& sliced = *snapshot.FindNode("sliced");
  EXPECT_EQ(GpuBinPackingScore(pod, sliced, *weighted), -750);
  EXPECT_EQ(GpuBinPackingScore(pod, whole, *weighted), -4125);
  // Counted one per unit, the slice would go to the node with whole GPUs
  // (5 left over against 6) and break up what large pods need.
  GpuResources unweighted = GpuResources::Uniform({"nvidia.com/gpu", kSlice});
  EXPECT_GT(GpuBinPackingScore(pod, whole, unweighted),
            GpuBinPackingScore(pod, sliced, unweighted));
}

TEST_F(ScorersTest, GpuPodsPreferTheNodeLeftWithFewestFreeGpus) {
  PodInfo pod = PodBuilder("p").Gpus(1).Build();
  EXPECT_EQ(GpuBinPackingScore(pod, Node("busy8"), kGpuNames), -1000);
  EXPECT_EQ(GpuBinPackingScore(pod, Node("empty8"), kGpuNames), -7000);
  EXPECT_GT(GpuBinPackingScore(pod, Node("busy8"), kGpuNames),
            GpuBinPackingScore(pod, Node("empty8"), kGpuNames));
  PodInfo two = PodBuilder("p").Gpus(2).Build();
  EXPECT_EQ(GpuBinPackingScore(two, Node("busy8"), kGpuNames), 0);  // fills the node exactly
}

TEST_F(ScorersTest, PodsWithoutGpusAvoidGpuNodes) {
  PodInfo pod = PodBuilder("p").Cpu(1000).Build();
  int64_t on_cpu_node = GpuBinPackingScore(pod, Node("cpu"), kGpuNames);
  int64_t on_busy_gpu = GpuBinPackingScore(pod, Node("busy8"), kGpuNames);
  int64_t on_empty_gpu = GpuBinPackingScore(pod, Node("empty8"), kGpuNames);
  EXPECT_GE(on_cpu_node, 200);
  EXPECT_LE(on_busy_gpu, 100);
  EXPECT_GT(on_cpu_node, on_busy_gpu);
  // Of the GPU nodes, the one whose GPUs are mostly taken: its cpu is spare.
  EXPECT_GT(on_busy_gpu, on_empty_gpu);
  EXPECT_EQ(on_busy_gpu, 75);
  EXPECT_EQ(on_empty_gpu, 0);
}

TEST_F(ScorersTest, SpreadPrefersTheLeastAllocatedNode) {
  PodInfo pod = PodBuilder("p").Gpus(1).Cpu(1000).Memory(0).Build();
  int64_t empty = SpreadScore(pod, Node("empty8"), kGpuNames);
  int64_t busy = SpreadScore(pod, Node("busy8"), kGpuNames);
  EXPECT_GT(empty, busy);
  // empty8: cpu 1/32 used -> 97 free (integer), memory 100 free, GPUs 1/8 -> 88 free.
  EXPECT_EQ(empty, (97 + 100 + 88) / 3);
  EXPECT_EQ(PackingScore(PackingPolicy::kSpread, pod, Node("empty8"), kGpuNames), empty);
  EXPECT_EQ(PackingScore(PackingPolicy::kGpuBinPacking, pod, Node("empty8"), kGpuNames),
            GpuBinPackingScore(pod, Node("empty8"), kGpuNames));
}

TEST(PreferredNodeAffinityScoreTest, SumsMatchingWeights) {
  NodeInfo node = NodeBuilder("n").Label("zone", "a").Label("disk", "ssd").Build();
  PodInfo pod = PodBuilder("p")
                    .PreferredNodeAffinity(10, TermRequiring("zone", SelectorOperator::kIn, {"a"}))
                    .PreferredNodeAffinity(5, TermRequiring("disk", SelectorOperator::kIn, {"ssd"}))
                    .PreferredNodeAffinity(50, TermRequiring("zone", SelectorOperator::kIn, {"b"}))
                    .Build();
  EXPECT_EQ(PreferredNodeAffinityScore(pod, node), 15);
  EXPECT_EQ(PreferredNodeAffinityScore(PodBuilder("q").Build(), node), 0);
}

TEST(NormalizeScoresTest, RescalesToZeroToHundred) {
  std::vector<int64_t> scores = {-7, -1, -4};
  NormalizeScores(scores);
  EXPECT_EQ(scores, (std::vector<int64_t>{0, 100, 50}));
  std::vector<int64_t> equal = {3, 3};
  NormalizeScores(equal);
  EXPECT_EQ(equal, (std::vector<int64_t>{100, 100}));
  std::vector<int64_t> none;
  NormalizeScores(none);
  EXPECT_TRUE(none.empty());
}

TEST(NumFeasibleNodesToFindTest, LikeKubeScheduler) {
  EXPECT_EQ(NumFeasibleNodesToFind(50, 0, 100), 50u);  // small clusters: all nodes
  EXPECT_EQ(NumFeasibleNodesToFind(100, 0, 100), 100u);
  EXPECT_EQ(NumFeasibleNodesToFind(1000, 0, 100), 420u);    // 50 - 1000/125 = 42%
  EXPECT_EQ(NumFeasibleNodesToFind(5000, 0, 100), 500u);    // 50 - 40 = 10%
  EXPECT_EQ(NumFeasibleNodesToFind(20000, 0, 100), 1000u);  // floor of 5%
  EXPECT_EQ(NumFeasibleNodesToFind(5000, 1, 100), 100u);    // never below the minimum
  EXPECT_EQ(NumFeasibleNodesToFind(5000, 30, 100), 1500u);
  EXPECT_EQ(NumFeasibleNodesToFind(5000, 100, 100), 5000u);
  EXPECT_EQ(NumFeasibleNodesToFind(5000, 0, 10000), 5000u);
}

}  // namespace
}  // namespace hybridjob::scheduler
