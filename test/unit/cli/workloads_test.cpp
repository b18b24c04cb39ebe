// kubectl hybridjob serve and notebook: the objects they make from a job,
// where those can run, and how the commands write and print them.
#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/json.h>
#include <hybridjob/api/labels.h>
#include <hybridjob/api/names.h>
#include <hybridjob/cli/workloads.h>
#include <hybridjob/k8s/resource.h>

#include "k8s/fake_api_client.h"

namespace hybridjob::cli {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

json TrainJson() {
  return json::parse(R"({
    "apiVersion": "batch.hybridjob.io/v1alpha1", "kind": "HybridJob",
    "metadata": {"name": "train", "namespace": "team", "uid": "uid-train"},
    "spec": {
      "replicaSpecs": [{"name": "worker", "minReplicas": 2, "template": {"spec": {
        "containers": [{"name": "main", "image": "trainer"}]}}}],
      "volumes": [
        {"name": "ckpt", "size": "1Gi", "mountPath": "/ckpt", "retain": true},
        {"name": "data", "existingClaim": "shared-data", "mountPath": "/data"}],
      "code": {"source": "https://example.com/code.tar.gz"}
    }})");
}

api::HybridJob Train() {
  Result<api::HybridJob> job = api::ParseHybridJob(TrainJson());
  EXPECT_TRUE(job.ok()) << job.status().ToString();
  return *job;
}

ServeOptions Serve() {
  ServeOptions options;
  options.volume = "ckpt";
  options.model_path = "/models";
  options.image = "model-server:1";
  options.port = 8500;
  return options;
}

json Discovery(std::initializer_list<const char*> versions) {
  json list = json::array();
  for (const char* version : versions) {
    list.push_back({{"groupVersion", version}, {"version", std::string(version).substr(12)}});
  }
  return {{"kind", "APIGroup"}, {"name", "autoscaling"}, {"versions", list}};
}

TEST(AutoscalingVersionTest, TheNewestServedVersionWins) {
  EXPECT_EQ(*ChooseAutoscalingVersion(
                Discovery({"autoscaling/v1", "autoscaling/v2", "autoscaling/v2beta2"})),
            "autoscaling/v2");
  // What a 1.20 API server serves.
  EXPECT_EQ(*ChooseAutoscalingVersion(
                Discovery({"autoscaling/v1", "autoscaling/v2beta1", "autoscaling/v2beta2"})),
            "autoscaling/v2beta2");
  EXPECT_EQ(*ChooseAutoscalingVersion(Discovery({"autoscaling/v1"})), "autoscaling/v1");
  Result<std::string> none = ChooseAutoscalingVersion(Discovery({"autoscaling/v9"}));
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(ChooseAutoscalingVersion(json("not a group")).ok());
}

TEST(ServeObjectsTest, ADeploymentMountsTheJobsClaimReadOnlyBehindAService) {
  Result<std::vector<json>> objects = BuildServeObjects(Train(), Serve(), "autoscaling/v2");
  ASSERT_TRUE(objects.ok()) << objects.status().ToString();
  ASSERT_EQ(objects->size(), 2u) << "one replica: no autoscaler";
  const json& deployment = (*objects)[0];
  EXPECT_EQ(deployment["kind"], "Deployment");
  EXPECT_EQ(deployment["metadata"]["name"], "train-serve");
  EXPECT_EQ(deployment["metadata"]["namespace"], "team");
  EXPECT_FALSE(deployment["metadata"].contains("ownerReferences")) << "it outlives the job";
  EXPECT_EQ(deployment["metadata"]["labels"][std::string(kFromJobLabel)], "train");
  const json& pod = deployment["spec"]["template"];
  EXPECT_FALSE(pod["metadata"]["labels"].contains(std::string(api::kJobNameLabel)))
      << "a serving pod is never part of the job's gang";
  EXPECT_EQ(deployment["spec"]["selector"]["matchLabels"],
            json({{std::string(kServeLabel), "train-serve"}}));
  EXPECT_EQ(pod["metadata"]["labels"][std::string(kServeLabel)], "train-serve");
  EXPECT_EQ(deployment["spec"]["replicas"], 1);
  const json& container = pod["spec"]["containers"][0];
  EXPECT_EQ(container["image"], "model-server:1");
  EXPECT_FALSE(container.contains("command")) << "the image's own";
  EXPECT_EQ(container["ports"][0]["containerPort"], 8500);
  EXPECT_EQ(container["volumeMounts"][0],
            json({{"name", "model"}, {"mountPath", "/models"}, {"readOnly", true}}));
  EXPECT_EQ(pod["spec"]["volumes"][0],
            json({{"name", "model"},
                  {"persistentVolumeClaim", {{"claimName", "train-ckpt"}, {"readOnly", true}}}}));
  EXPECT_EQ(container["resources"]["requests"]["cpu"], "100m");
  EXPECT_TRUE(container.contains("readinessProbe"));

  const json& service = (*objects)[1];
  EXPECT_EQ(service["kind"], "Service");
  EXPECT_EQ(service["spec"]["selector"], json({{std::string(kServeLabel), "train-serve"}}));
  EXPECT_EQ(service["spec"]["ports"][0]["port"], 8500);
  EXPECT_EQ(service["spec"]["ports"][0]["targetPort"], "http");

  ServeOptions named = Serve();
  named.volume = "data";
  named.name = "bert";
  named.command = {"python3", "-m", "server"};
  named.replicas = 3;
  objects = BuildServeObjects(Train(), named, "autoscaling/v2");
  ASSERT_TRUE(objects.ok());
  EXPECT_EQ((*objects)[0]["metadata"]["name"], "bert");
  EXPECT_EQ((*objects)[0]["spec"]["replicas"], 3);
  const json& spec = (*objects)[0]["spec"]["template"]["spec"];
  EXPECT_EQ(spec["volumes"][0]["persistentVolumeClaim"]["claimName"], "shared-data");
  EXPECT_EQ(spec["containers"][0]["command"], json({"python3", "-m", "server"}));
}

