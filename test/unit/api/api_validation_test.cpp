#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/json.h>
#include <hybridjob/api/validation.h>

#include "job_fixtures.h"

namespace hybridjob::api {
namespace {

using nlohmann::json;
using testing::Container;
using ::testing::Contains;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::PodTemplate;
using testing::TfJobJson;

std::vector<FieldError> ValidateJson(const json& object, bool defaults = false) {
  Result<HybridJob> parsed = ParseHybridJob(object);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  if (!parsed.ok()) {
    return {};
  }
  HybridJob job = *parsed;
  if (defaults) {
    ApplyDefaults(job);
  }
  return Validate(job);
}

// The errors for one field; fails the test if there are none.
std::string ErrorsAt(const std::vector<FieldError>& errors, const std::string& field) {
  std::string out;
  for (const FieldError& error : errors) {
    if (error.field == field) {
      out += error.message + "|";
    }
  }
  EXPECT_FALSE(out.empty()) << "no error at " << field << "; got: " << JoinErrors(errors);
  return out;
}

json Role(const std::string& name, int min, int max = -1) {
  json role = {{"name", name}, {"minReplicas", min}, {"template", PodTemplate()}};
  if (max >= 0) {
    role["maxReplicas"] = max;
  }
  return role;
}

json WithRoles(const std::string& framework, const std::vector<json>& roles) {
  json object = TfJobJson();
  object["spec"]["framework"] = framework;
  object["spec"]["replicaSpecs"] = roles;
  return object;
}

TEST(ApiValidationTest, ValidJobHasNoErrors) {
  EXPECT_THAT(ValidateJson(TfJobJson()), IsEmpty());
  EXPECT_THAT(ValidateJson(TfJobJson(), /*defaults=*/true), IsEmpty());
}

TEST(ApiValidationTest, JobNameMustBeAServiceName) {
  json object = TfJobJson();
  object["metadata"]["name"] = "1mnist";
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "metadata.name"), HasSubstr("RFC 1035"));
  object["metadata"].erase("name");
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "metadata.name"), HasSubstr("required"));
}

TEST(ApiValidationTest, RolesMustBePresentAndUnique) {
  json object = TfJobJson();
  object["spec"]["replicaSpecs"] = json::array();
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs"), HasSubstr("at least one"));

  object = WithRoles("generic", {Role("worker", 1), Role("worker", 2)});
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[1].name"),
              HasSubstr("duplicate role \"worker\""));

  object = WithRoles("generic", {Role("Worker", 1)});
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[0].name"), HasSubstr("RFC 1035"));
}

TEST(ApiValidationTest, ReplicaBounds) {
  json object = WithRoles("generic", {Role("a", 3, 2)});
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[0].maxReplicas"),
              HasSubstr("greater than or equal to minReplicas (3)"));

  object = WithRoles("generic", {Role("a", -1, 2)});
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[0].minReplicas"),
              HasSubstr("greater than or equal to 0"));

  object = WithRoles("generic", {Role("a", 0, 0), Role("b", 1)});
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[0].maxReplicas"),
              HasSubstr("at least 1"));

  object = WithRoles("generic", {Role("a", 0, 2)});
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs"),
              HasSubstr("minReplicas of 1 or more"));
}

TEST(ApiValidationTest, AbsurdCountsAreCapped) {
  json object = TfJobJson();
  object["metadata"]["name"] = "j";
  object["spec"]["replicaSpecs"][1]["maxReplicas"] = 10001;
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[1].maxReplicas"),
              HasSubstr("at most 10000"));

  object = WithRoles("generic", {Role("a", 1, 6000), Role("b", 1, 6000)});
  object["metadata"]["name"] = "j";
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs"),
              HasSubstr("at most 10000, got 12000"));
}

TEST(ApiValidationTest, DerivedPodNamesMustFitAHostname) {
  json object = TfJobJson();
  // 50 + "-worker-" (8) + "3" = 59 characters: fits.
  object["metadata"]["name"] = std::string(50, 'j');
  EXPECT_THAT(ValidateJson(object), IsEmpty());
  // The last index counts: 52 + 8 + "9999" = 64.
  object["metadata"]["name"] = std::string(52, 'j');
  object["spec"]["replicaSpecs"][1]["maxReplicas"] = 10000;
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[1].name"),
              HasSubstr("-worker-9999\" is 64 characters"));
  object["spec"]["replicaSpecs"][1]["maxReplicas"] = 4;
  object["metadata"]["name"] = std::string(55, 'j');
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[1].name"),
              HasSubstr("must fit in 63"));
}

