#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/cycle.h>

#include "builders.h"

namespace hybridjob::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::MakeSpec;
using testing::NodeBuilder;
using testing::PodBuilder;

Timestamp At(int64_t unix_seconds) {
  return Timestamp{std::chrono::seconds{unix_seconds}};
}

class CycleTest : public ::testing::Test {
 protected:
  // Members job-role-i for i in [first, first + count).
  void AddMembers(const std::string& job, const GroupSpec& spec, const std::string& role, int first,
                  int count, int64_t gpus, int64_t created, int32_t priority = 0) {
    testing::AppendMembers(pods_, job, spec, role, first, count, gpus, created, priority);
  }
  std::vector<const PodInfo*> Pending() const {
    std::vector<const PodInfo*> out;
    for (const auto& pod : pods_) {
      out.push_back(pod.get());
    }
    return out;
  }
  CycleResult Run(Timestamp now) {
    std::vector<const PodInfo*> pending = Pending();
    return RunCycle(snapshot_, BuildGroups(pending, snapshot_), now, config_);
  }
  static const GroupDecision* Find(const CycleResult& result, const std::string& name) {
    for (const GroupDecision& decision : result.decisions) {
      if (decision.group.name == name) {
        return &decision;
      }
    }
    return nullptr;
  }

  Snapshot snapshot_;
  PlannerConfig config_;
  std::vector<std::unique_ptr<PodInfo>> pods_;
};

TEST_F(CycleTest, TwoGroupsThatFitAloneButNotTogether) {
  for (const char* name : {"n1", "n2"}) {
    ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder(name).Gpus(4).Build()).ok());
  }
  GroupSpec spec = MakeSpec({GroupRole{"worker", 3, 3, 0}});
  AddMembers("early", spec, "worker", 0, 3, 2, /*created=*/100);
  AddMembers("late", spec, "worker", 0, 3, 2, /*created=*/200);

  CycleResult result = Run(At(1000));
  ASSERT_EQ(result.decisions.size(), 2u);
  EXPECT_EQ(result.decisions[0].group.name, "early");
  EXPECT_EQ(result.decisions[0].plan.outcome, PlanOutcome::kPlaced);
  EXPECT_EQ(result.decisions[0].plan.assignments.size(), 3u);
  EXPECT_EQ(result.decisions[1].group.name, "late");
  EXPECT_EQ(result.decisions[1].plan.outcome, PlanOutcome::kWait);
  EXPECT_TRUE(result.decisions[1].plan.assignments.empty());
  EXPECT_EQ(result.decisions[1].plan.reason,
            "worker: 1 of min 3 placeable; 2 GPUs free, largest node has 2; "
            "0/2 nodes are available: 2 Insufficient nvidia.com/gpu");
  // Only the first group holds capacity.
  EXPECT_EQ(snapshot_.GroupMembers("team", "early").size(), 3u);
  EXPECT_TRUE(snapshot_.GroupMembers("team", "late").empty());
  EXPECT_EQ(snapshot_.pod_count(), 3u);
}

TEST_F(CycleTest, HigherPriorityGroupGoesFirstEvenIfYounger) {
  for (const char* name : {"n1", "n2"}) {
    ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder(name).Gpus(4).Build()).ok());
  }
  GroupSpec spec = MakeSpec({GroupRole{"worker", 3, 3, 0}});
  AddMembers("old", spec, "worker", 0, 3, 2, 100, /*priority=*/0);
  AddMembers("urgent", spec, "worker", 0, 3, 2, 200, /*priority=*/1000);
  CycleResult result = Run(At(1000));
  EXPECT_TRUE(Find(result, "urgent")->plan.placed());
  EXPECT_EQ(Find(result, "old")->plan.outcome, PlanOutcome::kWait);
  EXPECT_EQ(result.decisions[0].group.name, "urgent");
}

