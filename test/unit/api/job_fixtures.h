// Test support: HybridJob manifests to start tests from.
#pragma once

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/json.h>
#include <hybridjob/api/types.h>

namespace hybridjob::testing {

// A container spec with the fields validation requires.
inline nlohmann::json Container(const std::string& name = "main",
                                const std::string& image = "busybox:1.36") {
  return {{"name", name}, {"image", image}, {"command", {"sleep", "10"}}};
}

inline nlohmann::json PodTemplate(int gpus = 0) {
  nlohmann::json container = Container();
  if (gpus > 0) {
    container["resources"] = {{"limits", {{"nvidia.com/gpu", gpus}}}};
  }
  return {{"spec", {{"containers", nlohmann::json::array({container})}}}};
}

// A valid TensorFlow job: ps 1..1, worker 2..4.
inline nlohmann::json TfJobJson() {
  return {
      {"apiVersion", "batch.hybridjob.io/v1alpha1"},
      {"kind", "HybridJob"},
      {"metadata",
       {{"name", "mnist"}, {"namespace", "team-a"}, {"uid", "job-uid-1"}, {"generation", 1}}},
      {"spec",
       {{"framework", "tensorflow"},
        {"replicaSpecs",
         {{{"name", "ps"}, {"minReplicas", 1}, {"template", PodTemplate()}},
          {{"name", "worker"},
           {"minReplicas", 2},
           {"maxReplicas", 4},
           {"restartPolicy", "OnFailure"},
           {"template", PodTemplate(1)}}}}}},
  };
}

// The job as the controller works on it: parsed and defaulted. A manifest that
// does not parse fails the test and yields an empty job.
inline api::HybridJob DefaultedJob(const nlohmann::json& object) {
  Result<api::HybridJob> parsed = api::ParseHybridJob(object);
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  api::HybridJob job = parsed.ok() ? *parsed : api::HybridJob{};
  api::ApplyDefaults(job);
  return job;
}

}  // namespace hybridjob::testing
