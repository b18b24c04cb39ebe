#include <string>

#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/snapshot.h>

#include "builders.h"

namespace hybridjob::scheduler {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::TermSelecting;

TEST(SnapshotTest, AccountsPodsOnTheirNodes) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n1").Gpus(8).Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n2").Gpus(8).Build()).ok());
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("a").Cpu(1000).Gpus(2).OnNode("n1").Build()).ok());
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("b").Cpu(500).Gpus(1).OnNode("n1").Build()).ok());
  EXPECT_EQ(snapshot.node_count(), 2u);
  EXPECT_EQ(snapshot.pod_count(), 2u);
  const NodeState* n1 = snapshot.FindNode("n1");
  ASSERT_NE(n1, nullptr);
  EXPECT_EQ(n1->requested.milli_cpu, 1500);
  EXPECT_EQ(n1->requested.Scalar("nvidia.com/gpu"), 3);
  EXPECT_EQ(n1->requested.pods, 2);
  EXPECT_EQ(n1->pods.size(), 2u);
  EXPECT_EQ(snapshot.FindNode("n2")->requested.pods, 0);
  EXPECT_EQ(snapshot.FindPod("team", "a")->node_name, "n1");
  EXPECT_EQ(snapshot.FindNode("n3"), nullptr);
  EXPECT_EQ(snapshot.FindPod("team", "zzz"), nullptr);

  ASSERT_TRUE(snapshot.RemovePod("team", "a").ok());
  EXPECT_EQ(n1->requested.milli_cpu, 500);
  EXPECT_EQ(n1->requested.Scalar("nvidia.com/gpu"), 1);
  EXPECT_EQ(n1->pods.size(), 1u);
  EXPECT_EQ(snapshot.RemovePod("team", "a").code(), StatusCode::kNotFound);
}

TEST(SnapshotTest, UpdatingAPodReplacesItsAccounting) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n1").Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n2").Build()).ok());
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("a").Cpu(1000).OnNode("n1").Build()).ok());
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("a").Cpu(300).OnNode("n2").Build()).ok());
  EXPECT_EQ(snapshot.pod_count(), 1u);
  EXPECT_EQ(snapshot.FindNode("n1")->requested.milli_cpu, 0);
  EXPECT_EQ(snapshot.FindNode("n2")->requested.milli_cpu, 300);

  // A pod that finished holds nothing and is dropped.
  ASSERT_TRUE(
      snapshot.AddPod(PodBuilder("a").Cpu(300).OnNode("n2").Phase("Succeeded").Build()).ok());
  EXPECT_EQ(snapshot.pod_count(), 0u);
  EXPECT_EQ(snapshot.FindNode("n2")->requested.milli_cpu, 0);
}

TEST(SnapshotTest, RefusesUnboundPods) {
  Snapshot snapshot;
  EXPECT_EQ(snapshot.AddPod(PodBuilder("a").Build()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(snapshot.UpsertNode(NodeInfo{}).code(), StatusCode::kInvalidArgument);
}

TEST(SnapshotTest, PodsBeforeTheirNodeUseAPlaceholder) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("a").Cpu(700).OnNode("late").Build()).ok());
  const NodeState* placeholder = snapshot.FindNode("late");
  ASSERT_NE(placeholder, nullptr);
  EXPECT_FALSE(placeholder->has_node);
  EXPECT_FALSE(placeholder->schedulable_slot());
  EXPECT_EQ(snapshot.node_count(), 0u);

  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("late").Build()).ok());
  const NodeState* node = snapshot.FindNode("late");
  EXPECT_TRUE(node->schedulable_slot());
  EXPECT_EQ(node->requested.milli_cpu, 700);
  EXPECT_EQ(snapshot.node_count(), 1u);

  // Node deleted before its pod: accounting stays until the pod goes.
  ASSERT_TRUE(snapshot.RemoveNode("late").ok());
  EXPECT_EQ(snapshot.node_count(), 0u);
  ASSERT_NE(snapshot.FindNode("late"), nullptr);
  EXPECT_EQ(snapshot.FindNode("late")->requested.milli_cpu, 700);
  ASSERT_TRUE(snapshot.RemovePod("team", "a").ok());
  EXPECT_EQ(snapshot.FindNode("late"), nullptr);
  EXPECT_EQ(snapshot.RemoveNode("late").code(), StatusCode::kNotFound);
}

