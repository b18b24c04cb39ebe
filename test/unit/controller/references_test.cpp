#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/controller/references.h>

#include "job_fixtures.h"

namespace hybridjob::controller {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

api::HybridJob JobWithWorkerSpec(const json& pod_spec) {
  json object = hybridjob::testing::TfJobJson();
  object["spec"]["replicaSpecs"][1]["template"]["spec"] = pod_spec;
  return hybridjob::testing::DefaultedJob(object);
}

TEST(RequiredConfigMapsTest, VolumesProjectionsAndEnvironmentAreRequiredUnlessOptional) {
  const json spec = {
      {"volumes",
       {{{"name", "config"}, {"configMap", {{"name", "train-config"}}}},
        {{"name", "creds"}, {"secret", {{"secretName", "s3"}}}},
        {{"name", "maybe"}, {"configMap", {{"name", "extra"}, {"optional", true}}}},
        {{"name", "all"},
         {"projected",
          {{"sources",
            {{{"configMap", {{"name", "labels"}}}},
             {{"configMap", {{"name", "hints"}, {"optional", true}}}},
             {{"downwardAPI", json::object()}}}}}}},
        {{"name", "scratch"}, {"emptyDir", json::object()}}}},
      {"initContainers",
       {{{"name", "fetch"}, {"envFrom", {{{"configMapRef", {{"name", "git"}}}}}}}}},
      {"containers",
       {{{"name", "main"},
         {"image", "trainer"},
         {"envFrom",
          {{{"configMapRef", {{"name", "train-config"}}}}, {{"secretRef", {{"name", "token"}}}}}},
         {"env",
          {{{"name", "A"}, {"value", "1"}},
           {{"name", "B"}, {"valueFrom", {{"configMapKeyRef", {{"name", "api"}, {"key", "k"}}}}}},
           {{"name", "C"},
            {"valueFrom",
             {{"configMapKeyRef", {{"name", "opt"}, {"key", "k"}, {"optional", true}}}}}}}}}}}};
  const std::vector<RequiredConfigMap> required = RequiredConfigMaps(JobWithWorkerSpec(spec));
  EXPECT_THAT(
      required,
      ElementsAre(RequiredConfigMap{"train-config", "volume \"config\" of role worker"},
                  RequiredConfigMap{"labels", "volume \"all\" of role worker"},
                  RequiredConfigMap{"git", "environment of container \"fetch\" of role worker"},
                  RequiredConfigMap{"api", "environment of container \"main\" of role worker"}));
  EXPECT_EQ(Describe(required[1]), "ConfigMap \"labels\" (volume \"all\" of role worker)");
}

TEST(RequiredConfigMapsTest, APlainJobRequiresNothing) {
  EXPECT_THAT(RequiredConfigMaps(hybridjob::testing::DefaultedJob(hybridjob::testing::TfJobJson())),
              IsEmpty());
}

TEST(RequiredConfigMapsTest, MalformedReferencesAreIgnored) {
  const json spec = {{"volumes",
                      {{{"name", "v"}, {"configMap", "not-an-object"}},
                       {{"name", "w"}, {"secret", {{"secretName", 7}}}}}},
                     {"containers", {{{"name", "main"}, {"envFrom", "nope"}, {"env", {1, 2}}}}}};
  EXPECT_THAT(RequiredConfigMaps(JobWithWorkerSpec(spec)), IsEmpty());
}

// The schema does not check every field of a template: "optional" of
// another type is not optional, and reading it never throws.
TEST(RequiredConfigMapsTest, AnOptionalFlagOfAnotherTypeDoesNotMakeItOptional) {
  const json spec = {
      {"volumes", {{{"name", "v"}, {"configMap", {{"name", "cfg"}, {"optional", "yes"}}}}}}};
  EXPECT_THAT(RequiredConfigMaps(JobWithWorkerSpec(spec)),
              ElementsAre(RequiredConfigMap{"cfg", "volume \"v\" of role worker"}));
}

}  // namespace
}  // namespace hybridjob::controller