TEST(ApiValidationTest, PortRange) {
  json object = TfJobJson();
  object["spec"]["replicaSpecs"][0]["port"] = 70000;
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[0].port"), HasSubstr("65535"));
  object["spec"]["replicaSpecs"][0]["port"] = 0;
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[0].port"), HasSubstr("65535"));
}

TEST(ApiValidationTest, TemplatesNeedContainers) {
  json object = TfJobJson();
  object["spec"]["replicaSpecs"][0].erase("template");
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[0].template.spec.containers"),
              HasSubstr("at least one container"));

  object = TfJobJson();
  object["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"] = json::array();
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[0].template.spec.containers"),
              HasSubstr("at least one container"));

  object = TfJobJson();
  object["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"] = {
      {{"name", "main"}}, Container("main"), {{"image", "x"}}};
  std::vector<FieldError> errors = ValidateJson(object);
  const std::string path = "spec.replicaSpecs[0].template.spec.containers";
  EXPECT_THAT(ErrorsAt(errors, path + "[0].image"), HasSubstr("required"));
  EXPECT_THAT(ErrorsAt(errors, path + "[1].name"), HasSubstr("duplicate container"));
  EXPECT_THAT(ErrorsAt(errors, path + "[2].name"), HasSubstr("required"));
}

TEST(ApiValidationTest, TemplatesLeaveControllerFieldsAlone) {
  json object = TfJobJson();
  json& spec = object["spec"]["replicaSpecs"][1]["template"]["spec"];
  spec["restartPolicy"] = "OnFailure";
  spec["nodeName"] = "node-1";
  spec["hostname"] = "mine";
  spec["subdomain"] = "mine";
  std::vector<FieldError> errors = ValidateJson(object);
  const std::string path = "spec.replicaSpecs[1].template.spec";
  EXPECT_THAT(ErrorsAt(errors, path + ".restartPolicy"),
              HasSubstr("set spec.replicaSpecs[1].restartPolicy instead"));
  EXPECT_THAT(ErrorsAt(errors, path + ".nodeName"), HasSubstr("must not be set"));
  EXPECT_THAT(ErrorsAt(errors, path + ".hostname"), HasSubstr("must not be set"));
  EXPECT_THAT(ErrorsAt(errors, path + ".subdomain"), HasSubstr("must not be set"));

  object = TfJobJson();
  object["spec"]["replicaSpecs"][1]["template"]["spec"]["restartPolicy"] = "Never";
  EXPECT_THAT(ValidateJson(object), IsEmpty());
}

