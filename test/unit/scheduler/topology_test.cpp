#include <map>
#include <set>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/topology.h>

#include "builders.h"

namespace hybridjob::scheduler {
namespace {

using api::TopologyMode;
using api::TopologySpec;
using ::testing::ElementsAre;
using testing::GroupFixture;
using ::testing::HasSubstr;
using testing::MakeSpec;
using testing::NodeBuilder;
using testing::PodBuilder;

constexpr char kZone[] = "topology.kubernetes.io/zone";
constexpr char kRack[] = "example.com/rack";
constexpr char kHost[] = "kubernetes.io/hostname";

auto OneGpu = [](PodBuilder& pod) { pod.Gpus(1); };
auto FourGpus = [](PodBuilder& pod) { pod.Gpus(4); };
auto NoGpu = [](PodBuilder& pod) { pod.Cpu(500); };

GroupSpec TopologyBound(std::vector<GroupRole> roles, TopologyMode mode,
                        std::string level = kRack) {
  GroupSpec spec = MakeSpec(std::move(roles));
  spec.topology = TopologySpec{std::move(level), mode};
  return spec;
}

// 2 zones x 2 racks x 2 nodes x 4 GPUs: racks z0-r0, z0-r1, z1-r0, z1-r1.
class TopologyPlannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.topology_levels = {kZone, kRack, kHost};
    for (int zone = 0; zone < 2; ++zone) {
      for (int rack = 0; rack < 2; ++rack) {
        for (int node = 0; node < 2; ++node) {
          const std::string rack_name = "z" + std::to_string(zone) + "-r" + std::to_string(rack);
          AddNode(NodeBuilder(rack_name + "-n" + std::to_string(node))
                      .Gpus(4)
                      .Label(kZone, "z" + std::to_string(zone))
                      .Label(kRack, rack_name));
        }
      }
    }
  }

  void AddNode(NodeBuilder builder) { ASSERT_TRUE(snapshot_.UpsertNode(builder.Build()).ok()); }
  // Takes `gpus` on `node` with a pod of no group.
  void Occupy(const std::string& node, int64_t gpus) {
    ASSERT_TRUE(snapshot_.AddPod(PodBuilder("busy-" + node).Gpus(gpus).OnNode(node).Build()).ok());
  }

  std::string RackOf(const std::string& node) {
    return *snapshot_.FindNode(node)->info.labels.Find(kRack);
  }
  std::set<std::string> Racks(const GroupPlan& plan) {
    std::set<std::string> racks;
    for (const Assignment& assignment : plan.assignments) {
      racks.insert(RackOf(assignment.node_name));
    }
    return racks;
  }
  std::set<std::string> Zones(const GroupPlan& plan) {
    std::set<std::string> zones;
    for (const Assignment& assignment : plan.assignments) {
      zones.insert(*snapshot_.FindNode(assignment.node_name)->info.labels.Find(kZone));
    }
    return zones;
  }
  // The plan's members made bound on their nodes, as after binding.
  void Bind(const GroupPlan& plan) {
    for (const Assignment& assignment : plan.assignments) {
      PodInfo pod = *assignment.pod;
      pod.node_name = assignment.node_name;
      ASSERT_TRUE(snapshot_.AddPod(std::move(pod)).ok());
    }
  }

  Snapshot snapshot_;
  PlannerConfig config_;
};

