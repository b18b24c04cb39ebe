#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/json.h>
#include <hybridjob/controller/children.h>
#include <hybridjob/controller/cluster_spec.h>

#include "job_fixtures.h"
#include "shell.h"

namespace hybridjob::controller {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

json Role(const std::string& name, int min, int max, int gpus = 0) {
  return {{"name", name},
          {"minReplicas", min},
          {"maxReplicas", max},
          {"template", hybridjob::testing::PodTemplate(gpus)}};
}

api::HybridJob MakeJob(const std::string& framework, const std::vector<json>& roles) {
  json object = hybridjob::testing::TfJobJson();
  object["spec"]["framework"] = framework;
  object["spec"]["replicaSpecs"] = roles;
  Result<api::HybridJob> parsed = api::ParseHybridJob(object);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  api::HybridJob job = parsed.ok() ? *parsed : api::HybridJob{};
  api::ApplyDefaults(job);
  return job;
}

Membership Members(std::vector<std::pair<std::string, int32_t>> counts) {
  return {counts};
}

// What a member with this index sees after sourcing its role's env file.
std::string Sourced(const std::string& env_file, int index, const std::string& variable) {
  testing::ShellResult result =
      testing::RunShell("HYBRIDJOB_INDEX=" + std::to_string(index) + "\n" + env_file +
                        "\nprintf '%s' \"$" + variable + "\"\n");
  EXPECT_EQ(result.exit_status, 0) << result.output;
  return result.output;
}

TEST(ControllerClusterSpecTest, MembershipFormatsAndParses) {
  api::HybridJob job = MakeJob("tensorflow", {Role("ps", 1, 1), Role("worker", 2, 4)});
  Membership membership = Members({{"ps", 1}, {"worker", 2}});
  EXPECT_EQ(FormatMembership(membership), R"({"ps":1,"worker":2})");
  EXPECT_EQ(ParseMembership(R"({"worker":2,"ps":1})", job.spec), membership);
  EXPECT_EQ(ParseMembership(R"({"worker":3})", job.spec), Members({{"ps", 0}, {"worker", 3}}));
  EXPECT_EQ(membership.Total(), 3);
  EXPECT_EQ(membership.Count("worker"), 2);
  EXPECT_EQ(membership.Count("chief"), 0);
  // Above maxReplicas: recorded before it was lowered; the planner shrinks it.
  EXPECT_EQ(ParseMembership(R"({"worker":5})", job.spec), Members({{"ps", 0}, {"worker", 5}}));
  for (const char* bad : {"", "[]", "{", R"({"chief":1})", R"({"worker":10001})",
                          R"({"worker":-1})", R"({"worker":"2"})"}) {
    EXPECT_FALSE(ParseMembership(bad, job.spec).has_value()) << bad;
  }
  EXPECT_EQ(FullMembership(job.spec), Members({{"ps", 1}, {"worker", 4}}));
}

TEST(ControllerClusterSpecTest, EnvValuesRenderForOneMemberOrForTheShell) {
  EnvValue value("rank ");
  value.AppendIndexPlus(3).Append(" of 8, it's ").AppendIndexPlus(0);
  EXPECT_EQ(value.Render(2), "rank 5 of 8, it's 2");
  EXPECT_EQ(value.RenderShell(),
            R"sh('rank '"$((HYBRIDJOB_INDEX + 3))"' of 8, it'\''s '"${HYBRIDJOB_INDEX}")sh");
  EXPECT_EQ(Sourced("export X=" + value.RenderShell(), 2, "X"), "rank 5 of 8, it's 2");
  EXPECT_EQ(EnvValue().RenderShell(), "''");
  EXPECT_EQ(EnvValue("$(reboot)`id`").RenderShell(), "'$(reboot)`id`'");
  EXPECT_EQ(Sourced("export X=" + EnvValue("$(echo no)`echo no`").RenderShell(), 0, "X"),
            "$(echo no)`echo no`");
}

TEST(ControllerClusterSpecTest, TfConfigListsOnlyTheMembers) {
  api::HybridJob job = MakeJob("tensorflow", {Role("ps", 1, 1), Role("worker", 2, 4)});
  Membership membership = Members({{"ps", 1}, {"worker", 2}});
  std::map<std::string, std::string> env = MemberEnvironment(job, membership, "worker", 1);
  json tf_config = json::parse(env.at("TF_CONFIG"));
  EXPECT_EQ(tf_config["cluster"]["ps"], json({"mnist-ps-0.mnist.team-a.svc:2222"}));
  EXPECT_EQ(tf_config["cluster"]["worker"],
            json({"mnist-worker-0.mnist.team-a.svc:2222", "mnist-worker-1.mnist.team-a.svc:2222"}));
  EXPECT_EQ(tf_config["task"], json({{"type", "worker"}, {"index", 1}}));
  EXPECT_EQ(env.at("HYBRIDJOB_WORLD_SIZE"), "3");
  // Rank order: roles in spec order (no chief), members by index.
  EXPECT_EQ(env.at("HYBRIDJOB_RANK"), "2");
  EXPECT_EQ(MemberEnvironment(job, membership, "ps", 0).at("HYBRIDJOB_RANK"), "0");
}

TEST(ControllerClusterSpecTest, TfConfigLeavesTheEvaluatorOut) {
  api::HybridJob job =
      MakeJob("tensorflow", {Role("chief", 1, 1), Role("worker", 1, 2), Role("evaluator", 0, 1)});
  Membership membership = Members({{"chief", 1}, {"worker", 2}, {"evaluator", 1}});
  json tf_config = json::parse(MemberEnvironment(job, membership, "evaluator", 0).at("TF_CONFIG"));
  EXPECT_FALSE(tf_config["cluster"].contains("evaluator"));
  EXPECT_EQ(tf_config["cluster"]["chief"].size(), 1u);
  EXPECT_EQ(tf_config["task"]["type"], "evaluator");
  // The chief ranks first.
  EXPECT_EQ(MemberEnvironment(job, membership, "chief", 0).at("HYBRIDJOB_RANK"), "0");
  EXPECT_EQ(MemberEnvironment(job, membership, "worker", 0).at("HYBRIDJOB_RANK"), "1");
  // A role with no members is not in the cluster at all.
  Membership without = Members({{"chief", 1}, {"worker", 2}, {"evaluator", 0}});
  tf_config = json::parse(MemberEnvironment(job, without, "worker", 0).at("TF_CONFIG"));
  EXPECT_EQ(tf_config["cluster"].size(), 2u);
}

TEST(ControllerClusterSpecTest, RoleEnvFileReproducesEveryMembersTfConfig) {
  api::HybridJob job = MakeJob("tensorflow", {Role("ps", 2, 2), Role("worker", 2, 4)});
  Membership membership = Members({{"ps", 2}, {"worker", 3}});
  const std::string env_file = RoleEnvFile(job, membership, "worker");
  for (int index = 0; index < 3; ++index) {
    std::map<std::string, std::string> expected =
        MemberEnvironment(job, membership, "worker", index);
    for (const char* variable : {"TF_CONFIG", "HYBRIDJOB_RANK", "HYBRIDJOB_WORLD_SIZE"}) {
      EXPECT_EQ(Sourced(env_file, index, variable), expected.at(variable))
          << variable << " of worker " << index;
    }
  }
}

TEST(ControllerClusterSpecTest, PytorchMasterAndRanks) {
  api::HybridJob job = MakeJob("pytorch", {Role("worker", 1, 4), Role("master", 1, 1)});
  Membership membership = Members({{"worker", 2}, {"master", 1}});
  std::map<std::string, std::string> master = MemberEnvironment(job, membership, "master", 0);
  EXPECT_EQ(master.at("MASTER_ADDR"), "mnist-master-0.mnist.team-a.svc");
  EXPECT_EQ(master.at("MASTER_PORT"), "23456");
  EXPECT_EQ(master.at("WORLD_SIZE"), "3");
  EXPECT_EQ(master.at("RANK"), "0");
  EXPECT_EQ(MemberEnvironment(job, membership, "worker", 0).at("RANK"), "1");
  EXPECT_EQ(MemberEnvironment(job, membership, "worker", 1).at("RANK"), "2");
  const std::string env_file = RoleEnvFile(job, membership, "worker");
  EXPECT_EQ(Sourced(env_file, 1, "RANK"), "2");
  EXPECT_EQ(Sourced(env_file, 1, "WORLD_SIZE"), "3");
  EXPECT_EQ(Sourced(env_file, 1, "MASTER_ADDR"), "mnist-master-0.mnist.team-a.svc");
}

TEST(ControllerClusterSpecTest, PytorchWithoutMasterUsesWorkerZero) {
  api::HybridJob job = MakeJob("pytorch", {Role("worker", 2, 8)});
  job.spec.replica_specs[0].port = 29500;
  Membership membership = Members({{"worker", 5}});
  std::map<std::string, std::string> env = MemberEnvironment(job, membership, "worker", 4);
  EXPECT_EQ(env.at("MASTER_ADDR"), "mnist-worker-0.mnist.team-a.svc");
  EXPECT_EQ(env.at("MASTER_PORT"), "29500");
  EXPECT_EQ(env.at("WORLD_SIZE"), "5");
  EXPECT_EQ(env.at("RANK"), "4");
}

TEST(ControllerClusterSpecTest, MxnetVariables) {
  api::HybridJob job =
      MakeJob("mxnet", {Role("scheduler", 1, 1), Role("server", 2, 2), Role("worker", 2, 6)});
  Membership membership = Members({{"scheduler", 1}, {"server", 2}, {"worker", 4}});
  std::map<std::string, std::string> env = MemberEnvironment(job, membership, "server", 1);
  EXPECT_EQ(env.at("DMLC_PS_ROOT_URI"), "mnist-scheduler-0.mnist.team-a.svc");
  EXPECT_EQ(env.at("DMLC_PS_ROOT_PORT"), "9091");
  EXPECT_EQ(env.at("DMLC_NUM_SERVER"), "2");
  EXPECT_EQ(env.at("DMLC_NUM_WORKER"), "4");
  EXPECT_EQ(env.at("DMLC_ROLE"), "server");
  EXPECT_EQ(MemberEnvironment(job, membership, "worker", 0).at("DMLC_ROLE"), "worker");
}

TEST(ControllerClusterSpecTest, MpiHostfileCountsGpuSlots) {
  api::HybridJob job =
      MakeJob("mpi", {Role("launcher", 1, 1), Role("worker", 2, 4, 2), Role("helper", 1, 1)});
  Membership membership = Members({{"launcher", 1}, {"worker", 3}, {"helper", 1}});
  EXPECT_EQ(MpiHostfile(job, membership, {"nvidia.com/gpu"}),
            "mnist-worker-0.mnist.team-a.svc slots=2\n"
            "mnist-worker-1.mnist.team-a.svc slots=2\n"
            "mnist-worker-2.mnist.team-a.svc slots=2\n"
            "mnist-helper-0.mnist.team-a.svc slots=1\n");
  std::map<std::string, std::string> env = MemberEnvironment(job, membership, "launcher", 0);
  EXPECT_EQ(env.at("OMPI_MCA_orte_default_hostfile"), "/etc/hybridjob/hostfile");
  EXPECT_EQ(env.at("HYBRIDJOB_HOSTFILE"), "/etc/hybridjob/hostfile");
  EXPECT_EQ(GpusPerMember(job.spec.replica_specs[1], {"nvidia.com/gpu"}), 2);
  EXPECT_EQ(GpusPerMember(job.spec.replica_specs[0], {"nvidia.com/gpu"}), 0);
}

TEST(ControllerClusterSpecTest, GpuSlotsCountEveryConfiguredGpuResource) {
  json worker = Role("worker", 2, 2);
  json& containers = worker["template"]["spec"]["containers"];
  containers[0]["resources"] = {{"limits", {{"amd.com/gpu", 2}}}};
  json sidecar = {
      {"name", "sidecar"},
      {"image", "busybox"},
      {"resources",
       {{"requests", {{"nvidia.com/mig-1g.10gb", "1"}}}, {"limits", {{"nvidia.com/gpu", "1"}}}}}};
  containers.push_back(sidecar);
  api::HybridJob job = MakeJob("mpi", {Role("launcher", 1, 1), worker});
  const api::ReplicaSpec& role = job.spec.replica_specs[1];
  EXPECT_EQ(GpusPerMember(role, {"nvidia.com/gpu"}), 1);
  EXPECT_EQ(GpusPerMember(role, {"nvidia.com/gpu", "amd.com/gpu"}), 3);
  EXPECT_EQ(GpusPerMember(role, {"nvidia.com/gpu", "amd.com/gpu", "nvidia.com/mig-1g.10gb"}), 4)
      << "requests count where a resource has no limit";
  EXPECT_EQ(MpiHostfile(job, Members({{"launcher", 1}, {"worker", 1}}),
                        {"amd.com/gpu", "nvidia.com/gpu"}),
            "mnist-worker-0.mnist.team-a.svc slots=3\n");
}

TEST(ControllerOptionsTest, AllowedSchedulerNamesAreNamesListedOnce) {
  Result<std::vector<std::string>> names = ParseSchedulerNames("gang-scheduler, team-b.sched");
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_THAT(*names, ElementsAre("gang-scheduler", "team-b.sched"));
  EXPECT_THAT(ParseSchedulerNames("").status().message(),
              HasSubstr("\"\" is not a scheduler name"));
  EXPECT_THAT(ParseSchedulerNames("Gang_Scheduler").status().message(),
              HasSubstr("is not a scheduler name"));
  EXPECT_THAT(ParseSchedulerNames("a,a").status().message(), HasSubstr("listed twice"));
  EXPECT_EQ(SchedulerNameRefusal("gang-scheduler", {"gang-scheduler"}), "");
  EXPECT_THAT(SchedulerNameRefusal("default-scheduler", {"gang-scheduler", "b"}),
              HasSubstr("--allowed-scheduler-names: gang-scheduler, b"));
}

TEST(ControllerOptionsTest, GpuResourcesAreExtendedResourceNamesListedOnce) {
  Result<std::vector<std::string>> names =
      ParseGpuResources("nvidia.com/gpu, amd.com/gpu,nvidia.com/mig-1g.10gb");
  ASSERT_TRUE(names.ok()) << names.status().ToString();
  EXPECT_THAT(*names, ElementsAre("nvidia.com/gpu", "amd.com/gpu", "nvidia.com/mig-1g.10gb"));
  EXPECT_THAT(ParseGpuResources("gpu").status().message(),
              HasSubstr("\"gpu\" is not an extended resource name"));
  EXPECT_THAT(ParseGpuResources("nvidia.com/gpu,").status().message(),
              HasSubstr("\"\" is not an extended resource name"));
  EXPECT_THAT(ParseGpuResources("a.io/x;rm -rf").status().message(),
              HasSubstr("is not an extended resource name"));
  EXPECT_THAT(ParseGpuResources("amd.com/gpu,amd.com/gpu").status().message(),
              HasSubstr("\"amd.com/gpu\" is listed twice"));
}

TEST(ControllerClusterSpecTest, GenericClusterJson) {
  api::HybridJob job = MakeJob("generic", {Role("server", 1, 1), Role("client", 0, 3)});
  job.spec.replica_specs[0].port = 8080;
  Membership membership = Members({{"server", 1}, {"client", 0}});
  nlohmann::ordered_json cluster = ClusterJson(job, membership);
  EXPECT_EQ(cluster.dump(), R"({"server":["mnist-server-0.mnist.team-a.svc:8080"],"client":[]})");
  EXPECT_EQ(MemberEnvironment(job, membership, "server", 0).at("HYBRIDJOB_CLUSTER"),
            cluster.dump());
}

TEST(ControllerClusterSpecTest, NamespaceDefaultsToDefault) {
  api::HybridJob job = MakeJob("generic", {Role("a", 1, 1)});
  job.metadata.namespace_name.clear();
  EXPECT_EQ(MemberAddress(job, "a", 0), "mnist-a-0.mnist.default.svc");
}

}  // namespace
}  // namespace hybridjob::controller
