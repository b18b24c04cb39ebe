#include <algorithm>
#include <map>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/planner.h>

#include "builders.h"

namespace hybridjob::scheduler {
namespace {

using ::testing::ElementsAre;
using testing::GroupFixture;
using ::testing::HasSubstr;
using testing::MakeSpec;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::TermRequiring;
using testing::TermSelecting;

auto NoChange = [](PodBuilder&) {};
auto OneGpu = [](PodBuilder& pod) { pod.Gpus(1); };
auto TwoGpus = [](PodBuilder& pod) { pod.Gpus(2); };

class PlannerTest : public ::testing::Test {
 protected:
  void AddNodes(const std::string& prefix, int count, int64_t gpus) {
    for (int i = 0; i < count; ++i) {
      ASSERT_TRUE(
          snapshot_.UpsertNode(NodeBuilder(prefix + std::to_string(i)).Gpus(gpus).Build()).ok());
    }
  }
  void AddNode(NodeBuilder builder) { ASSERT_TRUE(snapshot_.UpsertNode(builder.Build()).ok()); }
  void AddBoundPod(PodBuilder builder) { ASSERT_TRUE(snapshot_.AddPod(builder.Build()).ok()); }

  // Pod name -> node name of a plan.
  static std::map<std::string, std::string> Placement(const GroupPlan& plan) {
    std::map<std::string, std::string> out;
    for (const Assignment& assignment : plan.assignments) {
      out[assignment.pod->name] = assignment.node_name;
    }
    return out;
  }
  static std::vector<std::string> AssignedNames(const GroupPlan& plan) {
    std::vector<std::string> names;
    for (const Assignment& assignment : plan.assignments) {
      names.push_back(assignment.pod->name);
    }
    return names;
  }
  static std::vector<std::string> Names(const std::vector<const PodInfo*>& pods) {
    std::vector<std::string> names;
    for (const PodInfo* pod : pods) {
      names.push_back(pod->name);
    }
    return names;
  }
  // Everything that makes up the snapshot's accounting, to prove a plan left no trace.
  std::vector<std::string> Fingerprint() const {
    std::vector<std::string> out;
    for (const NodeState& node : snapshot_.slots()) {
      out.push_back(node.info.name + " " + node.requested.ToString() +
                    " pods=" + std::to_string(node.pods.size()) +
                    " ports=" + std::to_string(node.used_host_ports.size()));
    }
    out.push_back("anti=" + std::to_string(snapshot_.pods_with_required_anti_affinity().size()));
    out.push_back("total=" + std::to_string(snapshot_.pod_count()));
    return out;
  }