TEST(TopologyLevelTest, GroupsNodesByTheLabelValueAndLeavesUnlabelledNodesOut) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("a").Label(kRack, "r2").Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("b").Label(kRack, "r1").Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("c").Build()).ok());
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("d").Label(kRack, "r2").Build()).ok());
  const TopologyLevelIndex& level = snapshot.TopologyLevel(kRack);
  ASSERT_EQ(level.domains.size(), 2u);
  EXPECT_EQ(level.domains[0].value, "r1");
  EXPECT_EQ(level.domains[1].value, "r2");
  EXPECT_THAT(level.domains[1].slots,
              ElementsAre(*snapshot.FindNodeSlot("a"), *snapshot.FindNodeSlot("d")));
  EXPECT_EQ(level.DomainOf(*snapshot.FindNodeSlot("c")), -1);
  EXPECT_EQ(level.DomainOf(9999), -1);

  // A status update keeps the index; a label change rebuilds it.
  const TopologyLevelIndex* before = &snapshot.TopologyLevel(kRack);
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("a").Label(kRack, "r2").Cpu(1000).Build()).ok());
  EXPECT_EQ(&snapshot.TopologyLevel(kRack), before);
  EXPECT_EQ(snapshot.TopologyLevel(kRack).domains[1].slots.size(), 2u);
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("c").Label(kRack, "r1").Build()).ok());
  EXPECT_EQ(snapshot.TopologyLevel(kRack).domains[0].slots.size(), 2u);
  ASSERT_TRUE(snapshot.RemoveNode("b").ok());
  EXPECT_THAT(snapshot.TopologyLevel(kRack).domains[0].slots,
              ElementsAre(*snapshot.FindNodeSlot("c")));
}

TEST(TopologyUnitsTest, TheGangIsOneUnitAndEachOverridingRoleItsOwn) {
  GroupSpec spec =
      MakeSpec({GroupRole{"ps", 1, 1, 0, TopologySpec{"", TopologyMode::kNone}},
                GroupRole{"chief", 1, 1, 0, TopologySpec{kZone, TopologyMode::kPreferred}},
                GroupRole{"worker", 2, 8, 0}, GroupRole{"evaluator", 0, 1, 0}});
  spec.topology = TopologySpec{kRack, TopologyMode::kRequired};
  Result<std::vector<TopologyUnit>> units = TopologyUnitsOf(spec, {kZone, kRack, kHost});
  ASSERT_TRUE(units.ok()) << units.status().ToString();
  ASSERT_EQ(units->size(), 2u);
  EXPECT_TRUE((*units)[0].gang);
  EXPECT_EQ((*units)[0].level, 1u);
  EXPECT_THAT((*units)[0].roles, ElementsAre(2, 3));
  EXPECT_FALSE((*units)[1].gang);
  EXPECT_EQ((*units)[1].level, 0u);
  EXPECT_EQ((*units)[1].spec.mode, TopologyMode::kPreferred);
  EXPECT_THAT((*units)[1].roles, ElementsAre(1));

  EXPECT_TRUE(TopologyUnitsOf(MakeSpec({GroupRole{"w", 1, 1, 0}}), {}).value().empty());
}

TEST(TopologyUnitsTest, ALevelTheSchedulerDoesNotHaveIsRefusedNamingItsLevels) {
  GroupSpec spec =
      TopologyBound({GroupRole{"w", 1, 1, 0}}, TopologyMode::kRequired, "example.com/pod");
  Result<std::vector<TopologyUnit>> units = TopologyUnitsOf(spec, {kZone, kRack});
  ASSERT_FALSE(units.ok());
  EXPECT_THAT(units.status().message(),
              HasSubstr("spec.topology.level \"example.com/pod\" is not a topology level of this "
                        "scheduler (its levels: topology.kubernetes.io/zone, example.com/rack)"));
  EXPECT_THAT(TopologyUnitsOf(spec, {}).status().message(), HasSubstr("it has none configured"));
  GroupSpec role_level =
      MakeSpec({GroupRole{"w", 1, 1, 0, TopologySpec{"x", TopologyMode::kRequired}}});
  EXPECT_THAT(TopologyUnitsOf(role_level, {kRack}).status().message(),
              HasSubstr("role w: topology.level \"x\""));
}