TEST_F(CycleTest, GroupWaitsForMissingMembersUntilItsTimeout) {
  ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("n").Gpus(8).Build()).ok());
  GroupSpec spec = MakeSpec({GroupRole{"ps", 1, 1, 0}, GroupRole{"worker", 2, 4, 0}}, 60);
  AddMembers("job", spec, "ps", 0, 1, 0, 1000);
  AddMembers("job", spec, "worker", 0, 3, 1, 1000);  // worker-3 not created yet

  CycleResult early = Run(At(1030));
  ASSERT_EQ(early.decisions.size(), 1u);
  EXPECT_EQ(early.decisions[0].plan.outcome, PlanOutcome::kWait);
  EXPECT_EQ(early.decisions[0].plan.reason,
            "waiting for member pods: worker has 3 of 4 member pods");
  EXPECT_EQ(snapshot_.pod_count(), 0u);

  CycleResult late = Run(At(1060));
  ASSERT_TRUE(late.decisions[0].plan.placed()) << late.decisions[0].plan.reason;
  EXPECT_EQ(late.decisions[0].plan.assignments.size(), 4u);  // ps + 3 workers
}

TEST_F(CycleTest, AGroupTheSnapshotRefusesIsRolledBackWhole) {
  ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("n").Gpus(8).Build()).ok());
  GroupSpec spec = MakeSpec({GroupRole{"worker", 2, 2, 0}}, 0);
  AddMembers("job", spec, "worker", 0, 2, 1, 0);
  // A stale pending copy of a pod the snapshot already has under another job.
  ASSERT_TRUE(snapshot_.AddPod(PodBuilder("job-worker-1").OnNode("n").Build()).ok());
  CycleResult result = Run(At(10));
  ASSERT_EQ(result.decisions.size(), 1u);
  EXPECT_EQ(result.decisions[0].plan.outcome, PlanOutcome::kWait);
  EXPECT_THAT(result.decisions[0].plan.reason, HasSubstr("already in the snapshot"));
  EXPECT_TRUE(result.decisions[0].plan.assignments.empty());
  EXPECT_EQ(snapshot_.pod_count(), 1u);  // worker-0 was not left behind
  EXPECT_EQ(snapshot_.FindPod("team", "job-worker-0"), nullptr);
}

TEST_F(CycleTest, ZeroTimeoutNeverWaitsForMembers) {
  ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("n").Gpus(8).Build()).ok());
  GroupSpec spec = MakeSpec({GroupRole{"worker", 1, 4, 0}}, 0);
  AddMembers("job", spec, "worker", 0, 2, 1, /*created=*/5000);
  CycleResult result = Run(At(10));  // even with the clock behind the pods
  ASSERT_TRUE(result.decisions[0].plan.placed()) << result.decisions[0].plan.reason;
  EXPECT_EQ(result.decisions[0].plan.assignments.size(), 2u);
}

TEST_F(CycleTest, CompleteGroupIsPlannedAtOnce) {
  ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("n").Gpus(8).Build()).ok());
  GroupSpec spec = MakeSpec({GroupRole{"worker", 2, 4, 0}}, 3600);
  AddMembers("job", spec, "worker", 0, 4, 1, 1000);
  CycleResult result = Run(At(1000));
  ASSERT_TRUE(result.decisions[0].plan.placed());
  EXPECT_EQ(result.decisions[0].plan.assignments.size(), 4u);
}

TEST_F(CycleTest, StartedGroupDoesNotWaitForDeletedSurplus) {
  ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("n").Gpus(8).Build()).ok());
  GroupSpec spec = MakeSpec({GroupRole{"worker", 2, 8, 0}}, 3600);
  // Workers 0 and 2 run; worker 1 was recreated after a failure; 3..7 were
  // surplus and deleted long ago.
  ASSERT_TRUE(snapshot_
                  .AddPod(PodBuilder("job-worker-0")
                              .Member("job", "worker", 0)
                              .Spec(spec)
                              .Gpus(1)
                              .OnNode("n")
                              .Build())
                  .ok());
  ASSERT_TRUE(snapshot_
                  .AddPod(PodBuilder("job-worker-2")
                              .Member("job", "worker", 2)
                              .Spec(spec)
                              .Gpus(1)
                              .OnNode("n")
                              .Build())
                  .ok());
  AddMembers("job", spec, "worker", 1, 1, 1, 5000);
  CycleResult result = Run(At(5000));
  ASSERT_TRUE(result.decisions[0].plan.placed()) << result.decisions[0].plan.reason;
  ASSERT_EQ(result.decisions[0].plan.assignments.size(), 1u);
  EXPECT_EQ(result.decisions[0].plan.assignments[0].pod->name, "job-worker-1");
  EXPECT_EQ(result.decisions[0].group.bound.size(), 2u);
}