  Snapshot snapshot_;
  PlannerConfig config_;
};

TEST_F(PlannerTest, MinimumsFirstThenHigherPriorityRolesGrowFirst) {
  AddNodes("n", 3, 2);  // 6 GPUs
  GroupFixture job("job", MakeSpec({GroupRole{"chief", 1, 4, 10}, GroupRole{"worker", 1, 4, 0}}));
  job.AddMembers("worker", 0, 4, OneGpu);
  job.AddMembers("chief", 0, 4, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_EQ(plan.outcome, PlanOutcome::kPlaced) << plan.reason;
  // chief grows to its maximum before worker gets more than its minimum.
  EXPECT_THAT(AssignedNames(plan), ElementsAre("job-chief-0", "job-chief-1", "job-chief-2",
                                               "job-chief-3", "job-worker-0", "job-worker-1"));
  EXPECT_THAT(Names(plan.surplus), ElementsAre("job-worker-2", "job-worker-3"));
  ASSERT_EQ(plan.roles.size(), 2u);
  EXPECT_EQ(plan.roles[0].placed, 4);
  EXPECT_EQ(plan.roles[1].placed, 2);
  EXPECT_TRUE(plan.reason.empty());
}

TEST_F(PlannerTest, RolesOfEqualPriorityGrowRoundRobin) {
  AddNodes("n", 3, 2);  // 6 GPUs
  GroupFixture job("job", MakeSpec({GroupRole{"a", 1, 4, 0}, GroupRole{"b", 1, 4, 0}}));
  job.AddMembers("a", 0, 4, OneGpu);
  job.AddMembers("b", 0, 4, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_EQ(plan.roles[0].placed, 3);
  EXPECT_EQ(plan.roles[1].placed, 3);
  EXPECT_THAT(Names(plan.surplus), ElementsAre("job-a-3", "job-b-3"));
}

TEST_F(PlannerTest, LowerPriorityTierGrowsWithWhatIsLeft) {
  AddNodes("n", 2, 4);  // 8 GPUs
  GroupFixture job("job", MakeSpec({GroupRole{"ps", 1, 2, 5}, GroupRole{"worker", 2, 8, 1},
                                    GroupRole{"evaluator", 0, 2, 0}}));
  job.AddMembers("ps", 0, 2, NoChange);
  job.AddMembers("worker", 0, 8, OneGpu);
  job.AddMembers("evaluator", 0, 2, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_EQ(plan.roles[0].placed, 2);  // ps: no GPUs needed
  EXPECT_EQ(plan.roles[1].placed, 8);  // workers take every GPU
  EXPECT_EQ(plan.roles[2].placed, 0);  // evaluator (min 0) gets nothing and does not block
  EXPECT_THAT(Names(plan.surplus), ElementsAre("job-evaluator-0", "job-evaluator-1"));
}

TEST_F(PlannerTest, RoleBelowMinimumPlacesNothingAndExplainsWhy) {
  AddNodes("n", 3, 2);
  AddNodes("small", 1, 1);  // 7 GPUs, but 2-GPU pods fit on only three nodes
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 4, 6, 0}}));
  job.AddMembers("worker", 0, 6, TwoGpus);
  std::vector<std::string> before = Fingerprint();
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  EXPECT_EQ(plan.outcome, PlanOutcome::kWait);
  EXPECT_TRUE(plan.assignments.empty());
  EXPECT_TRUE(plan.surplus.empty());
  // Three 2-GPU members are all these nodes could ever hold.
  EXPECT_EQ(plan.shortfall, Shortfall::kNeverFits);
  EXPECT_EQ(plan.reason,
            "never fits: worker needs 4 more members (cpu=100m memory=1Gi nvidia.com/gpu=2 "
            "each), and the 4 nodes that admit it could hold 3 even empty; "
            "worker: 3 of min 4 placeable; 7 GPUs free, largest node has 2; "
            "0/4 nodes are available: 4 Insufficient nvidia.com/gpu");
  EXPECT_EQ(plan.roles[0].placed, 3);
  EXPECT_EQ(Fingerprint(), before);
}

TEST_F(PlannerTest, ReasonCountsFreeGpusPerModel) {
  constexpr char kModel[] = "nvidia.com/gpu.product";
  AddNode(NodeBuilder("h0").Gpus(2).Label(kModel, "H100"));
  AddNode(NodeBuilder("h1").Gpus(1).Label(kModel, "H100"));
  AddNode(NodeBuilder("a0").Gpus(2).Label(kModel, "A100"));
  AddNode(NodeBuilder("plain").Gpus(1));
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 5, 5, 0}}));
  job.AddMembers("worker", 0, 5, TwoGpus);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  EXPECT_EQ(plan.outcome, PlanOutcome::kWait);
  EXPECT_THAT(plan.reason,
              HasSubstr("6 GPUs free (3 H100, 2 A100, 1 unlabelled), largest node has 2; "));

  // A job that selects a model counts only the nodes it may use.
  GroupFixture more("more", MakeSpec({GroupRole{"worker", 4, 4, 0}}));
  more.AddMembers("worker", 0, 4,
                  [&](PodBuilder& pod) { pod.Gpus(1).NodeSelector(kModel, "H100"); });
  EXPECT_THAT(PlanGroup(snapshot_, more.Group(snapshot_), config_).reason,
              HasSubstr("3 GPUs free (3 H100), largest node has 2; "));

  // Without a model label configured, no per-model count.
  config_.gpu_model_label.clear();
  EXPECT_THAT(PlanGroup(snapshot_, job.Group(snapshot_), config_).reason,
              HasSubstr("6 GPUs free, largest node has 2; "));
}

TEST_F(PlannerTest, ReasonCountsEveryKindOfRejection) {
  AddNodes("n", 2, 1);
  AddNode(NodeBuilder("tainted").Gpus(8).Taint("dedicated", "infra", TaintEffect::kNoSchedule));
  AddNode(NodeBuilder("cordoned").Gpus(8).Unschedulable());
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 1, 1, 0}}));
  job.AddMembers("worker", 0, 1, TwoGpus);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  EXPECT_EQ(plan.outcome, PlanOutcome::kWait);
  EXPECT_EQ(plan.reason,
            "worker: 0 of min 1 placeable; 2 GPUs free, largest node has 1; "
            "0/4 nodes are available: 2 Insufficient nvidia.com/gpu, "
            "1 node(s) had untolerated taint {dedicated}, 1 node(s) were unschedulable");
  // The cordoned node may take it once uncordoned; the two GPUs free now are
  // on two nodes.
  EXPECT_EQ(plan.shortfall, Shortfall::kFragmented);
}

