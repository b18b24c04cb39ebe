#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/json.h>

#include "job_fixtures.h"

namespace hybridjob::api {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::TfJobJson;

std::string ParseError(const json& object, ParseOptions options = {}) {
  Result<HybridJob> parsed = ParseHybridJob(object, options);
  EXPECT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  return parsed.status().message();
}

TEST(ApiJsonTest, ParsesEveryField) {
  json object = TfJobJson();
  object["metadata"]["labels"] = {{"team", "vision"}};
  object["metadata"]["annotations"] = {{"note", "x"}};
  object["metadata"]["creationTimestamp"] = "2024-05-01T12:00:00Z";
  object["metadata"]["resourceVersion"] = "42";
  json& spec = object["spec"];
  spec["replicaSpecs"][1]["priority"] = 7;
  spec["replicaSpecs"][1]["port"] = 3333;
  spec["runPolicy"] = {{"backoffLimit", 5},
                       {"activeDeadlineSeconds", 3600},
                       {"ttlSecondsAfterFinished", 60},
                       {"cleanPodPolicy", "All"},
                       {"scheduleTimeoutSeconds", 120}};
  spec["successPolicy"] = {{"roles", {"worker"}}, {"operator", "Any"}};
  spec["volumes"] = {
      {{"name", "data"},
       {"storageClassName", "fast"},
       {"size", "100Gi"},
       {"accessModes", {"ReadWriteMany"}},
       {"mountPath", "/data"},
       {"roles", {"worker"}},
       {"retain", true}},
      {{"name", "shared"}, {"existingClaim", "team-share"}, {"mountPath", "/shared"}}};
  spec["code"] = {{"source", "s3://bucket/code.tgz"}, {"mountPath", "/src"}, {"image", "fetch:1"}};
  spec["tensorboard"] = {{"logDir", "/data/logs"}, {"image", "tb:1"}, {"serviceType", "NodePort"}};
  spec["queue"] = "research";
  spec["schedulerName"] = "my-gang";
  spec["suspend"] = true;

  Result<HybridJob> parsed = ParseHybridJob(object, {.reject_unknown_fields = true});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const HybridJob& job = *parsed;
  EXPECT_EQ(job.metadata.name, "mnist");
  EXPECT_EQ(job.metadata.namespace_name, "team-a");
  EXPECT_EQ(job.metadata.uid, "job-uid-1");
  EXPECT_EQ(job.metadata.generation, 1);
  EXPECT_EQ(job.metadata.resource_version, "42");
  EXPECT_EQ(job.metadata.labels.at("team"), "vision");
  EXPECT_EQ(job.metadata.annotations.at("note"), "x");
  EXPECT_EQ(job.spec.framework, Framework::kTensorFlow);
  ASSERT_EQ(job.spec.replica_specs.size(), 2u);
  const ReplicaSpec& ps = job.spec.replica_specs[0];
  EXPECT_EQ(ps.name, "ps");
  EXPECT_EQ(ps.min_replicas, 1);
  EXPECT_FALSE(ps.max_replicas.has_value());
  EXPECT_EQ(ps.restart_policy, RestartPolicy::kNever);
  const ReplicaSpec& worker = job.spec.replica_specs[1];
  EXPECT_EQ(worker.max_replicas, 4);
  EXPECT_EQ(worker.priority, 7);
  EXPECT_EQ(worker.port, 3333);
  EXPECT_EQ(worker.restart_policy, RestartPolicy::kOnFailure);
  EXPECT_EQ(worker.pod_template["spec"]["containers"][0]["name"], "main");
  EXPECT_EQ(job.spec.run_policy.backoff_limit, 5);
  EXPECT_EQ(job.spec.run_policy.active_deadline_seconds, 3600);
  EXPECT_EQ(job.spec.run_policy.ttl_seconds_after_finished, 60);
  EXPECT_EQ(job.spec.run_policy.clean_pod_policy, CleanPodPolicy::kAll);
  EXPECT_EQ(job.spec.run_policy.schedule_timeout_seconds, 120);
  ASSERT_TRUE(job.spec.success_policy.has_value());
  EXPECT_EQ(job.spec.success_policy->roles, std::vector<std::string>{"worker"});
  EXPECT_EQ(job.spec.success_policy->op, SuccessOperator::kAny);
  ASSERT_EQ(job.spec.volumes.size(), 2u);
  EXPECT_EQ(job.spec.volumes[0].storage_class_name, "fast");
  EXPECT_EQ(job.spec.volumes[0].size, "100Gi");
  EXPECT_EQ(job.spec.volumes[0].access_modes, std::vector<std::string>{"ReadWriteMany"});
  EXPECT_TRUE(job.spec.volumes[0].retain);
  EXPECT_EQ(job.spec.volumes[1].existing_claim, "team-share");
  ASSERT_TRUE(job.spec.code.has_value());
  EXPECT_EQ(job.spec.code->source, "s3://bucket/code.tgz");
  EXPECT_EQ(job.spec.code->mount_path, "/src");
  EXPECT_EQ(job.spec.code->image, "fetch:1");
  ASSERT_TRUE(job.spec.tensorboard.has_value());
  EXPECT_EQ(job.spec.tensorboard->service_type, "NodePort");
  EXPECT_EQ(job.spec.queue, "research");
  EXPECT_EQ(job.spec.scheduler_name, "my-gang");
  EXPECT_TRUE(job.spec.suspend);
}

TEST(ApiJsonTest, OmittedFieldsTakeTheirDefaults) {
  json object = TfJobJson();
  object["spec"].erase("framework");
  Result<HybridJob> parsed = ParseHybridJob(object);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->spec.framework, Framework::kGeneric);
  EXPECT_FALSE(parsed->spec.queue.has_value());  // the namespace's default queue
  EXPECT_EQ(parsed->spec.scheduler_name, "gang-scheduler");
  EXPECT_FALSE(parsed->spec.suspend);
  EXPECT_EQ(parsed->spec.run_policy.backoff_limit, 3);
  EXPECT_EQ(parsed->spec.run_policy.clean_pod_policy, CleanPodPolicy::kRunning);
  EXPECT_FALSE(parsed->spec.run_policy.active_deadline_seconds.has_value());
  EXPECT_FALSE(parsed->spec.success_policy.has_value());
}

