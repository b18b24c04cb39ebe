// kill -9 of gang-scheduler while it binds the members of a large gang: once
// it is back, the gang is completed or rolled back within seconds, never left
// partly bound, no node is given more GPUs than it has, and the job succeeds.
#include <iostream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>

#include "recovery_support.h"
#include "system.h"

namespace hybridjob::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kCrashMembers = 64;

TEST(SchedulerCrashTest, GangKilledMidBindIsCompletedOrRolledBackAfterRestart) {
  // One binder, so the 64 binds of the gang take long enough to kill between.
  System system({.nodes = 16, .gpus_per_node = 4, .scheduler_config = "bindConcurrency: 1\n"});
  ASSERT_TRUE(system.ok());
  auto& client = system.client();
  WorkerJobSpec spec;
  spec.workers = kCrashMembers;
  spec.gpus = 1;  // 64 members fill the 16 nodes exactly
  spec.duration = "10s";

  // The kill comes on the first bind a watch shows: in a ThreadSanitizer
  // build, listing the gang between polls took longer than its 64 binds.
  auto listed = client.List(k8s::resources::Pods(), "default", {});
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  k8s::WatchOptions options;
  options.resource_version = listed->resource_version;
  options.label_selector = std::string(api::kJobNameLabel) + "=gang";
  options.timeout = 60s;
  auto watch = client.Watch(k8s::resources::Pods(), "default", options);
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  ASSERT_TRUE(CreateJobRetrying(client, "default", WorkerJob("gang", spec)).ok());
  bool bind_seen = false;
  while (!bind_seen) {
    auto event = (*watch)->Next();
    if (!event.ok() || !event->has_value()) {
      break;  // the watch ended (60 s) or failed
    }
    bind_seen =
        (*event)->type == k8s::WatchEventType::kModified && !NodeOf((*event)->object).empty();
  }
  system.scheduler().Kill();
  ASSERT_TRUE(bind_seen) << "the gang was never placed\n" << system.Logs();
  // Only a kill between the first and the last bind tests anything.
  const int bound_at_kill = BoundMembers(PodsByJob(client, "default")["gang"]);
  ASSERT_LT(bound_at_kill, kCrashMembers) << "the scheduler bound the whole gang before the kill";
  std::this_thread::sleep_for(1s);
  ASSERT_TRUE(system.RestartScheduler()) << system.Logs();

  // Completed (all bound) or rolled back (none bound, to be placed again) —
  // within seconds of the restart, never a part of the gang for longer.
  int bound = bound_at_kill;
  const bool whole = WaitFor(
      [&] {
        bound = BoundMembers(PodsByJob(client, "default")["gang"]);
        return bound == 0 || bound == kCrashMembers;
      },
      20s);
  EXPECT_TRUE(whole) << "the gang stayed partly bound after the scheduler restarted: " << bound
                     << " of " << kCrashMembers << " members bound (" << bound_at_kill
                     << " at the kill)\n"
                     << system.Logs();
  std::cout << "scheduler killed with " << bound_at_kill << " of " << kCrashMembers
            << " members bound; after its restart " << bound << " bound ("
            << (bound == kCrashMembers ? "completed" : "rolled back") << ")\n";
  EXPECT_EQ(OvercommittedNodes(client), "");
  EXPECT_TRUE(WaitFor([&] { return system.Phase("gang") == "Succeeded"; }, 90s))
      << "phase " << system.Phase("gang") << "\n"
      << system.Logs();
  const auto pods = PodsByJob(client, "default")["gang"];
  EXPECT_EQ(pods.size(), static_cast<size_t>(kCrashMembers));
  EXPECT_EQ(DuplicateMembers("gang", pods), "");
}

}  // namespace
}  // namespace hybridjob::testing
