// API objects as the server lists them, for the plugin's tests: HybridJobs
// and their member pods as the controller makes them, GPU nodes with
// topology labels.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include <hybridjob/api/labels.h>

namespace hybridjob::cli::testing {

using nlohmann::json;

inline json Node(const std::string& name, int gpus, const std::string& rack = "",
                 bool ready = true) {
  json node = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata", {{"name", name}, {"labels", json::object()}}},
      {"status",
       {{"allocatable",
         {{"cpu", "32"},
          {"memory", "256Gi"},
          {"pods", "110"},
          {"nvidia.com/gpu", std::to_string(gpus)}}},
        {"conditions", json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
  if (!rack.empty()) {
    node["metadata"]["labels"]["example.com/rack"] = rack;
  }
  return node;
}

// A HybridJob of one role `worker` (min..max members) in `queue`, with the
// status the controller writes for `phase` and, while queued, the standing.
inline json Job(const std::string& ns, const std::string& name, const std::string& queue, int min,
                int max, const std::string& phase = "Running", int position = 0,
                const std::string& reason = "") {
  json job = {
      {"apiVersion", api::kApiVersion},
      {"kind", api::kKind},
      {"metadata", {{"name", name}, {"namespace", ns}, {"uid", "uid-" + ns + "-" + name}}},
      {"spec",
       {{"queue", queue},
        {"replicaSpecs",
         json::array(
             {{{"name", "worker"},
               {"minReplicas", min},
               {"maxReplicas", max},
               {"template",
                {{"spec",
                  {{"containers", json::array({{{"name", "main"}, {"image", "x"}}})}}}}}}})}}},
      {"status",
       {{"phase", phase},
        {"readyMembers", "0/" + std::to_string(min)},
        {"replicaStatuses",
         json::array({{{"name", "worker"}, {"members", 0}, {"active", min}}})}}}};
  if (!reason.empty()) {
    job["status"]["queue"] = {{"name", queue}, {"reason", reason}};
    if (position > 0) {
      job["status"]["queue"]["position"] = position;
    }
    job["status"]["conditions"] = json::array(
        {{{"type", "Queued"}, {"status", "True"}, {"reason", reason}, {"message", "the numbers"}}});
  }
  return job;
}

// Member `index` of a job made by Job, asking for `gpus`, bound to `node`
// when one is given.
inline json Member(const std::string& ns, const std::string& job, const std::string& queue,
                   int index, int gpus, const std::string& node = "", int min = 1, int max = 1) {
  const json spec = {
      {"roles", json::array({{{"name", "worker"}, {"min", min}, {"max", max}, {"priority", 0}}})},
      {"queue", queue}};
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", job + "-worker-" + std::to_string(index)},
                {"namespace", ns},
                {"uid", "pod-" + ns + "-" + job + "-" + std::to_string(index)},
                {"creationTimestamp", "2026-12-01T00:00:00Z"},
                {"labels",
                 {{std::string(api::kJobNameLabel), job},
                  {std::string(api::kRoleLabel), "worker"},
                  {std::string(api::kIndexLabel), std::to_string(index)}}},
                {"annotations", {{std::string(api::kGroupSpecAnnotation), spec.dump()}}},
                {"ownerReferences", json::array({{{"apiVersion", api::kApiVersion},
                                                  {"kind", api::kKind},
                                                  {"name", job},
                                                  {"uid", "uid-" + ns + "-" + job},
                                                  {"controller", true}}})}}},
              {"spec",
               {{"schedulerName", "gang-scheduler"},
                {"containers",
                 json::array({{{"name", "main"},
                               {"resources",
                                {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}})}}},
              {"status", {{"phase", node.empty() ? "Pending" : "Running"}}}};
  if (!node.empty()) {
    pod["spec"]["nodeName"] = node;
  }
  return pod;
}

}  // namespace hybridjob::cli::testing