// What the API server would refuse in a member pod must not get past validation,
// or the job would sit waiting for pods that can never be created.
TEST(ApiValidationTest, TemplatesHoldOnlyWhatAPodMay) {
  json object = TfJobJson();
  json& pod_template = object["spec"]["replicaSpecs"][1]["template"];
  pod_template["metadata"]["labels"] = {{"team", "not valid!"}, {"ok.io/tier", "gold"}};
  pod_template["metadata"]["annotations"] = {{"bad key!", "x"}, {"fine.io/note", "any text"}};
  json& container = pod_template["spec"]["containers"][0];
  container["resources"] = {{"limits", {{"nvidia.com/gpu", "lots"}, {"cpu", "2"}}},
                            {"requests", {{"cpu", "4"}, {"memory", 1024}}}};
  container["env"] = "EPOCHS=10";
  container["ports"] = json::array({{{"containerPort", 99999}}, {{"containerPort", 2222}}});
  std::vector<FieldError> errors = ValidateJson(object);
  const std::string path = "spec.replicaSpecs[1].template";
  EXPECT_THAT(ErrorsAt(errors, path + ".metadata.labels"),
              HasSubstr("value \"not valid!\" of label \"team\""));
  EXPECT_THAT(ErrorsAt(errors, path + ".metadata.annotations"),
              HasSubstr("key \"bad key!\" must be a qualified name"));
  const std::string container_path = path + ".spec.containers[0]";
  EXPECT_THAT(ErrorsAt(errors, container_path + ".resources.limits"),
              HasSubstr("\"lots\" for \"nvidia.com/gpu\" is not a resource quantity"));
  EXPECT_THAT(ErrorsAt(errors, container_path + ".resources.requests"),
              HasSubstr("\"cpu\" must be less than or equal to its limit"));
  EXPECT_THAT(ErrorsAt(errors, container_path + ".env"), HasSubstr("must be a list"));
  EXPECT_THAT(ErrorsAt(errors, container_path + ".ports[0].containerPort"),
              HasSubstr("between 1 and 65535"));
  EXPECT_EQ(errors.size(), 6u) << JoinErrors(errors);

  // A manifest decoded from YAML may carry invalid UTF-8: an error, not a throw.
  container["resources"] = {{"limits", {{"nvidia.com/gpu", {{"x", std::string("\xff\xfe")}}}}}};
  errors = ValidateJson(object);
  EXPECT_THAT(ErrorsAt(errors, container_path + ".resources.limits"),
              HasSubstr("is not a resource quantity"));

  object = TfJobJson();
  json& fine = object["spec"]["replicaSpecs"][1]["template"];
  fine["metadata"]["labels"] = {{"team", "vision"}, {"empty", ""}};
  fine["spec"]["containers"][0]["resources"] = {
      {"limits", {{"cpu", "2"}, {"memory", "16Gi"}, {"ephemeral-storage", "2Ei"}}},
      {"requests", {{"cpu", "500m"}}}};
  fine["spec"]["containers"][0]["env"] = json::array({{{"name", "EPOCHS"}, {"value", "10"}}});
  EXPECT_THAT(ValidateJson(object), IsEmpty());
}

TEST(ApiValidationTest, TemplatesMustNotClashWithInjectedVolumes) {
  json object = TfJobJson();
  object["spec"]["volumes"] = {{{"name", "data"}, {"size", "1Gi"}, {"mountPath", "/data"}}};
  object["spec"]["code"] = {{"source", "https://example.com/code.tgz"}};
  json& spec = object["spec"]["replicaSpecs"][1]["template"]["spec"];
  spec["volumes"] = {{{"name", "data"}, {"emptyDir", json::object()}},
                     {{"name", "hybridjob-cluster"}, {"emptyDir", json::object()}}};
  spec["containers"][0]["volumeMounts"] = {{{"name", "x"}, {"mountPath", "/etc/hybridjob/"}},
                                           {{"name", "y"}, {"mountPath", "/workspace"}},
                                           {{"name", "z"}, {"mountPath", "/data"}}};
  spec["initContainers"] = json::array({Container("hybridjob-code")});
  std::vector<FieldError> errors = ValidateJson(object);
  const std::string path = "spec.replicaSpecs[1].template.spec";
  EXPECT_THAT(ErrorsAt(errors, path + ".volumes[0].name"), HasSubstr("taken"));
  EXPECT_THAT(ErrorsAt(errors, path + ".volumes[1].name"), HasSubstr("taken"));
  EXPECT_THAT(ErrorsAt(errors, path + ".containers[0].volumeMounts[0].mountPath"),
              HasSubstr("hybridjob-cluster"));
  EXPECT_THAT(ErrorsAt(errors, path + ".containers[0].volumeMounts[1].mountPath"),
              HasSubstr("hybridjob-code"));
  EXPECT_THAT(ErrorsAt(errors, path + ".containers[0].volumeMounts[2].mountPath"),
              HasSubstr("\"data\""));
  EXPECT_THAT(ErrorsAt(errors, path + ".initContainers[0].name"), HasSubstr("code init container"));
}