TEST(ServeObjectsTest, AnAutoscalerIsSpelledAsItsVersionWantsIt) {
  ServeOptions options = Serve();
  options.min_replicas = 2;
  options.max_replicas = 5;
  options.cpu_percent = 60;
  for (const char* version : {"autoscaling/v2", "autoscaling/v2beta2"}) {
    Result<std::vector<json>> objects = BuildServeObjects(Train(), options, version);
    ASSERT_TRUE(objects.ok());
    ASSERT_EQ(objects->size(), 3u);
    const json& hpa = (*objects)[2];
    EXPECT_EQ(hpa["apiVersion"], version);
    EXPECT_EQ(hpa["kind"], "HorizontalPodAutoscaler");
    EXPECT_EQ(hpa["spec"]["scaleTargetRef"],
              json({{"apiVersion", "apps/v1"}, {"kind", "Deployment"}, {"name", "train-serve"}}));
    EXPECT_EQ(hpa["spec"]["minReplicas"], 2);
    EXPECT_EQ(hpa["spec"]["maxReplicas"], 5);
    EXPECT_EQ(hpa["spec"]["metrics"][0]["resource"]["target"],
              json({{"type", "Utilization"}, {"averageUtilization", 60}}));
    EXPECT_EQ((*objects)[0]["spec"]["replicas"], 2) << "the autoscaler's minimum to start";
  }
  Result<std::vector<json>> beta1 = BuildServeObjects(Train(), options, "autoscaling/v2beta1");
  ASSERT_TRUE(beta1.ok());
  EXPECT_EQ((*beta1)[2]["spec"]["metrics"][0]["resource"]["targetAverageUtilization"], 60);
  Result<std::vector<json>> v1 = BuildServeObjects(Train(), options, "autoscaling/v1");
  ASSERT_TRUE(v1.ok());
  EXPECT_EQ((*v1)[2]["spec"]["targetCPUUtilizationPercentage"], 60);
  EXPECT_FALSE((*v1)[2]["spec"].contains("metrics"));
}

TEST(ServeObjectsTest, WhatCannotBeServedIsRefusedWithWhy) {
  auto error = [](ServeOptions options) {
    return BuildServeObjects(Train(), options, "autoscaling/v2").status().message();
  };
  ServeOptions options = Serve();
  options.volume = "logs";
  EXPECT_EQ(error(options), "job train has no volume \"logs\" (its volumes: ckpt, data)");
  options = Serve();
  options.model_path = "models";
  EXPECT_THAT(error(options), HasSubstr("--model-path must be an absolute path"));
  options = Serve();
  options.image = "";
  EXPECT_THAT(error(options), HasSubstr("--image is required"));
  options = Serve();
  options.port = 0;
  EXPECT_THAT(error(options), HasSubstr("--port must be between 1 and 65535"));
  options = Serve();
  options.replicas = 2;
  options.max_replicas = 4;
  EXPECT_THAT(error(options), HasSubstr("give one or the other"));
  options = Serve();
  options.min_replicas = 3;
  options.max_replicas = 2;
  EXPECT_THAT(error(options), HasSubstr("--max-replicas at least --min-replicas, got 3 and 2"));
  options = Serve();
  options.name = "Not_A_Name";
  EXPECT_THAT(error(options), HasSubstr("\"Not_A_Name\" is not a valid name"));
}