TEST_F(PlannerTest, MissingMembersForTheMinimum) {
  AddNodes("n", 4, 8);
  GroupFixture job("job", MakeSpec({GroupRole{"ps", 1, 1, 0}, GroupRole{"worker", 4, 8, 0}}));
  job.AddMembers("ps", 0, 1, NoChange);
  job.AddMembers("worker", 0, 2, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  EXPECT_EQ(plan.outcome, PlanOutcome::kWait);
  EXPECT_EQ(plan.reason, "worker: only 2 of min 4 members exist");
  EXPECT_TRUE(plan.assignments.empty());
}

TEST_F(PlannerTest, BoundMembersCountTowardTheMinimum) {
  AddNodes("n", 2, 4);
  // An earlier decision bound workers 0 and 1 (2 GPUs each) on n0.
  AddBoundPod(PodBuilder("job-worker-0").Member("job", "worker", 0).Gpus(2).OnNode("n0"));
  AddBoundPod(PodBuilder("job-worker-1").Member("job", "worker", 1).Gpus(2).OnNode("n0"));
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 4, 6, 0}}));
  job.AddMembers("worker", 2, 4, TwoGpus);  // workers 2..5 pending, room for two
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_THAT(AssignedNames(plan), ElementsAre("job-worker-2", "job-worker-3"));
  EXPECT_THAT(Names(plan.surplus), ElementsAre("job-worker-4", "job-worker-5"));
  EXPECT_EQ(plan.roles[0].bound, 2);
  EXPECT_EQ(plan.roles[0].placed, 2);
  EXPECT_EQ(Placement(plan)["job-worker-2"], "n1");

  // Without the bound members the same room is not enough.
  Snapshot empty;
  ASSERT_TRUE(empty.UpsertNode(NodeBuilder("n1").Gpus(4).Build()).ok());
  GroupPlan alone = PlanGroup(empty, job.Group(empty), config_);
  EXPECT_EQ(alone.outcome, PlanOutcome::kWait);
}

TEST_F(PlannerTest, BoundMembersAtMaximumLeaveNothingToPlace) {
  AddNodes("n", 1, 8);
  AddBoundPod(PodBuilder("job-w-0").Member("job", "w", 0).Gpus(1).OnNode("n0"));
  GroupFixture job("job", MakeSpec({GroupRole{"w", 1, 1, 0}}));
  job.AddMembers("w", 1, 1, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed());
  EXPECT_TRUE(plan.assignments.empty());
  EXPECT_THAT(Names(plan.ignored), ElementsAre("job-w-1"));  // index 1 is beyond max 1
  EXPECT_EQ(plan.roles[0].bound, 1);
}

TEST_F(PlannerTest, FragmentedFreeGpusDoNotMakeALargePodFit) {
  // Eight single free GPUs, one on each node.
  for (int i = 0; i < 8; ++i) {
    std::string node = "n" + std::to_string(i);
    AddNode(NodeBuilder(node).Gpus(8));
    AddBoundPod(PodBuilder("busy-" + std::to_string(i)).Gpus(7).OnNode(node));
  }
  GroupFixture job("job", MakeSpec({GroupRole{"trainer", 1, 1, 0}}));
  job.AddMembers("trainer", 0, 1, [](PodBuilder& pod) { pod.Gpus(4); });
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  EXPECT_EQ(plan.outcome, PlanOutcome::kWait);
  EXPECT_EQ(plan.reason,
            "trainer: 0 of min 1 placeable; 8 GPUs free, largest node has 1; "
            "0/8 nodes are available: 8 Insufficient nvidia.com/gpu");
}

TEST_F(PlannerTest, BinPackingKeepsAWholeNodeFreeForALargePod) {
  AddNode(NodeBuilder("a").Gpus(4));
  AddNode(NodeBuilder("b").Gpus(4));
  AddBoundPod(PodBuilder("existing").Gpus(1).OnNode("b"));
  GroupFixture small("small", MakeSpec({GroupRole{"w", 1, 1, 0}}));
  small.AddMembers("w", 0, 1, OneGpu);
  GroupFixture large("large", MakeSpec({GroupRole{"w", 1, 1, 0}}));
  large.AddMembers("w", 0, 1, [](PodBuilder& pod) { pod.Gpus(4); });

  GroupPlan first = PlanGroup(snapshot_, small.Group(snapshot_), config_);
  ASSERT_TRUE(first.placed());
  EXPECT_EQ(first.assignments[0].node_name, "b");  // joins the partly used node
  ASSERT_TRUE(CommitPlan(snapshot_, first).ok());
  GroupPlan second = PlanGroup(snapshot_, large.Group(snapshot_), config_);
  ASSERT_TRUE(second.placed()) << second.reason;
  EXPECT_EQ(second.assignments[0].node_name, "a");
}

