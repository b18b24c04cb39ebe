#include <chrono>

#include <gtest/gtest.h>

#include <hybridjob/controller/status_batch.h>

namespace hybridjob::controller {
namespace {

using api::JobPhase;
using namespace std::chrono_literals;

api::Condition MakeCondition(std::string_view type, bool value, std::string reason) {
  api::Condition condition;
  condition.type = std::string(type);
  condition.status = value ? "True" : "False";
  condition.reason = std::move(reason);
  return condition;
}

api::HybridJobStatus Queued(int32_t scheduled) {
  api::HybridJobStatus status;
  status.phase = JobPhase::kQueued;
  status.start_time = "2026-12-06T10:00:00Z";
  status.observed_generation = 1;
  status.conditions = {MakeCondition(api::kConditionCreated, true, "Created"),
                       MakeCondition(api::kConditionQueued, true, "Queued")};
  api::ReplicaStatus worker;
  worker.name = "worker";
  worker.active = 10;
  worker.scheduled = scheduled;
  status.replica_statuses = {worker};
  status.ready_members = "0/10";
  return status;
}

api::HybridJobStatus Running() {
  api::HybridJobStatus status = Queued(10);
  status.phase = JobPhase::kRunning;
  status.conditions.push_back(MakeCondition(api::kConditionRunning, true, "Running"));
  return status;
}

TEST(ReportsProgressOnlyTest, TheFirstRecordOfAWaitingJobIsProgress) {
  EXPECT_TRUE(ReportsProgressOnly(api::HybridJobStatus{}, Queued(0)));
  api::HybridJobStatus pending = Queued(0);
  pending.phase = JobPhase::kPending;
  EXPECT_TRUE(ReportsProgressOnly(api::HybridJobStatus{}, pending));
  EXPECT_TRUE(ReportsProgressOnly(pending, Queued(0))) << "Pending -> Queued";
}

TEST(ReportsProgressOnlyTest, CountsAndThePlaceInLineAreProgress) {
  EXPECT_TRUE(ReportsProgressOnly(Queued(0), Queued(8)));
  api::HybridJobStatus moved = Queued(0);
  moved.queue = api::QueueStanding{.name = "default", .position = 3, .reason = "Waiting"};
  EXPECT_TRUE(ReportsProgressOnly(Queued(0), moved));
  api::HybridJobStatus ready = Running();
  ready.ready_members = "10/10";
  EXPECT_TRUE(ReportsProgressOnly(Running(), ready)) << "counts of a running job";
}

TEST(ReportsProgressOnlyTest, AChangedMembershipIsWrittenAtOnce) {
  api::HybridJobStatus shrunk = Running();
  shrunk.replica_statuses[0].members = 6;
  EXPECT_FALSE(ReportsProgressOnly(Running(), shrunk));
}

TEST(ReportsProgressOnlyTest, PhasesBeyondWaitingAndOtherConditionsAreWrittenAtOnce) {
  EXPECT_FALSE(ReportsProgressOnly(Queued(8), Running()));
  EXPECT_FALSE(ReportsProgressOnly(api::HybridJobStatus{}, Running()));
  api::HybridJobStatus refused = Queued(0);
  refused.conditions.push_back(MakeCondition(api::kConditionReplicaFailure, true, "FailedCreate"));
  EXPECT_FALSE(ReportsProgressOnly(Queued(0), refused));
  EXPECT_FALSE(ReportsProgressOnly(api::HybridJobStatus{}, refused));
  api::HybridJobStatus failed = Running();
  failed.phase = JobPhase::kFailed;
  EXPECT_FALSE(ReportsProgressOnly(Running(), failed));
  api::HybridJobStatus restarting = Running();
  restarting.phase = JobPhase::kRestarting;
  EXPECT_FALSE(ReportsProgressOnly(Running(), restarting));
  api::HybridJobStatus requeued = Queued(0);
  EXPECT_FALSE(ReportsProgressOnly(restarting, requeued)) << "back to waiting after a restart";
  api::HybridJobStatus edited = Queued(0);
  edited.observed_generation = 2;
  EXPECT_FALSE(ReportsProgressOnly(Queued(0), edited)) << "a new generation observed";
}

class PendingStatusWritesTest : public ::testing::Test {
 protected:
  using Clock = PendingStatusWrites::Clock;
  PendingStatusWrites writes_{1s};
  Clock::time_point t0_ = Clock::time_point{} + 1h;
};

TEST_F(PendingStatusWritesTest, ProgressWaitsAndGoesOutWithTheNextChangeThatMatters) {
  auto first = writes_.Decide("ns/a", "u1", {}, Queued(0), t0_);
  EXPECT_FALSE(first.write);
  ASSERT_TRUE(first.recheck.has_value());
  EXPECT_EQ(*first.recheck, 5s) << "a first record the scheduler has said nothing about";
  ASSERT_TRUE(writes_.Pending("ns/a", "u1").has_value());
  EXPECT_EQ(*writes_.Pending("ns/a", "u1"), Queued(0)) << "the next pass builds on it";
  EXPECT_FALSE(writes_.Pending("ns/a", "u2").has_value()) << "another job of that name";

  auto bound = writes_.Decide("ns/a", "u1", {}, Queued(8), t0_ + 300ms);
  EXPECT_FALSE(bound.write);
  ASSERT_TRUE(bound.recheck.has_value());
  EXPECT_EQ(*bound.recheck, 4700ms) << "due after the oldest unwritten change";

  auto running = writes_.Decide("ns/a", "u1", {}, Running(), t0_ + 600ms);
  EXPECT_TRUE(running.write);
  EXPECT_EQ(running.status, Running());
  EXPECT_FALSE(running.recheck.has_value());
  EXPECT_FALSE(writes_.Pending("ns/a", "u1").has_value());
  EXPECT_EQ(writes_.Size(), 0u);
}

TEST_F(PendingStatusWritesTest, WhatIsStillPendingIsWrittenWhenDue) {
  (void)writes_.Decide("ns/a", "u1", Queued(0), Queued(2), t0_);
  auto early = writes_.Decide("ns/a", "u1", Queued(0), std::nullopt, t0_ + 900ms);
  EXPECT_FALSE(early.write);
  auto due = writes_.Decide("ns/a", "u1", Queued(0), std::nullopt, t0_ + 1s);
  EXPECT_TRUE(due.write);
  EXPECT_EQ(due.status, Queued(2));
  EXPECT_FALSE(writes_.Decide("ns/a", "u1", Queued(2), std::nullopt, t0_ + 2s).write);
}

// A job's first record waits longer until the gang scheduler says where it
// stands; then its Queued goes out within the period.
TEST_F(PendingStatusWritesTest, AFirstRecordWaitsForTheSchedulersWordOrFivePeriods) {
  (void)writes_.Decide("ns/a", "u1", {}, Queued(0), t0_);
  EXPECT_FALSE(writes_.Decide("ns/a", "u1", {}, std::nullopt, t0_ + 2s).write);
  api::HybridJobStatus standing = Queued(0);
  standing.queue = api::QueueStanding{.name = "default", .position = 2, .reason = "Waiting"};
  auto said = writes_.Decide("ns/a", "u1", {}, standing, t0_ + 2s);
  EXPECT_TRUE(said.write) << "due a period after the first change, long past";
  EXPECT_EQ(said.status, standing);

  (void)writes_.Decide("ns/b", "u2", {}, Queued(0), t0_);
  EXPECT_FALSE(writes_.Decide("ns/b", "u2", {}, std::nullopt, t0_ + 4900ms).write);
  EXPECT_TRUE(writes_.Decide("ns/b", "u2", {}, std::nullopt, t0_ + 5s).write);
}

TEST_F(PendingStatusWritesTest, ABackToWrittenStatusCancelsThePendingOne) {
  (void)writes_.Decide("ns/a", "u1", Queued(0), Queued(3), t0_);
  auto back = writes_.Decide("ns/a", "u1", Queued(0), Queued(0), t0_ + 100ms);
  EXPECT_FALSE(back.write);
  EXPECT_FALSE(back.recheck.has_value());
  EXPECT_EQ(writes_.Size(), 0u);
}

TEST_F(PendingStatusWritesTest, AFailedWriteStaysPendingAndIsDueAtOnce) {
  writes_.WriteFailed("ns/a", "u1", Running(), t0_);
  ASSERT_TRUE(writes_.Pending("ns/a", "u1").has_value());
  auto retry = writes_.Decide("ns/a", "u1", Queued(0), std::nullopt, t0_);
  EXPECT_TRUE(retry.write);
  EXPECT_EQ(retry.status, Running());
}

TEST_F(PendingStatusWritesTest, ANewJobOfTheSameNameStartsAfresh) {
  (void)writes_.Decide("ns/a", "u1", {}, Queued(0), t0_);
  auto other = writes_.Decide("ns/a", "u2", {}, std::nullopt, t0_ + 2s);
  EXPECT_FALSE(other.write) << "the old job's status is not the new one's";
  EXPECT_EQ(writes_.Size(), 0u);
}

TEST(PendingStatusWritesNoBatchTest, AZeroPeriodWritesEveryChange) {
  PendingStatusWrites writes(PendingStatusWrites::Clock::duration::zero());
  auto first = writes.Decide("ns/a", "u1", {}, Queued(0), PendingStatusWrites::Clock::now());
  EXPECT_TRUE(first.write);
  EXPECT_EQ(writes.Size(), 0u);
}

}  // namespace
}  // namespace hybridjob::controller
