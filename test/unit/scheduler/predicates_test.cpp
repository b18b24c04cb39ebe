#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/predicates.h>

#include "builders.h"

namespace hybridjob::scheduler {
namespace {

using testing::NodeBuilder;
using testing::PodBuilder;
using testing::TermRequiring;
using testing::TermSelecting;

NodeState StateOf(NodeInfo info) {
  NodeState state;
  state.info = std::move(info);
  state.in_use = true;
  state.has_node = true;
  return state;
}

TEST(CheckResourcesTest, FitsUntilTheNodeIsFull) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n").Cpu(4000).Gpus(4).Build()).ok());
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("a").Cpu(3000).Gpus(3).OnNode("n").Build()).ok());
  const NodeState& node = *snapshot.FindNode("n");

  EXPECT_TRUE(CheckResources(PodBuilder("p").Cpu(1000).Gpus(1).Build(), node).ok());
  PodInfo two_gpus = PodBuilder("p").Cpu(1000).Gpus(2).Build();
  FilterResult gpu = CheckResources(two_gpus, node);  // detail views into the pod
  EXPECT_EQ(gpu.code, FilterCode::kInsufficientResource);
  EXPECT_EQ(gpu.detail, "nvidia.com/gpu");
  EXPECT_EQ(gpu.Message(), "Insufficient nvidia.com/gpu");
  FilterResult cpu = CheckResources(PodBuilder("p").Cpu(1001).Build(), node);
  EXPECT_EQ(cpu.detail, "cpu");
  FilterResult memory = CheckResources(PodBuilder("p").Memory(testing::kGi * 1000).Build(), node);
  EXPECT_EQ(memory.detail, "memory");
}

TEST(CheckResourcesTest, ExtendedResourceTheNodeLacks) {
  NodeState node = StateOf(NodeBuilder("n").Build());
  PodInfo pod = PodBuilder("p").Scalar("example.com/fpga", 1).Build();
  FilterResult result = CheckResources(pod, node);  // detail views into pod
  EXPECT_EQ(result.code, FilterCode::kInsufficientResource);
  EXPECT_EQ(result.detail, "example.com/fpga");
}

TEST(CheckResourcesTest, PodCountIsALimitToo) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n").Pods(2).Build()).ok());
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("a").OnNode("n").Build()).ok());
  EXPECT_TRUE(CheckResources(PodBuilder("p").Build(), *snapshot.FindNode("n")).ok());
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("b").Cpu(0).Memory(0).OnNode("n").Build()).ok());
  FilterResult result =
      CheckResources(PodBuilder("p").Cpu(0).Memory(0).Build(), *snapshot.FindNode("n"));
  EXPECT_EQ(result.detail, "pods");
}

TEST(CheckNodeSelectorTest, EveryEntryMustMatch) {
  NodeInfo node = NodeBuilder("n").Label("zone", "a").Label("disk", "ssd").Build();
  EXPECT_TRUE(CheckNodeSelector(PodBuilder("p").Build(), node).ok());
  EXPECT_TRUE(CheckNodeSelector(PodBuilder("p").NodeSelector("zone", "a").Build(), node).ok());
  EXPECT_EQ(CheckNodeSelector(
                PodBuilder("p").NodeSelector("zone", "a").NodeSelector("disk", "hdd").Build(), node)
                .code,
            FilterCode::kNodeSelectorMismatch);
  EXPECT_FALSE(CheckNodeSelector(PodBuilder("p").NodeSelector("gpu", "a100").Build(), node).ok());
}

TEST(CheckRequiredNodeAffinityTest, TermsAreOredExpressionsAnded) {
  NodeInfo node = NodeBuilder("node-1").Label("zone", "a").Label("gpus", "8").Build();
  auto with = [](std::vector<NodeSelectorTerm> terms) {
    return PodBuilder("p").RequiredNodeAffinity(std::move(terms)).Build();
  };
  EXPECT_TRUE(CheckRequiredNodeAffinity(PodBuilder("p").Build(), node).ok());
  EXPECT_TRUE(
      CheckRequiredNodeAffinity(with({TermRequiring("zone", SelectorOperator::kIn, {"a"})}), node)
          .ok());
  EXPECT_EQ(
      CheckRequiredNodeAffinity(with({TermRequiring("zone", SelectorOperator::kIn, {"b"})}), node)
          .code,
      FilterCode::kNodeAffinityMismatch);
  // Second term matches.
  EXPECT_TRUE(CheckRequiredNodeAffinity(with({TermRequiring("zone", SelectorOperator::kIn, {"b"}),
                                              TermRequiring("gpus", SelectorOperator::kGt, {"4"})}),
                                        node)
                  .ok());
  // Both expressions of one term must hold.
  NodeSelectorTerm both = TermRequiring("zone", SelectorOperator::kIn, {"a"});
  both.match_expressions.push_back(SelectorRequirement{"gpus", SelectorOperator::kLt, {"4"}});
  EXPECT_FALSE(CheckRequiredNodeAffinity(with({both}), node).ok());
  EXPECT_TRUE(CheckRequiredNodeAffinity(
                  with({TermRequiring("spot", SelectorOperator::kDoesNotExist, {})}), node)
                  .ok());
  EXPECT_FALSE(CheckRequiredNodeAffinity(
                   with({TermRequiring("zone", SelectorOperator::kNotIn, {"a"})}), node)
                   .ok());
  EXPECT_TRUE(
      CheckRequiredNodeAffinity(with({TermRequiring("zone", SelectorOperator::kExists, {})}), node)
          .ok());
  // Empty term list and empty term match nothing.
  EXPECT_FALSE(CheckRequiredNodeAffinity(with({}), node).ok());
  EXPECT_FALSE(CheckRequiredNodeAffinity(with({NodeSelectorTerm{}}), node).ok());
}

