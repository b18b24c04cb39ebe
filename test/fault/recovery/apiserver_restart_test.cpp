// kube-apiserver restarted and etcd compacted while jobs are being created:
// every watch of the binaries breaks and resumes from a revision that is gone
// (410), so their informers must relist. Nothing may be missed: every job
// created reaches Succeeded with exactly one finished pod per member.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include <hybridjob/k8s/api_status.h>

#include "recovery_support.h"
#include "system.h"

namespace hybridjob::testing {
namespace {

using namespace std::chrono_literals;

constexpr int kRestartJobs = 60;
constexpr int kRestartWorkers = 2;

// Whether a watch from `resource_version` is refused as expired (410 Gone).
bool WatchIsGone(k8s::ApiClient& client, const std::string& resource_version) {
  k8s::WatchOptions options;
  options.resource_version = resource_version;
  options.timeout = std::chrono::seconds(5);
  auto stream = client.Watch(k8s::resources::Pods(), "default", options);
  if (!stream.ok()) {
    return k8s::IsGone(stream.status());
  }
  auto event = (*stream)->Next();
  return event.ok() && event->has_value() && (*event)->type == k8s::WatchEventType::kError &&
         k8s::IsGone((*event)->error);
}

TEST(ApiServerRestartTest, JobsCreatedThroughARestartAndCompactionAllSucceed) {
  System system({.nodes = 8, .gpus_per_node = 4, .scheduler_config = ""});
  ASSERT_TRUE(system.ok());
  auto& client = system.client();
  auto before = client.List(k8s::resources::Pods(), "default", {});
  ASSERT_TRUE(before.ok());
  const std::string resource_version_before = before->resource_version;

  // Jobs keep coming, one every 150 ms, through the outage (retried).
  std::atomic<int> created{0};
  std::string create_errors;
  std::jthread creator([&] {
    WorkerJobSpec spec;
    spec.workers = kRestartWorkers;
    spec.duration = "2s";
    for (int i = 0; i < kRestartJobs; ++i) {
      const Status status =
          CreateJobRetrying(client, "default", WorkerJob("job-" + std::to_string(i), spec));
      if (status.ok()) {
        ++created;
      } else {
        create_errors += "job-" + std::to_string(i) + ": " + status.ToString() + "\n";
      }
      std::this_thread::sleep_for(150ms);
    }
  });
  ASSERT_TRUE(WaitFor([&] { return created >= kRestartJobs / 6; }, 30s));
  EXPECT_GT(system.cluster().CompactEtcd(), 0);
  ASSERT_TRUE(WaitFor([&] { return created >= kRestartJobs / 3; }, 30s));
  EXPECT_TRUE(system.cluster().Restart("apiserver"));
  ASSERT_TRUE(WaitFor([&] { return created >= kRestartJobs / 2; }, 60s));
  EXPECT_GT(system.cluster().CompactEtcd(), 0);
  creator.join();
  EXPECT_EQ(create_errors, "");
  ASSERT_EQ(created.load(), kRestartJobs);
  // The fault took: what the informers knew before is gone.
  EXPECT_TRUE(WatchIsGone(client, resource_version_before));

  std::map<std::string, std::string> phases;
  WaitFor(
      [&] {
        phases = JobPhases(client, "default");
        for (const auto& [job, phase] : phases) {
          if (phase != "Succeeded") {
            return false;
          }
        }
        return phases.size() == static_cast<size_t>(kRestartJobs);
      },
      120s);
  ASSERT_NO_FATAL_FAILURE(ExpectAllSucceeded(phases, kRestartJobs));
  ASSERT_NO_FATAL_FAILURE(ExpectEachJobWhole(client, "default", kRestartJobs, kRestartWorkers));
  if (HasFailure()) {
    ADD_FAILURE() << system.Logs();
  }
}

}  // namespace
}  // namespace hybridjob::testing
