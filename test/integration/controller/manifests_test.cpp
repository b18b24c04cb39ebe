// The manifests users apply, against the real API server: every example
// applies cleanly with kubectl, and the CRD's schema refuses what a schema can
// express, saying which field is wrong.
#include <algorithm>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include <hybridjob/api/json.h>
#include <hybridjob/api/validation.h>
#include <hybridjob/k8s/api_status.h>

#include "crd.h"
#include "test_cluster.h"
#include "yaml_json.h"

namespace hybridjob::testing {
namespace {

using nlohmann::json;

class ManifestsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    Status crd = EnsureHybridJobCrd(*client_);
    ASSERT_TRUE(crd.ok()) << crd.ToString();
    ns_ = std::make_unique<TestNamespace>(*client_, "manifests");
  }

  int Kubectl(const std::string& args, std::string* output) {
    return RunCommand(KubernetesBinDir() + "/kubectl --kubeconfig " + KubeconfigPath() + " -n " +
                          ns_->name() + " " + args,
                      output);
  }

  // A job the schema accepts, to break one field at a time.
  static json ValidJob(const std::string& name) {
    return json::parse(R"({
      "apiVersion": "batch.hybridjob.io/v1alpha1",
      "kind": "HybridJob",
      "metadata": {"name": ")" +
                       name + R"("},
      "spec": {
        "framework": "pytorch",
        "replicaSpecs": [{
          "name": "worker", "minReplicas": 2, "maxReplicas": 4, "restartPolicy": "OnFailure",
          "template": {"spec": {"containers": [{"name": "main", "image": "trainer:1"}]}}
        }]
      }
    })");
  }

  // Creates `job`; the server's refusal, or OK.
  Status Create(const json& job) {
    auto created = client_->Create(k8s::resources::HybridJobs(), ns_->name(), job);
    return created.ok() ? Status::Ok() : created.status();
  }

  std::unique_ptr<k8s::RestClient> client_;
  std::unique_ptr<TestNamespace> ns_;
};

std::vector<std::string> ExampleFiles() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(SourcePath("examples"))) {
    if (entry.path().extension() == ".yaml") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST_F(ManifestsTest, EveryExampleAppliesCleanly) {
  const std::vector<std::string> files = ExampleFiles();
  ASSERT_FALSE(files.empty());
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    std::vector<json> documents;
    try {
      documents = YamlDocumentsToJson(ReadFile(file));
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not YAML: " << e.what();
      continue;
    }
    std::string output;
    ASSERT_EQ(Kubectl("apply --dry-run=server -f " + file, &output), 0) << output;
    EXPECT_NE(output.find("(server dry run)"), std::string::npos) << output;
    ASSERT_EQ(Kubectl("apply -f " + file, &output), 0) << output;
    for (const json& document : documents) {
      if (document.value("kind", "") != "HybridJob") {
        continue;
      }
      const std::string name = document["metadata"].value("name", "");
      auto stored = client_->Get(k8s::resources::HybridJobs(), ns_->name(), name);
      ASSERT_TRUE(stored.ok()) << name << ": " << stored.status().ToString();
      // What the server stored (with the schema's defaults) is valid for the
      // controller too.
      auto parsed = api::ParseHybridJob(*stored);
      ASSERT_TRUE(parsed.ok()) << name << ": " << parsed.status().ToString();
      EXPECT_EQ(api::JoinErrors(api::Validate(*parsed)), "") << name;
      // Applying again changes nothing. (kubectl still says "configured":
      // for custom resources it replaces whole lists, and the server's
      // defaults inside replicaSpecs differ from the file.)
      ASSERT_EQ(Kubectl("apply -f " + file, &output), 0) << output;
      auto again = client_->Get(k8s::resources::HybridJobs(), ns_->name(), name);
      ASSERT_TRUE(again.ok());
      EXPECT_EQ((*again)["metadata"]["generation"], (*stored)["metadata"]["generation"]);
    }
  }
}

TEST_F(ManifestsTest, SchemaDefaultsAreApplied) {
  ASSERT_TRUE(Create(ValidJob("defaults")).ok());
  auto stored = client_->Get(k8s::resources::HybridJobs(), ns_->name(), "defaults");
  ASSERT_TRUE(stored.ok());
  const json& spec = (*stored)["spec"];
  EXPECT_EQ(spec["runPolicy"]["backoffLimit"], 3);
  EXPECT_EQ(spec["runPolicy"]["cleanPodPolicy"], "Running");
  EXPECT_FALSE(spec.contains("queue"));  // unset: the namespace's default queue
  EXPECT_EQ(spec["schedulerName"], "gang-scheduler");
  EXPECT_EQ(spec["replicaSpecs"][0]["priority"], 0);
}

struct Refusal {
  std::string what;
  std::function<void(json&)> mutate;
  std::vector<std::string> message_parts;  // each must appear in the server's message
};