TEST(TopologyFitTest, BestFitLeavesTheLeastAndTiesGoByName) {
  TopologyLevelIndex level;
  level.domains = {{"a", {}}, {"b", {}}, {"c", {}}, {"d", {}}};
  std::vector<DomainFit> fits = RankDomainsByFit(level, {8, 5, 16, 5}, 5);
  ASSERT_EQ(fits.size(), 4u);
  EXPECT_EQ(fits[0].domain, 1);  // b: 0 left, before d by name
  EXPECT_EQ(fits[1].domain, 3);
  EXPECT_EQ(fits[2].domain, 0);
  EXPECT_EQ(fits[3].domain, 2);
  EXPECT_EQ(RankDomainsByFit(level, {8, 5, 16, 5}, 9).size(), 1u) << "only c has room for 9";
  EXPECT_TRUE(RankDomainsByFit(level, {8, 5, 16, 5}, 17).empty());
}

TEST(TopologyFitTest, TheAffinityScoreWeighsInnerLevelsMore) {
  TopologyLevelIndex zone{kZone, {{"z0", {0, 1}}}, {0, 0, -1}};
  TopologyLevelIndex rack{kRack, {{"r0", {0}}, {"r1", {1}}}, {0, 1, -1}};
  std::vector<const TopologyLevelIndex*> levels = {&zone, &rack};
  std::vector<std::vector<int32_t>> used = {{1}, {1, 0}};  // one member in z0/r0
  EXPECT_EQ(TopologyAffinityScore(levels, used, 0), 3);    // same zone (1) and rack (2)
  EXPECT_EQ(TopologyAffinityScore(levels, used, 1), 1);    // same zone only
  EXPECT_EQ(TopologyAffinityScore(levels, used, 2), 0);    // in no domain
}

TEST(TopologyConfinementTest, TheRequiredUnitMissingTheMostConfinesTheGroup) {
  std::vector<TopologyUnit> units(3);
  units[0].spec = TopologySpec{kRack, TopologyMode::kPreferred};
  units[1].spec = TopologySpec{kRack, TopologyMode::kRequired};
  units[2].spec = TopologySpec{kHost, TopologyMode::kRequired};
  std::vector<UnitDemand> demands(3);
  demands[0].need = 16;
  demands[1].need = 4;
  demands[2].need = 4;
  EXPECT_EQ(ConfiningUnit(units, demands), 1) << "Preferred never confines; a tie: the earlier";
  demands[2].need = 8;
  EXPECT_EQ(ConfiningUnit(units, demands), 2);
  demands[1].need = 0;
  demands[2].need = 0;
  EXPECT_EQ(ConfiningUnit(units, demands), -1) << "nothing missing";
}

TEST_F(TopologyPlannerTest, DomainsToClearAreThoseLargeEnoughMostFreeFirst) {
  Occupy("z0-r0-n0", 4);  // z0-r0: 4 free
  Occupy("z0-r1-n0", 1);  // z0-r1: 7 free
  Occupy("z1-r0-n0", 1);  // z1-r0: 7 free; z1-r1: 8 free
  const TopologyLevelIndex& racks = snapshot_.TopologyLevel(kRack);
  GpuResources gpus;  // nvidia.com/gpu, weight 1
  UnitDemand demand;
  demand.measure = CapacityMeasure{&gpus, true};
  demand.need = 8 * kMilliGpusPerGpu;
  auto values = [&](const std::vector<int32_t>& domains) {
    std::vector<std::string> out;
    for (int32_t domain : domains) {
      out.push_back(racks.domains[static_cast<size_t>(domain)].value);
    }
    return out;
  };
  EXPECT_THAT(values(DomainsToClear(racks, snapshot_.slots(), demand, {})),
              ElementsAre("z1-r1", "z0-r1", "z1-r0", "z0-r0"))
      << "the most free first, ties by value";

  // A node reserved for another group leaves its rack too small.
  std::vector<uint8_t> blocked(snapshot_.slots().size(), 0);
  blocked[*snapshot_.FindNodeSlot("z1-r1-n0")] = 1;
  EXPECT_THAT(values(DomainsToClear(racks, snapshot_.slots(), demand, blocked)),
              ElementsAre("z0-r1", "z1-r0", "z0-r0"));

  // A unit with members running stays in the rack most of them are in.
  demand.bound_slots = {*snapshot_.FindNodeSlot("z0-r0-n1"), *snapshot_.FindNodeSlot("z1-r0-n0"),
                        *snapshot_.FindNodeSlot("z1-r0-n1")};
  EXPECT_THAT(values(DomainsToClear(racks, snapshot_.slots(), demand, {})), ElementsAre("z1-r0"));
}