TEST_F(PlannerTest, SpreadPolicyFragmentsWhereBinPackingWouldNot) {
  config_.packing = PackingPolicy::kSpread;
  AddNode(NodeBuilder("a").Gpus(4));
  AddNode(NodeBuilder("b").Gpus(4));
  AddBoundPod(PodBuilder("existing").Gpus(1).OnNode("b"));
  GroupFixture small("small", MakeSpec({GroupRole{"w", 1, 1, 0}}));
  small.AddMembers("w", 0, 1, OneGpu);
  GroupFixture large("large", MakeSpec({GroupRole{"w", 1, 1, 0}}));
  large.AddMembers("w", 0, 1, [](PodBuilder& pod) { pod.Gpus(4); });

  GroupPlan first = PlanGroup(snapshot_, small.Group(snapshot_), config_);
  ASSERT_TRUE(first.placed());
  EXPECT_EQ(first.assignments[0].node_name, "a");  // least allocated
  ASSERT_TRUE(CommitPlan(snapshot_, first).ok());
  EXPECT_EQ(PlanGroup(snapshot_, large.Group(snapshot_), config_).outcome, PlanOutcome::kWait);
}

TEST_F(PlannerTest, GangMembersPackOntoFullNodes) {
  AddNodes("n", 4, 8);
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 16, 16, 0}}));
  job.AddMembers("worker", 0, 16, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed());
  std::map<std::string, int> per_node;
  for (const Assignment& assignment : plan.assignments) {
    ++per_node[assignment.node_name];
  }
  EXPECT_EQ(per_node.size(), 2u);
  for (const auto& [node, count] : per_node) {
    EXPECT_EQ(count, 8) << node;
  }
}

TEST_F(PlannerTest, PodsWithoutGpusStayOffGpuNodes) {
  AddNode(NodeBuilder("gpu").Gpus(8));
  AddNode(NodeBuilder("cpu"));
  GroupFixture job("job", MakeSpec({GroupRole{"ps", 1, 1, 0}, GroupRole{"worker", 1, 1, 0}}));
  job.AddMembers("ps", 0, 1, [](PodBuilder& pod) { pod.Cpu(4000); });
  job.AddMembers("worker", 0, 1, OneGpu);
  std::map<std::string, std::string> placement =
      Placement(PlanGroup(snapshot_, job.Group(snapshot_), config_));
  EXPECT_EQ(placement["job-ps-0"], "cpu");
  EXPECT_EQ(placement["job-worker-0"], "gpu");
}

TEST_F(PlannerTest, AntiAffinityBetweenGangMembers) {
  AddNodes("n", 3, 8);
  auto spread_out = [](PodBuilder& pod) {
    pod.Gpus(1).AntiAffinity(
        TermSelecting("batch.hybridjob.io/role", "worker", "kubernetes.io/hostname"));
  };
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 2, 5, 0}}));
  job.AddMembers("worker", 0, 5, spread_out);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  std::set<std::string> nodes;
  for (const Assignment& assignment : plan.assignments) {
    nodes.insert(assignment.node_name);
  }
  EXPECT_EQ(plan.assignments.size(), 3u);
  EXPECT_EQ(nodes.size(), 3u);  // one per node
  EXPECT_THAT(Names(plan.surplus), ElementsAre("job-worker-3", "job-worker-4"));

  GroupFixture strict("strict", MakeSpec({GroupRole{"worker", 4, 4, 0}}));
  strict.AddMembers("worker", 0, 4, spread_out);
  std::vector<std::string> before = Fingerprint();
  GroupPlan waiting = PlanGroup(snapshot_, strict.Group(snapshot_), config_);
  EXPECT_EQ(waiting.outcome, PlanOutcome::kWait);
  EXPECT_THAT(waiting.reason, HasSubstr("worker: 3 of min 4 placeable"));
  EXPECT_THAT(waiting.reason, HasSubstr("0/3 nodes are available: 3 node(s) didn't satisfy "
                                        "existing pods anti-affinity rules"));
  EXPECT_EQ(Fingerprint(), before);
}

TEST_F(PlannerTest, AffinityToAnotherRoleOfTheGang) {
  for (const char* name : {"a1", "a2", "b1", "b2"}) {
    AddNode(NodeBuilder(name).Gpus(2).Label("zone", std::string(1, name[0])));
  }
  // Workers (higher priority, yet placed after the ps they follow) must share
  // the ps's zone; the ps is pinned to zone b.
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 2, 6, 10}, GroupRole{"ps", 1, 1, 0}}));
  job.AddMembers("worker", 0, 6, [](PodBuilder& pod) {
    pod.Gpus(1).Affinity(TermSelecting("batch.hybridjob.io/role", "ps", "zone"));
  });
  job.AddMembers("ps", 0, 1, [](PodBuilder& pod) { pod.NodeSelector("zone", "b"); });
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_EQ(plan.roles[0].placed, 4);  // zone b holds four GPUs
  for (const Assignment& assignment : plan.assignments) {
    EXPECT_EQ(assignment.node_name[0], 'b') << assignment.pod->name;
  }
}

