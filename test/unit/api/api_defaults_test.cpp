#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/json.h>

#include "job_fixtures.h"

namespace hybridjob::api {
namespace {

using nlohmann::json;
using testing::PodTemplate;
using testing::TfJobJson;

HybridJob Parse(const json& object) {
  Result<HybridJob> parsed = ParseHybridJob(object);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return parsed.ok() ? *parsed : HybridJob{};
}

json ReplicaSpecJson(const std::string& name, int min) {
  return {{"name", name}, {"minReplicas", min}, {"template", PodTemplate()}};
}

HybridJob JobWithRoles(const std::string& framework, const std::vector<json>& roles) {
  json object = TfJobJson();
  object["spec"]["framework"] = framework;
  object["spec"]["replicaSpecs"] = roles;
  return Parse(object);
}

TEST(ApiDefaultsTest, MaxReplicasDefaultsToMin) {
  HybridJob job = Parse(TfJobJson());
  ApplyDefaults(job);
  EXPECT_EQ(job.spec.replica_specs[0].max_replicas, 1);
  EXPECT_EQ(job.spec.replica_specs[1].max_replicas, 4);  // given
}

TEST(ApiDefaultsTest, PortsFollowTheFramework) {
  for (const auto& [framework, port] :
       std::vector<std::pair<std::string, int>>{{"tensorflow", 2222},
                                                {"pytorch", 23456},
                                                {"mxnet", 9091},
                                                {"mpi", 2222},
                                                {"generic", 2222}}) {
    HybridJob job = JobWithRoles(framework, {ReplicaSpecJson("worker", 1)});
    ApplyDefaults(job);
    EXPECT_EQ(job.spec.replica_specs[0].port, port) << framework;
  }
  json object = TfJobJson();
  object["spec"]["replicaSpecs"][1]["port"] = 4000;
  HybridJob job = Parse(object);
  ApplyDefaults(job);
  EXPECT_EQ(job.spec.replica_specs[1].port, 4000);
}

TEST(ApiDefaultsTest, SuccessPolicyPrefersChiefThenMasterThenWorker) {
  HybridJob chief = JobWithRoles(
      "tensorflow",
      {ReplicaSpecJson("ps", 1), ReplicaSpecJson("worker", 2), ReplicaSpecJson("chief", 1)});
  ApplyDefaults(chief);
  ASSERT_TRUE(chief.spec.success_policy.has_value());
  EXPECT_EQ(chief.spec.success_policy->roles, std::vector<std::string>{"chief"});
  EXPECT_EQ(chief.spec.success_policy->op, SuccessOperator::kAll);

  HybridJob master =
      JobWithRoles("pytorch", {ReplicaSpecJson("worker", 2), ReplicaSpecJson("master", 1)});
  ApplyDefaults(master);
  EXPECT_EQ(master.spec.success_policy->roles, std::vector<std::string>{"master"});

  HybridJob worker =
      JobWithRoles("tensorflow", {ReplicaSpecJson("ps", 1), ReplicaSpecJson("worker", 2)});
  ApplyDefaults(worker);
  EXPECT_EQ(worker.spec.success_policy->roles, std::vector<std::string>{"worker"});

  HybridJob other =
      JobWithRoles("generic", {ReplicaSpecJson("server", 1), ReplicaSpecJson("client", 2)});
  ApplyDefaults(other);
  EXPECT_EQ(other.spec.success_policy->roles, (std::vector<std::string>{"server", "client"}));
}

TEST(ApiDefaultsTest, ExplicitSuccessPolicyIsKept) {
  json object = TfJobJson();
  object["spec"]["successPolicy"] = {{"roles", {"ps"}}, {"operator", "Any"}};
  HybridJob job = Parse(object);
  ApplyDefaults(job);
  EXPECT_EQ(job.spec.success_policy->roles, std::vector<std::string>{"ps"});
  EXPECT_EQ(job.spec.success_policy->op, SuccessOperator::kAny);
}

TEST(ApiDefaultsTest, VolumesMountEverywhereReadWriteOnce) {
  json object = TfJobJson();
  object["spec"]["volumes"] = {
      {{"name", "data"}, {"size", "1Gi"}, {"mountPath", "/data"}},
      {{"name", "logs"},
       {"size", "1Gi"},
       {"mountPath", "/logs"},
       {"roles", {"worker"}},
       {"accessModes", {"ReadWriteMany"}}},
      {{"name", "shared"}, {"existingClaim", "team"}, {"mountPath", "/shared"}}};
  HybridJob job = Parse(object);
  ApplyDefaults(job);
  EXPECT_EQ(job.spec.volumes[0].roles, (std::vector<std::string>{"ps", "worker"}));
  EXPECT_EQ(job.spec.volumes[0].access_modes, std::vector<std::string>{"ReadWriteOnce"});
  EXPECT_EQ(job.spec.volumes[1].roles, std::vector<std::string>{"worker"});
  EXPECT_EQ(job.spec.volumes[1].access_modes, std::vector<std::string>{"ReadWriteMany"});
  EXPECT_TRUE(job.spec.volumes[2].access_modes.empty());  // the claim has its own
}

TEST(ApiDefaultsTest, ImagesStayUnset) {
  json object = TfJobJson();
  object["spec"]["code"] = {{"source", "https://example.com/a.tgz"}};
  object["spec"]["tensorboard"] = {{"logDir", "/logs"}};
  HybridJob job = Parse(object);
  ApplyDefaults(job);
  EXPECT_FALSE(job.spec.code->image.has_value());
  EXPECT_EQ(job.spec.code->mount_path, "/workspace");
  EXPECT_FALSE(job.spec.tensorboard->image.has_value());
  EXPECT_EQ(job.spec.tensorboard->service_type, "ClusterIP");
}

TEST(ApiDefaultsTest, Idempotent) {
  json object = TfJobJson();
  object["spec"]["volumes"] = {{{"name", "data"}, {"size", "1Gi"}, {"mountPath", "/data"}}};
  HybridJob once = Parse(object);
  ApplyDefaults(once);
  HybridJob twice = once;
  ApplyDefaults(twice);
  EXPECT_EQ(once, twice);
}

TEST(ApiDefaultsTest, ElasticMeansSomeRoleHasRange) {
  HybridJob job = Parse(TfJobJson());
  EXPECT_TRUE(job.spec.IsElastic());
  job.spec.replica_specs[1].max_replicas = 2;
  EXPECT_FALSE(job.spec.IsElastic());
}

}  // namespace
}  // namespace hybridjob::api