// Kubernetes 1.20 names fields inside lists without their index
// ("spec.replicaSpecs.minReplicas"); later versions add it.
TEST_F(ManifestsTest, TheSchemaRefusesWhatItCanExpressWithAClearMessage) {
  const std::vector<Refusal> cases = {
      {"missing replicaSpecs",
       [](json& job) { job["spec"].erase("replicaSpecs"); },
       {"spec.replicaSpecs", "Required value"}},
      {"empty replicaSpecs",
       [](json& job) { job["spec"]["replicaSpecs"] = json::array(); },
       {"spec.replicaSpecs", "at least 1 items"}},
      {"negative minReplicas",
       [](json& job) { job["spec"]["replicaSpecs"][0]["minReplicas"] = -1; },
       {"spec.replicaSpecs.minReplicas", "greater than or equal to 0"}},
      {"zero maxReplicas",
       [](json& job) { job["spec"]["replicaSpecs"][0]["maxReplicas"] = 0; },
       {"spec.replicaSpecs.maxReplicas", "greater than or equal to 1"}},
      {"negative backoffLimit",
       [](json& job) {
         job["spec"]["runPolicy"] = {{"backoffLimit", -2}};
       },
       {"spec.runPolicy.backoffLimit", "greater than or equal to 0"}},
      {"unknown framework",
       [](json& job) { job["spec"]["framework"] = "caffe"; },
       {"spec.framework", "Unsupported value: \"caffe\"", "\"tensorflow\""}},
      {"unknown restartPolicy",
       [](json& job) { job["spec"]["replicaSpecs"][0]["restartPolicy"] = "Sometimes"; },
       {"spec.replicaSpecs.restartPolicy", "Unsupported value: \"Sometimes\"", "\"OnFailure\""}},
      {"unknown cleanPodPolicy",
       [](json& job) {
         job["spec"]["runPolicy"] = {{"cleanPodPolicy", "Some"}};
       },
       {"spec.runPolicy.cleanPodPolicy", "Unsupported value: \"Some\""}},
      {"role name not a DNS label",
       [](json& job) { job["spec"]["replicaSpecs"][0]["name"] = "Worker_1"; },
       {"spec.replicaSpecs.name", "should match"}},
      {"template without containers",
       [](json& job) { job["spec"]["replicaSpecs"][0]["template"]["spec"].erase("containers"); },
       {"spec.replicaSpecs.template.spec.containers", "Required value"}},
      {"container without image",
       [](json& job) {
         job["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0].erase("image");
       },
       {"spec.replicaSpecs.template.spec.containers.image", "Required value"}},
      {"pod restartPolicy other than Never",
       [](json& job) {
         job["spec"]["replicaSpecs"][0]["template"]["spec"]["restartPolicy"] = "Always";
       },
       {"spec.replicaSpecs.template.spec.restartPolicy", "Unsupported value: \"Always\""}},
      {"duplicate role names",
       [](json& job) { job["spec"]["replicaSpecs"].push_back(job["spec"]["replicaSpecs"][0]); },
       {"spec.replicaSpecs[1]", "Duplicate value"}},
  };
  int index = 0;
  for (const Refusal& refusal : cases) {
    SCOPED_TRACE(refusal.what);
    json job = ValidJob("refused-" + std::to_string(index++));
    refusal.mutate(job);
    Status created = Create(job);
    ASSERT_FALSE(created.ok()) << "the server accepted a job with " << refusal.what;
    EXPECT_EQ(created.code(), StatusCode::kInvalid) << created.ToString();
    EXPECT_EQ(created.http_status(), 422);
    for (const std::string& part : refusal.message_parts) {
      EXPECT_NE(created.message().find(part), std::string::npos)
          << "\"" << part << "\" not in: " << created.message();
    }
  }
  // Nothing refused was stored.
  auto jobs = client_->List(k8s::resources::HybridJobs(), ns_->name(), {});
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->items.empty());
}

TEST_F(ManifestsTest, KubectlShowsTheSchemasReason) {
  const std::string path = ClusterDir() + "/" + ns_->name() + "-bad.yaml";
  {
    json job = ValidJob("bad");
    job["spec"]["framework"] = "caffe";
    job["spec"]["replicaSpecs"][0]["minReplicas"] = -1;
    std::ofstream(path) << job.dump(2);
  }
  std::string output;
  EXPECT_NE(Kubectl("apply -f " + path, &output), 0) << output;
  std::filesystem::remove(path);
  EXPECT_NE(output.find("spec.framework: Unsupported value: \"caffe\""), std::string::npos)
      << output;
  EXPECT_NE(output.find("spec.replicaSpecs.minReplicas"), std::string::npos) << output;
}

}  // namespace
}  // namespace hybridjob::testing
