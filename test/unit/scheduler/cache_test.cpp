// The loop's cache, fed the way the informers feed it: reflector events
// through the DeltaFeed's sinks. Apply's answer is whether a cycle is due.
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <hybridjob/api/labels.h>
#include <hybridjob/scheduler/shell/cache.h>
#include <hybridjob/scheduler/shell/delta_feed.h>

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

// What the loop does with what the informers queued: applies it all, and
// runs a cycle when any of it may change a plan.
bool DrainInto(DeltaFeed& feed, SchedulerCache& cache) {
  bool changed = false;
  for (Delta& delta : feed.Take(std::chrono::steady_clock::now())) {
    changed = cache.Apply(std::move(delta)) || changed;
  }
  return changed;
}

class SchedulerCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    feed_.job_sink().Replace({TrainJob()}, "1");
    feed_.namespace_sink().Replace({Namespace("team-a")}, "1");
    feed_.priority_class_sink().Replace({}, "1");
    feed_.claim_sink().Replace({}, "1");
    feed_.volume_sink().Replace({}, "1");
    feed_.storage_class_sink().Replace({}, "1");
    feed_.node_sink().Replace({Node("node-1")}, "1");
    feed_.pod_sink().Replace({PendingMember("train-worker-0", 0, 2)}, "1");
    ASSERT_TRUE(Drain());
    ASSERT_TRUE(cache_.HasSynced());
    ASSERT_EQ(cache_.PendingCount(), 1u);
  }

  bool Drain() { return DrainInto(feed_, cache_); }

  // The pending pods the next cycle would see, by name.
  std::map<std::string, PodInfo> Pending() {
    Drain();
    std::map<std::string, PodInfo> out;
    for (const PodInfo* pod : cache_.Pending()) {
      out.emplace(pod->name, *pod);
    }
    return out;
  }

  DeltaFeed feed_;
  SchedulerCache cache_{kScheduler};
};

TEST_F(SchedulerCacheTest, ANewMemberWakesTheLoop) {
  feed_.pod_sink().Apply(k8s::WatchEventType::kAdded, PendingMember("train-worker-1", 1, 2));
  EXPECT_TRUE(Drain());
}

TEST_F(SchedulerCacheTest, AnUpdateThatChangesNoPlanDoesNotWakeTheLoop) {
  json updated = PendingMember("train-worker-0", 0, 2);
  updated["metadata"]["labels"]["team"] = "vision";
  updated["status"]["conditions"] =
      json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}});
  feed_.pod_sink().Apply(k8s::WatchEventType::kModified, updated);
  EXPECT_FALSE(Drain());
}