TEST(ApiJsonTest, NullReadsAsAbsent) {
  json object = TfJobJson();
  object["spec"]["runPolicy"] = nullptr;
  object["spec"]["replicaSpecs"][1]["maxReplicas"] = nullptr;
  Result<HybridJob> parsed = ParseHybridJob(object);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_FALSE(parsed->spec.replica_specs[1].max_replicas.has_value());
}

TEST(ApiJsonTest, ErrorsNameTheFieldPath) {
  json object = TfJobJson();
  object["spec"]["replicaSpecs"][1]["minReplicas"] = "two";
  EXPECT_EQ(ParseError(object), "spec.replicaSpecs[1].minReplicas: must be an integer");

  object = TfJobJson();
  object["spec"]["replicaSpecs"][0]["maxReplicas"] = 1.5;
  EXPECT_EQ(ParseError(object), "spec.replicaSpecs[0].maxReplicas: must be an integer");

  object = TfJobJson();
  object["spec"]["runPolicy"] = {{"backoffLimit", true}};
  EXPECT_EQ(ParseError(object), "spec.runPolicy.backoffLimit: must be an integer");

  object = TfJobJson();
  object["spec"]["volumes"] = {{{"name", "data"}, {"mountPath", 3}}};
  EXPECT_EQ(ParseError(object), "spec.volumes[0].mountPath: must be a string");
}

TEST(ApiJsonTest, ReportsEveryError) {
  json object = TfJobJson();
  object["spec"]["replicaSpecs"][0]["minReplicas"] = "one";
  object["spec"]["replicaSpecs"][1]["restartPolicy"] = "Sometimes";
  object["spec"]["queue"] = 7;
  std::string message = ParseError(object);
  EXPECT_THAT(message, HasSubstr("spec.replicaSpecs[0].minReplicas: must be an integer"));
  EXPECT_THAT(message,
              HasSubstr("spec.replicaSpecs[1].restartPolicy: unsupported value "
                        "\"Sometimes\": must be one of Never, OnFailure, ExitCode, Always"));
  EXPECT_THAT(message, HasSubstr("spec.queue: must be a string"));
}

TEST(ApiJsonTest, EnumErrorsListTheChoices) {
  json object = TfJobJson();
  object["spec"]["framework"] = "caffe";
  EXPECT_EQ(ParseError(object),
            "spec.framework: unsupported value \"caffe\": must be one of "
            "tensorflow, pytorch, mxnet, mpi, generic");
}

TEST(ApiJsonTest, RequiredFields) {
  json object = TfJobJson();
  object.erase("spec");
  EXPECT_EQ(ParseError(object), "spec: required");

  object = TfJobJson();
  object["spec"].erase("replicaSpecs");
  EXPECT_EQ(ParseError(object), "spec.replicaSpecs: required");

  object = TfJobJson();
  object["spec"]["replicaSpecs"][1].erase("minReplicas");
  object["spec"]["replicaSpecs"][1].erase("name");
  std::string message = ParseError(object);
  EXPECT_THAT(message, HasSubstr("spec.replicaSpecs[1].name: required"));
  EXPECT_THAT(message, HasSubstr("spec.replicaSpecs[1].minReplicas: required"));
}