TEST(ApiValidationTest, MpiTemplatesMustNotClashWithTheSshKeyOrTheLaunchersWait) {
  json object = TfJobJson();
  object["spec"]["framework"] = "mpi";
  object["spec"]["replicaSpecs"][0]["name"] = "launcher";
  object["spec"]["successPolicy"] = {{"roles", {"launcher"}}};
  json& spec = object["spec"]["replicaSpecs"][0]["template"]["spec"];
  spec["volumes"] = {{{"name", "hybridjob-ssh"}, {"emptyDir", json::object()}}};
  spec["containers"][0]["volumeMounts"] = {{{"name", "keys"}, {"mountPath", "/root/.ssh"}}};
  spec["initContainers"] = json::array({Container("hybridjob-wait-for-workers")});
  std::vector<FieldError> errors = ValidateJson(object);
  const std::string path = "spec.replicaSpecs[0].template.spec";
  EXPECT_THAT(ErrorsAt(errors, path + ".volumes[0].name"), HasSubstr("taken"));
  EXPECT_THAT(ErrorsAt(errors, path + ".containers[0].volumeMounts[0].mountPath"),
              HasSubstr("hybridjob-ssh"));
  EXPECT_THAT(ErrorsAt(errors, path + ".initContainers[0].name"), HasSubstr("wait"));
  // Other frameworks may use them.
  object["spec"]["framework"] = "generic";
  object["spec"]["replicaSpecs"][0]["template"]["spec"]["volumes"] = {
      {{"name", "keys"}, {"emptyDir", json::object()}}};
  EXPECT_THAT(ValidateJson(object), IsEmpty());
}

TEST(ApiValidationTest, RunPolicyBounds) {
  json object = TfJobJson();
  object["spec"]["runPolicy"] = {{"backoffLimit", -1},
                                 {"activeDeadlineSeconds", 0},
                                 {"ttlSecondsAfterFinished", -5},
                                 {"scheduleTimeoutSeconds", -1},
                                 {"rerun", -1}};
  std::vector<FieldError> errors = ValidateJson(object);
  ErrorsAt(errors, "spec.runPolicy.rerun");
  ErrorsAt(errors, "spec.runPolicy.backoffLimit");
  ErrorsAt(errors, "spec.runPolicy.activeDeadlineSeconds");
  ErrorsAt(errors, "spec.runPolicy.ttlSecondsAfterFinished");
  ErrorsAt(errors, "spec.runPolicy.scheduleTimeoutSeconds");

  for (int limit : {-1, 11}) {
    object = TfJobJson();
    object["spec"]["runHistoryLimit"] = limit;
    EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.runHistoryLimit"),
                HasSubstr("must be between 0 and 10"));
  }
  for (int limit : {0, 10}) {
    object["spec"]["runHistoryLimit"] = limit;
    EXPECT_THAT(ValidateJson(object), IsEmpty());
  }
}

TEST(ApiValidationTest, SuccessPolicyNamesKnownRoles) {
  json object = TfJobJson();
  object["spec"]["successPolicy"] = {{"roles", {"worker", "chief"}}};
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.successPolicy.roles[1]"),
              HasSubstr("unknown role \"chief\""));
  object["spec"]["successPolicy"] = {{"roles", json::array()}};
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.successPolicy.roles"),
              HasSubstr("at least one"));
}

TEST(ApiValidationTest, SuccessRolesCannotRestartAlways) {
  json object = TfJobJson();
  object["spec"]["replicaSpecs"][1]["restartPolicy"] = "Always";
  // Default policy: the workers decide.
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.replicaSpecs[1].restartPolicy"),
              HasSubstr("cannot be Always"));
  object["spec"]["successPolicy"] = {{"roles", {"worker"}}};
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.successPolicy.roles[0]"),
              HasSubstr("cannot be Always"));
  // A parameter server may restart forever.
  object = TfJobJson();
  object["spec"]["replicaSpecs"][0]["restartPolicy"] = "Always";
  EXPECT_THAT(ValidateJson(object), IsEmpty());
}

TEST(ApiValidationTest, VolumeConflicts) {
  json object = TfJobJson();
  object["spec"]["code"] = {{"source", "https://example.com/code.tgz"}, {"mountPath", "/code"}};
  object["spec"]["volumes"] = {
      {{"name", "data"}, {"size", "1Gi"}, {"mountPath", "/data"}},
      {{"name", "data"}, {"size", "1Gi"}, {"mountPath", "/other"}},
      {{"name", "more"}, {"size", "1Gi"}, {"mountPath", "/data/"}},
      {{"name", "code"}, {"size", "1Gi"}, {"mountPath", "/code"}},
      {{"name", "etc"}, {"size", "1Gi"}, {"mountPath", "/etc/hybridjob"}},
      {{"name", "rel"}, {"size", "1Gi"}, {"mountPath", "data"}},
      {{"name", "hybridjob-code"}, {"size", "1Gi"}, {"mountPath", "/x"}},
      {{"name", "roles"}, {"size", "1Gi"}, {"mountPath", "/y"}, {"roles", {"evaluator"}}}};
  std::vector<FieldError> errors = ValidateJson(object);
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[1].name"), HasSubstr("duplicate volume"));
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[2].mountPath"), HasSubstr("duplicate mount path"));
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[3].mountPath"), HasSubstr("spec.code.mountPath"));
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[4].mountPath"), HasSubstr("reserved"));
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[5].mountPath"), HasSubstr("absolute"));
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[6].name"), HasSubstr("reserved"));
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[7].roles[0]"), HasSubstr("unknown role"));
}