json Claim(const std::string& phase, const std::string& mode, const std::string& volume = "") {
  json claim = {{"metadata", {{"name", "train-ckpt"}}},
                {"spec", {{"accessModes", {mode}}}},
                {"status", {{"phase", phase}}}};
  if (!volume.empty()) {
    claim["spec"]["volumeName"] = volume;
  }
  return claim;
}

json LocalVolume(const std::string& node) {
  return {{"metadata", {{"name", "pv-1"}}},
          {"spec",
           {{"nodeAffinity",
             {{"required",
               {{"nodeSelectorTerms",
                 {{{"matchExpressions",
                    {{{"key", "kubernetes.io/hostname"},
                      {"operator", "In"},
                      {"values", {node}}}}}}}}}}}}}}};
}

TEST(ClaimPlacementTest, ANodeLocalClaimPinsThePodsAndAnUnboundOneIsRefused) {
  const api::HybridJob job = Train();
  const api::VolumeSpec& ckpt = job.spec.volumes[0];
  Result<ClaimPlacement> missing = PlaceClaim(job, ckpt, json(), json());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr("claim train-ckpt of volume ckpt of job train "
                                                    "does not exist"));
  Result<ClaimPlacement> pending = PlaceClaim(job, ckpt, Claim("Pending", "ReadWriteOnce"), json());
  EXPECT_EQ(pending.status().code(), StatusCode::kConflict);
  EXPECT_THAT(pending.status().message(), HasSubstr("WaitForFirstConsumer"));
  EXPECT_THAT(pending.status().message(), HasSubstr("run the job first"));

  Result<ClaimPlacement> local =
      PlaceClaim(job, ckpt, Claim("Bound", "ReadWriteOnce", "pv-1"), LocalVolume("node-3"));
  ASSERT_TRUE(local.ok()) << local.status().ToString();
  EXPECT_EQ(local->claim, "train-ckpt");
  EXPECT_EQ(local->node, "node-3");
  EXPECT_TRUE(local->read_write_once);
  EXPECT_TRUE(local->retained);
  EXPECT_THAT(PlacementNotes("deployment train-serve", *local, "train"),
              ::testing::ElementsAre(
                  "the pods of deployment train-serve can run only on node node-3, where the "
                  "volume of claim train-ckpt is (ReadWriteOnce, node-local): every replica runs "
                  "there"));

  api::VolumeSpec scratch = ckpt;
  scratch.retain = false;
  Result<ClaimPlacement> shared = PlaceClaim(job, scratch, Claim("Bound", "ReadWriteMany"), json());
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared->node, "");
  EXPECT_FALSE(shared->read_write_once);
  EXPECT_THAT(PlacementNotes("deployment train-serve", *shared, "train"),
              ::testing::ElementsAre(HasSubstr("is deleted with job train")));
}

TEST(NotebookObjectsTest, JupyterMountsEveryClaimAndTheCodeWithATokenFromASecret) {
  Result<std::vector<json>> objects = BuildNotebookObjects(Train(), NotebookOptions{}, "t0ken");
  ASSERT_TRUE(objects.ok()) << objects.status().ToString();
  ASSERT_EQ(objects->size(), 3u);
  const json& secret = (*objects)[0];
  EXPECT_EQ(secret["kind"], "Secret");
  EXPECT_EQ(secret["metadata"]["name"], "train-notebook-token");
  EXPECT_EQ(secret["stringData"]["token"], "t0ken");
  const json& deployment = (*objects)[1];
  EXPECT_EQ(deployment["metadata"]["name"], "train-notebook");
  const json& pod = deployment["spec"]["template"]["spec"];
  const json& container = pod["containers"][0];
  EXPECT_EQ(container["image"], "jupyter/base-notebook");
  EXPECT_EQ(container["command"][0], "jupyter");
  EXPECT_THAT(container["command"].dump(), HasSubstr("\"--allow-root\""));
  EXPECT_THAT(container["command"].dump(), HasSubstr("--notebook-dir=/workspace"))
      << "it opens the job's code";
  EXPECT_EQ(container["env"][0]["valueFrom"]["secretKeyRef"],
            json({{"name", "train-notebook-token"}, {"key", "token"}}));
  EXPECT_THAT(container["volumeMounts"].dump(), HasSubstr(R"("mountPath":"/ckpt")"));
  EXPECT_THAT(container["volumeMounts"].dump(), HasSubstr(R"("mountPath":"/data")"));
  EXPECT_THAT(pod["volumes"].dump(), HasSubstr(R"("claimName":"shared-data")"));
  EXPECT_THAT(pod["volumes"].dump(), HasSubstr(R"("claimName":"train-ckpt")"));
  ASSERT_EQ(pod["initContainers"].size(), 1u);
  EXPECT_EQ(pod["initContainers"][0]["name"], std::string(api::kCodeInitContainerName));
  EXPECT_FALSE(pod.dump().find(std::string(api::kJobNameLabel)) != std::string::npos);
  const json& service = (*objects)[2];
  EXPECT_EQ(service["spec"]["ports"][0]["port"], 8888);
  EXPECT_EQ(service["spec"]["selector"], json({{std::string(kNotebookLabel), "train-notebook"}}));
}

