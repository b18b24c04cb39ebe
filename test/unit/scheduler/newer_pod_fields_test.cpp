// Pod fields of Kubernetes 1.27-1.34 that a 1.20 API server never sends:
// scheduling gates, resource claims (DRA) and in-place resize. The pods are
// decoded from JSON shaped exactly as those servers send it.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/cycle.h>
#include <hybridjob/scheduler/core/policy_cycle.h>
#include <hybridjob/scheduler/objects/objects.h>

#include "policy_fixture.h"

namespace hybridjob::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::QueueSpecFor;

// As a 1.30 server returns a gated member: the API server itself adds
// PodScheduled=False with reason SchedulingGated at creation.
constexpr const char* kGatedMember = R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "gated-worker-0", "namespace": "team", "uid": "u-g0",
    "creationTimestamp": "2026-01-01T00:00:00Z",
    "labels": {"batch.hybridjob.io/job-name": "gated", "batch.hybridjob.io/role": "worker",
               "batch.hybridjob.io/index": "0"},
    "annotations": {"batch.hybridjob.io/group-spec":
      "{\"roles\":[{\"name\":\"worker\",\"min\":1,\"max\":1,\"priority\":0}],\"queue\":\"a\",\"scheduleTimeoutSeconds\":0}"}},
  "spec": {"schedulerName": "gang-scheduler",
    "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}, {"name": "example.com/quota"}],
    "containers": [{"name": "main", "image": "trainer",
      "resources": {"limits": {"nvidia.com/gpu": "1"}, "requests": {"nvidia.com/gpu": "1"}}}],
    "restartPolicy": "Never", "priority": 0, "enableServiceLinks": true,
    "preemptionPolicy": "PreemptLowerPriority"},
  "status": {"phase": "Pending", "qosClass": "BestEffort",
    "conditions": [{"type": "PodScheduled", "status": "False", "lastProbeTime": null,
      "lastTransitionTime": "2026-01-01T00:00:00Z", "reason": "SchedulingGated",
      "message": "Scheduling is blocked due to non-empty scheduling gates"}]}
})";

// As a 1.34 server returns a pod that asks for a device through DRA.
constexpr const char* kDraMember = R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "dra-worker-0", "namespace": "team", "uid": "u-d0",
    "creationTimestamp": "2026-01-01T00:00:00Z",
    "labels": {"batch.hybridjob.io/job-name": "dra", "batch.hybridjob.io/role": "worker",
               "batch.hybridjob.io/index": "0"},
    "annotations": {"batch.hybridjob.io/group-spec":
      "{\"roles\":[{\"name\":\"worker\",\"min\":1,\"max\":1,\"priority\":0}],\"queue\":\"a\",\"scheduleTimeoutSeconds\":0}"}},
  "spec": {"schedulerName": "gang-scheduler",
    "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
    "containers": [{"name": "main", "image": "trainer",
      "resources": {"claims": [{"name": "gpu"}]}}]},
  "status": {"phase": "Pending", "qosClass": "BestEffort"}
})";

// A running pod whose cpu request was raised from 2 to 4 (1.33): the kubelet
// has not yet admitted the resize, so 2 cpus stay allocated and actual.
constexpr const char* kResizeUpPending = R"({
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "web-0", "namespace": "team", "uid": "u-w0"},
  "spec": {"nodeName": "n0",
    "containers": [{"name": "app", "image": "app",
      "resources": {"requests": {"cpu": "4", "memory": "1Gi"}, "limits": {"cpu": "4", "memory": "1Gi"}},
      "resizePolicy": [{"resourceName": "cpu", "restartPolicy": "NotRequired"}]}]},
  "status": {"phase": "Running",
    "conditions": [{"type": "PodResizePending", "status": "True", "reason": "Deferred",
      "message": "Node didn't have enough capacity", "lastProbeTime": null,
      "lastTransitionTime": "2026-01-01T00:00:00Z"}],
    "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "image": "app",
      "imageID": "", "started": true, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
      "allocatedResources": {"cpu": "2", "memory": "1Gi"},
      "resources": {"requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}}]}
})";

PodInfo Parse(const std::string& text) {
  Result<PodInfo> pod = ParsePodJson(text);
  EXPECT_TRUE(pod.ok()) << pod.status().ToString();
  return pod.ok() ? std::move(pod).value() : PodInfo{};
}