TEST(CheckRequiredNodeAffinityTest, MatchFieldsOnNodeName) {
  NodeInfo node = NodeBuilder("node-1").Build();
  NodeSelectorTerm by_name;
  by_name.match_fields.push_back(
      SelectorRequirement{"metadata.name", SelectorOperator::kIn, {"node-1", "node-2"}});
  EXPECT_TRUE(
      CheckRequiredNodeAffinity(PodBuilder("p").RequiredNodeAffinity({by_name}).Build(), node)
          .ok());
  by_name.match_fields[0].op = SelectorOperator::kNotIn;
  EXPECT_FALSE(
      CheckRequiredNodeAffinity(PodBuilder("p").RequiredNodeAffinity({by_name}).Build(), node)
          .ok());
}

TEST(CheckTaintsTest, NoScheduleAndNoExecuteNeedTolerations) {
  NodeInfo node = NodeBuilder("n")
                      .Taint("dedicated", "ml", TaintEffect::kNoSchedule)
                      .Taint("maintenance", "", TaintEffect::kNoExecute)
                      .Taint("spot", "true", TaintEffect::kPreferNoSchedule)
                      .Build();
  FilterResult none = CheckTaints(PodBuilder("p").Build(), node);
  EXPECT_EQ(none.code, FilterCode::kUntoleratedTaint);
  EXPECT_EQ(none.detail, "dedicated");
  EXPECT_EQ(none.Message(), "node(s) had untolerated taint {dedicated}");

  PodInfo one = PodBuilder("p")
                    .Tolerate(Toleration{"dedicated", TolerationOperator::kEqual, "ml", {}})
                    .Build();
  FilterResult partial = CheckTaints(one, node);
  EXPECT_EQ(partial.detail, "maintenance");

  PodInfo both = PodBuilder("p")
                     .Tolerate(Toleration{"dedicated", TolerationOperator::kEqual, "ml", {}})
                     .Tolerate(Toleration{"maintenance", TolerationOperator::kExists, "",
                                          TaintEffect::kNoExecute})
                     .Build();
  EXPECT_TRUE(CheckTaints(both, node).ok());  // PreferNoSchedule does not filter

  PodInfo wrong_effect =
      PodBuilder("p")
          .Tolerate(Toleration{"dedicated", TolerationOperator::kEqual, "ml", {}})
          .Tolerate(
              Toleration{"maintenance", TolerationOperator::kExists, "", TaintEffect::kNoSchedule})
          .Build();
  EXPECT_FALSE(CheckTaints(wrong_effect, node).ok());

  PodInfo everything =
      PodBuilder("p").Tolerate(Toleration{"", TolerationOperator::kExists, "", {}}).Build();
  EXPECT_TRUE(CheckTaints(everything, node).ok());
}

TEST(CheckNodeUnschedulableTest, ToleratedByTheUnschedulableTaint) {
  NodeInfo node = NodeBuilder("n").Unschedulable().Build();
  EXPECT_EQ(CheckNodeUnschedulable(PodBuilder("p").Build(), node).code,
            FilterCode::kNodeUnschedulable);
  PodInfo tolerant =
      PodBuilder("p")
          .Tolerate(Toleration{"node.kubernetes.io/unschedulable", TolerationOperator::kExists, "",
                               TaintEffect::kNoSchedule})
          .Build();
  EXPECT_TRUE(CheckNodeUnschedulable(tolerant, node).ok());
  PodInfo wrong =
      PodBuilder("p")
          .Tolerate(Toleration{"node.kubernetes.io/unschedulable", TolerationOperator::kExists, "",
                               TaintEffect::kNoExecute})
          .Build();
  EXPECT_FALSE(CheckNodeUnschedulable(wrong, node).ok());
  EXPECT_TRUE(CheckNodeUnschedulable(PodBuilder("p").Build(), NodeBuilder("m").Build()).ok());
}

