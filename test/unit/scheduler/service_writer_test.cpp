// Persisting attained service: which ledger records are due for a write
// (ServiceWrites), and the writer that patches the job's status off the loop.
#include <chrono>
#include <k8s/fake_api_client.h>
#include <string>
#include <unordered_map>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/k8s/resource.h>
#include <hybridjob/scheduler/shell/service_writer.h>

namespace hybridjob::scheduler {
namespace {

using k8s::testing::FakeApiClient;
using nlohmann::json;
using Steady = std::chrono::steady_clock;

ServiceRecord Record(const std::string& name, double gpu_seconds) {
  ServiceRecord record;
  record.namespace_name = "team";
  record.name = name;
  record.queue = "research";
  record.gpu_seconds = gpu_seconds;
  return record;
}

TrustedJob Job(const std::string& name, std::optional<int64_t> persisted = std::nullopt) {
  TrustedJob job;
  job.namespace_name = "team";
  job.name = name;
  job.uid = name + "-uid";
  job.attained_gpu_seconds = persisted;
  return job;
}

std::vector<std::string> Names(const std::vector<ServiceWrite>& writes) {
  std::vector<std::string> names;
  for (const ServiceWrite& write : writes) {
    names.push_back(write.name);
  }
  return names;
}

TEST(ServiceWritesTest, WritesANewLevelAtOnceAndMoreServiceAtMostEveryPeriod) {
  TenancyDirectory directory;
  directory.UpsertJob(Job("a"));
  directory.UpsertJob(Job("b", 5000));  // read back after a restart
  const std::vector<double> thresholds = {3600, 36000};
  std::unordered_map<std::string, ServiceWritten> written;
  const Steady::time_point t0 = Steady::now();

  // a has never been written; b's status already holds more than its record.
  std::vector<ServiceWrite> first =
      ServiceWrites({Record("a", 100.7), Record("b", 4000)}, thresholds, directory, written, t0);
  ASSERT_THAT(Names(first), ::testing::ElementsAre("a"));
  EXPECT_EQ(first[0].service.gpu_seconds, 100);
  EXPECT_EQ(first[0].service.level, 0);
  EXPECT_EQ(first[0].service.queue, "research");

  // More service within the period: nothing; a new level: at once.
  EXPECT_TRUE(ServiceWrites({Record("a", 3000)}, thresholds, directory, written,
                            t0 + std::chrono::seconds(10))
                  .empty());
  std::vector<ServiceWrite> level = ServiceWrites({Record("a", 3600)}, thresholds, directory,
                                                  written, t0 + std::chrono::seconds(20));
  ASSERT_THAT(Names(level), ::testing::ElementsAre("a"));
  EXPECT_EQ(level[0].service.level, 1);
  // After the period, more service is written again; the same is not.
  EXPECT_THAT(Names(ServiceWrites({Record("a", 3700)}, thresholds, directory, written,
                                  t0 + std::chrono::seconds(20) + kServiceWritePeriod)),
              ::testing::ElementsAre("a"));
  EXPECT_TRUE(ServiceWrites({Record("a", 3700.5)}, thresholds, directory, written,
                            t0 + std::chrono::seconds(20) + 3 * kServiceWritePeriod)
                  .empty());
  // A job the directory does not know (deleted) is not written.
  EXPECT_TRUE(ServiceWrites({Record("gone", 50)}, thresholds, directory, written, t0).empty());
  EXPECT_FALSE(written.contains("team/a")) << "records gone from the ledger are forgotten";
}

TEST(ServiceWriterTest, PatchesTheJobsStatusAndLeavesTheRestAlone) {
  FakeApiClient api;
  api.Seed(k8s::resources::HybridJobs(),
           {{"apiVersion", "batch.hybridjob.io/v1alpha1"},
            {"kind", "HybridJob"},
            {"metadata", {{"name", "a"}, {"namespace", "team"}}},
            {"status", {{"phase", "Running"}, {"readyMembers", "2/2"}}}});
  ServiceWriter writer(api);
  writer.Write(ServiceWrite{"team", "a", api::AttainedService{7300, 1, "research"}});
  writer.Write(ServiceWrite{"team", "missing", api::AttainedService{10, 0, "research"}});
  writer.Stop();
  std::optional<json> job = api.Object(k8s::resources::HybridJobs(), "team", "a");
  ASSERT_TRUE(job.has_value());
  EXPECT_EQ((*job)["status"]["attainedService"],
            json({{"gpuSeconds", 7300}, {"level", 1}, {"queue", "research"}}));
  EXPECT_EQ((*job)["status"]["readyMembers"], "2/2");
  EXPECT_EQ(writer.written(), 2u) << "a job that is gone counts as done";
}

}  // namespace
}  // namespace hybridjob::scheduler
