#include <cmath>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/queues.h>
#include <hybridjob/scheduler/core/what_if.h>

#include "policy_fixture.h"

namespace hybridjob::scheduler {
namespace {

using ::testing::ElementsAre;
using testing::GroupFixture;
using testing::MakeSpec;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::Queue;
using testing::QueueSpecFor;

ResourceList Gpus(int64_t count) {
  ResourceList list;
  list.SetScalar("nvidia.com/gpu", count);
  return list;
}

// `queue` nested in `parent`.
QueueSpec Under(QueueSpec queue, const std::string& parent) {
  queue.parent = parent;
  return queue;
}

TEST(ResourceCeilingTest, BoundsOnlyNamedResources) {
  ResourceCeiling max;
  EXPECT_TRUE(max.empty());
  EXPECT_EQ(max.ToString(), "unlimited");
  max.Set("nvidia.com/gpu", 8);
  max.Set("cpu", 4000);
  EXPECT_EQ(max.ToString(), "cpu=4 nvidia.com/gpu=8");
  EXPECT_EQ(max.Limit("cpu"), 4000);
  EXPECT_EQ(max.Limit("memory"), std::nullopt);
  ResourceList usage = Gpus(8);
  usage.memory = int64_t{1} << 40;
  EXPECT_TRUE(max.FirstExceeded(usage).empty());
  usage.SetScalar("nvidia.com/gpu", 9);
  EXPECT_EQ(max.FirstExceeded(usage), "nvidia.com/gpu");
  usage.milli_cpu = 4001;
  EXPECT_EQ(max.FirstExceeded(usage), "cpu");
  max.Set("cpu", 5000);
  EXPECT_EQ(max.Limit("cpu"), 5000);
}

TEST(ValidateQueuesTest, AcceptsAWellFormedList) {
  QueueSpec a = Queue("a", 2.0, 16, 32);
  QueueSpec b = Queue("b", 0.5);
  EXPECT_TRUE(ValidateQueues({a, b}).ok());
  EXPECT_TRUE(ValidateQueues({}).ok());
}

TEST(ValidateQueuesTest, NamesTheFieldInError) {
  auto message = [](std::vector<QueueSpec> queues) { return ValidateQueues(queues).message(); };
  EXPECT_EQ(message({Queue("a"), Queue("")}), "queues[1].name: required");
  EXPECT_EQ(message({Queue("a"), Queue("a")}), "queues[1].name: duplicate queue \"a\"");
  EXPECT_EQ(message({Queue("a"), Queue("b", 0.0)}), "queues[1].weight: must be positive");
  EXPECT_EQ(message({Queue("a", -1.0)}), "queues[0].weight: must be positive");
  EXPECT_EQ(message({Queue("a", std::nan(""))}), "queues[0].weight: must be positive");
  EXPECT_EQ(message({Queue("a", 1.0, 16, 8)}),
            "queues[0]: guaranteed nvidia.com/gpu 16 exceeds max 8");
  QueueSpec negative = Queue("a");
  negative.max.Set("cpu", -1);
  EXPECT_EQ(message({negative}), "queues[0].max.cpu: must not be negative");
  QueueSpec negative_guarantee = Queue("a");
  negative_guarantee.guaranteed.memory = -1;
  EXPECT_EQ(message({negative_guarantee}), "queues[0].guaranteed.memory: must not be negative");
  QueueSpec cpu = Queue("a");
  cpu.guaranteed.milli_cpu = 8000;
  cpu.max.Set("cpu", 4000);
  EXPECT_EQ(message({cpu}), "queues[0]: guaranteed cpu 8 exceeds max 4");
}

TEST(ValidateQueuesTest, AcceptsATree) {
  // org guarantees what team-a and team-b are guaranteed together; lab names
  // no guarantee of its own, so its children's need no room in it.
  EXPECT_TRUE(ValidateQueues({Queue("org", 1.0, 12, 16), Under(Queue("team-a", 2.0, 8), "org"),
                              Under(Queue("team-b", 1.0, 4), "org"), Queue("lab"),
                              Under(Queue("lab-x", 1.0, 6), "lab"), Queue("other")})
                  .ok());
}

TEST(ValidateQueuesTest, TheTreeNamesAnotherQueueWithoutCycles) {
  auto message = [](std::vector<QueueSpec> queues) { return ValidateQueues(queues).message(); };
  EXPECT_EQ(message({Queue("a"), Queue("b"), Under(Queue("team-a"), "org")}),
            "queues[2].parent: no queue named \"org\"");
  EXPECT_EQ(message({Under(Queue("a"), "a")}), "queues[0].parent: \"a\" is its own ancestor");
  EXPECT_EQ(
      message({Queue("x"), Under(Queue("a"), "c"), Under(Queue("b"), "a"), Under(Queue("c"), "b")}),
      "queues[1].parent: \"a\" is its own ancestor");
  // Groups without a queue and lone pods run in default: it stays a top-level leaf.
  EXPECT_EQ(message({Queue("a"), Under(Queue("b"), "default")}),
            "queues[1].parent: queue \"default\" cannot have child queues: groups without a "
            "queue and pods outside any group run in it");
  EXPECT_EQ(message({Queue("default"), Under(Queue("b"), "default")}),
            "queues[1].parent: queue \"default\" cannot have child queues: groups without a "
            "queue and pods outside any group run in it");
  EXPECT_EQ(message({Queue("org"), Under(Queue("default"), "org")}),
            "queues[1].parent: queue \"default\" stays at the top level");
}

TEST(ValidateQueuesTest, AParentsGuaranteeHoldsItsChildrensWithinEveryCeiling) {
  auto message = [](std::vector<QueueSpec> queues) { return ValidateQueues(queues).message(); };
  EXPECT_EQ(message({Queue("org", 1.0, 8), Under(Queue("team-a", 1.0, 6), "org"),
                     Under(Queue("team-b", 1.0, 4), "org")}),
            "queues[0]: guaranteed nvidia.com/gpu 8 of queue \"org\" is less than its children "
            "are guaranteed, 10 (team-a 6, team-b 4)");
  QueueSpec org = Queue("org");
  org.guaranteed.milli_cpu = 4000;
  QueueSpec cpu_child = Under(Queue("team-a"), "org");
  cpu_child.guaranteed.milli_cpu = 4500;
  EXPECT_EQ(message({org, cpu_child}),
            "queues[0]: guaranteed cpu 4 of queue \"org\" is less than its children are "
            "guaranteed, 4500m (team-a 4500m)");
  EXPECT_EQ(message({Queue("org", 1.0, 0, 16), Under(Queue("team-a", 1.0, 20), "org")}),
            "queues[1]: guaranteed nvidia.com/gpu 20 exceeds max 16 of its parent \"org\"");
  EXPECT_EQ(message({Queue("org", 1.0, 0, 16), Under(Queue("dept"), "org"),
                     Under(Queue("team-a", 1.0, 20), "dept")}),
            "queues[2]: guaranteed nvidia.com/gpu 20 exceeds max 16 of its ancestor \"org\"");
}

TEST(ValidateQueuesTest, NamespacesAreNamespaceNames) {
  QueueSpec queue = Queue("a");
  queue.namespaces = {"team-a", "Team_B"};
  EXPECT_EQ(ValidateQueues({Queue("x"), queue}).message(),
            "queues[1].namespaces[1]: \"Team_B\" is not a valid namespace name (lowercase "
            "letters, digits and '-', starting and ending with a letter or digit, at most 63)");
  queue.namespaces = {"team-a", "ml-1"};
  EXPECT_TRUE(ValidateQueues({queue}).ok());
}

TEST(IsNamespaceNameTest, FollowsRfc1123Labels) {
  EXPECT_TRUE(IsNamespaceName("team-a"));
  EXPECT_TRUE(IsNamespaceName("a"));
  EXPECT_TRUE(IsNamespaceName("0ml"));
  EXPECT_TRUE(IsNamespaceName(std::string(63, 'a')));
  EXPECT_FALSE(IsNamespaceName(std::string(64, 'a')));
  EXPECT_FALSE(IsNamespaceName(""));
  EXPECT_FALSE(IsNamespaceName("-team"));
  EXPECT_FALSE(IsNamespaceName("team-"));
  EXPECT_FALSE(IsNamespaceName("Team"));
  EXPECT_FALSE(IsNamespaceName("team.a"));
  EXPECT_FALSE(IsNamespaceName("team_a"));
}

TEST(ValidatePolicyConfigTest, ChecksTheSettings) {
  PolicyConfig config;
  EXPECT_TRUE(ValidatePolicyConfig(config).ok());
  config.starvation.max_wait_seconds = -1;
  EXPECT_EQ(ValidatePolicyConfig(config).message(),
            "starvation.maxWaitSeconds: must not be negative");
  config = {};
  config.starvation.max_reserved_groups = -1;
  EXPECT_EQ(ValidatePolicyConfig(config).message(),
            "starvation.maxReservedGroups: must not be negative");
  config = {};
  config.reclaim.max_groups_per_cycle = -2;
  EXPECT_EQ(ValidatePolicyConfig(config).message(),
            "reclaim.maxGroupsPerCycle: must not be negative");
  config = {};
  config.refused_eviction_backoff_seconds = -1;
  EXPECT_EQ(ValidatePolicyConfig(config).message(),
            "refusedEvictionBackoffSeconds: must not be negative");
  config = {};
  config.refused_eviction_backoff_seconds = 60;
  config.refused_eviction_backoff_max_seconds = 30;
  EXPECT_EQ(
      ValidatePolicyConfig(config).message(),
      "refusedEvictionBackoffMaxSeconds: must not be less than refusedEvictionBackoffSeconds");
  config = {};
  config.queues = {Queue("x", 0.0)};
  EXPECT_EQ(ValidatePolicyConfig(config).message(), "queues[0].weight: must be positive");
}

TEST(QueueTableTest, AddsDefaultUnlessConfigured) {
  QueueTable table({Queue("b"), Queue("a")});
  EXPECT_NE(table.Find("a"), nullptr);
  ASSERT_NE(table.Find("default"), nullptr);
  EXPECT_EQ(table.Find("default")->weight, 1.0);
  EXPECT_TRUE(table.Find("default")->max.empty());
  EXPECT_EQ(table.Find("c"), nullptr);
  EXPECT_EQ(table.Names(), "a, b, default");

  QueueTable explicit_default({Queue("default", 3.0, 0, 0)});
  EXPECT_EQ(explicit_default.queues().size(), 1u);
  EXPECT_EQ(explicit_default.Find("default")->weight, 3.0);
  EXPECT_EQ(explicit_default.Find("default")->max.Limit("nvidia.com/gpu"), 0);
}

TEST(QueueTableTest, KnowsTheTree) {
  QueueTable table({Under(Queue("team-b"), "org"), Queue("org"), Under(Queue("team-a"), "org"),
                    Under(Queue("ml"), "team-a"), Queue("other")});
  EXPECT_TRUE(table.HasTree());
  EXPECT_EQ(table.Parent("team-a")->name, "org");
  EXPECT_EQ(table.Parent("org"), nullptr);
  EXPECT_EQ(table.Parent("nowhere"), nullptr);
  EXPECT_THAT(table.Children("org"), ElementsAre("team-a", "team-b"));
  EXPECT_THAT(table.Children("ml"), ::testing::IsEmpty());
  EXPECT_FALSE(table.IsLeaf("org"));
  EXPECT_FALSE(table.IsLeaf("team-a"));
  EXPECT_TRUE(table.IsLeaf("ml"));
  EXPECT_TRUE(table.IsLeaf("default"));
  EXPECT_THAT(table.Ancestors("ml"), ElementsAre("team-a", "org"));
  EXPECT_THAT(table.Ancestors("other"), ::testing::IsEmpty());
  EXPECT_EQ(table.Depth("ml"), 2);
  EXPECT_EQ(table.Depth("org"), 0);

  EXPECT_FALSE(QueueTable({Queue("a"), Queue("b")}).HasTree());
}

TEST(QueueTableTest, DropsParentsThatNameNoQueueOrCloseACycle) {
  QueueTable table({Under(Queue("a"), "b"), Under(Queue("b"), "a"), Under(Queue("c"), "gone"),
                    Under(Queue("d"), "d")});
  // a's link closed the cycle and went; b stays under a.
  EXPECT_EQ(table.Parent("a"), nullptr);
  EXPECT_EQ(table.Parent("b")->name, "a");
  EXPECT_EQ(table.Parent("c"), nullptr);
  EXPECT_EQ(table.Parent("d"), nullptr);
  EXPECT_TRUE(table.IsLeaf("d"));
}

TEST(QueueTableTest, AParentIsGuaranteedWhatItsChildrenAre) {
  // org names no GPUs: it is guaranteed its children's 6. lab names more
  // than its child: it keeps its own.
  QueueTable table({Queue("org"), Under(Queue("team-a", 1.0, 4), "org"),
                    Under(Queue("team-b", 1.0, 2), "org"), Queue("lab", 1.0, 8),
                    Under(Queue("lab-x", 1.0, 3), "lab")});
  EXPECT_EQ(table.Find("org")->guaranteed.Scalar("nvidia.com/gpu"), 6);
  EXPECT_EQ(table.Find("lab")->guaranteed.Scalar("nvidia.com/gpu"), 8);
  EXPECT_EQ(table.Find("team-a")->guaranteed.Scalar("nvidia.com/gpu"), 4);
}

TEST(QueueTableTest, AdmitsANamespaceOnlyWhenEveryAncestorDoes) {
  QueueSpec org = Queue("org");
  org.namespaces = {"team-a", "team-b"};
  QueueSpec vip = Under(Queue("vip"), "org");
  LabelSelector gold;
  gold.requirements.push_back(SelectorRequirement{"tier", SelectorOperator::kIn, {"gold"}});
  vip.namespace_selector = gold;
  QueueSpec open = Under(Queue("open"), "org");
  QueueTable table({org, vip, open, Queue("free")});
  const LabelMap gold_labels{{"tier", "gold"}};

  EXPECT_TRUE(table.AdmitsNamespace("vip", "team-a", gold_labels));
  EXPECT_FALSE(table.AdmitsNamespace("vip", "team-a", {}));
  EXPECT_EQ(table.RefusesNamespace("vip", "team-a", {})->name, "vip");
  // vip's selector matches, but its parent refuses the namespace.
  EXPECT_FALSE(table.AdmitsNamespace("vip", "team-c", gold_labels));
  EXPECT_EQ(table.RefusesNamespace("vip", "team-c", gold_labels)->name, "org");
  EXPECT_TRUE(table.AdmitsNamespace("open", "team-b", {}));
  EXPECT_FALSE(table.AdmitsNamespace("open", "team-c", {}));
  EXPECT_TRUE(table.AdmitsNamespace("free", "anyone", {}));
  EXPECT_TRUE(table.AdmitsNamespace("default", "anyone", {}));
  EXPECT_FALSE(table.AdmitsNamespace("nowhere", "anyone", {}));
}

TEST(QueueOfPodTest, GroupQueueElseDefault) {
  EXPECT_EQ(QueueOfPod(PodBuilder("lone").Build()), "default");
  EXPECT_EQ(QueueOfPod(PodBuilder("m").Spec(QueueSpecFor("x", {GroupRole{"w", 1, 1, 0}})).Build()),
            "x");
  PolicyConfig policy;
  PodInfo foreign = PodBuilder("f").Build();
  foreign.scheduler_name = "default-scheduler";
  EXPECT_TRUE(IsManagedPod(foreign, policy));
  policy.scheduler_name = "gang-scheduler";
  EXPECT_FALSE(IsManagedPod(foreign, policy));
  EXPECT_TRUE(IsManagedPod(PodBuilder("ours").Build(), policy));
}

TEST(GuaranteeTest, KeepsGuaranteeLooksAtWhatIsTaken) {
  ResourceList guaranteed = Gpus(8);
  guaranteed.milli_cpu = 1000;
  ResourceList taken = Gpus(2);
  EXPECT_TRUE(KeepsGuarantee(Gpus(8), taken, guaranteed));
  EXPECT_FALSE(KeepsGuarantee(Gpus(7), taken, guaranteed));
  // cpu is below its guarantee, but nothing of it is taken.
  EXPECT_TRUE(KeepsGuarantee(Gpus(9), taken, guaranteed));
  ResourceList with_cpu = taken;
  with_cpu.milli_cpu = 100;
  EXPECT_FALSE(KeepsGuarantee(Gpus(9), with_cpu, guaranteed));
  EXPECT_TRUE(KeepsGuarantee({}, taken, {}));
}

TEST(GuaranteeTest, WithinGuaranteeNeedsAGuaranteedResourceRequested) {
  ResourceList guaranteed = Gpus(8);
  EXPECT_TRUE(WithinGuarantee(Gpus(8), Gpus(2), guaranteed));
  EXPECT_FALSE(WithinGuarantee(Gpus(9), Gpus(2), guaranteed));
  ResourceList cpu_only;
  cpu_only.milli_cpu = 1000;
  EXPECT_FALSE(WithinGuarantee(cpu_only, cpu_only, guaranteed));
  EXPECT_FALSE(WithinGuarantee(Gpus(2), Gpus(2), {}));
}

class GroupShapeTest : public ::testing::Test {
 protected:
  Snapshot snapshot_;
};

TEST_F(GroupShapeTest, AtMinimumAndMinimumRequest) {
  ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("n0").Gpus(8).Build()).ok());
  GroupSpec spec = MakeSpec({GroupRole{"ps", 1, 2, 1}, GroupRole{"worker", 3, 6, 0}});
  GroupFixture fixture("job", spec);
  fixture.AddMembers("ps", 0, 2, [](PodBuilder& pod) { pod.Cpu(2000); });
  fixture.AddMembers("worker", 1, 5, [](PodBuilder& pod) { pod.Gpus(2); });
  ASSERT_TRUE(snapshot_
                  .AddPod(PodBuilder("job-worker-0")
                              .Member("job", "worker", 0)
                              .Spec(spec)
                              .Gpus(2)
                              .OnNode("n0")
                              .Build())
                  .ok());
  PodGroup group = fixture.Group(snapshot_);
  EXPECT_EQ(BoundInRole(group, "worker"), 1);
  EXPECT_FALSE(ReachedMinimum(group));
  PodGroup at_min = AtMinimum(group);
  EXPECT_EQ(at_min.spec.roles[0].min_replicas, 1);
  EXPECT_EQ(at_min.spec.roles[0].max_replicas, 2);
  EXPECT_EQ(at_min.spec.roles[1].max_replicas, 6);
  std::vector<std::string> names;
  for (const PodInfo* pod : MinimumMembers(group)) {
    names.push_back(pod->name);
  }
  EXPECT_THAT(names, ElementsAre("job-ps-0", "job-worker-1", "job-worker-2"));
  std::vector<std::string> offered;
  for (const PodInfo* pod : at_min.pending) {
    offered.push_back(pod->name);
  }
  EXPECT_EQ(offered, names);
  GroupPlan plan = PlanGroup(snapshot_, at_min, PlannerConfig{});
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_EQ(plan.assignments.size(), 3u);
  ResourceList need = MinimumRequest(group);
  EXPECT_EQ(need.Scalar("nvidia.com/gpu"), 4);
  EXPECT_EQ(need.milli_cpu, 2000 + 200);
  EXPECT_EQ(need.pods, 3);
  EXPECT_EQ(GroupKey(group), "team/job");
}

