// Memory of the scheduler's cache: 5,000 nodes and 50,000 pods, each parsed
// from a realistic API object as the reflector delivers it, held in the
// Snapshot the planner uses. Prints resident bytes in total and per pod.
//
//   bench_scheduler_cache_memory [--nodes N] [--pods-per-node P]
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/objects/objects.h>

#include "../common/self_stats.h"

namespace {

using nlohmann::json;
namespace sched = hybridjob::scheduler;

json NodeObject(int i) {
  return {{"metadata",
           {{"name", "node-" + std::to_string(i)},
            {"labels",
             {{"kubernetes.io/hostname", "node-" + std::to_string(i)},
              {"topology.kubernetes.io/zone", "zone-" + std::to_string(i % 4)},
              {"node.hybridjob.io/simulated", "true"}}}}},
          {"spec", json::object()},
          {"status",
           {{"allocatable",
             {{"cpu", "64"}, {"memory", "512Gi"}, {"pods", "110"}, {"nvidia.com/gpu", "8"}}},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

json PodObject(int node, int i) {
  const std::string job = "job-" + std::to_string((node * 100 + i) / 10);
  return {
      {"metadata",
       {{"name", job + "-worker-" + std::to_string(i % 10)},
        {"namespace", "team-" + std::to_string(node % 20)},
        {"uid", "0f8a3c2e-1111-2222-3333-" + std::to_string(1000000 + node * 100 + i)},
        {"creationTimestamp", "2026-01-01T00:00:00Z"},
        {"labels",
         {{"batch.hybridjob.io/job-name", job},
          {"batch.hybridjob.io/role", "worker"},
          {"batch.hybridjob.io/index", std::to_string(i % 10)}}},
        {"annotations",
         {{"batch.hybridjob.io/group-spec",
           R"({"roles":[{"name":"worker","min":4,"max":10,"priority":0}],"queue":"default"})"}}}}},
      {"spec",
       {{"schedulerName", "gang-scheduler"},
        {"nodeName", "node-" + std::to_string(node)},
        {"containers", json::array({{{"name", "trainer"},
                                     {"image", "trainer:latest"},
                                     {"resources",
                                      {{"requests", {{"cpu", "4"}, {"memory", "16Gi"}}},
                                       {"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}},
      {"status", {{"phase", "Running"}}}};
}

}  // namespace

int main(int argc, char** argv) {
  int nodes = 5000;
  int pods_per_node = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--nodes") {
      nodes = std::atoi(argv[i + 1]);
    } else if (flag == "--pods-per-node") {
      pods_per_node = std::atoi(argv[i + 1]);
    }
  }
  const int64_t before = hybridjob::bench::ResidentBytes();
  sched::Snapshot snapshot;
  for (int n = 0; n < nodes; ++n) {
    auto node = sched::ParseNode(NodeObject(n));
    if (!node || !snapshot.UpsertNode(std::move(*node)).ok()) {
      std::fprintf(stderr, "node %d failed\n", n);
      return 1;
    }
  }
  for (int n = 0; n < nodes; ++n) {
    for (int i = 0; i < pods_per_node; ++i) {
      auto pod = sched::ParsePod(PodObject(n, i));
      if (!pod || !snapshot.AddPod(std::move(*pod)).ok()) {
        std::fprintf(stderr, "pod %d/%d failed\n", n, i);
        return 1;
      }
    }
  }
  const int64_t after = hybridjob::bench::ResidentBytes();
  const double total_mib = static_cast<double>(after - before) / (1024.0 * 1024.0);
  const int pods = nodes * pods_per_node;
  std::printf("| nodes | pods | cache RSS | per pod (incl. nodes) | process peak RSS |\n");
  std::printf("|---|---|---|---|---|\n");
  std::printf("| %d | %d | %.1f MiB | %.2f KiB | %.1f MiB |\n", nodes, pods, total_mib,
              static_cast<double>(after - before) / pods / 1024.0,
              static_cast<double>(hybridjob::bench::PeakResidentBytes()) / (1024.0 * 1024.0));
  return snapshot.pod_count() == static_cast<size_t>(pods) ? 0 : 1;
}