TEST(ApiValidationTest, VolumeSizeOrExistingClaim) {
  json object = TfJobJson();
  object["spec"]["volumes"] = {{{"name", "a"}, {"mountPath", "/a"}},
                               {{"name", "b"}, {"mountPath", "/b"}, {"size", "ten gigs"}},
                               {{"name", "c"}, {"mountPath", "/c"}, {"size", "0"}},
                               {{"name", "d"},
                                {"mountPath", "/d"},
                                {"size", "1Gi"},
                                {"existingClaim", "shared"},
                                {"retain", true}},
                               {{"name", "e"},
                                {"mountPath", "/e"},
                                {"size", "1Gi"},
                                {"accessModes", {"ReadWriteSometimes"}}},
                               {{"name", "f"}, {"mountPath", "/f"}, {"existingClaim", "Bad_Name"}},
                               {{"name", "g"}, {"mountPath", "/g"}, {"existingClaim", "shared"}}};
  std::vector<FieldError> errors = ValidateJson(object);
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[0].size"), HasSubstr("required unless"));
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[1].size"), HasSubstr("resource quantity"));
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[2].size"), HasSubstr("greater than zero"));
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[3].size"), HasSubstr("existingClaim"));
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[3].retain"), HasSubstr("existingClaim"));
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[4].accessModes[0]"), HasSubstr("unsupported"));
  EXPECT_THAT(ErrorsAt(errors, "spec.volumes[5].existingClaim"),
              HasSubstr("PersistentVolumeClaim"));
  for (const FieldError& error : errors) {
    EXPECT_NE(error.field.rfind("spec.volumes[6]", 0), 0u) << error.ToString();
  }
}

TEST(ApiValidationTest, CodeSourceMustBeAPlainUrl) {
  for (const char* good :
       {"https://example.com/a.tgz", "http://10.0.0.1:8080/a.zip", "s3://bucket/path/a.tar.gz"}) {
    json object = TfJobJson();
    object["spec"]["code"] = {{"source", good}};
    EXPECT_THAT(ValidateJson(object), IsEmpty()) << good;
  }
  for (const char* bad :
       {"ftp://example.com/a.tgz", "file:///etc/passwd", "/local/a.tgz", "https://",
        "https:///path", "s3://bucket", "https://x/a b.tgz", "https://x/a.tgz\n; rm -rf /", ""}) {
    json object = TfJobJson();
    object["spec"]["code"] = {{"source", bad}};
    ErrorsAt(ValidateJson(object), "spec.code.source");
  }
  json object = TfJobJson();
  object["spec"]["code"] = {{"source", "https://x/a.tgz"}, {"mountPath", "/"}};
  ErrorsAt(ValidateJson(object), "spec.code.mountPath");
}

TEST(ApiValidationTest, CodeEndpointAndCredentialsGoWithS3Sources) {
  json object = TfJobJson();
  object["spec"]["code"] = {{"source", "s3://bucket/a.tgz"},
                            {"endpoint", "http://127.0.0.1:9000"},
                            {"credentialsSecret", "store-creds"}};
  EXPECT_THAT(ValidateJson(object), IsEmpty());
  // The round trip keeps them.
  auto parsed = ParseHybridJob(object);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->spec.code->endpoint, "http://127.0.0.1:9000");
  EXPECT_EQ(parsed->spec.code->credentials_secret, "store-creds");
  auto again = ParseHybridJob(ToJson(*parsed));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->spec.code, parsed->spec.code);

  for (const char* bad : {"ftp://store", "store:9000", "http://", "http://a b", "http://x\n"}) {
    object["spec"]["code"]["endpoint"] = bad;
    ErrorsAt(ValidateJson(object), "spec.code.endpoint");
  }
  object["spec"]["code"]["endpoint"] = "https://store.example";
  object["spec"]["code"]["credentialsSecret"] = "Not_A_Name";
  ErrorsAt(ValidateJson(object), "spec.code.credentialsSecret");

  object["spec"]["code"] = {{"source", "https://x/a.tgz"},
                            {"endpoint", "https://store.example"},
                            {"credentialsSecret", "store-creds"}};
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.code.endpoint"), HasSubstr("s3://"));
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.code.credentialsSecret"), HasSubstr("s3://"));
}

