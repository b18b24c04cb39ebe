#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/preemption.h>

#include "policy_fixture.h"

namespace hybridjob::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::Queue;
using testing::QueueSpecFor;
using ::testing::UnorderedElementsAre;

class PreemptionTest : public testing::PolicyTest {
 protected:
  PreemptionTest() {
    policy_.preemption.enabled = true;
    policy_.reclaim.enabled = false;  // preemption alone, unless a test turns reclaim on
  }

  GroupSpec Elastic(int32_t min, int32_t max, const std::string& queue = "default") {
    return QueueSpecFor(queue, {GroupRole{"worker", min, max, 0}});
  }
  GroupSpec Rigid(int32_t count, const std::string& queue = "default") {
    return QueueSpecFor(queue, {GroupRole{"worker", count, count, 0}});
  }

  // Victims by group, in the order evicted.
  static std::map<std::string, std::vector<std::string>> ByGroup(const PolicyCycleResult& result) {
    std::map<std::string, std::vector<std::string>> out;
    for (const Eviction& eviction : result.evictions) {
      out[eviction.victim_group].push_back(eviction.name);
    }
    return out;
  }
};

TEST_F(PreemptionTest, OffByDefault) {
  AddNodes("n", 1, 8);
  policy_ = PolicyConfig{};
  policy_.starvation.max_wait_seconds = 0;
  AddRunning("low", Rigid(8), "worker", 0, 8, 1, "n0", /*priority=*/1);
  AddPending("vip", Rigid(2), "worker", 0, 2, 1, 0, /*priority=*/10);
  PolicyCycleResult result = Run();
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_EQ(Find(result, "vip")->cause, WaitCause::kNoCapacity);
}

TEST_F(PreemptionTest, AGroupWhoseEvictionWasRefusedIsNotPreemptedDuringTheBackOff) {
  AddNodes("n", 1, 8);
  AddRunning("low", Rigid(8), "worker", 0, 8, 1, "n0", /*priority=*/1);
  AddPending("vip", Rigid(2), "worker", 0, 2, 1, 0, /*priority=*/10);
  PolicyCycleResult result = Run(testing::At(1000));
  ASSERT_EQ(result.evictions.size(), 8u);
  for (const Eviction& eviction : result.evictions) {
    RecordRefusedEviction(state_, eviction, policy_, testing::At(1000));
  }
  result = Run(testing::At(1001));
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_EQ(Find(result, "vip")->cause, WaitCause::kNoCapacity);
  EXPECT_EQ(Run(testing::At(1010)).evictions.size(), 8u);
}

// preemptionPolicy: Never (the PriorityClass's or the pod's): the group waits
// instead of preempting, whatever its priority; it may still be a victim.
TEST_F(PreemptionTest, AGroupThatMayNotPreemptWaits) {
  AddNodes("n", 1, 8);
  AddRunning("low", Rigid(8), "worker", 0, 8, 1, "n0", /*priority=*/1);
  AddPending("polite", Rigid(2), "worker", 0, 2, 1, 0, /*priority=*/10);
  for (const auto& pod : pods_) {
    pod->preempts = false;
  }
  PolicyCycleResult result = Run();
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_EQ(Find(result, "polite")->cause, WaitCause::kNoCapacity);

  AddPending("vip", Rigid(2), "worker", 0, 2, 1, 0, /*priority=*/10);
  result = Run();
  EXPECT_EQ(result.evictions.size(), 8u);
  EXPECT_EQ(result.evictions.front().for_group, "team/vip");
}

TEST_F(PreemptionTest, ElasticMembersOfLowerPriorityGoFirst) {
  AddNodes("n", 1, 8);
  AddRunning("el", Elastic(2, 4), "worker", 0, 4, 1, "n0", /*priority=*/1);
  AddRunning("gang", Rigid(4), "worker", 0, 4, 1, "n0", /*priority=*/1);
  AddPending("vip", Rigid(2), "worker", 0, 2, 1, 0, /*priority=*/10);
  PolicyCycleResult result = Run();
  EXPECT_THAT(Evicted(result), ElementsAre("el-worker-3", "el-worker-2"));
  for (const Eviction& eviction : result.evictions) {
    EXPECT_EQ(eviction.cause, EvictionCause::kPreemption);
  }
  EXPECT_EQ(result.evictions[0].message,
            "Preemption: making room for team/vip (queue default); team/el worker shrinks to 3 "
            "members (min 2)");
  EXPECT_EQ(Find(result, "vip")->cause, WaitCause::kEvicting);
}

