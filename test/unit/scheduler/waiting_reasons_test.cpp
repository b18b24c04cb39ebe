// The waiting reason codes users read (api/waiting.h), each from a snapshot
// that produces it, and the groups' places in their queues' lines.
#include <memory>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/waiting.h>
#include <hybridjob/scheduler/core/policy_cycle.h>

#include "policy_fixture.h"

namespace hybridjob::scheduler {
namespace {

using testing::At;
using ::testing::HasSubstr;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::Queue;
using testing::QueueSpecFor;

class WaitingReasonTest : public testing::PolicyTest {
 protected:
  const PolicyDecision& Decision(const PolicyCycleResult& result, const std::string& name) {
    const PolicyDecision* decision = Find(result, name);
    EXPECT_NE(decision, nullptr) << name;
    static const PolicyDecision kNone;
    return decision != nullptr ? *decision : kNone;
  }
};

TEST_F(WaitingReasonTest, CapacityFragmentsAndNeverAreToldApart) {
  AddNodes("n", 2, 4);
  AddRunning("busy", QueueSpecFor("default", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 3, "n0");
  // Free: 1 GPU on n0, 4 on n1.
  policy_.reclaim.enabled = false;
  AddPending("short", QueueSpecFor("default", {GroupRole{"w", 3, 3, 0}}), "w", 0, 3, 2, 100);
  AddPending("pieces", QueueSpecFor("default", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 5, 200);
  AddPending("never", QueueSpecFor("default", {GroupRole{"w", 3, 3, 0}}), "w", 0, 3, 3, 300);

  PolicyCycleResult result = Run();
  EXPECT_EQ(Decision(result, "short").waiting_reason, api::kReasonInsufficientCapacity);
  EXPECT_EQ(Decision(result, "pieces").waiting_reason, api::kReasonNeverFits)
      << "a 5-GPU member on 4-GPU nodes";
  EXPECT_EQ(Decision(result, "never").waiting_reason, api::kReasonNeverFits);
  EXPECT_THAT(Decision(result, "never").plan.reason,
              HasSubstr("never fits: w needs 3 more members"));
}

TEST_F(WaitingReasonTest, EnoughFreeInPiecesNoMemberFitsIsFragmented) {
  AddNodes("n", 2, 4);
  AddRunning("busy", QueueSpecFor("default", {GroupRole{"w", 2, 2, 0}}), "w", 0, 1, 3, "n0");
  AddRunning("busy", QueueSpecFor("default", {GroupRole{"w", 2, 2, 0}}), "w", 1, 1, 1, "n1");
  policy_.reclaim.enabled = false;
  // 4 GPUs free, as 1 and 3: a pair of 2-GPU members needs both whole.
  AddPending("pair", QueueSpecFor("default", {GroupRole{"w", 2, 2, 0}}), "w", 0, 2, 2);
  PolicyCycleResult result = Run();
  EXPECT_EQ(Decision(result, "pair").waiting_reason, api::kReasonFragmented)
      << Decision(result, "pair").plan.reason;
}

TEST_F(WaitingReasonTest, PositionsFollowTheQueuesLineAndSkipWhatIsNotInIt) {
  AddNodes("n", 1, 2);
  policy_.queues = {Queue("a"), Queue("b")};
  policy_.reclaim.enabled = false;
  AddRunning("busy", QueueSpecFor("b", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 2, "n0");
  AddPending("old", QueueSpecFor("a", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 1, 100);
  AddPending("young", QueueSpecFor("a", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 1, 300);
  AddPending("urgent", QueueSpecFor("a", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 1, 400,
             /*priority=*/10);
  AddPending("other", QueueSpecFor("b", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 1, 200);
  // Assembling (2 of 3 members within its timeout): not in line yet.
  AddPending("forming", QueueSpecFor("a", {GroupRole{"w", 3, 3, 0}}, /*timeout=*/600), "w", 0, 2, 1,
             900);

  PolicyCycleResult result = Run(At(1000));
  EXPECT_EQ(Decision(result, "urgent").queue_position, 1);  // higher priority first
  EXPECT_EQ(Decision(result, "old").queue_position, 2);
  EXPECT_EQ(Decision(result, "young").queue_position, 3);
  EXPECT_EQ(Decision(result, "other").queue_position, 1);  // its own queue's line
  EXPECT_EQ(Decision(result, "forming").queue_position, 0);
  EXPECT_EQ(Decision(result, "forming").waiting_reason, "");
  EXPECT_EQ(Decision(result, "old").waiting_reason, api::kReasonInsufficientCapacity);

  // The line moves up as the head starts.
  ASSERT_TRUE(snapshot_.RemovePod("team", "busy-w-0").ok());
  result = Run(At(1001));
  EXPECT_TRUE(Decision(result, "urgent").plan.placed());
  EXPECT_EQ(Decision(result, "urgent").queue_position, 0);
  EXPECT_EQ(Decision(result, "urgent").waiting_reason, "");
  EXPECT_TRUE(Decision(result, "other").plan.placed());
  EXPECT_EQ(Decision(result, "old").queue_position, 1);
  EXPECT_EQ(Decision(result, "young").queue_position, 2);
}

TEST_F(WaitingReasonTest, QueueRulesHaveTheirOwnCodes) {
  AddNodes("n", 1, 8);
  QueueSpec capped = Queue("capped", 1.0, 0, /*max_gpus=*/2);
  QueueSpec closed = Queue("closed");
  closed.namespaces = {"elsewhere"};
  QueueSpec strict = Queue("strict");
  strict.order = QueueOrder::kStrictFifo;
  QueueSpec child = Queue("child");
  child.parent = "parent";
  policy_.queues = {capped, closed, strict, Queue("parent"), child};
  policy_.reclaim.enabled = false;
  AddPending("over", QueueSpecFor("capped", {GroupRole{"w", 3, 3, 0}}), "w", 0, 3, 1);
  AddPending("refused", QueueSpecFor("closed", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 1);
  AddPending("head", QueueSpecFor("strict", {GroupRole{"w", 2, 2, 0}}), "w", 0, 2, 8, 100);
  AddPending("behind", QueueSpecFor("strict", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 1, 200);
  AddPending("lost", QueueSpecFor("nowhere", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 1);
  AddPending("upper", QueueSpecFor("parent", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 1);

  PolicyCycleResult result = Run();
  EXPECT_EQ(Decision(result, "over").waiting_reason, api::kReasonQueueLimit);
  EXPECT_EQ(Decision(result, "over").queue_position, 1);
  EXPECT_EQ(Decision(result, "refused").waiting_reason, api::kReasonNotAllowedInQueue);
  EXPECT_EQ(Decision(result, "refused").queue_position, 0);
  // A StrictFIFO head that can never start is not counted in the line and
  // does not hold it up.
  EXPECT_EQ(Decision(result, "head").waiting_reason, api::kReasonNeverFits);
  EXPECT_EQ(Decision(result, "head").queue_position, 0);
  EXPECT_TRUE(Decision(result, "behind").plan.placed());
  EXPECT_EQ(Decision(result, "lost").waiting_reason, api::kReasonUnknownQueue);
  EXPECT_EQ(Decision(result, "upper").waiting_reason, api::kReasonParentQueue);
}

TEST_F(WaitingReasonTest, ARequiredRackWithoutRoomAndClaimsWithoutVolumes) {
  planner_.topology_levels = {"example.com/rack"};
  for (const char* name : {"r0-n0", "r0-n1", "r1-n0", "r1-n1"}) {
    ASSERT_TRUE(snapshot_
                    .UpsertNode(NodeBuilder(name)
                                    .Gpus(4)
                                    .Label("example.com/rack", std::string(name).substr(0, 2))
                                    .Build())
                    .ok());
  }
  policy_.reclaim.enabled = false;
  AddRunning("busy", QueueSpecFor("default", {GroupRole{"w", 2, 2, 0}}), "w", 0, 1, 1, "r0-n0");
  AddRunning("busy", QueueSpecFor("default", {GroupRole{"w", 2, 2, 0}}), "w", 1, 1, 1, "r1-n0");
  // 7 GPUs free in each rack, 14 in all: 8 in one rack is not there now.
  GroupSpec racked = QueueSpecFor("default", {GroupRole{"w", 2, 2, 0}});
  racked.topology = api::TopologySpec{"example.com/rack", api::TopologyMode::kRequired};
  AddPending("racked", racked, "w", 0, 2, 4);
  // A claim nobody made: nodes have room, the member gets no volume.
  snapshot_.storage().set_tracked(true);
  AddPending("stored", QueueSpecFor("default", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 1);
  pods_.back()->claims = {"nowhere"};

  PolicyCycleResult result = Run();
  EXPECT_EQ(Decision(result, "racked").waiting_reason, api::kReasonTopologyUnsatisfiable)
      << Decision(result, "racked").plan.reason;
  EXPECT_EQ(Decision(result, "stored").waiting_reason, api::kReasonWaitingForVolumes)
      << Decision(result, "stored").plan.reason;
}

TEST_F(WaitingReasonTest, GatedUnsupportedAndInvalidGroups) {
  AddNodes("n", 1, 8);
  AddPending("gated", QueueSpecFor("default", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 1);
  pods_.back()->scheduling_gates = {"example.com/admission"};
  AddPending("dra", QueueSpecFor("default", {GroupRole{"w", 1, 1, 0}}), "w", 0, 1, 1);
  pods_.back()->resource_claims = {"gpu-claim"};
  pods_.push_back(std::make_unique<PodInfo>(
      PodBuilder("broken-worker-0").Member("broken", "worker", 0).Build()));

  PolicyCycleResult result = Run();
  EXPECT_EQ(Decision(result, "gated").waiting_reason, api::kReasonGated);
  EXPECT_EQ(Decision(result, "gated").queue_position, 0);
  EXPECT_EQ(Decision(result, "dra").waiting_reason, api::kReasonUnsupported);
  EXPECT_EQ(Decision(result, "broken").waiting_reason, api::kInvalidGroupReason);
}

TEST_F(WaitingReasonTest, RunningGroupsThatCannotGrowAreNotWaiting) {
  AddNodes("n", 1, 2);
  AddRunning("el", QueueSpecFor("default", {GroupRole{"w", 1, 4, 0}}), "w", 0, 2, 1, "n0");
  AddPending("el", QueueSpecFor("default", {GroupRole{"w", 1, 4, 0}}), "w", 2, 2, 1);
  PolicyCycleResult result = Run();
  EXPECT_EQ(Decision(result, "el").waiting_reason, "");
  EXPECT_EQ(Decision(result, "el").queue_position, 0);
}

TEST(WaitingReasonCodeTest, EveryCauseAndShortfallHasItsCode) {
  auto code = [](WaitCause cause, Shortfall shortfall = Shortfall::kCapacity, bool holds = false,
                 bool behind = false) {
    return std::string(WaitingReasonCode(cause, shortfall, holds, behind));
  };
  EXPECT_EQ(code(WaitCause::kNone), "");
  EXPECT_EQ(code(WaitCause::kAssembling), "");
  EXPECT_EQ(code(WaitCause::kGrowthDeferred), "");
  EXPECT_EQ(code(WaitCause::kNoRoomToGrow), "");
  EXPECT_EQ(code(WaitCause::kInvalid), "InvalidGroup");
  EXPECT_EQ(code(WaitCause::kUnknownQueue), "UnknownQueue");
  EXPECT_EQ(code(WaitCause::kNotLeafQueue), "ParentQueue");
  EXPECT_EQ(code(WaitCause::kNotAllowedInQueue), "NotAllowedInQueue");
  EXPECT_EQ(code(WaitCause::kSchedulingGated), "Gated");
  EXPECT_EQ(code(WaitCause::kUnsupported), "UnsupportedResourceClaims");
  EXPECT_EQ(code(WaitCause::kOverQueueMax), "QueueLimit");
  EXPECT_EQ(code(WaitCause::kEvicting), "Evicting");
  EXPECT_EQ(code(WaitCause::kBehindQueueHead), "FairShareOrder");
  EXPECT_EQ(code(WaitCause::kNoCapacity, Shortfall::kCapacity), "InsufficientCapacity");
  EXPECT_EQ(code(WaitCause::kNoCapacity, Shortfall::kFragmented), "Fragmented");
  EXPECT_EQ(code(WaitCause::kNoCapacity, Shortfall::kNeverFits), "NeverFits");
  EXPECT_EQ(code(WaitCause::kNoCapacity, Shortfall::kTopology), "TopologyUnsatisfiable");
  EXPECT_EQ(code(WaitCause::kNoCapacity, Shortfall::kVolumes), "WaitingForVolumes");
  EXPECT_EQ(code(WaitCause::kNoCapacity, Shortfall::kMembers), "MembersMissing");
  EXPECT_EQ(code(WaitCause::kNoCapacity, Shortfall::kNone), "InsufficientCapacity");
  // Nodes drained for it, or held for others: the order, not the capacity,
  // is what it waits for; but never is never.
  EXPECT_EQ(code(WaitCause::kNoCapacity, Shortfall::kFragmented, true), "Reserved");
  EXPECT_EQ(code(WaitCause::kNoCapacity, Shortfall::kCapacity, false, true), "FairShareOrder");
  EXPECT_EQ(code(WaitCause::kNoCapacity, Shortfall::kNeverFits, true, true), "NeverFits");
}

}  // namespace
}  // namespace hybridjob::scheduler