TEST_F(PlannerTest, SelfAffinityKeepsTheGangInOneZone) {
  AddNode(NodeBuilder("a1").Gpus(1).Label("zone", "a"));
  AddNode(NodeBuilder("a2").Gpus(1).Label("zone", "a"));
  AddNode(NodeBuilder("b1").Gpus(2).Label("zone", "b"));
  AddNode(NodeBuilder("b2").Gpus(2).Label("zone", "b"));
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 2, 3, 0}}));
  job.AddMembers("worker", 0, 3, [](PodBuilder& pod) {
    pod.Gpus(1).Affinity(TermSelecting("batch.hybridjob.io/job-name", "job", "zone"));
  });
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  std::set<char> zones;
  for (const Assignment& assignment : plan.assignments) {
    zones.insert(assignment.node_name[0]);
  }
  EXPECT_EQ(zones.size(), 1u);
  // Bin-packing puts the first worker on a full-fitting 1-GPU node in zone a;
  // the rest must follow it there, and zone a has two GPUs.
  EXPECT_EQ(plan.assignments.size(), 2u);
  EXPECT_EQ(*zones.begin(), 'a');
}

TEST_F(PlannerTest, ExistingPodsAntiAffinityAppliesToGangMembers) {
  AddNodes("n", 2, 8);
  AddBoundPod(PodBuilder("noisy")
                  .AntiAffinity(
                      TermSelecting("batch.hybridjob.io/job-name", "job", "kubernetes.io/hostname"))
                  .OnNode("n0"));
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 1, 4, 0}}));
  job.AddMembers("worker", 0, 4, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed());
  ASSERT_EQ(plan.assignments.size(), 4u);
  for (const Assignment& assignment : plan.assignments) {
    EXPECT_EQ(assignment.node_name, "n1");
  }
}

TEST_F(PlannerTest, AntiAffinitySelectingOneIndexTreatsMembersApart) {
  AddNodes("n", 1, 8);
  // Only the member with index 1 is kept off n0 by the existing pod, so members
  // of one role must not share cached affinity verdicts here.
  AddBoundPod(
      PodBuilder("guard")
          .AntiAffinity(TermSelecting("batch.hybridjob.io/index", "1", "kubernetes.io/hostname"))
          .OnNode("n0"));
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 0, 3, 0}}));
  job.AddMembers("worker", 0, 3, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  // Growth stops at the first member that fits nowhere, keeping indices 0..k-1.
  EXPECT_THAT(AssignedNames(plan), ElementsAre("job-worker-0"));
  EXPECT_THAT(Names(plan.surplus), ElementsAre("job-worker-1", "job-worker-2"));
}

TEST_F(PlannerTest, HostPortsLimitMembersPerNode) {
  AddNodes("n", 2, 8);
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 1, 4, 0}}));
  job.AddMembers("worker", 0, 4, [](PodBuilder& pod) { pod.Gpus(1).HostPortUsed(8080); });
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed());
  ASSERT_EQ(plan.assignments.size(), 2u);
  EXPECT_NE(plan.assignments[0].node_name, plan.assignments[1].node_name);
}

TEST_F(PlannerTest, NodeSelectorTaintsAndAffinityApplyToEveryMember) {
  AddNode(NodeBuilder("plain").Gpus(8));
  AddNode(NodeBuilder("a100")
              .Gpus(8)
              .Label("accelerator", "a100")
              .Taint("nvidia.com/gpu", "", TaintEffect::kNoSchedule));
  AddNode(NodeBuilder("a100-cordoned").Gpus(8).Label("accelerator", "a100").Unschedulable());
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 1, 12, 0}}));
  job.AddMembers("worker", 0, 12, [](PodBuilder& pod) {
    pod.Gpus(1)
        .RequiredNodeAffinity({TermRequiring("accelerator", SelectorOperator::kIn, {"a100"})})
        .Tolerate(Toleration{"nvidia.com/gpu", TolerationOperator::kExists, "", {}});
  });
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed());
  EXPECT_EQ(plan.assignments.size(), 8u);
  for (const Assignment& assignment : plan.assignments) {
    EXPECT_EQ(assignment.node_name, "a100");
  }
}

TEST_F(PlannerTest, PreferredNodeAffinityBreaksPackingTies) {
  AddNode(NodeBuilder("x").Gpus(8).Label("zone", "a"));
  AddNode(NodeBuilder("y").Gpus(8).Label("zone", "b"));
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 1, 1, 0}}));
  job.AddMembers("worker", 0, 1, [](PodBuilder& pod) {
    pod.Gpus(1).PreferredNodeAffinity(10, TermRequiring("zone", SelectorOperator::kIn, {"b"}));
  });
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed());
  EXPECT_EQ(plan.assignments[0].node_name, "y");
}