TEST_F(GroupShapeTest, AllMinimumsZeroStartWithOneMemberOfTheTopRole) {
  GroupSpec spec = MakeSpec({GroupRole{"eval", 0, 2, 0}, GroupRole{"worker", 0, 4, 5}});
  GroupFixture fixture("zero", spec);
  fixture.AddMembers("eval", 0, 2, [](PodBuilder&) {});
  fixture.AddMembers("worker", 0, 4, [](PodBuilder&) {});
  PodGroup group = fixture.Group(snapshot_);
  EXPECT_THAT(StartingMinimums(group), ElementsAre(0, 1));
  PodGroup at_min = AtMinimum(group);
  EXPECT_EQ(at_min.spec.roles[1].min_replicas, 1);
  ASSERT_EQ(at_min.pending.size(), 1u);
  EXPECT_EQ(at_min.pending[0]->role, "worker");
  EXPECT_EQ(at_min.pending[0]->index, 0);
}

// The replacement of a member that failed, after another member of its role
// succeeded: the controller's spec names the succeeded index and lowers the
// minimum, and the replacement sits above it. Capping the maximum at the
// minimum once hid it from the planner ("only 0 of min 1 members exist").
TEST_F(GroupShapeTest, AtMinimumPlacesAReplacementAboveAMemberThatSucceeded) {
  ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("n0").Gpus(4).Build()).ok());
  GroupSpec spec = MakeSpec({GroupRole{"worker", 1, 2, 0}});
  spec.roles[0].completed = {0};
  GroupFixture fixture("r", spec);
  fixture.AddMembers("worker", 1, 1, [](PodBuilder& pod) { pod.Gpus(1); });
  PodGroup group = fixture.Group(snapshot_);
  PodGroup at_min = AtMinimum(group);
  GroupPlan plan = PlanGroup(snapshot_, at_min, PlannerConfig{});
  ASSERT_TRUE(plan.placed()) << plan.reason;
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].pod->index, 1);
}