TEST_F(CycleTest, LonePodsAreGroupsOfOne) {
  ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("n").Gpus(1).Build()).ok());
  pods_.push_back(std::make_unique<PodInfo>(PodBuilder("solo").Gpus(1).Created(10).Build()));
  pods_.push_back(std::make_unique<PodInfo>(PodBuilder("second").Gpus(1).Created(20).Build()));
  CycleResult result = Run(At(100));
  ASSERT_EQ(result.decisions.size(), 2u);
  EXPECT_EQ(result.decisions[0].group.name, "solo");
  EXPECT_TRUE(result.decisions[0].plan.placed());
  EXPECT_EQ(result.decisions[0].plan.assignments[0].node_name, "n");
  EXPECT_EQ(result.decisions[1].plan.outcome, PlanOutcome::kWait);
}

TEST_F(CycleTest, BadAnnotationMakesTheGroupInvalid) {
  ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("n").Gpus(8).Build()).ok());
  PodInfo broken = PodBuilder("job-w-0").Member("job", "w", 0).Build();
  broken.group_spec_error = "roles: at least one role is required";
  pods_.push_back(std::make_unique<PodInfo>(broken));
  pods_.push_back(
      std::make_unique<PodInfo>(PodBuilder("other-w-0").Member("other", "w", 0).Build()));
  CycleResult result = Run(At(0));
  const GroupDecision* job = Find(result, "job");
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(job->plan.outcome, PlanOutcome::kInvalid);
  EXPECT_EQ(job->plan.reason,
            "pod job-w-0: bad group-spec annotation: roles: at least one role is required");
  const GroupDecision* other = Find(result, "other");
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->plan.outcome, PlanOutcome::kInvalid);
  EXPECT_THAT(other->plan.reason, HasSubstr("no group-spec annotation"));
  EXPECT_EQ(snapshot_.pod_count(), 0u);
}

TEST_F(CycleTest, BuildGroupsCollectsMembersAndSkipsBoundPods) {
  ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("n").Build()).ok());
  GroupSpec spec = MakeSpec({GroupRole{"w", 1, 3, 0}});
  ASSERT_TRUE(
      snapshot_.AddPod(PodBuilder("a-w-0").Member("a", "w", 0).Spec(spec).OnNode("n").Build())
          .ok());
  AddMembers("a", spec, "w", 1, 2, 0, 50, 5);
  AddMembers("b", spec, "w", 0, 3, 0, 10);
  pods_.push_back(
      std::make_unique<PodInfo>(PodBuilder("a-w-9").Member("a", "w", 9).OnNode("n").Build()));
  pods_.push_back(
      std::make_unique<PodInfo>(PodBuilder("done").Member("b", "w", 7).Phase("Failed").Build()));
  std::vector<const PodInfo*> pending = Pending();
  std::vector<PodGroup> groups = BuildGroups(pending, snapshot_);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].name, "a");  // priority 5 first
  EXPECT_EQ(groups[0].priority, 5);
  EXPECT_EQ(groups[0].pending.size(), 2u);
  EXPECT_EQ(groups[0].bound.size(), 1u);
  EXPECT_EQ(groups[0].spec, spec);
  EXPECT_EQ(groups[1].name, "b");
  EXPECT_EQ(groups[1].pending.size(), 3u);
  EXPECT_EQ(groups[1].creation_time, At(10));
  EXPECT_TRUE(groups[1].bound.empty());
}