TEST_F(PlannerTest, AssignmentsAreLowestIndexFirstWhateverTheInputOrder) {
  AddNodes("n", 1, 3);
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 1, 10, 0}}));
  job.AddMembers("worker", 0, 5, OneGpu);
  PodGroup group = job.Group(snapshot_);
  std::reverse(group.pending.begin(), group.pending.end());
  GroupPlan plan = PlanGroup(snapshot_, group, config_);
  ASSERT_TRUE(plan.placed());
  EXPECT_THAT(AssignedNames(plan), ElementsAre("job-worker-0", "job-worker-1", "job-worker-2"));
  EXPECT_THAT(Names(plan.surplus), ElementsAre("job-worker-3", "job-worker-4"));
}

TEST_F(PlannerTest, PodsOfUnknownRolesAreIgnored) {
  AddNodes("n", 1, 8);
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 1, 1, 0}}));
  job.AddMembers("worker", 0, 1, OneGpu);
  job.AddMembers("ghost", 0, 1, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed());
  EXPECT_THAT(AssignedNames(plan), ElementsAre("job-worker-0"));
  EXPECT_THAT(Names(plan.ignored), ElementsAre("job-ghost-0"));
  EXPECT_TRUE(plan.surplus.empty());
}

TEST_F(PlannerTest, DuplicateAndOutOfRangeIndicesAreIgnored) {
  AddNodes("n", 1, 8);
  AddBoundPod(PodBuilder("job-w-0").Member("job", "w", 0).Gpus(1).OnNode("n0"));
  GroupFixture job("job", MakeSpec({GroupRole{"w", 1, 3, 0}}));
  job.AddMembers("w", 0, 3, OneGpu);  // w-0 duplicates the bound member
  job.AddMembers("w", 5, 1, OneGpu);  // beyond max 3
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_THAT(AssignedNames(plan), ElementsAre("job-w-1", "job-w-2"));
  EXPECT_THAT(Names(plan.ignored), ElementsAre("job-w-0", "job-w-5"));
  EXPECT_TRUE(plan.surplus.empty());
}

TEST_F(PlannerTest, IndicesPastAGapAreNotPlaced) {
  AddNodes("n", 1, 8);
  // Planned after its timeout with worker 2 never created: 0 and 1 run, 3 waits
  // as surplus so the role stays numbered 0..k-1.
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 2, 4, 0}}));
  job.AddMembers("worker", 0, 2, OneGpu);
  job.AddMembers("worker", 3, 1, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_THAT(AssignedNames(plan), ElementsAre("job-worker-0", "job-worker-1"));
  EXPECT_THAT(Names(plan.surplus), ElementsAre("job-worker-3"));

  GroupFixture needs_three("three", MakeSpec({GroupRole{"worker", 3, 4, 0}}));
  needs_three.AddMembers("worker", 0, 1, OneGpu);
  needs_three.AddMembers("worker", 2, 2, OneGpu);
  GroupPlan waiting = PlanGroup(snapshot_, needs_three.Group(snapshot_), config_);
  EXPECT_EQ(waiting.outcome, PlanOutcome::kWait);
  EXPECT_EQ(waiting.reason,
            "worker: only 1 of min 3 members exist in index order (index 1 is missing)");
}