TEST(CheckNodeReadyTest, NotReadyNodesRejectUnlessTolerated) {
  NodeInfo node = NodeBuilder("n").NotReady().Build();
  EXPECT_EQ(CheckNodeReady(PodBuilder("p").Build(), node).code, FilterCode::kNodeNotReady);
  PodInfo tolerant =
      PodBuilder("p")
          .Tolerate(Toleration{"node.kubernetes.io/not-ready", TolerationOperator::kExists, "", {}})
          .Build();
  EXPECT_TRUE(CheckNodeReady(tolerant, node).ok());
  EXPECT_TRUE(CheckNodeReady(PodBuilder("p").Build(), NodeBuilder("m").Build()).ok());
}

TEST(CheckHostPortsTest, ConflictsWithPortsInUse) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n").Build()).ok());
  ASSERT_TRUE(snapshot
                  .AddPod(PodBuilder("a")
                              .HostPortUsed(8080)
                              .HostPortUsed(53, "10.0.0.1", "UDP")
                              .OnNode("n")
                              .Build())
                  .ok());
  const NodeState& node = *snapshot.FindNode("n");
  EXPECT_EQ(CheckHostPorts(PodBuilder("p").HostPortUsed(8080).Build(), node).code,
            FilterCode::kHostPortConflict);
  EXPECT_FALSE(CheckHostPorts(PodBuilder("p").HostPortUsed(8080, "10.0.0.9").Build(), node).ok());
  EXPECT_TRUE(CheckHostPorts(PodBuilder("p").HostPortUsed(8081).Build(), node).ok());
  EXPECT_TRUE(
      CheckHostPorts(PodBuilder("p").HostPortUsed(8080, "0.0.0.0", "UDP").Build(), node).ok());
  EXPECT_FALSE(
      CheckHostPorts(PodBuilder("p").HostPortUsed(53, "0.0.0.0", "UDP").Build(), node).ok());
  EXPECT_TRUE(
      CheckHostPorts(PodBuilder("p").HostPortUsed(53, "10.0.0.2", "UDP").Build(), node).ok());
  EXPECT_TRUE(CheckHostPorts(PodBuilder("p").Build(), node).ok());
}

TEST(RunStaticFiltersTest, PlaceholderAndOrder) {
  NodeState placeholder;
  placeholder.in_use = true;
  placeholder.has_node = false;
  EXPECT_EQ(RunStaticFilters(PodBuilder("p").Build(), placeholder).code, FilterCode::kNodeUnknown);

  NodeState node = StateOf(NodeBuilder("n").NotReady().Unschedulable().Build());
  EXPECT_EQ(RunStaticFilters(PodBuilder("p").Build(), node).code, FilterCode::kNodeNotReady);
  EXPECT_TRUE(RunStaticFilters(PodBuilder("p").Build(), StateOf(NodeBuilder("m").Build())).ok());
}

// Three nodes in two zones.
class InterPodAffinityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("a1").Label("zone", "a").Build()).ok());
    ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("a2").Label("zone", "a").Build()).ok());
    ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("b1").Label("zone", "b").Build()).ok());
    ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("nozone").Build()).ok());
  }
  const NodeState& Node(std::string_view name) { return *snapshot_.FindNode(name); }
  FilterResult Check(const PodInfo& pod, std::string_view node) {
    return CheckInterPodAffinity(Node(node), InterPodAffinityState::Build(pod, snapshot_));
  }

  Snapshot snapshot_;
};

TEST_F(InterPodAffinityTest, AffinityRequiresAMatchInTheSameDomain) {
  ASSERT_TRUE(snapshot_.AddPod(PodBuilder("db").Label("app", "db").OnNode("a1").Build()).ok());
  PodInfo web =
      PodBuilder("web").Label("app", "web").Affinity(TermSelecting("app", "db", "zone")).Build();
  EXPECT_TRUE(Check(web, "a1").ok());
  EXPECT_TRUE(Check(web, "a2").ok());  // same zone
  EXPECT_EQ(Check(web, "b1").code, FilterCode::kPodAffinityUnsatisfied);
  EXPECT_EQ(Check(web, "nozone").code, FilterCode::kPodAffinityUnsatisfied);
}