TEST_F(TopologyPlannerTest, TwoRequiredRackJobsLandInTwoRacksOneEach) {
  GroupSpec spec = TopologyBound({GroupRole{"worker", 8, 8, 0}}, TopologyMode::kRequired);
  GroupFixture first("first", spec);
  first.AddMembers("worker", 0, 8, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, first.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  ASSERT_EQ(Racks(plan).size(), 1u);
  EXPECT_EQ(plan.placement, std::string(kRack) + "=" + *Racks(plan).begin());
  ASSERT_TRUE(CommitPlan(snapshot_, plan).ok());

  GroupFixture second("second", spec);
  second.AddMembers("worker", 0, 8, OneGpu);
  GroupPlan next = PlanGroup(snapshot_, second.Group(snapshot_), config_);
  ASSERT_TRUE(next.placed()) << next.reason;
  ASSERT_EQ(Racks(next).size(), 1u);
  EXPECT_NE(*Racks(next).begin(), *Racks(plan).begin());
}

TEST_F(TopologyPlannerTest, BestFitTakesTheFullestRackThatHoldsTheGang) {
  Occupy("z0-r0-n0", 4);  // z0-r0: 4 free
  Occupy("z0-r1-n0", 2);  // z0-r1: 6 free
  Occupy("z1-r0-n0", 1);  // z1-r0: 7 free; z1-r1: 8 free
  GroupFixture small("small",
                     TopologyBound({GroupRole{"worker", 4, 4, 0}}, TopologyMode::kRequired));
  small.AddMembers("worker", 0, 4, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, small.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_THAT(Racks(plan), ElementsAre("z0-r0"));

  GroupFixture larger("larger",
                      TopologyBound({GroupRole{"worker", 5, 5, 0}}, TopologyMode::kRequired));
  larger.AddMembers("worker", 0, 5, OneGpu);
  GroupPlan other = PlanGroup(snapshot_, larger.Group(snapshot_), config_);
  ASSERT_TRUE(other.placed()) << other.reason;
  EXPECT_THAT(Racks(other), ElementsAre("z0-r1"));

  // The same snapshot plans the same way, and planning leaves it as it was.
  GroupPlan again = PlanGroup(snapshot_, larger.Group(snapshot_), config_);
  ASSERT_EQ(again.assignments.size(), other.assignments.size());
  for (size_t i = 0; i < again.assignments.size(); ++i) {
    EXPECT_EQ(again.assignments[i].node_name, other.assignments[i].node_name);
  }
  EXPECT_EQ(snapshot_.pod_count(), 3u);
}

TEST_F(TopologyPlannerTest, ARequiredGangLargerThanAnyRackWaitsSayingSoWhileAPreferredOneSpreads) {
  GroupFixture required("required",
                        TopologyBound({GroupRole{"worker", 3, 3, 0}}, TopologyMode::kRequired));
  required.AddMembers("worker", 0, 3, FourGpus);
  GroupPlan waiting = PlanGroup(snapshot_, required.Group(snapshot_), config_);
  EXPECT_EQ(waiting.outcome, PlanOutcome::kWait);
  EXPECT_THAT(waiting.reason,
              HasSubstr("topology: no single example.com/rack domain holds the gang's minimum: "
                        "largest rack (z0-r0) has 8 GPUs free; the gang needs 12"));
  // No rack has 12 GPUs even empty.
  EXPECT_EQ(waiting.shortfall, Shortfall::kNeverFits);
  EXPECT_THAT(waiting.reason,
              HasSubstr("never fits: the largest example.com/rack domain has 8 GPUs even empty"));
  EXPECT_TRUE(waiting.assignments.empty());
  ASSERT_EQ(waiting.roles.size(), 1u);

  GroupFixture preferred("preferred",
                         TopologyBound({GroupRole{"worker", 3, 3, 0}}, TopologyMode::kPreferred));
  preferred.AddMembers("worker", 0, 3, FourGpus);
  GroupPlan plan = PlanGroup(snapshot_, preferred.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_EQ(Racks(plan).size(), 2u);
  EXPECT_EQ(Zones(plan).size(), 1u) << "two racks of one zone, not two zones";
  EXPECT_EQ(plan.placement, "example.com/rack: 2 domains");
}

TEST_F(TopologyPlannerTest, ARequiredGangThatARackCouldHoldButNoneDoesNowIsUnsatisfiable) {
  for (const char* rack : {"z0-r0", "z0-r1", "z1-r0", "z1-r1"}) {
    Occupy(std::string(rack) + "-n0", 1);  // 7 GPUs free in each rack, 28 in all
  }
  GroupFixture job("job", TopologyBound({GroupRole{"worker", 2, 2, 0}}, TopologyMode::kRequired));
  job.AddMembers("worker", 0, 2, FourGpus);
  GroupPlan waiting = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  EXPECT_EQ(waiting.outcome, PlanOutcome::kWait);
  EXPECT_EQ(waiting.shortfall, Shortfall::kTopology) << waiting.reason;
  EXPECT_THAT(waiting.reason, Not(HasSubstr("never fits")));
}

TEST(TopologyGpuWeightsTest, DomainCapacityCountsMigSlicesAsTheirFractionOfAGpu) {
  constexpr char kSlice[] = "nvidia.com/mig-1g.10gb";
  PlannerConfig config;
  config.topology_levels = {kRack};
  Result<GpuResources> gpus =
      GpuResources::Make({{"nvidia.com/gpu", 1}, {kSlice, 0.125}}, "gpuResources");
  ASSERT_TRUE(gpus.ok()) << gpus.status().ToString();
  config.gpu_resources = *gpus;
  Snapshot snapshot;
  // Rack a: 2 whole GPUs and 16 slices (4 GPUs); rack b: 24 slices (3 GPUs).
  for (NodeBuilder node : {NodeBuilder("a0").Gpus(2).Label(kRack, "a"),
                           NodeBuilder("a1").Scalar(kSlice, 16).Label(kRack, "a"),
                           NodeBuilder("b0").Scalar(kSlice, 24).Label(kRack, "b")}) {
    ASSERT_TRUE(snapshot.UpsertNode(node.Build()).ok());
  }
  CapacityMeasure measure{&config.gpu_resources, true};
  EXPECT_EQ(measure.FreeOn(*snapshot.FindNode("a1")), 2000);
  EXPECT_EQ(measure.Format(2500), "2.5 GPUs");

  // 5 members of 8 slices: 5 GPUs, more than either rack's 4 and 3.
  GroupFixture gang("sliced",
                    TopologyBound({GroupRole{"worker", 5, 5, 0}}, TopologyMode::kRequired));
  gang.AddMembers("worker", 0, 5, [&](PodBuilder& pod) { pod.Scalar(kSlice, 8); });
  GroupPlan waiting = PlanGroup(snapshot, gang.Group(snapshot), config);
  EXPECT_EQ(waiting.outcome, PlanOutcome::kWait);
  EXPECT_THAT(waiting.reason, HasSubstr("largest rack (a) has 4 GPUs free; the gang needs 5 GPUs"));

  // 3 members of 8 slices (3 GPUs): rack b holds them exactly, and is the
  // best fit.
  GroupFixture fits("fits", TopologyBound({GroupRole{"worker", 3, 3, 0}}, TopologyMode::kRequired));
  fits.AddMembers("worker", 0, 3, [&](PodBuilder& pod) { pod.Scalar(kSlice, 8); });
  GroupPlan plan = PlanGroup(snapshot, fits.Group(snapshot), config);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  for (const Assignment& assignment : plan.assignments) {
    EXPECT_EQ(assignment.node_name, "b0");
  }
}

TEST_F(TopologyPlannerTest, AGangTooLargeForTheClusterGetsTheClustersReason) {
  GroupFixture huge("huge", TopologyBound({GroupRole{"worker", 9, 9, 0}}, TopologyMode::kRequired));
  huge.AddMembers("worker", 0, 9, FourGpus);
  GroupPlan plan = PlanGroup(snapshot_, huge.Group(snapshot_), config_);
  EXPECT_EQ(plan.outcome, PlanOutcome::kWait);
  EXPECT_THAT(plan.reason, HasSubstr("worker: 8 of min 9 placeable"));
  EXPECT_THAT(plan.reason, ::testing::Not(HasSubstr("topology")));
}

TEST_F(TopologyPlannerTest, ARequiredElasticGangGrowsOnlyInsideItsRack) {
  GroupSpec spec = TopologyBound({GroupRole{"worker", 2, 16, 0}}, TopologyMode::kRequired);
  GroupFixture job("elastic", spec);
  job.AddMembers("worker", 0, 2, OneGpu);
  GroupPlan first = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(first.placed()) << first.reason;
  ASSERT_EQ(first.assignments.size(), 2u);
  Bind(first);
  const std::string rack = *Racks(first).begin();

  GroupFixture growth("elastic", spec);
  growth.AddMembers("worker", 2, 14, OneGpu);
  GroupPlan grown = PlanGroup(snapshot_, growth.Group(snapshot_), config_);
  ASSERT_TRUE(grown.placed()) << grown.reason;
  EXPECT_EQ(grown.assignments.size(), 6u) << "the rack's 8 GPUs, 2 of them already held";
  EXPECT_THAT(Racks(grown), ElementsAre(rack));
  EXPECT_EQ(grown.placement, std::string(kRack) + "=" + rack);
}

TEST_F(TopologyPlannerTest, APreferredElasticGangFillsItsRackFirstThenGrowsNearby) {
  GroupSpec spec = TopologyBound({GroupRole{"worker", 2, 12, 0}}, TopologyMode::kPreferred);
  GroupFixture job("elastic", spec);
  job.AddMembers("worker", 0, 12, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  ASSERT_EQ(plan.assignments.size(), 12u);
  std::map<std::string, int> per_rack;
  for (const Assignment& assignment : plan.assignments) {
    ++per_rack[RackOf(assignment.node_name)];
  }
  ASSERT_EQ(per_rack.size(), 2u);
  EXPECT_EQ(Zones(plan).size(), 1u);
  std::vector<int> counts;
  for (const auto& [rack, count] : per_rack) {
    counts.push_back(count);
  }
  std::sort(counts.begin(), counts.end());
  EXPECT_THAT(counts, ElementsAre(4, 8))
      << "one rack filled, the rest in the other rack of the zone";
}

TEST_F(TopologyPlannerTest, ARoleWithModeNoneSitsOutsideTheGangsRack) {
  // A CPU-only node outside every rack; the parameter server must go there.
  AddNode(NodeBuilder("cpu-0").Label("role", "ps"));
  GroupSpec spec = TopologyBound({GroupRole{"ps", 1, 1, 0}, GroupRole{"worker", 4, 4, 0}},
                                 TopologyMode::kRequired);
  auto ps_on_cpu_node = [](PodBuilder& pod) { pod.Cpu(500).NodeSelector("role", "ps"); };
  GroupFixture bound("bound", spec);
  bound.AddMembers("ps", 0, 1, ps_on_cpu_node);
  bound.AddMembers("worker", 0, 4, OneGpu);
  GroupPlan waiting = PlanGroup(snapshot_, bound.Group(snapshot_), config_);
  EXPECT_EQ(waiting.outcome, PlanOutcome::kWait) << "the ps shares the gang's rack";

  spec.roles[0].topology = TopologySpec{"", TopologyMode::kNone};
  GroupFixture free_ps("free-ps", spec);
  free_ps.AddMembers("ps", 0, 1, ps_on_cpu_node);
  free_ps.AddMembers("worker", 0, 4, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, free_ps.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  std::map<std::string, std::string> nodes;
  for (const Assignment& assignment : plan.assignments) {
    nodes[assignment.pod->name] = assignment.node_name;
  }
  EXPECT_EQ(nodes["free-ps-ps-0"], "cpu-0");
  std::set<std::string> worker_racks;
  for (int i = 0; i < 4; ++i) {
    worker_racks.insert(RackOf(nodes["free-ps-worker-" + std::to_string(i)]));
  }
  EXPECT_EQ(worker_racks.size(), 1u);
}

TEST_F(TopologyPlannerTest, ARoleWithItsOwnLevelKeepsToItsOwnDomain) {
  GroupSpec spec =
      TopologyBound({GroupRole{"chief", 1, 1, 0, TopologySpec{kHost, TopologyMode::kRequired}},
                     GroupRole{"worker", 4, 4, 0}},
                    TopologyMode::kRequired, kZone);
  GroupFixture job("job", spec);
  job.AddMembers("chief", 0, 1, NoGpu);
  job.AddMembers("worker", 0, 4, FourGpus);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  std::set<std::string> worker_zones;
  for (const Assignment& assignment : plan.assignments) {
    if (assignment.pod->role == "worker") {
      worker_zones.insert(*snapshot_.FindNode(assignment.node_name)->info.labels.Find(kZone));
    }
  }
  EXPECT_EQ(worker_zones.size(), 1u);
  EXPECT_THAT(plan.placement, HasSubstr("chief: kubernetes.io/hostname="));
  EXPECT_THAT(plan.placement, HasSubstr("topology.kubernetes.io/zone=z"));
}

TEST_F(TopologyPlannerTest, NodesWithoutTheLevelsLabelNeverTakeARequiredGang) {
  AddNode(NodeBuilder("unlabelled").Gpus(16));
  Occupy("z0-r0-n0", 4);
  Occupy("z0-r0-n1", 4);
  Occupy("z0-r1-n0", 4);
  Occupy("z0-r1-n1", 4);
  Occupy("z1-r0-n0", 4);
  Occupy("z1-r0-n1", 4);
  Occupy("z1-r1-n0", 4);
  Occupy("z1-r1-n1", 4);
  GroupFixture job("job", TopologyBound({GroupRole{"worker", 2, 2, 0}}, TopologyMode::kRequired));
  job.AddMembers("worker", 0, 2, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  EXPECT_EQ(plan.outcome, PlanOutcome::kWait);
  EXPECT_THAT(plan.reason, HasSubstr("largest rack (z0-r0) has 0 GPUs free; the gang needs 2"));

  GroupFixture preferred("preferred",
                         TopologyBound({GroupRole{"worker", 2, 2, 0}}, TopologyMode::kPreferred));
  preferred.AddMembers("worker", 0, 2, OneGpu);
  GroupPlan anywhere = PlanGroup(snapshot_, preferred.Group(snapshot_), config_);
  ASSERT_TRUE(anywhere.placed()) << "Preferred never refuses what fits the cluster";
  EXPECT_EQ(anywhere.assignments[0].node_name, "unlabelled");
}

TEST_F(TopologyPlannerTest, AnUnconfiguredLevelMakesTheGroupInvalid) {
  GroupFixture job("job", TopologyBound({GroupRole{"worker", 1, 1, 0}}, TopologyMode::kRequired,
                                        "example.com/block"));
  job.AddMembers("worker", 0, 1, OneGpu);
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  EXPECT_EQ(plan.outcome, PlanOutcome::kInvalid);
  EXPECT_THAT(plan.reason, HasSubstr("\"example.com/block\" is not a topology level"));
}

}  // namespace
}  // namespace hybridjob::scheduler