TEST_F(PlannerTest, BoundMembersFillTheirOwnPlacesInTheNumbering) {
  AddNodes("n", 1, 8);
  AddBoundPod(PodBuilder("job-w-1").Member("job", "w", 1).Gpus(1).OnNode("n0"));
  GroupFixture job("job", MakeSpec({GroupRole{"w", 3, 4, 0}}));
  job.AddMembers("w", 0, 1, OneGpu);
  job.AddMembers("w", 2, 2, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_THAT(AssignedNames(plan), ElementsAre("job-w-0", "job-w-2", "job-w-3"));
}

// Worker 0 succeeded after worker 1 failed and was replaced: the replacement
// is the gang's only pod, and index 0, which will never have one again, must
// not hold it back as a gap.
TEST_F(PlannerTest, SucceededMembersFillTheirPlacesInTheNumbering) {
  AddNodes("n", 1, 8);
  GroupRole worker{"worker", 1, 2, 0};
  GroupFixture gap("gap", MakeSpec({worker}));
  gap.AddMembers("worker", 1, 1, OneGpu);
  GroupPlan waiting = PlanGroup(snapshot_, gap.Group(snapshot_), config_);
  EXPECT_EQ(waiting.outcome, PlanOutcome::kWait);
  EXPECT_THAT(waiting.reason, HasSubstr("index 0 is missing"));

  worker.completed = {0};
  GroupFixture job("job", MakeSpec({worker}));
  job.AddMembers("worker", 1, 1, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_THAT(AssignedNames(plan), ElementsAre("job-worker-1"));

  // A completed index takes no pod: one that claims it is ignored.
  GroupFixture claims("claims", MakeSpec({GroupRole{"worker", 1, 3, 0, std::nullopt, {0}}}));
  claims.AddMembers("worker", 0, 3, OneGpu);
  plan = PlanGroup(snapshot_, claims.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_THAT(AssignedNames(plan), ElementsAre("claims-worker-1", "claims-worker-2"));
  EXPECT_THAT(Names(plan.ignored), ElementsAre("claims-worker-0"));
}

TEST_F(PlannerTest, InvalidGroupIsNotPlanned) {
  AddNodes("n", 1, 8);
  PodGroup group;
  group.name = "bad";
  group.invalid_reason = "pod bad-0: bad group-spec annotation";
  GroupPlan plan = PlanGroup(snapshot_, group, config_);
  EXPECT_EQ(plan.outcome, PlanOutcome::kInvalid);
  EXPECT_EQ(plan.reason, group.invalid_reason);
  EXPECT_EQ(PlanOutcomeName(plan.outcome), "Invalid");
  EXPECT_EQ(PlanGroup(snapshot_, PodGroup{}, config_).outcome, PlanOutcome::kInvalid);
}

TEST_F(PlannerTest, PlanningLeavesTheSnapshotUntilCommitted) {
  AddNodes("n", 2, 8);
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 2, 4, 0}}));
  job.AddMembers("worker", 0, 4, [](PodBuilder& pod) { pod.Gpus(2).HostPortUsed(7000); });
  std::vector<std::string> before = Fingerprint();
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed());
  EXPECT_EQ(Fingerprint(), before);

  ASSERT_TRUE(CommitPlan(snapshot_, plan).ok());
  EXPECT_EQ(snapshot_.pod_count(), plan.assignments.size());
  for (const Assignment& assignment : plan.assignments) {
    const PodInfo* assumed = snapshot_.FindPod("team", assignment.pod->name);
    ASSERT_NE(assumed, nullptr);
    EXPECT_EQ(assumed->node_name, assignment.node_name);
  }
  EXPECT_EQ(snapshot_.GroupMembers("team", "job").size(), plan.assignments.size());
  GroupPlan waiting;
  EXPECT_EQ(CommitPlan(snapshot_, waiting).code(), StatusCode::kInvalidArgument);
}

TEST_F(PlannerTest, ScansAShareOfALargeClusterAndRotates) {
  for (int i = 0; i < 300; ++i) {
    AddNode(NodeBuilder("node-" + std::to_string(i)));
  }
  GroupFixture job("job", MakeSpec({GroupRole{"w", 1, 1, 0}}));
  job.AddMembers("w", 0, 1, NoChange);
  // 300 nodes: 48% of them, 144, are examined before choosing.
  GroupPlan first = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(first.placed());
  EXPECT_EQ(first.next_start_slot, 144u);
  EXPECT_EQ(first.assignments[0].node_name, "node-0");
  GroupPlan second = PlanGroup(snapshot_, job.Group(snapshot_), config_, first.next_start_slot);
  ASSERT_TRUE(second.placed());
  EXPECT_EQ(second.assignments[0].node_name, "node-144");
  EXPECT_EQ(second.next_start_slot, 288u);
  GroupPlan wrapped = PlanGroup(snapshot_, job.Group(snapshot_), config_, 288);
  EXPECT_EQ(wrapped.next_start_slot, (288u + 144u) % 300u);

  config_.percentage_of_nodes_to_score = 100;
  GroupPlan everything = PlanGroup(snapshot_, job.Group(snapshot_), config_, 10);
  EXPECT_EQ(everything.next_start_slot, 10u);  // a full circle
}

TEST_F(PlannerTest, PlaceholderNodesNeverReceivePods) {
  AddBoundPod(PodBuilder("orphan").OnNode("gone"));
  AddNodes("n", 1, 0);
  GroupFixture job("job", MakeSpec({GroupRole{"w", 1, 2, 0}}));
  job.AddMembers("w", 0, 2, NoChange);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed());
  for (const Assignment& assignment : plan.assignments) {
    EXPECT_EQ(assignment.node_name, "n0");
  }
}