TEST(ApiValidationTest, ArtifactsNameAJobVolumeRelativePathsAndADestination) {
  json object = TfJobJson();
  object["spec"]["volumes"] = {{{"name", "ckpt"}, {"size", "1Gi"}, {"mountPath", "/ckpt"}}};
  object["spec"]["artifacts"] = {{"volume", "ckpt"},
                                 {"paths", {"model", "logs/metrics.txt", "out/"}},
                                 {"destination", "http://10.0.0.1:8080/runs"}};
  EXPECT_THAT(ValidateJson(object), IsEmpty());
  auto parsed = ParseHybridJob(object);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->spec.artifacts->deadline_seconds, 3600);
  auto again = ParseHybridJob(ToJson(*parsed));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->spec.artifacts, parsed->spec.artifacts);

  object["spec"]["artifacts"]["destination"] = "s3://bucket/prefix";
  object["spec"]["artifacts"]["endpoint"] = "http://127.0.0.1:9000";
  object["spec"]["artifacts"]["credentialsSecret"] = "store";
  EXPECT_THAT(ValidateJson(object), IsEmpty());

  object["spec"]["artifacts"] = {{"volume", "nope"},
                                 {"paths", {"/etc/passwd", "../up", "a/../../b", "a b", ".", ""}},
                                 {"destination", "ftp://x"},
                                 {"endpoint", "http://x"},
                                 {"deadlineSeconds", 0}};
  std::vector<FieldError> errors = ValidateJson(object);
  EXPECT_THAT(ErrorsAt(errors, "spec.artifacts.volume"), HasSubstr("spec.volumes"));
  for (int i = 0; i < 6; ++i) {
    ErrorsAt(errors, "spec.artifacts.paths[" + std::to_string(i) + "]");
  }
  ErrorsAt(errors, "spec.artifacts.destination");
  EXPECT_THAT(ErrorsAt(errors, "spec.artifacts.endpoint"), HasSubstr("s3://"));
  ErrorsAt(errors, "spec.artifacts.deadlineSeconds");
}

TEST(ApiValidationTest, Tensorboard) {
  json object = TfJobJson();
  object["spec"]["tensorboard"] = {{"logDir", ""}, {"serviceType", "Ingress"}};
  std::vector<FieldError> errors = ValidateJson(object);
  ErrorsAt(errors, "spec.tensorboard.logDir");
  ErrorsAt(errors, "spec.tensorboard.serviceType");
  object = TfJobJson();
  object["metadata"]["name"] = std::string(52, 'j');
  object["spec"]["tensorboard"] = {{"logDir", "/logs"}};
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.tensorboard"), HasSubstr("63"));
}

TEST(ApiValidationTest, SchedulingFields) {
  json object = TfJobJson();
  object["spec"]["queue"] = "";
  object["spec"]["schedulerName"] = "Gang Scheduler";
  std::vector<FieldError> errors = ValidateJson(object);
  ErrorsAt(errors, "spec.queue");
  ErrorsAt(errors, "spec.schedulerName");
}

