#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include <hybridjob/controller/observed.h>

namespace hybridjob::controller {
namespace {

using nlohmann::json;

json FullPod() {
  return {
      {"metadata",
       {{"name", "mnist-worker-3"},
        {"uid", "pod-uid"},
        {"labels",
         {{"batch.hybridjob.io/job-name", "mnist"},
          {"batch.hybridjob.io/role", "worker"},
          {"batch.hybridjob.io/index", "3"}}},
        {"ownerReferences",
         {{{"kind", "Other"}, {"uid", "other"}},
          {{"kind", "HybridJob"}, {"uid", "job-uid"}, {"controller", true}}}},
        {"deletionTimestamp", "2024-05-01T12:00:00Z"}}},
      {"spec",
       {{"nodeName", "gpu-7"},
        {"containers",
         {{{"name", "a"}, {"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}},
          {{"name", "b"}, {"resources", {{"requests", {{"nvidia.com/gpu", 1}}}}}}}}}},
      {"status",
       {{"phase", "Failed"},
        {"reason", "Evicted"},
        {"conditions",
         {{{"type", "PodScheduled"}, {"status", "False"}, {"reason", "GangSurplus"}}}},
        {"containerStatuses",
         {{{"name", "a"}, {"state", {{"terminated", {{"exitCode", 0}}}}}},
          {{"name", "b"}, {"state", {{"terminated", {{"exitCode", 137}}}}}}}}}},
  };
}

TEST(ControllerObservedTest, ReadsWhatThePlannerNeeds) {
  ObservedPod pod = ObservePod(FullPod());
  EXPECT_EQ(pod.name, "mnist-worker-3");
  EXPECT_EQ(pod.uid, "pod-uid");
  EXPECT_EQ(pod.job_name, "mnist");
  EXPECT_EQ(pod.role, "worker");
  EXPECT_EQ(pod.index, 3);
  EXPECT_EQ(pod.controller_uid, "job-uid");
  EXPECT_EQ(pod.phase, PodPhase::kFailed);
  EXPECT_EQ(pod.node_name, "gpu-7");
  EXPECT_TRUE(pod.bound());
  EXPECT_TRUE(pod.surplus);
  EXPECT_TRUE(pod.terminating);
  EXPECT_EQ(pod.exit_code, 137);
  EXPECT_EQ(pod.reason, "Evicted");
  EXPECT_FALSE(pod.active());
}

TEST(ControllerObservedTest, TerminationMessagesOfAppAndInitContainers) {
  json pod = FullPod();
  pod["status"]["containerStatuses"][1]["state"]["terminated"]["message"] = "store said no\n";
  pod["status"]["containerStatuses"][0]["lastState"] = {
      {"terminated", {{"exitCode", 1}, {"message", "attempt 1: 403"}}}};
  ObservedPod observed = ObservePod(pod);
  EXPECT_EQ(observed.termination_message, "store said no\n");
  EXPECT_EQ(observed.last_termination_message, "attempt 1: 403");
  EXPECT_FALSE(observed.init_exit_code);

  // A fetcher that failed: the pod never started its app containers.
  pod["status"]["containerStatuses"] = {
      {{"name", "a"}, {"state", {{"waiting", {{"reason", "PodInitializing"}}}}}}};
  pod["status"]["initContainerStatuses"] = {
      {{"name", "hybridjob-code"},
       {"state", {{"terminated", {{"exitCode", 1}, {"message", "NoSuchKey: gone"}}}}}}};
  observed = ObservePod(pod);
  EXPECT_FALSE(observed.exit_code);
  EXPECT_EQ(observed.failed_init_container, "hybridjob-code");
  EXPECT_EQ(observed.init_exit_code, 1);
  EXPECT_EQ(observed.termination_message, "NoSuchKey: gone");
  // An init container that succeeded is no failure.
  pod["status"]["initContainerStatuses"][0]["state"]["terminated"] = {{"exitCode", 0}};
  observed = ObservePod(pod);
  EXPECT_FALSE(observed.init_exit_code);
  EXPECT_EQ(observed.termination_message, "");
}

TEST(ControllerObservedTest, DefaultsForANewPod) {
  ObservedPod pod = ObservePod({{"metadata", {{"name", "p"}}}});
  EXPECT_EQ(pod.phase, PodPhase::kPending);
  EXPECT_FALSE(pod.bound());
  EXPECT_FALSE(pod.surplus);
  EXPECT_FALSE(pod.terminating);
  EXPECT_FALSE(pod.exit_code.has_value());
  EXPECT_EQ(pod.index, -1);
  EXPECT_TRUE(pod.active());
}

TEST(ControllerObservedTest, WaitingIsNotSurplus) {
  json pod = FullPod();
  pod["status"]["conditions"][0]["reason"] = "Unschedulable";
  EXPECT_FALSE(ObservePod(pod).surplus);
}

TEST(ControllerObservedTest, MalformedIndexLabels) {
  for (const char* index : {"", "-1", "x", "01", "3a", "99999999999"}) {
    json pod = FullPod();
    pod["metadata"]["labels"]["batch.hybridjob.io/index"] = index;
    EXPECT_EQ(ObservePod(pod).index, -1) << index;
  }
}

TEST(ControllerObservedTest, NeverThrowsOnGarbage) {
  for (const json& garbage :
       {json(nullptr), json(42), json::array(), json{{"metadata", 5}},
        json{{"metadata", {{"labels", {{"batch.hybridjob.io/index", 3}}}}}},
        json{{"status", {{"containerStatuses", {{{"state", {{"terminated", "x"}}}}}}}}},
        json{{"spec",
              {{"containers", {{{"resources", {{"limits", {{"nvidia.com/gpu", "lots"}}}}}}}}}}}}) {
    EXPECT_NO_THROW(ObservePod(garbage)) << garbage.dump();
  }
}

TEST(ControllerObservedTest, ProgressIsBindingPhaseRestartsAndBeingTakenAway) {
  const ObservedPod seen = ObservePod(FullPod());
  EXPECT_FALSE(MemberProgressed(seen, seen));
  const std::vector<std::function<void(ObservedPod&)>> progress = {
      [](ObservedPod& p) { p.node_name = "node-9"; },
      [](ObservedPod& p) { p.phase = PodPhase::kSucceeded; },
      [](ObservedPod& p) { ++p.restarts; },
      [](ObservedPod& p) { p.terminating = !p.terminating; },
      [](ObservedPod& p) { p.disrupted = !p.disrupted; },
      [](ObservedPod& p) { p.reclaimed = !p.reclaimed; },
      [](ObservedPod& p) { p.surplus = !p.surplus; },
      [](ObservedPod& p) { p.uid = "another"; },
  };
  for (size_t i = 0; i < progress.size(); ++i) {
    ObservedPod after = seen;
    progress[i](after);
    EXPECT_TRUE(MemberProgressed(seen, after)) << i;
  }
  const std::vector<std::function<void(ObservedPod&)>> news = {
      [](ObservedPod& p) { p.waiting_reason = "OverQueueMax"; },
      [](ObservedPod& p) { p.waiting_message = "behind 3 gangs"; },
      [](ObservedPod& p) { p.standing_since = "2026-12-05T10:00:00Z"; },
      [](ObservedPod& p) { p.group_spec = "{}"; },
  };
  for (size_t i = 0; i < news.size(); ++i) {
    ObservedPod after = seen;
    news[i](after);
    EXPECT_FALSE(MemberProgressed(seen, after)) << i;
  }
}

TEST(ControllerObservedTest, PhaseNames) {
  EXPECT_EQ(ToString(PodPhase::kRunning), "Running");
  EXPECT_EQ(ToString(PodPhase::kSucceeded), "Succeeded");
}

}  // namespace
}  // namespace hybridjob::controller
