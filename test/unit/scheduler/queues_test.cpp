#include <cmath>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/queues.h>
#include <hybridjob/scheduler/what_if.h>

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

TEST(QueueOfPodTest, GroupQueueElseDefault) {
  EXPECT_EQ(QueueOfPod(PodBuilder("lone").Build()), "default");
  EXPECT_EQ(QueueOfPod(PodBuilder("m").Spec(QueueSpecFor("x", {RoleSpec{"w", 1, 1, 0}})).Build()),
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
  GroupSpec spec = MakeSpec({RoleSpec{"ps", 1, 2, 1}, RoleSpec{"worker", 3, 6, 0}});
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
  EXPECT_EQ(at_min.spec.roles[0].max_replicas, 1);
  EXPECT_EQ(at_min.spec.roles[1].max_replicas, 3);
  std::vector<std::string> names;
  for (const PodInfo* pod : MinimumMembers(group)) {
    names.push_back(pod->name);
  }
  EXPECT_THAT(names, ElementsAre("job-ps-0", "job-worker-1", "job-worker-2"));
  ResourceList need = MinimumRequest(group);
  EXPECT_EQ(need.Scalar("nvidia.com/gpu"), 4);
  EXPECT_EQ(need.milli_cpu, 2000 + 200);
  EXPECT_EQ(need.pods, 3);
  EXPECT_EQ(GroupKey(group), "team/job");
}

TEST_F(GroupShapeTest, AllMinimumsZeroStartWithOneMemberOfTheTopRole) {
  GroupSpec spec = MakeSpec({RoleSpec{"eval", 0, 2, 0}, RoleSpec{"worker", 0, 4, 5}});
  GroupFixture fixture("zero", spec);
  fixture.AddMembers("eval", 0, 2, [](PodBuilder&) {});
  fixture.AddMembers("worker", 0, 4, [](PodBuilder&) {});
  PodGroup group = fixture.Group(snapshot_);
  EXPECT_THAT(StartingMinimums(group), ElementsAre(0, 1));
  PodGroup at_min = AtMinimum(group);
  EXPECT_EQ(at_min.spec.roles[1].min_replicas, 1);
  EXPECT_EQ(at_min.spec.roles[1].max_replicas, 1);
  EXPECT_EQ(at_min.spec.roles[0].max_replicas, 0);
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