TEST(ApiValidationTest, TopologyNamesALabelKeyAndNoneIsForRolesOnly) {
  json object = TfJobJson();
  object["spec"]["topology"] = {{"level", "example.com/rack"}, {"mode", "Preferred"}};
  object["spec"]["replicaSpecs"][0]["topology"] = {{"mode", "None"}};
  object["spec"]["replicaSpecs"][1]["topology"] = {{"level", "topology.kubernetes.io/zone"}};
  EXPECT_THAT(ValidateJson(object), IsEmpty());
  Result<HybridJob> parsed = ParseHybridJob(object);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->spec.replica_specs[1].topology->mode, TopologyMode::kRequired)
      << "a level without a mode is Required";
  EXPECT_EQ(ToJson(parsed->spec)["topology"], object["spec"]["topology"]);

  object["spec"]["topology"] = {{"mode", "None"}};
  object["spec"]["replicaSpecs"][0]["topology"] = {{"level", "rack"}, {"mode", "None"}};
  object["spec"]["replicaSpecs"][1]["topology"] = {{"level", "Not A Key!"}};
  std::vector<FieldError> errors = ValidateJson(object);
  EXPECT_THAT(ErrorsAt(errors, "spec.topology.mode"), HasSubstr("only for a role"));
  EXPECT_THAT(ErrorsAt(errors, "spec.replicaSpecs[0].topology.level"),
              HasSubstr("must be empty with mode None"));
  EXPECT_THAT(ErrorsAt(errors, "spec.replicaSpecs[1].topology.level"),
              HasSubstr("must be a label key"));

  object["spec"]["topology"] = {{"mode", "Required"}};
  EXPECT_THAT(ErrorsAt(ValidateJson(object), "spec.topology.level"), HasSubstr("required"));
  object["spec"]["topology"] = {{"level", "rack"}, {"mode", "Always"}};
  EXPECT_FALSE(ParseHybridJob(object).ok()) << "an unknown mode is refused when read";
}

TEST(ApiValidationTest, TensorflowConventions) {
  json object =
      WithRoles("tensorflow", {Role("chief", 1, 2), Role("master", 1), Role("worker", 1)});
  std::vector<FieldError> errors = ValidateJson(object);
  EXPECT_THAT(ErrorsAt(errors, "spec.replicaSpecs"), HasSubstr("not both"));
  EXPECT_THAT(ErrorsAt(errors, "spec.replicaSpecs[0].maxReplicas"), HasSubstr("at most one"));
}

TEST(ApiValidationTest, PytorchNeedsAMaster) {
  EXPECT_THAT(ValidateJson(WithRoles("pytorch", {Role("master", 1), Role("worker", 0, 4)})),
              IsEmpty());
  EXPECT_THAT(ValidateJson(WithRoles("pytorch", {Role("worker", 1, 4)})), IsEmpty());
  EXPECT_THAT(
      ErrorsAt(ValidateJson(WithRoles("pytorch", {Role("trainer", 2)})), "spec.replicaSpecs"),
      HasSubstr("MASTER_ADDR"));
  EXPECT_THAT(ErrorsAt(ValidateJson(WithRoles("pytorch", {Role("worker", 0, 4), Role("aux", 1)})),
                       "spec.replicaSpecs[0].minReplicas"),
              HasSubstr("worker 0 is the master"));
}

TEST(ApiValidationTest, MxnetRoles) {
  EXPECT_THAT(ValidateJson(WithRoles(
                  "mxnet", {Role("scheduler", 1), Role("server", 2), Role("worker", 2, 4)})),
              IsEmpty());
  std::vector<FieldError> errors =
      ValidateJson(WithRoles("mxnet", {Role("server", 1), Role("trainer", 2)}));
  EXPECT_THAT(ErrorsAt(errors, "spec.replicaSpecs"), HasSubstr("scheduler"));
  EXPECT_THAT(ErrorsAt(errors, "spec.replicaSpecs[1].name"), HasSubstr("DMLC_ROLE"));
  errors = ValidateJson(WithRoles("mxnet", {Role("scheduler", 1, 2), Role("worker", 1)}));
  EXPECT_THAT(ErrorsAt(errors, "spec.replicaSpecs[0]"), HasSubstr("exactly one"));
}

TEST(ApiValidationTest, MpiNeedsOneLauncherAndWorkers) {
  EXPECT_THAT(ValidateJson(WithRoles("mpi", {Role("launcher", 1), Role("worker", 2, 4)})),
              IsEmpty());
  EXPECT_THAT(ErrorsAt(ValidateJson(WithRoles("mpi", {Role("worker", 2)})), "spec.replicaSpecs"),
              HasSubstr("launcher"));
  EXPECT_THAT(ErrorsAt(ValidateJson(WithRoles("mpi", {Role("launcher", 1)})), "spec.replicaSpecs"),
              HasSubstr("besides the launcher"));
}

TEST(ApiValidationTest, ErrorsJoinForMessages) {
  std::vector<FieldError> errors = {{"a", "x"}, {"b.c", "y"}};
  EXPECT_EQ(JoinErrors(errors), "a: x; b.c: y");
  EXPECT_EQ(JoinErrors({}), "");
}

}  // namespace
}  // namespace hybridjob::api