class WorkloadCommandsTest : public ::testing::Test {
 protected:
  WorkloadCommandsTest() {
    api_.Seed(k8s::resources::HybridJobs(), TrainJson());
    json claim = Claim("Bound", "ReadWriteOnce", "pv-1");
    claim["metadata"]["namespace"] = "team";
    api_.Seed(k8s::resources::PersistentVolumeClaims(), claim);
    json shared = Claim("Bound", "ReadWriteMany");
    shared["metadata"] = {{"name", "shared-data"}, {"namespace", "team"}};
    api_.Seed(k8s::resources::PersistentVolumeClaims(), shared);
    json pv = LocalVolume("node-3");
    api_.Seed(k8s::resources::PersistentVolumes(), pv);
    api_.SetRaw("/apis/autoscaling",
                Discovery({"autoscaling/v1", "autoscaling/v2beta1", "autoscaling/v2beta2"}).dump());
    write_.namespace_name = "team";
  }

  k8s::testing::FakeApiClient api_;
  WriteOptions write_;
};

TEST_F(WorkloadCommandsTest, ServeCreatesTheObjectsAndSaysWhereTheyRunAndHowToDeleteThem) {
  ServeOptions options = Serve();
  options.max_replicas = 3;
  std::ostringstream out;
  std::ostringstream err;
  Status status = RunServe(api_, "train", options, write_, out, err);
  ASSERT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(out.str(),
            "deployment.apps/train-serve created\nservice/train-serve created\n"
            "horizontalpodautoscaler.autoscaling/train-serve created\n");
  EXPECT_THAT(err.str(), HasSubstr("can run only on node node-3"));
  EXPECT_THAT(err.str(), HasSubstr("kubectl delete deployment,service,hpa -n team -l "
                                   "batch.hybridjob.io/serve=train-serve"));
  std::optional<json> hpa =
      api_.Object({"autoscaling", "v2beta2", "horizontalpodautoscalers"}, "team", "train-serve");
  ASSERT_TRUE(hpa.has_value()) << "written in the version discovery chose";
  EXPECT_TRUE(api_.Object(k8s::resources::Deployments(), "team", "train-serve").has_value());

  // Again: the Deployment exists, and the error says so.
  status = RunServe(api_, "train", options, write_, out, err);
  EXPECT_THAT(status.message(), HasSubstr("cannot create deployment.apps/train-serve in "
                                          "namespace team"));
}

TEST_F(WorkloadCommandsTest, ADryRunPrintsAndCreatesNothing) {
  Result<WriteOptions> write = ParseWriteOptions("team", "name", "client");
  ASSERT_TRUE(write.ok());
  std::ostringstream out;
  std::ostringstream err;
  ASSERT_TRUE(RunServe(api_, "train", Serve(), *write, out, err).ok());
  EXPECT_EQ(out.str(), "deployment.apps/train-serve\nservice/train-serve\n");
  EXPECT_FALSE(api_.Object(k8s::resources::Deployments(), "team", "train-serve").has_value());

  write = ParseWriteOptions("team", "yaml", "client");
  std::ostringstream yaml;
  Status notebook = RunNotebook(api_, "train", NotebookOptions{}, *write, yaml, err);
  ASSERT_TRUE(notebook.ok()) << notebook.ToString();
  EXPECT_THAT(yaml.str(), HasSubstr("kind: \"List\""));
  EXPECT_THAT(yaml.str(), HasSubstr("name: \"train-notebook-token\""));
  EXPECT_THAT(err.str(),
              HasSubstr("kubectl port-forward -n team service/train-notebook 8888:8888"));
  EXPECT_FALSE(api_.Object(k8s::resources::Secrets(), "team", "train-notebook-token").has_value());

  EXPECT_THAT(ParseWriteOptions("team", "wide", "").status().message(),
              HasSubstr("use name, json or yaml"));
  EXPECT_THAT(ParseWriteOptions("team", "", "server").status().message(),
              HasSubstr("use --dry-run=client"));
  EXPECT_THAT(RunServe(api_, "nope", Serve(), *write, out, err).message(),
              HasSubstr("no HybridJob \"nope\" in namespace team"));
}

}  // namespace
}  // namespace hybridjob::cli