// kResizeUpPending with its numbers changed.
std::string ResizedPod(const std::string& spec_cpu, const std::string& allocated_cpu,
                       const std::string& actual_cpu, const std::string& resize_field,
                       const std::string& pending_reason) {
  nlohmann::json pod = nlohmann::json::parse(kResizeUpPending);
  pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = spec_cpu;
  pod["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] = allocated_cpu;
  pod["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] = actual_cpu;
  if (!resize_field.empty()) {
    pod["status"]["resize"] = resize_field;
  }
  pod["status"]["conditions"][0]["reason"] = pending_reason;
  return pod.dump();
}

TEST(NewerPodFieldsTest, SchedulingGatesAndResourceClaimsAreRead) {
  PodInfo gated = Parse(kGatedMember);
  EXPECT_THAT(gated.scheduling_gates, ElementsAre("kueue.x-k8s.io/admission", "example.com/quota"));
  EXPECT_THAT(gated.resource_claims, IsEmpty());
  EXPECT_EQ(gated.requests.Scalar("nvidia.com/gpu"), 1);

  PodInfo dra = Parse(kDraMember);
  EXPECT_THAT(dra.resource_claims, ElementsAre("gpu"));
  EXPECT_THAT(dra.scheduling_gates, IsEmpty());
}

TEST(NewerPodFieldsTest, AGateWithoutANameIsRefused) {
  nlohmann::json pod = nlohmann::json::parse(kGatedMember);
  pod["spec"]["schedulingGates"] = nlohmann::json::array({nlohmann::json::object()});
  Result<PodInfo> parsed = ParsePod(pod);
  ASSERT_FALSE(parsed.ok());
  EXPECT_THAT(parsed.status().message(), HasSubstr("spec.schedulingGates[0].name"));
}

TEST(NewerPodFieldsTest, PendingResizeCountsTheLargerOfSpecAndAllocated) {
  // Growing 2 -> 4 cpus, not yet admitted: the node keeps room for 4.
  EXPECT_EQ(Parse(kResizeUpPending).requests.milli_cpu, 4000);
  // Shrinking 4 -> 1 cpu, not yet applied: the container still holds 4.
  EXPECT_EQ(Parse(ResizedPod("1", "4", "4", "", "Deferred")).requests.milli_cpu, 4000);
  // Allocated but not yet actuated (1.33 splits the two): the larger counts.
  EXPECT_EQ(Parse(ResizedPod("1", "3", "2", "", "Deferred")).requests.milli_cpu, 3000);
  // Memory and the pods count are untouched.
  PodInfo pod = Parse(kResizeUpPending);
  EXPECT_EQ(pod.requests.memory, int64_t{1} << 30);
  EXPECT_EQ(pod.requests.pods, 1);
}

TEST(NewerPodFieldsTest, InfeasibleResizeCountsWhatTheContainerHas) {
  // 1.33: PodResizePending with reason Infeasible.
  EXPECT_EQ(Parse(ResizedPod("64", "2", "2", "", "Infeasible")).requests.milli_cpu, 2000);
  // 1.27-1.32: status.resize.
  EXPECT_EQ(Parse(ResizedPod("64", "2", "2", "Infeasible", "Deferred")).requests.milli_cpu, 2000);
}

TEST(NewerPodFieldsTest, WithoutContainerResourcesInStatusTheSpecCounts) {
  nlohmann::json pod = nlohmann::json::parse(kResizeUpPending);
  pod["status"]["containerStatuses"][0].erase("allocatedResources");
  pod["status"]["containerStatuses"][0].erase("resources");
  EXPECT_EQ(Parse(pod.dump()).requests.milli_cpu, 4000);
  // A status for another container does not count for this one.
  pod = nlohmann::json::parse(kResizeUpPending);
  pod["status"]["containerStatuses"][0]["name"] = "other";
  pod["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] = "16";
  EXPECT_EQ(Parse(pod.dump()).requests.milli_cpu, 4000);
}

TEST(NewerPodFieldsTest, ResizeOfASidecarCountsLikeAnAppContainer) {
  nlohmann::json pod = nlohmann::json::parse(kResizeUpPending);
  pod["spec"]["initContainers"] =
      nlohmann::json::array({{{"name", "proxy"},
                              {"restartPolicy", "Always"},
                              {"resources", {{"requests", {{"cpu", "500m"}}}}}}});
  pod["status"]["initContainerStatuses"] =
      nlohmann::json::array({{{"name", "proxy"}, {"allocatedResources", {{"cpu", "1"}}}}});
  EXPECT_EQ(Parse(pod.dump()).requests.milli_cpu, 4000 + 1000);
}

class GatedGroupTest : public testing::PolicyTest {
 protected:
  // "el" runs 8 one-GPU members in queue b (min 2) on the only node; "gated"
  // (queue a, one GPU) would reclaim one of them if it were not gated.
  void SetUp() override {
    AddNodes("n", 1, 8);
    policy_.queues = {testing::Queue("a"), testing::Queue("b")};
    AddRunning("el", QueueSpecFor("b", {GroupRole{"worker", 2, 8, 0}}), "worker", 0, 8, 1, "n0");
    pods_.push_back(std::make_unique<PodInfo>(Parse(kGatedMember)));
  }
};

TEST_F(GatedGroupTest, AGatedGangWaitsNamingItsGatesAndEvictsNobody) {
  PolicyCycleResult result = Run();
  const PolicyDecision* gated = Find(result, "gated");
  ASSERT_NE(gated, nullptr);
  EXPECT_EQ(gated->cause, WaitCause::kSchedulingGated);
  EXPECT_EQ(WaitCauseName(gated->cause), "SchedulingGated");
  EXPECT_FALSE(gated->plan.placed());
  EXPECT_THAT(gated->plan.assignments, IsEmpty());
  EXPECT_THAT(gated->plan.reason,
              HasSubstr("pod gated-worker-0 has scheduling gates: kueue.x-k8s.io/admission, "
                        "example.com/quota"));
  EXPECT_THAT(result.evictions, IsEmpty());
}

TEST_F(GatedGroupTest, OnceTheGatesAreRemovedTheGangReclaimsAndStarts) {
  pods_.back()->scheduling_gates.clear();
  PolicyCycleResult result = Run();
  const PolicyDecision* gang = Find(result, "gated");
  ASSERT_NE(gang, nullptr);
  EXPECT_EQ(gang->cause, WaitCause::kEvicting);
  EXPECT_THAT(Evicted(result), ElementsAre("el-worker-7"));
}

TEST_F(GatedGroupTest, OneGatedMemberHoldsTheWholeGang) {
  AddNodes("m", 2, 8);
  GroupSpec spec = QueueSpecFor("a", {GroupRole{"worker", 3, 3, 0}});
  AddPending("three", spec, "worker", 0, 3, 1);
  pods_.back()->scheduling_gates = {"example.com/wait"};
  PolicyCycleResult result = Run();
  const PolicyDecision* three = Find(result, "three");
  ASSERT_NE(three, nullptr);
  EXPECT_EQ(three->cause, WaitCause::kSchedulingGated);
  EXPECT_THAT(three->plan.assignments, IsEmpty());
  EXPECT_THAT(three->plan.reason, HasSubstr("pod three-worker-2 has scheduling gates"));
}

TEST_F(GatedGroupTest, GatedMembersOfARunningGangWaitWhileTheOthersGrow) {
  AddNodes("m", 1, 8);
  GroupSpec spec = QueueSpecFor("a", {GroupRole{"worker", 1, 4, 0}});
  AddRunning("grows", spec, "worker", 0, 1, 1, "m0");
  AddPending("grows", spec, "worker", 1, 3, 1);
  pods_.back()->scheduling_gates = {"example.com/wait"};  // grows-worker-3
  PolicyCycleResult result = Run();
  const PolicyDecision* grows = Find(result, "grows");
  ASSERT_NE(grows, nullptr);
  EXPECT_THAT(AssignedNames(*grows), ElementsAre("grows-worker-1", "grows-worker-2"));
  for (const PolicyDecision& decision : result.decisions) {
    for (const Assignment& assignment : decision.plan.assignments) {
      EXPECT_NE(assignment.pod->name, "grows-worker-3");
    }
  }
}

TEST_F(GatedGroupTest, AGangWithResourceClaimsIsNeverPlacedBlindly) {
  pods_.back()->scheduling_gates.clear();
  pods_.push_back(std::make_unique<PodInfo>(Parse(kDraMember)));
  AddNodes("m", 1, 8);
  PolicyCycleResult result = Run();
  const PolicyDecision* dra = Find(result, "dra");
  ASSERT_NE(dra, nullptr);
  EXPECT_EQ(dra->cause, WaitCause::kUnsupported);
  EXPECT_THAT(dra->plan.assignments, IsEmpty());
  EXPECT_THAT(dra->plan.reason, HasSubstr("pod dra-worker-0 asks for resourceClaims (gpu)"));
  for (const Eviction& eviction : result.evictions) {
    EXPECT_NE(eviction.for_group, "team/dra");
  }
}

TEST(NewerPodFieldsCycleTest, RunCycleHoldsGatedAndClaimingGroups) {
  Snapshot snapshot;
  ASSERT_TRUE(snapshot.UpsertNode(testing::NodeBuilder("n0").Gpus(8).Build()).ok());
  PodInfo gated = Parse(kGatedMember);
  PodInfo dra = Parse(kDraMember);
  std::vector<const PodInfo*> pending = {&gated, &dra};
  CycleResult result =
      RunCycle(snapshot, BuildGroups(pending, snapshot), testing::At(1000), PlannerConfig{});
  ASSERT_EQ(result.decisions.size(), 2u);
  for (const GroupDecision& decision : result.decisions) {
    EXPECT_EQ(decision.plan.outcome, PlanOutcome::kWait) << decision.group.name;
    EXPECT_THAT(decision.plan.assignments, IsEmpty());
  }
  EXPECT_EQ(snapshot.pod_count(), 0u);
}

}  // namespace
}  // namespace hybridjob::scheduler