TEST_F(GroupShapeTest, LonePodKeysDoNotCollideWithJobs) {
  PodInfo lone = PodBuilder("x").Build();
  PodGroup group;
  group.namespace_name = "team";
  group.name = "x";
  group.pending = {&lone};
  EXPECT_EQ(GroupKey(group), "team/x|pod");
}

TEST(WhatIfTest, ReleaseAndFillUndoExactly) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(NodeBuilder("n0").Gpus(8).Build()).ok());
  ASSERT_TRUE(snapshot.AddPod(PodBuilder("p").Gpus(3).OnNode("n0").Build()).ok());
  const NodeState& node = *snapshot.FindNode("n0");
  ResourceList before = node.requested;
  {
    WhatIf what_if(snapshot);
    EXPECT_TRUE(what_if.Release(*snapshot.FindPod("team", "p")));
    EXPECT_EQ(node.requested.Scalar("nvidia.com/gpu"), 0);
    EXPECT_EQ(node.requested.pods, 0);
    size_t mark = what_if.Mark();
    what_if.Fill(*snapshot.FindNodeSlot("n0"));
    EXPECT_EQ(node.requested.Scalar("nvidia.com/gpu"), 8);
    EXPECT_EQ(node.requested.pods, node.info.allocatable.pods);
    EXPECT_FALSE(snapshot.AddPod(PodBuilder("q").OnNode("n0").Build()).ok());
    what_if.RollbackTo(mark);
    EXPECT_EQ(node.requested.Scalar("nvidia.com/gpu"), 0);
    PodInfo ghost = PodBuilder("ghost").OnNode("nowhere").Build();
    EXPECT_FALSE(what_if.Release(ghost));
  }
  EXPECT_EQ(node.requested, before);
  EXPECT_TRUE(snapshot.AddPod(PodBuilder("q").OnNode("n0").Build()).ok());
}

}  // namespace
}  // namespace hybridjob::scheduler
