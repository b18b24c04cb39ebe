// HybridJob manifests for end-to-end tests, written as a user would write
// them for kubectl apply.
#pragma once

#include <string>
#include <vector>

#include "system.h"

namespace hybridjob::testing {

// One role of a job: min/max members of `gpus` GPUs each; the simulator runs
// each member for `duration` (empty: until deleted) and ends it with
// `exit_code`.
inline std::string Member(const std::string& role, int min, int max, int gpus,
                          const std::string& duration, const std::string& exit_code = "0",
                          const std::string& restart = "OnFailure") {
  std::string text = "    - name: " + role + "\n      minReplicas: " + std::to_string(min) +
                     "\n      maxReplicas: " + std::to_string(max) +
                     "\n      restartPolicy: " + restart +
                     "\n      template:\n        metadata:\n          annotations:\n";
  if (!duration.empty()) {
    text += "            sim.hybridjob.io/duration: \"" + duration + "\"\n";
  }
  text += "            sim.hybridjob.io/exit-code: \"" + exit_code + "\"\n";
  text +=
      "        spec:\n          containers:\n            - name: main\n              image: "
      "trainer:latest\n";
  if (gpus > 0) {
    text +=
        "              resources:\n                limits:\n                  nvidia.com/gpu: " +
        std::to_string(gpus) + "\n";
  }
  return text;
}

// A job of `members` (from Member); `run_policy` is indented YAML for
// spec.runPolicy, `queue` names spec.queue.
inline std::string Job(const std::string& name, const std::string& framework,
                       const std::vector<std::string>& members, const std::string& run_policy = "",
                       const std::string& queue = "") {
  std::string text =
      "apiVersion: batch.hybridjob.io/v1alpha1\nkind: HybridJob\nmetadata:\n  name: " + name +
      "\nspec:\n  framework: " + framework + "\n";
  if (!queue.empty()) {
    text += "  queue: " + queue + "\n";
  }
  if (!run_policy.empty()) {
    text += "  runPolicy:\n" + run_policy;
  }
  text += "  replicaSpecs:\n";
  for (const auto& member : members) {
    text += member;
  }
  return text;
}

inline int BoundCount(System& system, const std::string& job) {
  int bound = 0;
  for (const auto& pod : system.Pods(job)) {
    bound += pod["spec"].value("nodeName", "").empty() ? 0 : 1;
  }
  return bound;
}

}  // namespace hybridjob::testing