TEST(SnapshotTest, FreedSlotsAreReused) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n1").Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n2").Build()).ok());
  uint32_t slot = *snapshot.FindNodeSlot("n1");
  ASSERT_TRUE(snapshot.RemoveNode("n1").ok());
  EXPECT_FALSE(snapshot.slots()[slot].in_use);
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n3").Build()).ok());
  EXPECT_EQ(*snapshot.FindNodeSlot("n3"), slot);
  EXPECT_EQ(snapshot.slots().size(), 2u);
  EXPECT_EQ(*snapshot.FindNodeSlot("n2"), 1u);
}

TEST(SnapshotTest, UpsertNodeKeepsPods) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n1").Gpus(4).Build()).ok());
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("a").Gpus(1).OnNode("n1").Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n1").Gpus(8).Label("zone", "b").Build()).ok());
  const NodeState* node = snapshot.FindNode("n1");
  EXPECT_EQ(node->info.allocatable.Scalar("nvidia.com/gpu"), 8);
  EXPECT_EQ(node->requested.Scalar("nvidia.com/gpu"), 1);
  EXPECT_EQ(node->pods.size(), 1u);
  EXPECT_EQ(snapshot.node_count(), 1u);
}

TEST(SnapshotTest, GroupMembersIndex) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n").Build()).ok());
  ASSERT_TRUE(
      snapshot.AddPod(PodBuilder("j-w-0").Member("j", "worker", 0).OnNode("n").Build()).ok());
  ASSERT_TRUE(
      snapshot.AddPod(PodBuilder("j-w-1").Member("j", "worker", 1).OnNode("n").Build()).ok());
  ASSERT_TRUE(
      snapshot.AddPod(PodBuilder("k-w-0").Member("k", "worker", 0).OnNode("n").Build()).ok());
  ASSERT_TRUE(
      snapshot
          .AddPod(
              PodBuilder("j-w-0").Namespace("other").Member("j", "worker", 0).OnNode("n").Build())
          .ok());
  EXPECT_EQ(snapshot.GroupMembers("team", "j").size(), 2u);
  EXPECT_EQ(snapshot.GroupMembers("team", "k").size(), 1u);
  EXPECT_EQ(snapshot.GroupMembers("other", "j").size(), 1u);
  ASSERT_TRUE(snapshot.RemovePod("team", "j-w-0").ok());
  ASSERT_EQ(snapshot.GroupMembers("team", "j").size(), 1u);
  EXPECT_EQ(snapshot.GroupMembers("team", "j")[0]->name, "j-w-1");
  EXPECT_TRUE(snapshot.GroupMembers("team", "none").empty());
}

TEST(SnapshotTest, AssumePodCopiesThePodOntoTheNode) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n").Build()).ok());
  PodInfo pending = PodBuilder("p").Cpu(250).Build();
  ASSERT_TRUE(snapshot.AssumePod(pending, "n").ok());
  EXPECT_TRUE(pending.node_name.empty());
  EXPECT_EQ(snapshot.FindPod("team", "p")->node_name, "n");
  EXPECT_EQ(snapshot.FindNode("n")->requested.milli_cpu, 250);
  EXPECT_EQ(snapshot.AssumePod(pending, "n").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(snapshot.FindNode("n")->requested.milli_cpu, 250);
}

TEST(SnapshotTest, AntiAffinityIndexAndSelectorKeys) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n").Build()).ok());
  ASSERT_TRUE(
      snapshot
          .AddPod(
              PodBuilder("a").AntiAffinity(TermSelecting("app", "web", "zone")).OnNode("n").Build())
          .ok());
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("b").OnNode("n").Build()).ok());
  ASSERT_EQ(snapshot.pods_with_required_anti_affinity().size(), 1u);
  EXPECT_EQ(snapshot.pods_with_required_anti_affinity()[0].pod->name, "a");
  EXPECT_EQ(snapshot.anti_affinity_selector_keys().count("app"), 1u);
  ASSERT_TRUE(snapshot.RemovePod("team", "a").ok());
  EXPECT_TRUE(snapshot.pods_with_required_anti_affinity().empty());
  EXPECT_TRUE(snapshot.anti_affinity_selector_keys().empty());
}