TEST_F(CycleTest, MissingMembersDescribesEveryRole) {
  PodGroup group;
  group.spec = MakeSpec({GroupRole{"ps", 1, 2, 0}, GroupRole{"worker", 1, 3, 0}});
  PodInfo ps0 = PodBuilder("ps0").Member("j", "ps", 0).Build();
  PodInfo w0 = PodBuilder("w0").Member("j", "worker", 0).Build();
  PodInfo w0_again = PodBuilder("w0b").Member("j", "worker", 0).Build();  // same index
  PodInfo w9 = PodBuilder("w9").Member("j", "worker", 9).Build();         // beyond max
  group.pending = {&ps0, &w0, &w0_again, &w9};
  EXPECT_EQ(MissingMembers(group), "ps has 1 of 2 member pods, worker has 1 of 3 member pods");
  PodInfo ps1 = PodBuilder("ps1").Member("j", "ps", 1).Build();
  PodInfo w1 = PodBuilder("w1").Member("j", "worker", 1).Build();
  PodInfo w2 = PodBuilder("w2").Member("j", "worker", 2).Build();
  group.pending = {&ps0, &ps1, &w0, &w1, &w2};
  EXPECT_EQ(MissingMembers(group), "");
  // Members that succeeded never get a pod again: they are not missing.
  group.spec.roles[1].completed = {0, 2};
  group.pending = {&ps0, &ps1, &w1};
  EXPECT_EQ(MissingMembers(group), "");
}

TEST_F(CycleTest, GroupOrder) {
  PodGroup a;
  a.name = "a";
  a.priority = 1;
  a.creation_time = At(50);
  PodGroup b = a;
  b.name = "b";
  b.creation_time = At(10);
  PodGroup c = a;
  c.name = "c";
  c.priority = 2;
  c.creation_time = At(99);
  std::vector<PodGroup> groups = {a, b, c};
  SortGroups(groups);
  EXPECT_EQ(groups[0].name, "c");
  EXPECT_EQ(groups[1].name, "b");
  EXPECT_EQ(groups[2].name, "a");
  EXPECT_TRUE(GroupGoesFirst(b, a));
  EXPECT_FALSE(GroupGoesFirst(a, a));
}

TEST_F(CycleTest, ManyGroupsFillTheClusterWithoutOvercommitting) {
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(snapshot_.UpsertNode(NodeBuilder("n" + std::to_string(i)).Gpus(8).Build()).ok());
  }
  GroupSpec spec = MakeSpec({GroupRole{"worker", 4, 6, 0}});
  for (int g = 0; g < 20; ++g) {
    AddMembers("job" + std::to_string(100 + g), spec, "worker", 0, 6, 1, g);
  }
  CycleResult result = Run(At(1000));
  int placed_pods = 0;
  int placed_groups = 0;
  for (const GroupDecision& decision : result.decisions) {
    if (decision.plan.placed()) {
      ++placed_groups;
      placed_pods += static_cast<int>(decision.plan.assignments.size());
      EXPECT_GE(decision.plan.assignments.size(), 4u);
    } else {
      EXPECT_TRUE(decision.plan.assignments.empty());
    }
  }
  // 80 GPUs: thirteen groups at their maximum of 6; the 2 GPUs left cannot
  // hold another group's minimum of 4, so the rest wait and hold nothing.
  EXPECT_EQ(placed_groups, 13);
  EXPECT_EQ(placed_pods, 78);
  int64_t used = 0;
  for (const NodeState& node : snapshot_.slots()) {
    EXPECT_LE(node.requested.Scalar("nvidia.com/gpu"), 8) << node.info.name;
    used += node.requested.Scalar("nvidia.com/gpu");
  }
  EXPECT_EQ(used, 78);
  for (size_t i = 0; i < result.decisions.size(); ++i) {
    EXPECT_EQ(result.decisions[i].plan.placed(), i < 13) << i;  // oldest first
  }
}

}  // namespace
}  // namespace hybridjob::scheduler