TEST_F(InterPodAffinityTest, AffinityLooksOnlyInTheTermsNamespaces) {
  ASSERT_TRUE(
      snapshot_.AddPod(PodBuilder("db").Namespace("other").Label("app", "db").OnNode("a1").Build())
          .ok());
  PodInfo web = PodBuilder("web").Affinity(TermSelecting("app", "db", "zone")).Build();
  EXPECT_FALSE(Check(web, "a1").ok());
  PodAffinityTerm cross = TermSelecting("app", "db", "zone");
  cross.namespaces = {"other"};
  PodInfo cross_web = PodBuilder("web").Affinity(cross).Build();
  EXPECT_TRUE(Check(cross_web, "a2").ok());
}

TEST_F(InterPodAffinityTest, FirstPodWithSelfAffinityMayGoAnywhereWithTheKey) {
  PodInfo first =
      PodBuilder("w0").Label("app", "w").Affinity(TermSelecting("app", "w", "zone")).Build();
  EXPECT_TRUE(Check(first, "b1").ok());
  EXPECT_FALSE(Check(first, "nozone").ok());
  // Not self-matching: no exception.
  PodInfo other =
      PodBuilder("x").Label("app", "x").Affinity(TermSelecting("app", "w", "zone")).Build();
  EXPECT_FALSE(Check(other, "b1").ok());
}

TEST_F(InterPodAffinityTest, AntiAffinityForbidsTheDomain) {
  ASSERT_TRUE(snapshot_.AddPod(PodBuilder("w0").Label("app", "w").OnNode("a1").Build()).ok());
  PodInfo pod =
      PodBuilder("w1").Label("app", "w").AntiAffinity(TermSelecting("app", "w", "zone")).Build();
  EXPECT_EQ(Check(pod, "a2").code, FilterCode::kPodAntiAffinityConflict);
  EXPECT_TRUE(Check(pod, "b1").ok());
  EXPECT_TRUE(Check(pod, "nozone").ok());  // no domain, nothing to conflict with
  PodInfo by_host = PodBuilder("w1")
                        .Label("app", "w")
                        .AntiAffinity(TermSelecting("app", "w", "kubernetes.io/hostname"))
                        .Build();
  EXPECT_FALSE(Check(by_host, "a1").ok());
  EXPECT_TRUE(Check(by_host, "a2").ok());
}

TEST_F(InterPodAffinityTest, ExistingPodsAntiAffinityIsSymmetric) {
  ASSERT_TRUE(snapshot_
                  .AddPod(PodBuilder("loner")
                              .Label("app", "loner")
                              .AntiAffinity(TermSelecting("app", "web", "kubernetes.io/hostname"))
                              .OnNode("a1")
                              .Build())
                  .ok());
  PodInfo web = PodBuilder("web").Label("app", "web").Build();
  FilterResult result = Check(web, "a1");
  EXPECT_EQ(result.code, FilterCode::kExistingPodAntiAffinityConflict);
  EXPECT_EQ(result.Message(), "node(s) didn't satisfy existing pods anti-affinity rules");
  EXPECT_TRUE(Check(web, "a2").ok());
  EXPECT_TRUE(Check(PodBuilder("db").Label("app", "db").Build(), "a1").ok());
}

TEST_F(InterPodAffinityTest, StateFollowsPodsPlacedAfterBuild) {
  PodInfo w0 = PodBuilder("w0")
                   .Label("app", "w")
                   .AntiAffinity(TermSelecting("app", "w", "kubernetes.io/hostname"))
                   .Build();
  PodInfo w1 = w0;
  w1.name = "w1";
  InterPodAffinityState state = InterPodAffinityState::Build(w1, snapshot_);
  EXPECT_TRUE(state.Check(Node("a1").info).ok());
  state.AddPod(w0, Node("a1").info);  // w0 tentatively on a1
  EXPECT_FALSE(state.Check(Node("a1").info).ok());
  EXPECT_TRUE(state.Check(Node("a2").info).ok());
}

TEST_F(InterPodAffinityTest, RunFiltersReportsTheFirstRejection) {
  ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("full").Cpu(100).Build()).ok());
  PodInfo pod = PodBuilder("p").Cpu(200).Build();
  InterPodAffinityState state = InterPodAffinityState::Build(pod, snapshot_);
  EXPECT_EQ(RunFilters(pod, Node("full"), state).detail, "cpu");
  EXPECT_TRUE(RunFilters(pod, Node("a1"), state).ok());
}

TEST(FilterCodeTest, EveryCodeHasANameAndMessage) {
  for (size_t i = 0; i < kFilterCodeCount; ++i) {
    FilterResult result{static_cast<FilterCode>(i), "x"};
    EXPECT_NE(FilterCodeName(result.code), "Unknown");
    EXPECT_NE(result.Message(), "unknown");
  }
}

}  // namespace
}  // namespace hybridjob::scheduler