TEST(SnapshotTest, TentativePlacementsRollBackExactly) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n1").Gpus(8).Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n2").Gpus(8).Build()).ok());
  ASSERT_TRUE(
      snapshot.AddPod(PodBuilder("bound").Gpus(1).HostPortUsed(80).OnNode("n1").Build()).ok());
  ResourceList before = snapshot.FindNode("n1")->requested;

  PodInfo a = PodBuilder("a")
                  .Gpus(2)
                  .HostPortUsed(9000)
                  .AntiAffinity(TermSelecting("app", "x", "zone"))
                  .Build();
  PodInfo b = PodBuilder("b").Gpus(3).Build();
  size_t mark = snapshot.TentativeMark();
  snapshot.PlaceTentatively(a, *snapshot.FindNodeSlot("n1"));
  size_t middle = snapshot.TentativeMark();
  snapshot.PlaceTentatively(b, *snapshot.FindNodeSlot("n1"));
  snapshot.PlaceTentatively(b, *snapshot.FindNodeSlot("n2"));
  EXPECT_EQ(snapshot.FindNode("n1")->requested.Scalar("nvidia.com/gpu"), 6);
  EXPECT_EQ(snapshot.FindNode("n1")->pods.size(), 3u);
  EXPECT_EQ(snapshot.FindNode("n1")->used_host_ports.size(), 2u);
  EXPECT_EQ(snapshot.pods_with_required_anti_affinity().size(), 1u);

  // Mutations are refused while a tentative plan is open.
  EXPECT_FALSE(snapshot.AddPod(PodBuilder("c").OnNode("n2").Build()).ok());
  EXPECT_FALSE(snapshot.RemovePod("team", "bound").ok());
  EXPECT_FALSE(snapshot.UpsertNode(NodeBuilder("n3").Build()).ok());

  snapshot.RollbackTentative(middle);
  EXPECT_EQ(snapshot.FindNode("n1")->requested.Scalar("nvidia.com/gpu"), 3);
  EXPECT_EQ(snapshot.FindNode("n2")->requested.Scalar("nvidia.com/gpu"), 0);
  snapshot.RollbackTentative(mark);
  EXPECT_EQ(snapshot.FindNode("n1")->requested, before);
  EXPECT_EQ(snapshot.FindNode("n1")->pods.size(), 1u);
  EXPECT_EQ(snapshot.FindNode("n1")->used_host_ports.size(), 1u);
  EXPECT_TRUE(snapshot.pods_with_required_anti_affinity().empty());
  EXPECT_TRUE(snapshot.anti_affinity_selector_keys().empty());
  EXPECT_TRUE(snapshot.AddPod(PodBuilder("c").OnNode("n2").Build()).ok());
}

TEST(SnapshotTest, HandlesALargeClusterCheaply) {
  // 5,000 nodes and 50,000 pods: adding, then removing every other pod.
  Snapshot snapshot;
  for (int n = 0; n < 5000; ++n) {
    ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("node-" + std::to_string(n)).Gpus(8).Build()).ok());
  }
  for (int p = 0; p < 50000; ++p) {
    PodInfo pod = PodBuilder("pod-" + std::to_string(p))
                      .Gpus(p % 8 == 0 ? 1 : 0)
                      .OnNode("node-" + std::to_string(p % 5000))
                      .Build();
    ASSERT_TRUE(snapshot.AddPod(std::move(pod)).ok());
  }
  EXPECT_EQ(snapshot.pod_count(), 50000u);
  EXPECT_EQ(snapshot.FindNode("node-0")->pods.size(), 10u);
  for (int p = 0; p < 50000; p += 2) {
    ASSERT_TRUE(snapshot.RemovePod("team", "pod-" + std::to_string(p)).ok());
  }
  EXPECT_EQ(snapshot.pod_count(), 25000u);
  int64_t total_gpus = 0;
  for (const NodeState& node : snapshot.slots()) {
    total_gpus += node.requested.Scalar("nvidia.com/gpu");
  }
  EXPECT_EQ(total_gpus, 0);  // every pod with a GPU had an even number
}

}  // namespace
}  // namespace hybridjob::scheduler
