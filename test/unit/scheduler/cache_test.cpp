// The cache's change counter: what wakes the scheduling loop.
#include <map>
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
            {"annotations", {{std::string(api::kGroupSpecAnnotation), spec.dump()}}},
            {"ownerReferences", json::array({{{"apiVersion", api::kApiVersion},
                                              {"kind", api::kKind},
                                              {"name", "train"},
                                              {"uid", "train-uid"},
                                              {"controller", true}}})}}},
          {"spec",
           {{"schedulerName", kScheduler},
            {"containers", json::array({{{"name", "main"}, {"image", "trainer"}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

// The HybridJob that controls PendingMember's pods.
json TrainJob(int min_replicas = 2) {
  return {{"apiVersion", api::kApiVersion},
          {"kind", api::kKind},
          {"metadata", {{"name", "train"}, {"namespace", "team-a"}, {"uid", "train-uid"}}},
          {"spec",
           {{"replicaSpecs",
             json::array({{{"name", "worker"},
                           {"minReplicas", min_replicas},
                           {"maxReplicas", 2},
                           {"template", {{"spec", {{"containers", json::array()}}}}}}})}}}};
}

json Namespace(const std::string& name, const json& labels = json::object()) {
  return {{"metadata", {{"name", name}, {"labels", labels}}}};
}

json PriorityClass(const std::string& name, int value, bool global_default = false) {
  return {{"metadata", {{"name", name}}}, {"value", value}, {"globalDefault", global_default}};
}

class SchedulerCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_.job_sink().Replace({TrainJob()}, "1");
    cache_.namespace_sink().Replace({Namespace("team-a")}, "1");
    cache_.priority_class_sink().Replace({}, "1");
    cache_.node_sink().Replace({Node("node-1")}, "1");
    cache_.pod_sink().Replace({PendingMember("train-worker-0", 0, 2)}, "1");
    ASSERT_TRUE(cache_.HasSynced());
    ASSERT_EQ(cache_.PendingCount(), 1u);
  }

  // The pending pods the next cycle would see, by name.
  std::map<std::string, PodInfo> Pending() {
    std::map<std::string, PodInfo> out;
    cache_.RunLocked([&](Snapshot&, const std::vector<const PodInfo*>& pending) {
      for (const PodInfo* pod : pending) {
        out.emplace(pod->name, *pod);
      }
      return std::vector<std::string>{};
    });
    return out;
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

TEST_F(SchedulerCacheTest, NothingSyncsUntilJobsNamespacesAndClassesAreListed) {
  SchedulerCache cache(kScheduler);
  cache.node_sink().Replace({}, "1");
  cache.pod_sink().Replace({}, "1");
  cache.job_sink().Replace({}, "1");
  cache.namespace_sink().Replace({}, "1");
  EXPECT_FALSE(cache.HasSynced());
  cache.priority_class_sink().Replace({}, "1");
  EXPECT_TRUE(cache.HasSynced());
}

// A watch that ends and relists the same objects changes no plan.
TEST_F(SchedulerCacheTest, ARelistOfUnchangedJobsDoesNotWakeTheLoop) {
  const uint64_t before = cache_.generation();
  cache_.job_sink().Replace({TrainJob()}, "2");
  cache_.namespace_sink().Replace({Namespace("team-a")}, "2");
  EXPECT_EQ(cache_.generation(), before);
  cache_.job_sink().Replace({TrainJob(1)}, "3");
  EXPECT_GT(cache_.generation(), before);
}

TEST_F(SchedulerCacheTest, AMemberOfItsJobIsTrustedWithTheJobsShape) {
  const PodInfo pod = Pending().at("train-worker-0");
  EXPECT_EQ(pod.job_name, "train");
  ASSERT_TRUE(pod.group_spec.has_value());
  EXPECT_EQ(pod.group_spec->roles.at(0).min_replicas, 2);
  EXPECT_EQ(pod.queue, "default");
  EXPECT_TRUE(pod.untrusted_reason.empty());
}

// A hand-made pod with a real member's labels and annotation, but no
// controller reference: never grouped with the job.
TEST_F(SchedulerCacheTest, AForgedMemberIsNotPartOfTheJob) {
  json forged = PendingMember("train-worker-1", 1, 1);
  forged["metadata"].erase("ownerReferences");
  cache_.pod_sink().Apply(k8s::WatchEventType::kAdded, forged);
  const PodInfo pod = Pending().at("train-worker-1");
  EXPECT_TRUE(pod.job_name.empty());
  EXPECT_FALSE(pod.group_spec.has_value());
  EXPECT_NE(pod.untrusted_reason.find("not controlled by HybridJob \"train\""), std::string::npos)
      << pod.untrusted_reason;
}

// A member seen before its job waits, unplanned; the job's arrival makes it a
// member and wakes the loop.
TEST_F(SchedulerCacheTest, AMemberSeenBeforeItsJobWaitsForIt) {
  cache_.job_sink().Apply(k8s::WatchEventType::kDeleted, TrainJob());
  EXPECT_TRUE(Pending().at("train-worker-0").awaiting_job);
  const uint64_t before = cache_.generation();
  cache_.job_sink().Apply(k8s::WatchEventType::kAdded, TrainJob());
  EXPECT_GT(cache_.generation(), before);
  const PodInfo pod = Pending().at("train-worker-0");
  EXPECT_FALSE(pod.awaiting_job);
  EXPECT_EQ(pod.job_name, "train");
}

// A job edit lowering the minimum reaches its waiting members.
TEST_F(SchedulerCacheTest, AJobEditReachesItsMembers) {
  const uint64_t before = cache_.generation();
  cache_.job_sink().Apply(k8s::WatchEventType::kModified, TrainJob(1));
  EXPECT_GT(cache_.generation(), before);
  EXPECT_EQ(Pending().at("train-worker-0").group_spec->roles.at(0).min_replicas, 1);
}

TEST_F(SchedulerCacheTest, ANamespacesDefaultQueueReachesItsPods) {
  cache_.namespace_sink().Apply(
      k8s::WatchEventType::kModified,
      Namespace("team-a", {{std::string(kDefaultQueueKey), "research"}, {"tier", "gold"}}));
  const PodInfo pod = Pending().at("train-worker-0");
  EXPECT_EQ(pod.queue, "research");
  EXPECT_EQ(pod.group_spec->queue, "research");
  ASSERT_NE(pod.namespace_labels.Find("tier"), nullptr);
}

// spec.priority is whatever the pod says; the PriorityClass decides.
TEST_F(SchedulerCacheTest, PriorityComesFromThePriorityClass) {
  json member = PendingMember("train-worker-1", 1, 2);
  member["spec"]["priority"] = 1000000;
  member["spec"]["priorityClassName"] = "batch-high";
  cache_.pod_sink().Apply(k8s::WatchEventType::kAdded, member);
  EXPECT_EQ(Pending().at("train-worker-1").priority, 0);
  EXPECT_FALSE(Pending().at("train-worker-1").preempts);

  cache_.priority_class_sink().Apply(k8s::WatchEventType::kAdded, PriorityClass("batch-high", 500));
  EXPECT_EQ(Pending().at("train-worker-1").priority, 500);
  EXPECT_TRUE(Pending().at("train-worker-1").preempts);
  cache_.priority_class_sink().Apply(k8s::WatchEventType::kAdded,
                                     PriorityClass("everyone", 7, /*global_default=*/true));
  EXPECT_EQ(Pending().at("train-worker-0").priority, 7);
}

// A forged pod bound to a node by hand is never counted as the job's member.
TEST_F(SchedulerCacheTest, AForgedBoundPodIsNotCountedAsAMember) {
  json forged = PendingMember("train-worker-1", 1, 2);
  forged["metadata"]["ownerReferences"][0]["uid"] = "someone-else";
  forged["spec"]["nodeName"] = "node-1";
  forged["status"]["phase"] = "Running";
  cache_.pod_sink().Apply(k8s::WatchEventType::kAdded, forged);
  size_t members = 99;
  cache_.ReadSnapshot([&](const Snapshot& snapshot) {
    members = snapshot.GroupMembers("team-a", "train").size();
    ASSERT_NE(snapshot.FindPod("team-a", "train-worker-1"), nullptr);
    EXPECT_NE(snapshot.FindPod("team-a", "train-worker-1")->untrusted_reason.find("uid"),
              std::string::npos);
  });
  EXPECT_EQ(members, 0u);
}

}  // namespace
}  // namespace hybridjob::scheduler
