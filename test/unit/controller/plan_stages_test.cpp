// Single stages of the planner, each on a view built from a hand-made
// observation: what one stage decides, apart from the others.
#include "controller/plan_stages.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/names.h>
#include <hybridjob/controller/children.h>

#include "fake_cluster.h"
#include "job_fixtures.h"

namespace hybridjob::controller::plan {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// ps 1..1, worker 2..4 (TensorFlow); workers restart under `worker_policy`.
api::HybridJob TfJob(const std::string& worker_policy = "OnFailure") {
  json object = hybridjob::testing::TfJobJson();
  object["spec"]["replicaSpecs"][1]["restartPolicy"] = worker_policy;
  return hybridjob::testing::DefaultedJob(object);
}

// A member pod of `job`, bound and in `phase`.
ObservedPod MemberPod(const api::HybridJob& job, const std::string& role, int32_t index,
                      PodPhase phase) {
  ObservedPod pod;
  pod.name = api::MemberPodName(job.metadata.name, role, index);
  pod.uid = "uid-" + pod.name;
  pod.job_name = job.metadata.name;
  pod.role = role;
  pod.index = index;
  pod.controller_uid = job.metadata.uid;
  pod.phase = phase;
  pod.node_name = "node-1";
  return pod;
}

// ps-0 and workers 0 and 1, all running.
Observed PlacedGang(const api::HybridJob& job) {
  Observed observed;
  observed.pods = {MemberPod(job, "ps", 0, PodPhase::kRunning),
                   MemberPod(job, "worker", 0, PodPhase::kRunning),
                   MemberPod(job, "worker", 1, PodPhase::kRunning)};
  return observed;
}

// `observed` with its pod at `position` failed with `exit_code`.
Observed WithFailure(Observed observed, size_t position, int32_t exit_code) {
  observed.pods.at(position).phase = PodPhase::kFailed;
  observed.pods.at(position).exit_code = exit_code;
  return observed;
}

const Membership kPlaced{{{"ps", 1}, {"worker", 2}}};
const PlannerOptions kOptions;

std::vector<std::string> Deleted(const PlanBuilder& plan, const std::string& reason) {
  std::vector<std::string> names;
  for (const DeletePod& removal : plan.deletes) {
    if (removal.reason == reason) {
      names.push_back(removal.name);
    }
  }
  return names;
}

TEST(PlanMembershipTest, ReadsTheCommittedMembershipFromTheConfigMapAnnotation) {
  const api::HybridJob job = TfJob();
  const Membership committed{{{"ps", 1}, {"worker", 3}}};
  Observed observed;
  observed.config_maps.push_back(BuildClusterConfigMap(job, committed, PlannerOptions{}));
  const PlanView view = MakePlanView(job, observed, testing::T0(), kOptions);

  EXPECT_EQ(CommittedMembership(view), committed);
}

TEST(PlanMembershipTest, IgnoresTheConfigMapOfAnotherJob) {
  const api::HybridJob job = TfJob();
  Observed observed;
  json config_map = BuildClusterConfigMap(job, kPlaced, PlannerOptions{});
  config_map["metadata"]["ownerReferences"][0]["uid"] = "uid-of-a-previous-job";
  observed.config_maps.push_back(config_map);
  const PlanView view = MakePlanView(job, observed, testing::T0(), kOptions);

  EXPECT_EQ(CommittedMembership(view), std::nullopt);  // and no Scheduled status to fall back on
}

TEST(PlanMembershipTest, FollowsAnEvictionAndRestartsEveryTensorFlowMember) {
  const api::HybridJob job = TfJob();
  Observed observed = PlacedGang(job);
  observed.pods.push_back(MemberPod(job, "worker", 2, PodPhase::kRunning));
  observed.pods.back().reclaimed = true;
  const PlanView view = MakePlanView(job, observed, testing::T0(), kOptions);
  PlanBuilder plan = StartPlan(view);

  const Membership next = FollowScheduler(view, Membership{{{"ps", 1}, {"worker", 3}}}, plan);

  EXPECT_EQ(next, kPlaced);
  EXPECT_THAT(Deleted(plan, "membership"),
              ElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1"));
  EXPECT_THAT(plan.membership_restart, HasSubstr("worker 3 -> 2"));
  ASSERT_EQ(plan.membership_events.size(), 1u);
}

TEST(PlanLifecycleTest, ExitCodePolicyRestartsAMemberKilledBySignal) {
  const api::HybridJob job = TfJob("ExitCode");
  const Observed observed = WithFailure(PlacedGang(job), 2, 137);
  const PlanView view = MakePlanView(job, observed, testing::T0(), kOptions);
  PlanBuilder plan = StartPlan(view);

  EXPECT_EQ(HandleEndedMembers(view, kPlaced, plan), std::nullopt);

  EXPECT_THAT(Deleted(plan, "restart"), ElementsAre("mnist-worker-1"));
  ASSERT_EQ(plan.restarts.size(), 1u);
  EXPECT_EQ(plan.restarts[0].description, "failed with exit code 137");
  EXPECT_EQ(plan.status.restart_count, 1);
  EXPECT_EQ(plan.status.last_restart_time, view.now_text);
  EXPECT_EQ(plan.restarted_per_role["worker"], 1);
}

// Exit codes 1-127 are the program's own verdict: no restart helps.
TEST(PlanLifecycleTest, ExitCodePolicyFailsTheJobOnAnExitCodeBelow128) {
  for (int32_t exit_code : {1, 3, 127}) {
    SCOPED_TRACE(exit_code);
    const api::HybridJob job = TfJob("ExitCode");
    const Observed observed = WithFailure(PlacedGang(job), 2, exit_code);
    const PlanView view = MakePlanView(job, observed, testing::T0(), kOptions);
    PlanBuilder plan = StartPlan(view);

    std::optional<Terminal> end = HandleEndedMembers(view, kPlaced, plan);

    ASSERT_TRUE(end.has_value());
    EXPECT_EQ(end->phase, api::JobPhase::kFailed);
    EXPECT_EQ(end->reason, "MemberFailed");
    EXPECT_EQ(end->message, "member mnist-worker-1 failed with exit code " +
                                std::to_string(exit_code) +
                                "; role worker has restartPolicy ExitCode");
    EXPECT_THAT(plan.restarts, IsEmpty());
    EXPECT_THAT(plan.deletes, IsEmpty());
    EXPECT_EQ(plan.status.restart_count, 0);
  }
}

TEST(PlanLifecycleTest, RestartsBeyondTheBackoffLimitFailTheJob) {
  api::HybridJob job = TfJob();
  job.status.restart_count = job.spec.run_policy.backoff_limit;
  const Observed observed = WithFailure(PlacedGang(job), 1, 1);
  const PlanView view = MakePlanView(job, observed, testing::T0(), kOptions);
  PlanBuilder plan = StartPlan(view);

  std::optional<Terminal> end = HandleEndedMembers(view, kPlaced, plan);

  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->reason, "BackoffLimitExceeded");
  EXPECT_THAT(end->message, HasSubstr("member mnist-worker-0 failed with exit code 1"));
  EXPECT_THAT(plan.restarts, IsEmpty());
}

TEST(PlanStatusTest, ReadyMembersCountsRunningMembersAsThePlanLeavesThem) {
  const api::HybridJob job = TfJob();
  Observed observed = PlacedGang(job);
  observed.pods[2].phase = PodPhase::kPending;
  observed.pods.push_back(MemberPod(job, "worker", 2, PodPhase::kRunning));  // not a member
  const PlanView view = MakePlanView(job, observed, testing::T0(), kOptions);
  PlanBuilder plan = StartPlan(view);

  ComputeReadyMembers(view, kPlaced, plan);
  EXPECT_EQ(plan.status.ready_members, "2/3");

  plan.deletes.push_back({"mnist-worker-0", "uid-mnist-worker-0", "restart"});
  ComputeReadyMembers(view, kPlaced, plan);
  EXPECT_EQ(plan.status.ready_members, "1/3");
}

TEST(PlanStatusTest, PlacementIsWhatMostBoundMembersSayAndStaysWhenTheySayNothing) {
  api::HybridJob job = TfJob();
  job.status.placement = "example.com/rack=old";
  Observed observed = PlacedGang(job);
  const PlanView unannotated = MakePlanView(job, observed, testing::T0(), kOptions);
  PlanBuilder kept = StartPlan(unannotated);
  ComputePlacement(unannotated, kept);
  EXPECT_EQ(kept.status.placement, "example.com/rack=old") << "a finished job keeps telling";

  observed.pods[0].placement = "example.com/rack=r2";
  observed.pods[1].placement = "example.com/rack=r1";
  observed.pods[2].placement = "example.com/rack=r1";
  const PlanView view = MakePlanView(job, observed, testing::T0(), kOptions);
  PlanBuilder plan = StartPlan(view);
  ComputePlacement(view, plan);
  EXPECT_EQ(plan.status.placement, "example.com/rack=r1");

  ComputeActiveStatus(view, kPlaced, plan);
  const api::Condition* scheduled = plan.status.FindCondition(api::kConditionScheduled);
  ASSERT_NE(scheduled, nullptr);
  EXPECT_THAT(scheduled->message, HasSubstr(" in example.com/rack=r1"));
}

TEST(PlanStatusTest, ReadyMembersBeforePlacementExpectTheMinimum) {
  api::HybridJob job = TfJob();
  job.spec.replica_specs[1].min_replicas = 3;
  const Observed observed = PlacedGang(job);
  const PlanView view = MakePlanView(job, observed, testing::T0(), kOptions);
  PlanBuilder plan = StartPlan(view);

  ComputeReadyMembers(view, std::nullopt, plan);

  EXPECT_EQ(plan.status.ready_members, "0/4");  // running pods are no members yet
}

}  // namespace
}  // namespace hybridjob::controller::plan
