// Load: many jobs of 10 members on as many simulated nodes, through the real
// controller, scheduler and simulator binaries. Every job must reach
// Succeeded with every member succeeded once, none lost or stuck, and no pod
// left behind beyond the clean-pod policy. Prints the controller's and the
// scheduler's peak RSS and CPU time (figures only, never asserted).
//
// Size from the environment: HYBRIDJOB_LOAD_JOBS (jobs, default below),
// HYBRIDJOB_LOAD_NODES (nodes, default one per job), HYBRIDJOB_LOAD_DURATION
// (how long each member runs, default 5s).
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>

#include "process_stats.h"
#include "system.h"

namespace hybridjob::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// `make test` runs a size that fits its time budget on a 2-core machine;
// `make soak` runs HYBRIDJOB_LOAD_JOBS=1000.
constexpr int kDefaultJobs = 200;
constexpr int kMembersPerJob = 10;

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

std::string EnvString(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

json LoadJob(const std::string& name, const std::string& ns, const std::string& duration) {
  json annotations = {{"sim.hybridjob.io/duration", duration}};
  json container = {{"name", "main"},
                    {"image", "trainer:latest"},
                    {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}};
  json worker = {{"name", "worker"},
                 {"minReplicas", kMembersPerJob},
                 {"maxReplicas", kMembersPerJob},
                 {"restartPolicy", "OnFailure"},
                 {"template",
                  {{"metadata", {{"annotations", annotations}}},
                   {"spec", {{"containers", json::array({container})}}}}}};
  return {{"apiVersion", "batch.hybridjob.io/v1alpha1"},
          {"kind", "HybridJob"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", {{"framework", "pytorch"}, {"replicaSpecs", json::array({worker})}}}};
}

std::string JobName(int index) {
  char name[32];
  std::snprintf(name, sizeof(name), "load-%04d", index);
  return name;
}

struct PhaseCounts {
  std::map<std::string, int> by_phase;
  int listed = 0;
  std::vector<std::string> failed;  // names of jobs that failed
};

PhaseCounts CountPhases(System& system, const std::string& ns) {
  PhaseCounts counts;
  auto jobs = system.client().List(k8s::resources::HybridJobs(), ns, {});
  if (!jobs) {
    return counts;
  }
  for (const json& job : jobs->items) {
    ++counts.listed;
    std::string phase =
        job.contains("status") && job["status"].is_object() ? job["status"].value("phase", "") : "";
    ++counts.by_phase[phase.empty() ? "(none)" : phase];
    if (phase == "Failed") {
      counts.failed.push_back(job["metadata"].value("name", ""));
    }
  }
  return counts;
}

std::string Describe(const PhaseCounts& counts) {
  std::string out = std::to_string(counts.listed) + " jobs:";
  for (const auto& [phase, count] : counts.by_phase) {
    out += " " + phase + "=" + std::to_string(count);
  }
  return out;
}

TEST(LoadFaultTest, EveryJobOfTheLoadSucceedsAndNoneIsLost) {
  const int jobs = EnvInt("HYBRIDJOB_LOAD_JOBS", kDefaultJobs);
  const int nodes = EnvInt("HYBRIDJOB_LOAD_NODES", jobs);
  const std::string duration = EnvString("HYBRIDJOB_LOAD_DURATION", "5s");
  ASSERT_GT(jobs, 0);
  ASSERT_GT(nodes, 0);
  // Enough GPUs for every job at once: the test is about losing nothing, not queueing.
  const int gpus_per_node = std::max(1, (jobs * kMembersPerJob + nodes - 1) / nodes);
  std::printf("load: %d jobs x %d members on %d nodes x %d GPUs, members run %s\n", jobs,
              kMembersPerJob, nodes, gpus_per_node, duration.c_str());

  SystemOptions options;
  options.nodes = nodes;
  options.gpus_per_node = gpus_per_node;
  ReplicaOptions replicas;
  // The flags bench_controller runs the controller with at this size.
  replicas.controller_args = {"--workers", "16", "--qps", "1000", "--burst", "2000"};
  replicas.sim_args = {"--workers", "32", "--qps", "1000", "--burst", "2000"};
  System system(options, replicas);
  ASSERT_TRUE(system.ok());
  TestNamespace ns(system.client(), "load");
  const pid_t controller = system.controller().pid();
  const pid_t scheduler = system.scheduler().pid();
  const double controller_cpu_before = ProcessCpuSeconds(controller);
  const double scheduler_cpu_before = ProcessCpuSeconds(scheduler);

  // Submit from a few writers, as users would, all at once.
  const auto start = Clock::now();
  std::atomic<int> next{0};
  std::atomic<int> create_errors{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&] {
      for (int i = next++; i < jobs; i = next++) {
        auto created = system.client().Create(k8s::resources::HybridJobs(), ns.name(),
                                              LoadJob(JobName(i), ns.name(), duration));
        if (!created) {
          ++create_errors;
          std::fprintf(stderr, "create %s: %s\n", JobName(i).c_str(),
                       created.status().ToString().c_str());
        }
      }
    });
  }
  for (auto& writer : writers) {
    writer.join();
  }
  const double submit_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_EQ(create_errors.load(), 0);

  // Wait for all to finish; the budget grows with the load.
  const auto budget = std::chrono::seconds(300 + jobs);
  PhaseCounts counts;
  auto last_report = Clock::now();
  const bool all_succeeded = WaitFor(
      [&] {
        counts = CountPhases(system, ns.name());
        if (Clock::now() - last_report > 15s) {
          last_report = Clock::now();
          std::printf("load: %.0f s: %s\n",
                      std::chrono::duration<double>(Clock::now() - start).count(),
                      Describe(counts).c_str());
          std::fflush(stdout);
        }
        // A failed job cannot come back: stop waiting.
        return !counts.failed.empty() || counts.by_phase["Succeeded"] == jobs;
      },
      budget);
  const double run_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_TRUE(all_succeeded) << "not every job succeeded within " << budget.count()
                             << " s: " << Describe(counts) << "\n"
                             << system.Logs();
  EXPECT_EQ(counts.listed, jobs) << "jobs lost";
  EXPECT_EQ(counts.by_phase["Succeeded"], jobs) << Describe(counts);
  EXPECT_TRUE(counts.failed.empty()) << "failed, first: " << counts.failed.front();

  // Nothing left beyond the clean-pod policy (Running: finished members stay,
  // nothing else does), and each job's members succeeded exactly once.
  std::map<std::string, int> succeeded_members;
  int other_pods = 0;
  const bool cleaned_up = WaitFor(
      [&] {
        succeeded_members.clear();
        other_pods = 0;
        auto pods = system.client().List(k8s::resources::Pods(), ns.name(), {});
        if (!pods) {
          return false;
        }
        for (const json& pod : pods->items) {
          const std::string phase = pod["status"].value("phase", "");
          if (phase == "Succeeded") {
            ++succeeded_members[pod["metadata"]["labels"].value(std::string(api::kJobNameLabel),
                                                                "")];
          } else {
            ++other_pods;
          }
        }
        return other_pods == 0;
      },
      60s);
  EXPECT_TRUE(cleaned_up) << other_pods << " pods neither succeeded nor removed";
  EXPECT_EQ(static_cast<int>(succeeded_members.size()), jobs);
  int short_jobs = 0;
  for (const auto& [job, members] : succeeded_members) {
    short_jobs += members == kMembersPerJob ? 0 : 1;
  }
  EXPECT_EQ(short_jobs, 0) << "jobs whose succeeded members are not exactly " << kMembersPerJob;

  EXPECT_TRUE(system.controller().Running()) << system.Logs();
  EXPECT_TRUE(system.scheduler().Running()) << system.Logs();

  std::printf(
      "load: %d jobs x %d members on %d nodes: submitted in %.1f s, all Succeeded after %.1f s\n"
      "load: controller CPU %.1f s, peak RSS %.1f MiB; scheduler CPU %.1f s, peak RSS %.1f MiB\n",
      jobs, kMembersPerJob, nodes, submit_seconds, run_seconds,
      ProcessCpuSeconds(controller) - controller_cpu_before, ProcessMemoryMiB(controller, "VmHWM"),
      ProcessCpuSeconds(scheduler) - scheduler_cpu_before, ProcessMemoryMiB(scheduler, "VmHWM"));
  RecordProperty("jobs", jobs);
  RecordProperty("seconds_to_all_succeeded", std::to_string(run_seconds));
}

}  // namespace
}  // namespace hybridjob::testing
