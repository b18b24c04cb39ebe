// Two replicas each of hybridjob-controller and gang-scheduler with leader
// election; the leaders are killed (-9, the Lease is not released) while jobs
// run. The standbys take over once the Lease expires and every job, those
// running at the kill and those submitted after, succeeds with one pod per
// member and no node given more GPUs than it has.
#include <iostream>
#include <thread>

#include <gtest/gtest.h>

#include "recovery_support.h"
#include "system.h"

namespace hybridjob::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kJobsPerWave = 8;
constexpr int kFailoverWorkers = 4;

// Which replica has logged taking the lead; -1 for none, -2 for several.
int Leader(System& system, bool controllers) {
  const size_t count = controllers ? system.controller_count() : system.scheduler_count();
  int leader = -1;
  for (size_t i = 0; i < count; ++i) {
    ChildProcess& process = controllers ? system.controller(i) : system.scheduler(i);
    if (process.Running() && process.Log().find("became leader") != std::string::npos) {
      leader = leader == -1 ? static_cast<int>(i) : -2;
    }
  }
  return leader;
}

TEST(LeaderFailoverTest, KilledLeadersAreReplacedAndEveryJobSucceeds) {
  ReplicaOptions replicas;
  replicas.controllers = 2;
  replicas.schedulers = 2;
  // Short Leases so the takeover happens in seconds (deploy/ uses 15s/10s/2s).
  replicas.controller_args = {"--leader-elect", "--leader-election-lease-duration=4s",
                              "--leader-election-renew-deadline=3s",
                              "--leader-election-retry-period=500ms"};
  System system({.nodes = 8,
                 .gpus_per_node = 4,
                 .scheduler_config = "leaderElection:\n"
                                     "  enabled: true\n"
                                     "  leaseDuration: 4s\n"
                                     "  renewDeadline: 3s\n"
                                     "  retryPeriod: 500ms\n"},
                replicas);
  ASSERT_TRUE(system.ok());
  auto& client = system.client();
  // The Leases live in hybridjob-system; the replicas retry until it exists.
  const nlohmann::json lease_namespace = {
      {"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "hybridjob-system"}}}};
  ASSERT_TRUE(client.Create(k8s::resources::Namespaces(), "", lease_namespace).ok());
  ASSERT_TRUE(WaitFor([&] { return Leader(system, true) >= 0 && Leader(system, false) >= 0; }, 30s))
      << system.Logs();
  const int controller_leader = Leader(system, true);
  const int scheduler_leader = Leader(system, false);

  WorkerJobSpec spec;
  spec.workers = kFailoverWorkers;
  spec.gpus = 1;
  spec.duration = "8s";
  for (int i = 0; i < kJobsPerWave; ++i) {
    ASSERT_TRUE(
        CreateJobRetrying(client, "default", WorkerJob("before-" + std::to_string(i), spec)).ok());
  }
  ASSERT_TRUE(WaitFor([&] { return system.Phase("before-0") == "Running"; }, 60s)) << system.Logs();

  // A crash, not a clean stop: the Leases stay held until they expire.
  system.controller(static_cast<size_t>(controller_leader)).Kill();
  system.scheduler(static_cast<size_t>(scheduler_leader)).Kill();
  const auto killed_at = std::chrono::steady_clock::now();
  for (int i = 0; i < kJobsPerWave; ++i) {
    ASSERT_TRUE(
        CreateJobRetrying(client, "default", WorkerJob("after-" + std::to_string(i), spec)).ok());
  }
  EXPECT_TRUE(WaitFor(
      [&] {
        return Leader(system, true) == 1 - controller_leader &&
               Leader(system, false) == 1 - scheduler_leader;
      },
      30s))
      << "the standbys did not take over\n"
      << system.Logs();
  std::cout << "standbys leading "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count()
            << " s after the kill (lease 4 s)\n";

  // Until every job ends, no node is ever given more GPUs than it has.
  std::string overcommitted;
  const auto phases =
      PollJobPhasesUntil(client, "default", 2 * kJobsPerWave, {"Succeeded", "Failed"}, 120s,
                         [&] { overcommitted += OvercommittedNodes(client); });
  EXPECT_EQ(overcommitted, "");
  ASSERT_NO_FATAL_FAILURE(ExpectAllSucceeded(phases, 2 * kJobsPerWave));
  for (const auto& [job, pods] : PodsByJob(client, "default")) {
    EXPECT_EQ(pods.size(), static_cast<size_t>(kFailoverWorkers)) << "job " << job;
    EXPECT_EQ(DuplicateMembers(job, pods), "");
  }
  if (HasFailure()) {
    ADD_FAILURE() << system.Logs();
  }
}

}  // namespace
}  // namespace hybridjob::testing
