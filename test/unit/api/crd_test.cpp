#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/types.h>

#include "job_fixtures.h"
#include "openapi_check.h"
#include "yaml_json.h"

namespace hybridjob::api {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr const char* kCrdPath = "crds/batch.hybridjob.io_hybridjobs.yaml";

class ApiCrdTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string text = testing::ReadFile(testing::SourcePath(kCrdPath));
    ASSERT_NO_THROW(crd_ = testing::YamlToJson(text));
    ASSERT_TRUE(crd_.is_object());
    version_ = crd_["spec"]["versions"][0];
    schema_ = version_["schema"]["openAPIV3Schema"];
    spec_ = schema_["properties"]["spec"];
    role_ = spec_["properties"]["replicaSpecs"]["items"];
  }

  static std::vector<std::string> Strings(const json& list) {
    std::vector<std::string> out;
    for (const json& item : list) {
      out.push_back(item.get<std::string>());
    }
    return out;
  }

  static std::vector<std::string> Strings(const std::vector<std::string_view>& list) {
    return {list.begin(), list.end()};
  }

  json crd_, version_, schema_, spec_, role_;
};

TEST_F(ApiCrdTest, IsWellFormedYaml) {
  // yaml-cpp itself: one document, a mapping at the top.
  YAML::Node node = YAML::LoadFile(testing::SourcePath(kCrdPath));
  EXPECT_TRUE(node.IsMap());
  EXPECT_EQ(testing::YamlDocumentsToJson(testing::ReadFile(testing::SourcePath(kCrdPath))).size(),
            1u);
}

TEST_F(ApiCrdTest, NamesTheResource) {
  EXPECT_EQ(crd_["apiVersion"], "apiextensions.k8s.io/v1");
  EXPECT_EQ(crd_["kind"], "CustomResourceDefinition");
  EXPECT_EQ(crd_["metadata"]["name"], std::string(kPlural) + "." + std::string(kGroup));
  EXPECT_EQ(crd_["spec"]["group"], kGroup);
  EXPECT_EQ(crd_["spec"]["scope"], "Namespaced");
  const json& names = crd_["spec"]["names"];
  EXPECT_EQ(names["kind"], kKind);
  EXPECT_EQ(names["plural"], kPlural);
  EXPECT_EQ(names["singular"], "hybridjob");
  EXPECT_EQ(names["listKind"], "HybridJobList");
  EXPECT_THAT(Strings(names["shortNames"]), ElementsAre("hj"));
  EXPECT_FALSE(names.contains("categories"));
  ASSERT_EQ(crd_["spec"]["versions"].size(), 1u);
  EXPECT_EQ(version_["name"], kVersion);
  EXPECT_EQ(version_["served"], true);
  EXPECT_EQ(version_["storage"], true);
}

TEST_F(ApiCrdTest, HasStatusSubresourceAndPrinterColumns) {
  EXPECT_EQ(version_["subresources"]["status"], json::object());
  const json& columns = version_["additionalPrinterColumns"];
  ASSERT_EQ(columns.size(), 6u);
  std::vector<std::tuple<std::string, std::string, std::string>> expected = {
      {"Phase", "string", ".status.phase"},
      {"Ready", "string", ".status.readyMembers"},
      {"Restarts", "integer", ".status.restartCount"},
      {"Age", "date", ".metadata.creationTimestamp"},
      {"Placement", "string", ".status.placement"},
      {"Run", "integer", ".status.run"}};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(columns[i]["name"], std::get<0>(expected[i]));
    EXPECT_EQ(columns[i]["type"], std::get<1>(expected[i]));
    EXPECT_EQ(columns[i]["jsonPath"], std::get<2>(expected[i]));
  }
  EXPECT_EQ(columns[4]["priority"], 1) << "wide output only";
  EXPECT_EQ(columns[5]["priority"], 1) << "wide output only";
}

TEST_F(ApiCrdTest, SchemaIsStructural) {
  EXPECT_THAT(testing::StructuralProblems(schema_), IsEmpty());
  EXPECT_FALSE(version_.contains("x-kubernetes-validations"));
  EXPECT_EQ(schema_.dump().find("x-kubernetes-validations"), std::string::npos)
      << "CEL rules do not exist in Kubernetes 1.20";
  EXPECT_EQ(schema_.dump().find("x-kubernetes-embedded-resource"), std::string::npos);
}

TEST_F(ApiCrdTest, ReplicaSpecsAreAMapListWithBounds) {
  const json& list = spec_["properties"]["replicaSpecs"];
  EXPECT_THAT(Strings(spec_["required"]), ElementsAre("replicaSpecs"));
  EXPECT_EQ(list["minItems"], 1);
  EXPECT_EQ(list["x-kubernetes-list-type"], "map");
  EXPECT_THAT(Strings(list["x-kubernetes-list-map-keys"]), ElementsAre("name"));
  EXPECT_THAT(Strings(role_["required"]), ElementsAre("name", "minReplicas", "template"));
  const json& properties = role_["properties"];
  EXPECT_EQ(properties["name"]["pattern"], "^[a-z]([-a-z0-9]*[a-z0-9])?$");
  EXPECT_EQ(properties["minReplicas"]["minimum"], 0);
  EXPECT_EQ(properties["maxReplicas"]["minimum"], 1);
  EXPECT_EQ(properties["maxReplicas"]["maximum"], 10000);
  EXPECT_EQ(properties["port"]["maximum"], 65535);
  const json& pod_template = properties["template"];
  EXPECT_EQ(pod_template["type"], "object");
  EXPECT_EQ(pod_template["x-kubernetes-preserve-unknown-fields"], true);
  EXPECT_EQ(pod_template["properties"]["metadata"]["x-kubernetes-preserve-unknown-fields"], true);
  EXPECT_EQ(pod_template["properties"]["spec"]["properties"]["containers"]["minItems"], 1);
}