TEST_F(PlannerTest, EmptyClusterWaits) {
  GroupFixture job("job", MakeSpec({GroupRole{"w", 1, 1, 0}}));
  job.AddMembers("w", 0, 1, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  EXPECT_EQ(plan.outcome, PlanOutcome::kWait);
  EXPECT_EQ(plan.reason,
            "never fits: w needs 1 more member (cpu=100m memory=1Gi nvidia.com/gpu=1 each), "
            "and the 0 nodes that admit it could hold 0 even empty; "
            "w: 0 of min 1 placeable; 0 GPUs free, largest node has 0; 0/0 nodes are available");
  EXPECT_EQ(plan.shortfall, Shortfall::kNeverFits);
}

TEST_F(PlannerTest, ShortfallTellsCapacityFromFragmentsFromNever) {
  AddNodes("n", 2, 4);
  AddNode(NodeBuilder("tainted").Gpus(8).Taint("dedicated", "infra", TaintEffect::kNoSchedule));
  AddNode(NodeBuilder("busy").Gpus(4));
  GroupFixture running("running", MakeSpec({GroupRole{"w", 1, 1, 0}}));
  running.AddMembers("w", 0, 1, [](PodBuilder& pod) { pod.Gpus(3); });
  ASSERT_TRUE(CommitPlan(snapshot_, PlanGroup(snapshot_, running.Group(snapshot_), config_)).ok());
  // Free now: 4 + 4 + 1 = 9 GPUs on the nodes that admit an untolerating pod.

  GroupFixture five("five", MakeSpec({GroupRole{"w", 5, 5, 0}}));
  five.AddMembers("w", 0, 5, TwoGpus);
  GroupPlan plan = PlanGroup(snapshot_, five.Group(snapshot_), config_);
  ASSERT_EQ(plan.outcome, PlanOutcome::kWait);
  EXPECT_EQ(plan.shortfall, Shortfall::kCapacity) << plan.reason;  // 10 > 9 free

  // 3 x 3 GPUs = 9 <= 9 free, in pieces of 4, 4 and 1.
  GroupFixture three("three", MakeSpec({GroupRole{"w", 3, 3, 0}}));
  three.AddMembers("w", 0, 3, [](PodBuilder& pod) { pod.Gpus(3); });
  plan = PlanGroup(snapshot_, three.Group(snapshot_), config_);
  ASSERT_EQ(plan.outcome, PlanOutcome::kWait);
  EXPECT_EQ(plan.shortfall, Shortfall::kFragmented) << plan.reason;

  // The tainted node's 8 GPUs never count for a pod that does not tolerate it.
  GroupFixture big("big", MakeSpec({GroupRole{"w", 3, 3, 0}}));
  big.AddMembers("w", 0, 3, [](PodBuilder& pod) { pod.Gpus(5); });
  plan = PlanGroup(snapshot_, big.Group(snapshot_), config_);
  EXPECT_EQ(plan.shortfall, Shortfall::kNeverFits) << plan.reason;
  EXPECT_THAT(plan.reason, HasSubstr("the 3 nodes that admit it could hold 0 even empty"));
  GroupFixture tolerant("tolerant", MakeSpec({GroupRole{"w", 1, 1, 0}}));
  tolerant.AddMembers("w", 0, 1, [](PodBuilder& pod) {
    pod.Gpus(5).Tolerate(Toleration{"dedicated", TolerationOperator::kExists, "", {}});
  });
  plan = PlanGroup(snapshot_, tolerant.Group(snapshot_), config_);
  EXPECT_EQ(plan.outcome, PlanOutcome::kPlaced) << plan.reason;

  // Roles that each fit, but not together: the gang's sum never fits.
  GroupFixture sum("sum", MakeSpec({GroupRole{"a", 2, 2, 0}, GroupRole{"b", 2, 2, 0}}));
  sum.AddMembers("a", 0, 2, [](PodBuilder& pod) { pod.Gpus(4); });
  sum.AddMembers("b", 0, 2, [](PodBuilder& pod) { pod.Gpus(4); });
  plan = PlanGroup(snapshot_, sum.Group(snapshot_), config_);
  EXPECT_EQ(plan.shortfall, Shortfall::kNeverFits) << plan.reason;
  EXPECT_THAT(plan.reason, HasSubstr("never fits: the minimum needs nvidia.com/gpu=16 more, and "
                                     "the nodes that admit its members have nvidia.com/gpu=12"));
}

TEST_F(PlannerTest, ACordonedOrNotReadyNodeStillCountsForNeverFits) {
  AddNode(NodeBuilder("cordoned").Gpus(8).Unschedulable());
  AddNode(NodeBuilder("down").Gpus(8).NotReady());
  GroupFixture job("job", MakeSpec({GroupRole{"w", 2, 2, 0}}));
  job.AddMembers("w", 0, 2, [](PodBuilder& pod) { pod.Gpus(8); });
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_EQ(plan.outcome, PlanOutcome::kWait);
  EXPECT_EQ(plan.shortfall, Shortfall::kCapacity) << plan.reason;
}

TEST_F(PlannerTest, MissingMembersAreTheirOwnShortfall) {
  AddNodes("n", 2, 4);
  GroupFixture job("job", MakeSpec({GroupRole{"w", 3, 3, 0}}));
  job.AddMembers("w", 0, 2, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  EXPECT_EQ(plan.shortfall, Shortfall::kMembers);
}

}  // namespace
}  // namespace hybridjob::scheduler