// The controller rewrites a waiting member's group spec when another member
// succeeded: the lower minimum may let the group be placed now.
TEST_F(SchedulerCacheTest, ANewGroupSpecWakesTheLoop) {
  feed_.pod_sink().Apply(k8s::WatchEventType::kModified, PendingMember("train-worker-0", 0, 1));
  EXPECT_TRUE(Drain());
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
  feed_.pod_sink().Apply(k8s::WatchEventType::kAdded, running);
  Drain();
  running["status"]["podIP"] = "10.0.0.7";
  feed_.pod_sink().Apply(k8s::WatchEventType::kModified, running);
  EXPECT_FALSE(Drain());

  // Resized to 1 cpu and applied by the kubelet.
  running["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1";
  running["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] = "1";
  running["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] = "1";
  feed_.pod_sink().Apply(k8s::WatchEventType::kModified, running);
  EXPECT_TRUE(Drain());
}

TEST_F(SchedulerCacheTest, NothingSyncsUntilEveryKindIsListed) {
  DeltaFeed feed;
  SchedulerCache cache(kScheduler);
  feed.node_sink().Replace({}, "1");
  feed.pod_sink().Replace({}, "1");
  feed.job_sink().Replace({}, "1");
  feed.namespace_sink().Replace({}, "1");
  DrainInto(feed, cache);
  EXPECT_FALSE(cache.HasSynced());
  feed.priority_class_sink().Replace({}, "1");
  feed.claim_sink().Replace({}, "1");
  feed.volume_sink().Replace({}, "1");
  DrainInto(feed, cache);
  EXPECT_FALSE(cache.HasSynced());
  EXPECT_FALSE(cache.snapshot().storage().tracked());
  feed.storage_class_sink().Replace({}, "1");
  EXPECT_TRUE(DrainInto(feed, cache));
  EXPECT_TRUE(cache.HasSynced());
  EXPECT_TRUE(cache.snapshot().storage().tracked());
}

json Claim(const std::string& name, const std::string& volume_name = "") {
  json claim = {{"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", name + "-uid"}}},
                {"spec",
                 {{"storageClassName", "local"},
                  {"accessModes", json::array({"ReadWriteOnce"})},
                  {"resources", {{"requests", {{"storage", "10Gi"}}}}}}}};
  if (!volume_name.empty()) {
    claim["spec"]["volumeName"] = volume_name;
  }
  return claim;
}

json LocalVolume(const std::string& name, const std::string& node) {
  return {{"metadata", {{"name", name}}},
          {"spec",
           {{"storageClassName", "local"},
            {"accessModes", json::array({"ReadWriteOnce"})},
            {"capacity", {{"storage", "20Gi"}}},
            {"nodeAffinity",
             {{"required",
               {{"nodeSelectorTerms",
                 json::array({{{"matchExpressions",
                                json::array({{{"key", "kubernetes.io/hostname"},
                                              {"operator", "In"},
                                              {"values", json::array({node})}}})}}})}}}}}}},
          {"status", {{"phase", "Available"}}}};
}

// Claims, volumes and classes reach the snapshot's catalog as the informers
// see them; each change may let a waiting member in, so the loop wakes.
TEST_F(SchedulerCacheTest, StorageObjectsReachTheCatalogAndWakeTheLoop) {
  feed_.storage_class_sink().Apply(k8s::WatchEventType::kAdded,
                                   {{"metadata", {{"name", "local"}}},
                                    {"provisioner", "kubernetes.io/no-provisioner"},
                                    {"volumeBindingMode", "WaitForFirstConsumer"}});
  feed_.volume_sink().Apply(k8s::WatchEventType::kAdded, LocalVolume("pv-1", "node-1"));
  feed_.claim_sink().Apply(k8s::WatchEventType::kAdded, Claim("data"));
  EXPECT_TRUE(Drain());
  const StorageCatalog& storage = cache_.snapshot().storage();
  ASSERT_NE(storage.FindClass("local"), nullptr);
  EXPECT_TRUE(storage.FindClass("local")->wait_for_first_consumer);
  ASSERT_NE(storage.FindVolume("pv-1"), nullptr);
  ASSERT_NE(storage.FindClaim("team-a", "data"), nullptr);
  EXPECT_EQ(storage.FindClaim("team-a", "data")->volume_name, "");

  feed_.claim_sink().Apply(k8s::WatchEventType::kModified, Claim("data", "pv-1"));
  EXPECT_TRUE(Drain());
  EXPECT_EQ(storage.FindClaim("team-a", "data")->volume_name, "pv-1");

  feed_.claim_sink().Apply(k8s::WatchEventType::kDeleted, Claim("data", "pv-1"));
  feed_.volume_sink().Apply(k8s::WatchEventType::kDeleted, LocalVolume("pv-1", "node-1"));
  EXPECT_TRUE(Drain());
  EXPECT_EQ(storage.FindClaim("team-a", "data"), nullptr);
  EXPECT_EQ(storage.FindVolume("pv-1"), nullptr);
}

// A relist replaces what the watch missed: objects not in it are gone. A
// claim that stops parsing is gone too (its pods wait, as for a missing one).
TEST_F(SchedulerCacheTest, AStorageRelistForgetsWhatIsGone) {
  feed_.claim_sink().Replace({Claim("data"), Claim("logs")}, "2");
  Drain();
  feed_.claim_sink().Replace({Claim("logs")}, "3");
  Drain();
  const StorageCatalog& storage = cache_.snapshot().storage();
  EXPECT_EQ(storage.FindClaim("team-a", "data"), nullptr);
  EXPECT_NE(storage.FindClaim("team-a", "logs"), nullptr);

  json broken = Claim("logs");
  broken["spec"]["accessModes"] = json::array({"ReadWriteSometimes"});
  feed_.claim_sink().Apply(k8s::WatchEventType::kModified, broken);
  Drain();
  EXPECT_EQ(storage.FindClaim("team-a", "logs"), nullptr);
}

// Informers only queue: nothing reaches the cache until the loop takes it,
// and the loop takes everything queued at once, in order.
TEST_F(SchedulerCacheTest, DeltasWaitInTheFeedUntilTheLoopTakesThem) {
  feed_.pod_sink().Apply(k8s::WatchEventType::kAdded, PendingMember("train-worker-1", 1, 2));
  feed_.pod_sink().Apply(k8s::WatchEventType::kDeleted, PendingMember("train-worker-1", 1, 2));
  feed_.pod_sink().Apply(k8s::WatchEventType::kAdded, PendingMember("train-worker-1", 1, 1));
  EXPECT_EQ(cache_.PendingCount(), 1u);
  std::vector<Delta> taken = feed_.Take(std::chrono::steady_clock::now());
  ASSERT_EQ(taken.size(), 3u);
  for (Delta& delta : taken) {
    cache_.Apply(std::move(delta));
  }
  ASSERT_EQ(cache_.PendingCount(), 2u);
  EXPECT_EQ(Pending().at("train-worker-1").group_spec->roles.at(0).min_replicas, 1);
  EXPECT_TRUE(feed_.Take(std::chrono::steady_clock::now()).empty());
}

// A pod that does not parse is skipped; the events after it still arrive.
TEST_F(SchedulerCacheTest, AnUnparsablePodIsSkipped) {
  json broken = PendingMember("train-worker-1", 1, 2);
  broken["metadata"]["creationTimestamp"] = "yesterday";
  feed_.pod_sink().Apply(k8s::WatchEventType::kAdded, broken);
  feed_.pod_sink().Apply(k8s::WatchEventType::kAdded, PendingMember("train-worker-2", 2, 2));
  const std::map<std::string, PodInfo> pending = Pending();
  EXPECT_EQ(pending.count("train-worker-1"), 0u);
  EXPECT_EQ(pending.count("train-worker-2"), 1u);
}

// A bind that failed gives the pod back to the next cycle.
TEST_F(SchedulerCacheTest, AForgottenAssumptionMakesThePodPendingAgain) {
  cache_.Assume(PodKey("team-a", "train-worker-0"));
  EXPECT_TRUE(Pending().empty());
  EXPECT_TRUE(cache_.ForgetAssumed("team-a", "train-worker-0"));
  EXPECT_EQ(Pending().count("train-worker-0"), 1u);
  EXPECT_FALSE(cache_.ForgetAssumed("team-a", "train-worker-0"));
}

// A watch that ends and relists the same objects changes no plan.
TEST_F(SchedulerCacheTest, ARelistOfUnchangedJobsDoesNotWakeTheLoop) {
  feed_.job_sink().Replace({TrainJob()}, "2");
  feed_.namespace_sink().Replace({Namespace("team-a")}, "2");
  EXPECT_FALSE(Drain());
  feed_.job_sink().Replace({TrainJob(1)}, "3");
  EXPECT_TRUE(Drain());
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
  feed_.pod_sink().Apply(k8s::WatchEventType::kAdded, forged);
  const PodInfo pod = Pending().at("train-worker-1");
  EXPECT_TRUE(pod.job_name.empty());
  EXPECT_FALSE(pod.group_spec.has_value());
  EXPECT_NE(pod.untrusted_reason.find("not controlled by HybridJob \"train\""), std::string::npos)
      << pod.untrusted_reason;
}

// A member seen before its job waits, unplanned; the job's arrival makes it a
// member and wakes the loop.
TEST_F(SchedulerCacheTest, AMemberSeenBeforeItsJobWaitsForIt) {
  feed_.job_sink().Apply(k8s::WatchEventType::kDeleted, TrainJob());
  EXPECT_TRUE(Pending().at("train-worker-0").awaiting_job);
  feed_.job_sink().Apply(k8s::WatchEventType::kAdded, TrainJob());
  EXPECT_TRUE(Drain());
  const PodInfo pod = Pending().at("train-worker-0");
  EXPECT_FALSE(pod.awaiting_job);
  EXPECT_EQ(pod.job_name, "train");
}

// A job edit lowering the minimum reaches its waiting members.
TEST_F(SchedulerCacheTest, AJobEditReachesItsMembers) {
  feed_.job_sink().Apply(k8s::WatchEventType::kModified, TrainJob(1));
  EXPECT_TRUE(Drain());
  EXPECT_EQ(Pending().at("train-worker-0").group_spec->roles.at(0).min_replicas, 1);
}

TEST_F(SchedulerCacheTest, ANamespacesDefaultQueueReachesItsPods) {
  feed_.namespace_sink().Apply(
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
  feed_.pod_sink().Apply(k8s::WatchEventType::kAdded, member);
  EXPECT_EQ(Pending().at("train-worker-1").priority, 0);
  EXPECT_FALSE(Pending().at("train-worker-1").preempts);

  feed_.priority_class_sink().Apply(k8s::WatchEventType::kAdded, PriorityClass("batch-high", 500));
  EXPECT_EQ(Pending().at("train-worker-1").priority, 500);
  EXPECT_TRUE(Pending().at("train-worker-1").preempts);
  feed_.priority_class_sink().Apply(k8s::WatchEventType::kAdded,
                                    PriorityClass("everyone", 7, /*global_default=*/true));
  EXPECT_EQ(Pending().at("train-worker-0").priority, 7);
}

// A forged pod bound to a node by hand is never counted as the job's member.
TEST_F(SchedulerCacheTest, AForgedBoundPodIsNotCountedAsAMember) {
  json forged = PendingMember("train-worker-1", 1, 2);
  forged["metadata"]["ownerReferences"][0]["uid"] = "someone-else";
  forged["spec"]["nodeName"] = "node-1";
  forged["status"]["phase"] = "Running";
  feed_.pod_sink().Apply(k8s::WatchEventType::kAdded, forged);
  Drain();
  const Snapshot& snapshot = cache_.snapshot();
  ASSERT_NE(snapshot.FindPod("team-a", "train-worker-1"), nullptr);
  EXPECT_NE(snapshot.FindPod("team-a", "train-worker-1")->untrusted_reason.find("uid"),
            std::string::npos);
  EXPECT_EQ(snapshot.GroupMembers("team-a", "train").size(), 0u);
}

}  // namespace
}  // namespace hybridjob::scheduler