TEST_F(ApiCrdTest, EnumsMatchTheParser) {
  EXPECT_EQ(Strings(spec_["properties"]["framework"]["enum"]), Strings(AllFrameworks()));
  EXPECT_EQ(Strings(role_["properties"]["restartPolicy"]["enum"]), Strings(AllRestartPolicies()));
  const json& run_policy = spec_["properties"]["runPolicy"]["properties"];
  EXPECT_EQ(Strings(run_policy["cleanPodPolicy"]["enum"]), Strings(AllCleanPodPolicies()));
  EXPECT_EQ(Strings(spec_["properties"]["successPolicy"]["properties"]["operator"]["enum"]),
            Strings(AllSuccessOperators()));
  EXPECT_EQ(Strings(schema_["properties"]["status"]["properties"]["phase"]["enum"]),
            Strings(AllJobPhases()));
  EXPECT_EQ(Strings(spec_["properties"]["topology"]["properties"]["mode"]["enum"]),
            Strings(AllTopologyModes()));
  EXPECT_EQ(Strings(role_["properties"]["topology"]["properties"]["mode"]["enum"]),
            Strings(AllTopologyModes()));
}

TEST_F(ApiCrdTest, SchemaDefaultsMatchTheParser) {
  const json& properties = spec_["properties"];
  EXPECT_EQ(properties["framework"]["default"], ToString(Framework::kGeneric));
  // No default: an unset queue means the namespace's default queue.
  EXPECT_FALSE(properties["queue"].contains("default"));
  EXPECT_EQ(properties["queue"]["minLength"], 1);
  EXPECT_EQ(properties["schedulerName"]["default"], kDefaultSchedulerName);
  EXPECT_EQ(properties["runPolicy"]["default"], json::object());
  EXPECT_EQ(properties["runPolicy"]["properties"]["backoffLimit"]["default"], kDefaultBackoffLimit);
  EXPECT_EQ(properties["runPolicy"]["properties"]["cleanPodPolicy"]["default"], "Running");
  EXPECT_EQ(role_["properties"]["restartPolicy"]["default"], "Never");
  EXPECT_EQ(properties["topology"]["properties"]["mode"]["default"], ToString(TopologySpec{}.mode));
  EXPECT_EQ(role_["properties"]["topology"]["properties"]["mode"]["default"],
            ToString(TopologySpec{}.mode));
  EXPECT_EQ(role_["properties"]["priority"]["default"], 0);
  EXPECT_EQ(properties["code"]["properties"]["mountPath"]["default"], kDefaultCodeMountPath);
  EXPECT_EQ(properties["tensorboard"]["properties"]["serviceType"]["default"],
            kDefaultTensorboardServiceType);
}

TEST_F(ApiCrdTest, StatusDeclaresEveryFieldTheControllerWrites) {
  const json& status = schema_["properties"]["status"]["properties"];
  for (const char* field :
       {"phase", "conditions", "replicaStatuses", "readyMembers", "startTime", "completionTime",
        "lastRestartTime", "restartCount", "observedGeneration"}) {
    EXPECT_TRUE(status.contains(field)) << field;
  }
  const json& replica = status["replicaStatuses"]["items"]["properties"];
  for (const char* field :
       {"name", "members", "scheduled", "active", "succeeded", "failed", "restarts"}) {
    EXPECT_TRUE(replica.contains(field)) << field;
  }
  const json& condition = status["conditions"]["items"]["properties"];
  for (const char* field :
       {"type", "status", "reason", "message", "lastTransitionTime", "lastUpdateTime"}) {
    EXPECT_TRUE(condition.contains(field)) << field;
  }
}

TEST_F(ApiCrdTest, AcceptsAValidJobAndRefusesWhatTheSchemaCanExpress) {
  json job = testing::TfJobJson();
  EXPECT_THAT(testing::SchemaProblems(job, schema_), IsEmpty());

  json bad = job;
  bad["spec"]["replicaSpecs"][0]["minReplicas"] = -1;
  EXPECT_FALSE(testing::SchemaProblems(bad, schema_).empty());
  bad = job;
  bad["spec"]["framework"] = "caffe";
  EXPECT_FALSE(testing::SchemaProblems(bad, schema_).empty());
  bad = job;
  bad["spec"]["replicaSpecs"][1]["name"] = "ps";
  EXPECT_FALSE(testing::SchemaProblems(bad, schema_).empty());  // map key repeats
  bad = job;
  bad["spec"]["replicaSpecs"] = json::array();
  EXPECT_FALSE(testing::SchemaProblems(bad, schema_).empty());
  bad = job;
  bad["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"] = json::array();
  EXPECT_FALSE(testing::SchemaProblems(bad, schema_).empty());
  bad = job;
  bad["spec"]["code"] = {{"source", "ftp://example.com/x"}};
  EXPECT_FALSE(testing::SchemaProblems(bad, schema_).empty());
  bad = job;
  bad["metadata"]["name"] = "Mnist";
  EXPECT_FALSE(testing::SchemaProblems(bad, schema_).empty());
  bad = job;
  bad["spec"]["volumes"] = {{{"name", "d"}, {"size", "lots"}, {"mountPath", "/d"}}};
  EXPECT_FALSE(testing::SchemaProblems(bad, schema_).empty());
  bad["spec"]["volumes"][0]["size"] = "10Gi";
  EXPECT_THAT(testing::SchemaProblems(bad, schema_), IsEmpty());
}

}  // namespace
}  // namespace hybridjob::api
