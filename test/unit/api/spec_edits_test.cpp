#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/json.h>
#include <hybridjob/api/spec_edits.h>

#include "job_fixtures.h"

namespace hybridjob::api {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// The TF job (ps 1, worker 2..4) whose run started with its spec as it is now.
HybridJob StartedJob() {
  HybridJob job = testing::DefaultedJob(testing::TfJobJson());
  job.status.run_spec = job.spec;
  return job;
}

ReplicaSpec& Worker(HybridJob& job) {
  return job.spec.replica_specs[1];
}

TEST(SpecEditsTest, WithoutARunSpecTheSpecIsTakenWholeWithDefaults) {
  HybridJob job = testing::DefaultedJob(testing::TfJobJson());
  job.spec.replica_specs[0].max_replicas.reset();
  RunningSpec running = EffectiveSpec(job);
  EXPECT_THAT(running.ignored, IsEmpty());
  EXPECT_EQ(running.spec.replica_specs[0].max_replicas, 1) << "defaults applied";
}

TEST(SpecEditsTest, AnUneditedJobRunsAsItStarted) {
  HybridJob job = StartedJob();
  RunningSpec running = EffectiveSpec(job);
  EXPECT_THAT(running.ignored, IsEmpty());
  EXPECT_EQ(running.spec, *job.status.run_spec);
}

TEST(SpecEditsTest, TheEditsARunTakes) {
  HybridJob job = StartedJob();
  job.spec.suspend = true;
  job.spec.run_policy.backoff_limit = 9;
  job.spec.run_policy.active_deadline_seconds = 7200;
  job.spec.run_policy.rerun = 2;
  Worker(job).max_replicas = 3;
  Worker(job).priority = 5;
  RunningSpec running = EffectiveSpec(job);
  EXPECT_THAT(running.ignored, IsEmpty());
  EXPECT_TRUE(running.spec.suspend);
  EXPECT_EQ(running.spec.run_policy, job.spec.run_policy);
  EXPECT_EQ(running.spec.replica_specs[1].max_replicas, 3);
  EXPECT_EQ(running.spec.replica_specs[1].priority, 5);
}

TEST(SpecEditsTest, TheEditsARunDoesNotTakeAreNamedAndLeftOut) {
  HybridJob job = StartedJob();
  const HybridJobSpec started = *job.status.run_spec;
  Worker(job).min_replicas = 3;
  Worker(job).pod_template["spec"]["containers"][0]["args"] = {"--lr=0.1"};
  Worker(job).restart_policy = RestartPolicy::kAlways;
  job.spec.queue = "other";
  job.spec.framework = Framework::kMXNet;
  job.spec.replica_specs[0].name = "server";  // ps removed, server added
  RunningSpec running = EffectiveSpec(job);
  EXPECT_THAT(running.ignored,
              UnorderedElementsAre("spec.framework", "spec.replicaSpecs[server] (added)",
                                   "spec.replicaSpecs[ps] (removed)",
                                   "spec.replicaSpecs[worker].minReplicas",
                                   "spec.replicaSpecs[worker].restartPolicy",
                                   "spec.replicaSpecs[worker].template", "spec.queue"));
  EXPECT_EQ(running.spec, started) << "nothing of them is applied";
}

TEST(SpecEditsTest, AnAllowedEditThatWouldMakeTheSpecInvalidIsIgnoredWithWhy) {
  HybridJob job = StartedJob();
  Worker(job).max_replicas = 1;  // below minReplicas 2
  job.spec.run_policy.backoff_limit = 4;
  RunningSpec running = EffectiveSpec(job);
  ASSERT_EQ(running.ignored.size(), 1u);
  EXPECT_THAT(running.ignored[0], HasSubstr("spec.replicaSpecs[worker].maxReplicas: "));
  EXPECT_THAT(running.ignored[0], HasSubstr("minReplicas"));
  EXPECT_EQ(running.spec.replica_specs[1].max_replicas, 4);
  EXPECT_EQ(running.spec.run_policy.backoff_limit, 4) << "the valid edit is still taken";
}

TEST(SpecEditsTest, TheRunSpecRoundTripsThroughTheStatus) {
  HybridJob job = StartedJob();
  json status = ToJson(job.status);
  ASSERT_TRUE(status.contains("runSpec"));
  EXPECT_EQ(ParseHybridJobStatus(status).run_spec, job.status.run_spec);
  status["runSpec"]["framework"] = "caffe";
  EXPECT_FALSE(ParseHybridJobStatus(status).run_spec.has_value())
      << "a run spec that does not parse is dropped, and the spec taken instead";
}

}  // namespace
}  // namespace hybridjob::api