TEST_F(PreemptionTest, AGangIsEvictedWholeNeverBelowItsMinimum) {
  AddNodes("n", 2, 4);
  AddRunning("el", Elastic(2, 4), "worker", 0, 4, 1, "n0", /*priority=*/5);
  // The gang spans both nodes; two members would be enough, all four go.
  AddRunning("gang", Rigid(4), "worker", 0, 2, 1, "n1", /*priority=*/1);
  ASSERT_TRUE(snapshot_.UpsertNode(testing::NodeBuilder("n2").Gpus(2).Build()).ok());
  AddRunning("gang", Rigid(4), "worker", 2, 2, 1, "n2", /*priority=*/1);
  AddRunning("other", Rigid(2), "worker", 0, 2, 1, "n1", /*priority=*/1);
  AddPending("vip", Rigid(1), "worker", 0, 1, 4, 0, /*priority=*/10);  // one 4-GPU member

  PolicyCycleResult result = Run();
  auto groups = ByGroup(result);
  // Elastic members free only two GPUs on n0: not enough for a 4-GPU member,
  // so whole gangs follow, lowest priority first (el, of priority 5, would
  // come last); the elastic victims then turn out unneeded.
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_THAT(groups["team/gang"], UnorderedElementsAre("gang-worker-0", "gang-worker-1",
                                                        "gang-worker-2", "gang-worker-3"));
  EXPECT_THAT(groups["team/other"], UnorderedElementsAre("other-worker-0", "other-worker-1"));
  EXPECT_EQ(result.evictions.front().message,
            "Preemption: making room for team/vip (queue default); team/gang is evicted whole "
            "(priority 1 < 10)");
}

TEST_F(PreemptionTest, EqualOrHigherPriorityIsNeverAVictim) {
  AddNodes("n", 1, 8);
  AddRunning("peer", Rigid(4), "worker", 0, 4, 1, "n0", /*priority=*/10);
  AddRunning("boss", Elastic(1, 4), "worker", 0, 4, 1, "n0", /*priority=*/20);
  AddPending("vip", Rigid(2), "worker", 0, 2, 1, 0, /*priority=*/10);
  PolicyCycleResult result = Run();
  EXPECT_THAT(result.evictions, IsEmpty());
}

TEST_F(PreemptionTest, LowestPriorityThenYoungestGangGoesFirst) {
  AddNodes("n", 3, 4);
  AddRunning("old", Rigid(4), "worker", 0, 4, 1, "n0", /*priority=*/1, /*created=*/100);
  AddRunning("young", Rigid(4), "worker", 0, 4, 1, "n1", /*priority=*/1, /*created=*/200);
  AddRunning("higher", Rigid(4), "worker", 0, 4, 1, "n2", /*priority=*/2, /*created=*/300);
  AddPending("vip", Rigid(4), "worker", 0, 4, 1, 0, /*priority=*/10);
  PolicyCycleResult result = Run();
  auto groups = ByGroup(result);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups.begin()->first, "team/young");

  std::vector<VictimUnit> candidates;
  RunningGroups running = RunningGroups::FromSnapshot(snapshot_, policy_, {});
  FairShare share = FairShare::FromSnapshot(snapshot_, QueueTable(std::vector<QueueSpec>{}),
                                            policy_, GpuResources());
  candidates = PreemptionCandidates(running, share, "team/vip", 10);
  std::vector<std::string> order;
  for (const VictimUnit& unit : candidates) {
    EXPECT_TRUE(unit.whole());
    order.push_back(running.groups()[unit.group].name);
  }
  EXPECT_THAT(order, ElementsAre("young", "old", "higher"));
}