TEST(ApiJsonTest, WrongShapes) {
  EXPECT_EQ(ParseError(json::array()), "HybridJob: must be a JSON object");
  EXPECT_EQ(ParseError(json("text")), "HybridJob: must be a JSON object");

  json object = TfJobJson();
  object["spec"]["replicaSpecs"] = json::object();
  EXPECT_EQ(ParseError(object), "spec.replicaSpecs: must be a list");

  object = TfJobJson();
  object["spec"]["replicaSpecs"][0] = "ps";
  EXPECT_EQ(ParseError(object), "spec.replicaSpecs[0]: must be an object");

  object = TfJobJson();
  object["spec"]["replicaSpecs"][0]["template"] = json::array();
  EXPECT_EQ(ParseError(object), "spec.replicaSpecs[0].template: must be an object");

  object = TfJobJson();
  object["spec"]["suspend"] = "yes";
  EXPECT_EQ(ParseError(object), "spec.suspend: must be a boolean");

  object = TfJobJson();
  object["metadata"]["labels"] = {{"a", 1}};
  EXPECT_EQ(ParseError(object), "metadata.labels.a: must be a string");
}

TEST(ApiJsonTest, IntegersOutsideInt32AreRejected) {
  json object = TfJobJson();
  object["spec"]["replicaSpecs"][1]["maxReplicas"] = 3000000000LL;
  EXPECT_EQ(ParseError(object), "spec.replicaSpecs[1].maxReplicas: must be a 32-bit integer");
  object["spec"]["replicaSpecs"][1]["maxReplicas"] = -3000000000LL;
  EXPECT_EQ(ParseError(object), "spec.replicaSpecs[1].maxReplicas: must be a 32-bit integer");
  object = TfJobJson();
  object["spec"]["runPolicy"] = {{"activeDeadlineSeconds", 18446744073709551615ULL}};
  EXPECT_EQ(ParseError(object), "spec.runPolicy.activeDeadlineSeconds: must be an integer");
}

TEST(ApiJsonTest, ApiVersionAndKindMustMatchWhenPresent) {
  json object = TfJobJson();
  object["kind"] = "TFJob";
  EXPECT_EQ(ParseError(object), "kind: must be HybridJob");
  object = TfJobJson();
  object["apiVersion"] = "batch.hybridjob.io/v1";
  EXPECT_EQ(ParseError(object), "apiVersion: must be batch.hybridjob.io/v1alpha1");
  object = TfJobJson();
  object.erase("apiVersion");
  object.erase("kind");
  EXPECT_TRUE(ParseHybridJob(object).ok());
}

TEST(ApiJsonTest, UnknownFieldsOnlyWhenAsked) {
  json object = TfJobJson();
  object["spec"]["replicaSpecs"][1]["minReplica"] = 3;
  object["spec"]["runPolicy"] = {{"backoff", 1}};
  object["spec"]["replicaSpecs"][1]["template"]["spec"]["whatever"] = true;  // opaque
  EXPECT_TRUE(ParseHybridJob(object).ok());
  std::string message = ParseError(object, {.reject_unknown_fields = true});
  EXPECT_THAT(message, HasSubstr("spec.replicaSpecs[1].minReplica: unknown field"));
  EXPECT_THAT(message, HasSubstr("spec.runPolicy.backoff: unknown field"));
  EXPECT_THAT(message, ::testing::Not(HasSubstr("whatever")));
}

TEST(ApiJsonTest, QuantityMayBeANumber) {
  json object = TfJobJson();
  object["spec"]["volumes"] = {{{"name", "data"}, {"size", 1073741824}, {"mountPath", "/data"}}};
  Result<HybridJob> parsed = ParseHybridJob(object);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->spec.volumes[0].size, "1073741824");
  object["spec"]["volumes"][0]["size"] = true;
  EXPECT_THAT(ParseError(object), HasSubstr("spec.volumes[0].size: must be a quantity"));
}

TEST(ApiJsonTest, StatusIsReadLeniently) {
  json object = TfJobJson();
  object["status"] = {
      {"phase", "Bogus"},
      {"restartCount", "many"},
      {"conditions",
       {{{"type", "Running"}, {"status", "True"}, {"reason", "Running"}}, {{"status", "True"}}}},
      {"replicaStatuses", {{{"name", "worker"}, {"active", 2}}, 5}},
      {"observedGeneration", 1}};
  Result<HybridJob> parsed = ParseHybridJob(object);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const HybridJobStatus& status = parsed->status;
  EXPECT_FALSE(status.phase.has_value());
  EXPECT_EQ(status.restart_count, 0);
  ASSERT_EQ(status.conditions.size(), 1u);
  EXPECT_TRUE(status.HasTrueCondition("Running"));
  ASSERT_EQ(status.replica_statuses.size(), 1u);
  EXPECT_EQ(status.FindReplicaStatus("worker")->active, 2);
  EXPECT_EQ(status.observed_generation, 1);
}

