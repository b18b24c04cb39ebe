// kill -9 of hybridjob-controller while it reconciles a hundred jobs: once it
// is back, every job ends Succeeded with exactly one pod per member, and no
// Service or PVC is left without its job.
#include <iostream>
#include <thread>

#include <gtest/gtest.h>

#include "recovery_support.h"
#include "system.h"

namespace hybridjob::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kCrashJobs = 100;
constexpr int kCrashWorkers = 2;

TEST(ControllerCrashTest, KilledMidReconcileConvergesWithoutDuplicatesOrOrphans) {
  System system({.nodes = 8, .gpus_per_node = 4, .scheduler_config = ""});
  ASSERT_TRUE(system.ok());
  auto& client = system.client();
  WorkerJobSpec spec;
  spec.workers = kCrashWorkers;
  spec.duration = "4s";
  spec.with_volume = true;  // so each job also owns a PVC
  for (int i = 0; i < kCrashJobs; ++i) {
    const Status created =
        CreateJobRetrying(client, "default", WorkerJob("job-" + std::to_string(i), spec));
    ASSERT_TRUE(created.ok()) << created.ToString();
  }
  // Kill once the controller is part way through: some pods exist, not all.
  int pods_at_kill = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        pods_at_kill = 0;
        for (const auto& [job, pods] : PodsByJob(client, "default")) {
          pods_at_kill += static_cast<int>(pods.size());
        }
        return pods_at_kill >= kCrashJobs * kCrashWorkers / 5;
      },
      60s))
      << system.Logs();
  system.controller().Kill();
  EXPECT_LT(pods_at_kill, kCrashJobs * kCrashWorkers)
      << "the kill came after the controller was done";
  std::cout << "controller killed with " << pods_at_kill << " of " << kCrashJobs * kCrashWorkers
            << " member pods created\n";
  std::this_thread::sleep_for(1s);
  ASSERT_TRUE(system.RestartController()) << system.Logs();

  // While it converges, no member slot is ever held by two live pods.
  std::string duplicates;
  const auto phases = PollJobPhasesUntil(client, "default", kCrashJobs, {"Succeeded"}, 150s, [&] {
    for (const auto& [job, pods] : PodsByJob(client, "default")) {
      duplicates += DuplicateMembers(job, pods);
    }
  });
  EXPECT_EQ(duplicates, "");
  ASSERT_NO_FATAL_FAILURE(ExpectAllSucceeded(phases, kCrashJobs));
  // The end state: each job kept exactly its members' pods, all finished.
  ASSERT_NO_FATAL_FAILURE(ExpectEachJobWhole(client, "default", kCrashJobs, kCrashWorkers));
  EXPECT_EQ(OrphanedChildren(client, "default", k8s::resources::Services()), "");
  EXPECT_EQ(OrphanedChildren(client, "default", k8s::resources::PersistentVolumeClaims()), "");
  // Every job got its claim back, exactly once (claims are named after the job).
  auto claims = client.List(k8s::resources::PersistentVolumeClaims(), "default", {});
  ASSERT_TRUE(claims.ok());
  EXPECT_EQ(claims->items.size(), static_cast<size_t>(kCrashJobs));
  if (HasFailure()) {
    ADD_FAILURE() << system.Logs();
  }
}

}  // namespace
}  // namespace hybridjob::testing