TEST_F(PreemptionTest, NeverTakesAQueueBelowItsGuarantee) {
  AddNodes("n", 1, 8);
  policy_.queues = {Queue("a"), Queue("b", 1.0, /*guaranteed=*/8)};
  AddRunning("low", Rigid(8, "b"), "worker", 0, 8, 1, "n0", /*priority=*/1);
  AddPending("vip", Rigid(2, "a"), "worker", 0, 2, 1, 0, /*priority=*/10);
  PolicyCycleResult result = Run();
  EXPECT_THAT(result.evictions, IsEmpty());
  EXPECT_EQ(Find(result, "vip")->cause, WaitCause::kNoCapacity);
}

TEST_F(PreemptionTest, PreemptionWithinOneQueueKeepsTheQueuesGuaranteeNet) {
  // The victim's queue is the preemptor's: it loses the gang but gains the
  // preemptor, so it stays at its guarantee.
  AddNodes("n", 1, 8);
  policy_.queues = {Queue("a", 1.0, /*guaranteed=*/8)};
  AddRunning("low", Rigid(8, "a"), "worker", 0, 8, 1, "n0", /*priority=*/1);
  AddPending("vip", Rigid(8, "a"), "worker", 0, 8, 1, 0, /*priority=*/10);
  PolicyCycleResult result = Run();
  EXPECT_EQ(result.evictions.size(), 8u);
}

TEST_F(PreemptionTest, ReclaimIsTriedBeforePreemption) {
  AddNodes("n", 1, 8);
  policy_.reclaim.enabled = true;
  policy_.queues = {Queue("a"), Queue("b")};
  AddRunning("el", Elastic(2, 4, "b"), "worker", 0, 4, 1, "n0", /*priority=*/50);
  AddRunning("gang", Rigid(4, "b"), "worker", 0, 4, 1, "n0", /*priority=*/1);
  AddPending("vip", Rigid(4, "a"), "worker", 0, 4, 1, 0, /*priority=*/10);
  PolicyCycleResult result = Run();
  // Reclaim takes el's two elastic members (queue b is over a's share), then
  // preemption the lower-priority gang; el's members are then not needed.
  auto groups = ByGroup(result);
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(groups.begin()->first, "team/gang");
  EXPECT_EQ(result.evictions.front().cause, EvictionCause::kPreemption);

  // With a smaller need, reclaim alone is enough.
  state_ = {};
  Forget("vip-worker-0");
  Forget("vip-worker-1");
  Forget("vip-worker-2");
  Forget("vip-worker-3");
  AddPending("small", Rigid(2, "a"), "worker", 0, 2, 1, 0, /*priority=*/10);
  result = Run();
  EXPECT_THAT(Evicted(result), ElementsAre("el-worker-3", "el-worker-2"));
  EXPECT_EQ(result.evictions.front().cause, EvictionCause::kReclaim);
}

TEST_F(PreemptionTest, ARackBoundGangPreemptsOnlyInsideOneRack) {
  const std::string rack = "example.com/rack";
  planner_.topology_levels = {rack};
  for (const char* name : {"r0-n0", "r0-n1", "r1-n0", "r1-n1"}) {
    ASSERT_TRUE(
        snapshot_
            .UpsertNode(
                testing::NodeBuilder(name).Gpus(4).Label(rack, std::string(name, 2)).Build())
            .ok());
  }
  // r1 is full with the newest low-priority gang, which preemption would
  // take first; r0 has 6 GPUs free and an older 2-GPU gang.
  AddRunning("older", Rigid(2), "worker", 0, 2, 1, "r0-n0", /*priority=*/1, /*created=*/100);
  AddRunning("newer", Rigid(4), "worker", 0, 4, 1, "r1-n0", /*priority=*/1, /*created=*/200);
  AddRunning("newer", Rigid(4), "worker", 4, 4, 1, "r1-n1", /*priority=*/1, /*created=*/200);
  GroupSpec vip = Rigid(8);
  vip.topology = api::TopologySpec{rack, api::TopologyMode::kRequired};
  AddPending("vip", vip, "worker", 0, 8, 1, 300, /*priority=*/10);
  PolicyCycleResult result = Run(testing::At(1000));
  EXPECT_THAT(Evicted(result), UnorderedElementsAre("older-worker-0", "older-worker-1"));
  EXPECT_THAT(Find(result, "vip")->plan.reason, ::testing::HasSubstr("in example.com/rack=r0"));
}

}  // namespace
}  // namespace hybridjob::scheduler
