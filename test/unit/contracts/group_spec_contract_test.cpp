// The group-spec annotation end to end, without a server: what the controller
// writes on a member is what the gang-scheduler reads from it, for jobs that
// set every field the annotation carries and for jobs that set none.
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/group_spec.h>
#include <hybridjob/api/json.h>
#include <hybridjob/api/labels.h>
#include <hybridjob/controller/children.h>
#include <hybridjob/controller/options.h>
#include <hybridjob/scheduler/core/tenancy.h>
#include <hybridjob/scheduler/objects/objects.h>

#include "job_fixtures.h"

namespace hybridjob {
namespace {

using nlohmann::json;

// The member pod as the API server would hand it to the scheduler: the
// controller's object plus what the server fills in.
scheduler::PodInfo MemberAsTheSchedulerSeesIt(const api::HybridJob& job, size_t role,
                                              int32_t index) {
  json pod = controller::BuildMemberPod(job, job.spec.replica_specs[role], index,
                                        controller::PlannerOptions{});
  pod["metadata"]["uid"] = "pod-uid-" + std::to_string(role) + "-" + std::to_string(index);
  pod["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
  Result<scheduler::PodInfo> parsed = scheduler::ParsePod(pod);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return parsed.ok() ? *parsed : scheduler::PodInfo{};
}

struct Variant {
  const char* name;
  json spec_changes;
};

class GroupSpecContractTest : public ::testing::TestWithParam<Variant> {};

TEST_P(GroupSpecContractTest, TheSchedulerReadsWhatTheControllerWrote) {
  json object = hybridjob::testing::TfJobJson();
  object["spec"].merge_patch(GetParam().spec_changes);
  const api::HybridJob job = hybridjob::testing::DefaultedJob(object);
  const api::GroupSpec written = api::GroupSpecOf(job);

  scheduler::TenancyDirectory directory;
  Result<scheduler::TrustedJob> trusted = scheduler::ParseTrustedJob(api::ToJson(job));
  ASSERT_TRUE(trusted.ok()) << trusted.status().ToString();
  EXPECT_EQ(trusted->spec, written) << "the scheduler's view of the job is the same shape";
  directory.UpsertJob(*trusted);

  for (size_t role = 0; role < job.spec.replica_specs.size(); ++role) {
    scheduler::PodInfo pod = MemberAsTheSchedulerSeesIt(job, role, 0);
    ASSERT_TRUE(pod.annotated_group_spec.has_value()) << pod.group_spec_error;
    EXPECT_EQ(*pod.annotated_group_spec, written);

    scheduler::ResolvePod(pod, directory);
    ASSERT_EQ(scheduler::MembershipOf(pod), scheduler::Membership::kTrusted)
        << pod.untrusted_reason;
    ASSERT_TRUE(pod.group_spec.has_value());
    EXPECT_EQ(pod.group_spec->roles, written.roles);
    EXPECT_EQ(pod.group_spec->topology, written.topology);
    EXPECT_EQ(pod.group_spec->ScheduleTimeoutSeconds(), written.ScheduleTimeoutSeconds());
    EXPECT_EQ(pod.group_spec->resize_restarts, written.resize_restarts);
    EXPECT_EQ(pod.queue, written.queue.empty() ? std::string(api::kDefaultQueue) : written.queue);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Jobs, GroupSpecContractTest,
    ::testing::Values(Variant{"Bare", json::object()},
                      Variant{"EveryField",
                              {{"queue", "research"},
                               {"runPolicy", {{"scheduleTimeoutSeconds", 45}}},
                               {"topology", {{"level", "example.com/rack"}, {"mode", "Preferred"}}},
                               {"replicaSpecs",
                                {{{"name", "ps"},
                                  {"minReplicas", 1},
                                  {"priority", 3},
                                  {"topology", {{"mode", "None"}}},
                                  {"template", hybridjob::testing::PodTemplate()}},
                                 {{"name", "worker"},
                                  {"minReplicas", 0},
                                  {"maxReplicas", 16},
                                  {"template", hybridjob::testing::PodTemplate(1)}}}}}},
                      Variant{"NeverWaits", {{"runPolicy", {{"scheduleTimeoutSeconds", 0}}}}},
                      Variant{"LearnsMembershipLive", {{"framework", "pytorch"}}}),
    [](const ::testing::TestParamInfo<Variant>& info) { return std::string(info.param.name); });

// The controller lowers the shape on waiting members when some have
// succeeded; the scheduler takes those lower bounds, and nothing higher.
TEST(GroupSpecContractTest, ALoweredShapeIsHonouredAndARaisedOneIsNot) {
  const api::HybridJob job = hybridjob::testing::DefaultedJob(hybridjob::testing::TfJobJson());
  scheduler::TenancyDirectory directory;
  Result<scheduler::TrustedJob> trusted = scheduler::ParseTrustedJob(api::ToJson(job));
  ASSERT_TRUE(trusted.ok()) << trusted.status().ToString();
  directory.UpsertJob(*trusted);

  auto resolved_with = [&](const api::GroupSpec& annotation) {
    scheduler::PodInfo pod = MemberAsTheSchedulerSeesIt(job, 1, 0);
    Result<api::GroupSpec> reread = api::ParseGroupSpec(api::FormatGroupSpec(annotation));
    EXPECT_TRUE(reread.ok());
    pod.annotated_group_spec = *reread;
    scheduler::ResolvePod(pod, directory);
    EXPECT_EQ(scheduler::MembershipOf(pod), scheduler::Membership::kTrusted);
    return pod.group_spec.value_or(api::GroupSpec{});
  };

  api::GroupSpec lowered = api::GroupSpecOf(job);
  lowered.roles[1].min_replicas = 1;
  lowered.roles[1].completed = {0, 2};
  lowered.schedule_timeout_seconds = 0;
  const api::GroupSpec planned = resolved_with(lowered);
  EXPECT_EQ(planned.roles[1].min_replicas, 1);
  EXPECT_EQ(planned.roles[1].completed, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(planned.ScheduleTimeoutSeconds(), 0);

  // What the controller writes on a replacement is what the scheduler reads.
  const json replacement = controller::BuildMemberPod(job, job.spec.replica_specs[1], 1, lowered,
                                                      controller::PlannerOptions{});
  Result<api::GroupSpec> carried = api::ParseGroupSpec(
      replacement["metadata"]["annotations"][std::string(api::kGroupSpecAnnotation)]
          .get<std::string>());
  ASSERT_TRUE(carried.ok()) << carried.status().ToString();
  EXPECT_EQ(*carried, lowered);

  // Whether a resize restarts the job is the framework's, not the pod's.
  EXPECT_TRUE(api::GroupSpecOf(job).resize_restarts) << "TensorFlow reads TF_CONFIG at start";
  api::GroupSpec disowned = api::GroupSpecOf(job);
  disowned.resize_restarts = false;
  EXPECT_TRUE(resolved_with(disowned).resize_restarts);

  api::GroupSpec raised = api::GroupSpecOf(job);
  raised.roles[1].max_replicas = 64;
  raised.schedule_timeout_seconds = 9999;
  const api::GroupSpec capped = resolved_with(raised);
  EXPECT_EQ(capped.roles[1].max_replicas, 4);
  EXPECT_EQ(capped.ScheduleTimeoutSeconds(), api::kDefaultScheduleTimeoutSeconds);
}

}  // namespace
}  // namespace hybridjob