// The first run is run 0: written, so that the RUN column of `kubectl get
// -o wide` (jsonPath .status.run) shows it; a status written without it, by
// an older controller, still reads as run 0.
TEST(ApiJsonTest, TheFirstRunIsWrittenAsRunZero) {
  HybridJobStatus status;
  status.phase = JobPhase::kQueued;
  const json out = ToJson(status);
  ASSERT_TRUE(out.contains("run")) << out.dump();
  EXPECT_EQ(out["run"], 0);
  json older = out;
  older.erase("run");
  EXPECT_EQ(ParseHybridJobStatus(older), status);
}

TEST(ApiJsonTest, StatusRoundTrips) {
  HybridJobStatus status;
  status.phase = JobPhase::kRestarting;
  status.conditions.push_back({"Created", "True", "Created", "created 5 member pods",
                               "2024-05-01T12:00:00Z", "2024-05-01T12:00:00Z"});
  status.conditions.push_back({"Restarting", "True", "Restarting", "member x failed",
                               "2024-05-01T12:01:00Z", "2024-05-01T12:02:00Z"});
  status.replica_statuses.push_back({"worker", 3, 2, 2, 0, 1, 1});
  status.ready_members = "2/3";
  status.start_time = "2024-05-01T12:00:00Z";
  status.last_restart_time = "2024-05-01T12:02:00Z";
  status.restart_count = 1;
  status.observed_generation = 4;
  status.run = 2;
  status.previous_runs.push_back({.run = 1,
                                  .phase = JobPhase::kFailed,
                                  .reason = "BackoffLimitExceeded",
                                  .message = "member x failed 4 times",
                                  .start_time = "2024-04-30T12:00:00Z",
                                  .completion_time = "2024-04-30T13:00:00Z",
                                  .restart_count = 3});
  status.queue = QueueStanding{.name = "team-a", .position = 3, .reason = "Fragmented"};
  status.attained_service = AttainedService{.gpu_seconds = 7200, .level = 1, .queue = "team-a"};
  json out = ToJson(status);
  EXPECT_EQ(out["attainedService"],
            json({{"gpuSeconds", 7200}, {"level", 1}, {"queue", "team-a"}}));
  EXPECT_EQ(out["phase"], "Restarting");
  EXPECT_EQ(out["queue"], json({{"name", "team-a"}, {"position", 3}, {"reason", "Fragmented"}}));
  EXPECT_EQ(out["run"], 2);
  EXPECT_EQ(out["previousRuns"][0]["phase"], "Failed");
  EXPECT_EQ(out["previousRuns"][0]["restartCount"], 3);
  EXPECT_EQ(out["readyMembers"], "2/3");
  EXPECT_EQ(out["replicaStatuses"][0]["members"], 3);
  EXPECT_FALSE(out.contains("completionTime"));
  EXPECT_EQ(ParseHybridJobStatus(out), status);
}

TEST(ApiJsonTest, WholeJobRoundTrips) {
  json object = TfJobJson();
  object["spec"]["volumes"] = {{{"name", "data"}, {"size", "1Gi"}, {"mountPath", "/data"}}};
  object["spec"]["code"] = {{"source", "https://example.com/code.zip"}};
  object["spec"]["tensorboard"] = {{"logDir", "/data/logs"}};
  object["spec"]["successPolicy"] = {{"roles", {"worker"}}};
  object["spec"]["runPolicy"] = {{"ttlSecondsAfterFinished", 0}, {"rerun", 4}};
  object["spec"]["suspend"] = true;
  object["spec"]["runHistoryLimit"] = 3;
  Result<HybridJob> parsed = ParseHybridJob(object);
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->spec.suspend);
  EXPECT_EQ(parsed->spec.run_history_limit, 3);
  EXPECT_EQ(parsed->spec.run_policy.rerun, 4);
  Result<HybridJob> again = ParseHybridJob(ToJson(*parsed), {.reject_unknown_fields = true});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, *parsed);

  HybridJob defaulted = *parsed;
  ApplyDefaults(defaulted);
  Result<HybridJob> defaulted_again = ParseHybridJob(ToJson(defaulted));
  ASSERT_TRUE(defaulted_again.ok());
  EXPECT_EQ(*defaulted_again, defaulted);
}

TEST(ApiJsonTest, ObjectMetaAloneIsLenient) {
  json object = {{"metadata", {{"name", "x"}, {"uid", 5}, {"generation", "2"}}}};
  ObjectMeta meta = ParseObjectMeta(object);
  EXPECT_EQ(meta.name, "x");
  EXPECT_EQ(meta.uid, "");
  EXPECT_EQ(meta.generation, 0);
  EXPECT_EQ(ParseObjectMeta(json(42)).name, "");
}

}  // namespace
}  // namespace hybridjob::api
