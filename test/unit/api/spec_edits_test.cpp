#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/group_spec.h>
#include <hybridjob/api/json.h>
#include <hybridjob/api/spec_edits.h>

#include "job_fixtures.h"

namespace hybridjob::api {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

// The spec the TF job's run started with, as its revision holds it.
HybridJobSpec started_spec;

// The TF job (ps 1, worker 2..4) whose run started with its spec as it is
// now: its record, and the spec in started_spec.
HybridJob StartedJob() {
  HybridJob job = testing::DefaultedJob(testing::TfJobJson());
  job.metadata.name = "mnist";
  started_spec = job.spec;
  job.status.run_spec = RunSpecRecord{
      .hash = RunFixedHash(job.spec), .revision = RunRevisionName("mnist", job.spec), .group = {}};
  return job;
}

// What the controller plans with: the revision read only when needed.
RunningSpec Planned(const HybridJob& job) {
  return EffectiveSpec(job, NeedsStartedSpec(job) ? &started_spec : nullptr);
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
  EXPECT_FALSE(NeedsStartedSpec(job)) << "job.spec is the run's spec: no revision is read";
  RunningSpec running = Planned(job);
  EXPECT_THAT(running.ignored, IsEmpty());
  EXPECT_EQ(running.spec, started_spec);
}

TEST(SpecEditsTest, TheEditsARunTakes) {
  HybridJob job = StartedJob();
  job.spec.suspend = true;
  job.spec.run_policy.backoff_limit = 9;
  job.spec.run_policy.active_deadline_seconds = 7200;
  job.spec.run_policy.rerun = 2;
  job.spec.run_history_limit = 4;
  Worker(job).max_replicas = 3;
  Worker(job).priority = 5;
  EXPECT_FALSE(NeedsStartedSpec(job)) << "the edits a run takes leave the hash as it was";
  RunningSpec running = Planned(job);
  EXPECT_THAT(running.ignored, IsEmpty());
  EXPECT_TRUE(running.spec.suspend);
  EXPECT_EQ(running.spec.run_policy, job.spec.run_policy);
  EXPECT_EQ(running.spec.run_history_limit, 4);
  EXPECT_EQ(running.spec.replica_specs[1].max_replicas, 3);
  EXPECT_EQ(running.spec.replica_specs[1].priority, 5);
}

TEST(SpecEditsTest, TheEditsARunDoesNotTakeAreNamedAndLeftOut) {
  HybridJob job = StartedJob();
  const HybridJobSpec started = started_spec;
  Worker(job).min_replicas = 3;
  Worker(job).pod_template["spec"]["containers"][0]["args"] = {"--lr=0.1"};
  Worker(job).restart_policy = RestartPolicy::kAlways;
  job.spec.queue = "other";
  job.spec.framework = Framework::kMXNet;
  job.spec.replica_specs[0].name = "server";  // ps removed, server added
  EXPECT_TRUE(NeedsStartedSpec(job));
  RunningSpec running = Planned(job);
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
  EXPECT_TRUE(NeedsStartedSpec(job)) << "an invalid spec needs the run's to fall back on";
  RunningSpec running = Planned(job);
  ASSERT_EQ(running.ignored.size(), 1u);
  EXPECT_THAT(running.ignored[0], HasSubstr("spec.replicaSpecs[worker].maxReplicas: "));
  EXPECT_THAT(running.ignored[0], HasSubstr("minReplicas"));
  EXPECT_EQ(running.spec.replica_specs[1].max_replicas, 4);
  EXPECT_EQ(running.spec.run_policy.backoff_limit, 4) << "the valid edit is still taken";
}

TEST(SpecEditsTest, TheRunRecordRoundTripsThroughTheStatus) {
  HybridJob job = StartedJob();
  job.status.run_spec->group = GroupSpecOf(job);
  json status = ToJson(job.status);
  ASSERT_TRUE(status.contains("runSpec"));
  EXPECT_EQ(status["runSpec"]["hash"], job.status.run_spec->hash);
  EXPECT_EQ(status["runSpec"]["group"]["roles"][1]["max"], 4);
  EXPECT_FALSE(status["runSpec"].contains("replicaSpecs")) << "the whole spec is not copied";
  EXPECT_EQ(ParseHybridJobStatus(status).run_spec, job.status.run_spec);
  status["runSpec"]["group"]["roles"][1]["min"] = 9;
  EXPECT_FALSE(ParseHybridJobStatus(status).run_spec.has_value())
      << "a record whose gang does not parse is dropped, and the spec taken instead";
  status["runSpec"] = ToJson(started_spec);
  EXPECT_FALSE(ParseHybridJobStatus(status).run_spec.has_value())
      << "an older controller's whole copy: the run goes on with the spec as it is";
}

TEST(SpecEditsTest, TheFixedHashSeesOnlyTheFieldsARunDoesNotTake) {
  HybridJob job = StartedJob();
  const std::string hash = RunFixedHash(job.spec);
  EXPECT_EQ(hash.size(), 16u);
  HybridJobSpec allowed = job.spec;
  allowed.suspend = true;
  allowed.run_policy.backoff_limit = 1;
  allowed.run_history_limit = 0;
  allowed.replica_specs[1].max_replicas = 8;
  allowed.replica_specs[1].priority = 3;
  EXPECT_EQ(RunFixedHash(allowed), hash);
  EXPECT_NE(RunRevisionName("mnist", allowed), RunRevisionName("mnist", job.spec))
      << "the revision holds the whole spec a run starts with";
  HybridJobSpec fixed = job.spec;
  fixed.replica_specs[1].pod_template["spec"]["containers"][0]["image"] = "other";
  EXPECT_NE(RunFixedHash(fixed), hash);
  fixed = job.spec;
  fixed.queue = "other";
  EXPECT_NE(RunFixedHash(fixed), hash);
}

}  // namespace
}  // namespace hybridjob::api
