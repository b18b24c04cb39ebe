#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/json.h>
#include <hybridjob/api/validation.h>

#include "openapi_check.h"
#include "yaml_json.h"

namespace hybridjob::api {
namespace {

using nlohmann::json;
using ::testing::IsEmpty;

class ApiExamplesTest : public ::testing::TestWithParam<std::string> {
 protected:
  json Load() const {
    return testing::YamlToJson(testing::ReadFile(testing::SourcePath("examples/" + GetParam())));
  }
};

TEST_P(ApiExamplesTest, ParsesStrictlyAndValidatesCleanly) {
  json object = Load();
  Result<HybridJob> parsed = ParseHybridJob(object, {.reject_unknown_fields = true});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  HybridJob job = *parsed;
  EXPECT_THAT(JoinErrors(Validate(job)), ::testing::IsEmpty());
  ApplyDefaults(job);
  EXPECT_THAT(JoinErrors(Validate(job)), ::testing::IsEmpty());
}

TEST_P(ApiExamplesTest, PassesTheCrdSchema) {
  json crd = testing::YamlToJson(
      testing::ReadFile(testing::SourcePath("crds/batch.hybridjob.io_hybridjobs.yaml")));
  const json& schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  EXPECT_THAT(testing::SchemaProblems(Load(), schema), IsEmpty());
}

TEST_P(ApiExamplesTest, RunsInTheSimulator) {
  Result<HybridJob> parsed = ParseHybridJob(Load());
  ASSERT_TRUE(parsed.ok());
  bool uses_gpus = false;
  for (const ReplicaSpec& role : parsed->spec.replica_specs) {
    const json& annotations = role.pod_template["metadata"]["annotations"];
    ASSERT_TRUE(annotations.contains("sim.hybridjob.io/duration")) << role.name;
    EXPECT_TRUE(annotations["sim.hybridjob.io/duration"].is_string()) << role.name;
    for (const json& container : role.pod_template["spec"]["containers"]) {
      // Elastic jobs get their cluster spec through a wrapper around the command.
      EXPECT_TRUE(container.contains("command")) << role.name;
      uses_gpus = uses_gpus ||
                  (container.contains("resources") && container["resources"].contains("limits") &&
                   container["resources"]["limits"].contains("nvidia.com/gpu"));
    }
  }
  EXPECT_TRUE(uses_gpus);
  EXPECT_TRUE(parsed->spec.IsElastic());
}

INSTANTIATE_TEST_SUITE_P(Examples, ApiExamplesTest,
                         ::testing::Values("tf-ps-worker-elastic.yaml", "pytorch-elastic.yaml",
                                           "mpi-launcher-workers.yaml", "generic-two-role.yaml",
                                           "pytorch-rack-topology.yaml"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name;
                           for (char c : info.param.substr(0, info.param.find('.'))) {
                             name += (c == '-') ? '_' : c;
                           }
                           return name;
                         });

}  // namespace
}  // namespace hybridjob::api
