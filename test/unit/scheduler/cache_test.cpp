// The cache's change counter: what wakes the scheduling loop.
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <hybridjob/api/labels.h>
#include <hybridjob/scheduler/cache.h>

namespace hybridjob::scheduler {
namespace {

using nlohmann::json;

constexpr char kScheduler[] = "gang-scheduler";

json Node(const std::string& name) {
  return {{"metadata", {{"name", name}, {"uid", name + "-uid"}}},
          {"status",
           {{"allocatable", {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}}},
            {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}};
}

json PendingMember(const std::string& name, int index, int min_replicas) {
  const json spec = {
      {"roles",
       json::array({{{"name", "worker"}, {"min", min_replicas}, {"max", 2}, {"priority", 0}}})},
      {"queue", "default"}};
  return {{"metadata",
           {{"name", name},
            {"namespace", "team-a"},
            {"uid", name + "-uid"},
            {"creationTimestamp", "2024-05-01T12:00:00Z"},
            {"labels",
             {{std::string(api::kJobNameLabel), "train"},
              {std::string(api::kRoleLabel), "worker"},
              {std::string(api::kIndexLabel), std::to_string(index)}}},
            {"annotations", {{std::string(api::kGroupSpecAnnotation), spec.dump()}}}}},
          {"spec",
           {{"schedulerName", kScheduler},
            {"containers", json::array({{{"name", "main"}, {"image", "trainer"}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

class SchedulerCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_.node_sink().Replace({Node("node-1")}, "1");
    cache_.pod_sink().Replace({PendingMember("train-worker-0", 0, 2)}, "1");
    ASSERT_TRUE(cache_.HasSynced());
    ASSERT_EQ(cache_.PendingCount(), 1u);
  }

  SchedulerCache cache_{kScheduler};
};

TEST_F(SchedulerCacheTest, ANewMemberWakesTheLoop) {
  const uint64_t before = cache_.generation();
  cache_.pod_sink().Apply(k8s::WatchEventType::kAdded, PendingMember("train-worker-1", 1, 2));
  EXPECT_GT(cache_.generation(), before);
}

TEST_F(SchedulerCacheTest, AnUpdateThatChangesNoPlanDoesNotWakeTheLoop) {
  const uint64_t before = cache_.generation();
  json updated = PendingMember("train-worker-0", 0, 2);
  updated["metadata"]["labels"]["team"] = "vision";
  updated["status"]["conditions"] =
      json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}});
  cache_.pod_sink().Apply(k8s::WatchEventType::kModified, updated);
  EXPECT_EQ(cache_.generation(), before);
}

// The controller rewrites a waiting member's group spec when another member
// succeeded: the lower minimum may let the group be placed now.
TEST_F(SchedulerCacheTest, ANewGroupSpecWakesTheLoop) {
  const uint64_t before = cache_.generation();
  cache_.pod_sink().Apply(k8s::WatchEventType::kModified, PendingMember("train-worker-0", 0, 1));
  EXPECT_GT(cache_.generation(), before);
}

// A running pod shrunk in place (1.33) frees part of its node: the loop wakes.
// A status update that changes nothing the node holds does not wake it.
TEST_F(SchedulerCacheTest, AnInPlaceResizeOfABoundPodWakesTheLoop) {
  json running = {
      {"metadata", {{"name", "web-0"}, {"namespace", "team-a"}, {"uid", "w0"}}},
      {"spec",
       {{"nodeName", "node-1"},
        {"containers",
         json::array({{{"name", "app"}, {"resources", {{"requests", {{"cpu", "4"}}}}}}})}}},
      {"status",
       {{"phase", "Running"},
        {"containerStatuses", json::array({{{"name", "app"},
                                            {"allocatedResources", {{"cpu", "4"}}},
                                            {"resources", {{"requests", {{"cpu", "4"}}}}}}})}}}};
  cache_.pod_sink().Apply(k8s::WatchEventType::kAdded, running);
  uint64_t before = cache_.generation();
  running["status"]["podIP"] = "10.0.0.7";
  cache_.pod_sink().Apply(k8s::WatchEventType::kModified, running);
  EXPECT_EQ(cache_.generation(), before);

  // Resized to 1 cpu and applied by the kubelet.
  running["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1";
  running["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] = "1";
  running["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] = "1";
  cache_.pod_sink().Apply(k8s::WatchEventType::kModified, running);
  EXPECT_GT(cache_.generation(), before);
}

}  // namespace
}  // namespace hybridjob::scheduler
