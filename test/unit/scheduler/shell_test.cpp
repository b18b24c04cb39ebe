// The scheduler's shell against the fake API server: the pod-condition
// reporter, the binder's rollback, and the whole loop from reflectors to binds.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <k8s/eventually.h>
#include <k8s/fake_api_client.h>
#include <k8s/request_gate.h>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <hybridjob/api/labels.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/scheduler/shell/binder.h>
#include <hybridjob/scheduler/shell/claim_writer.h>
#include <hybridjob/scheduler/shell/gang_scheduler.h>
#include <hybridjob/scheduler/shell/status_reporter.h>

namespace hybridjob::scheduler {
namespace {

using k8s::testing::Eventually;
using k8s::testing::FakeApiClient;
using k8s::testing::OpenOnExit;
using k8s::testing::RequestGate;
using nlohmann::json;
using namespace std::chrono_literals;

json PlainPod(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "team-a"}}},
          {"spec", {{"containers", json::array({{{"name", "main"}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

// The reason of the pod's condition of `type`, or "".
std::string ConditionReason(FakeApiClient& api, const std::string& pod, const std::string& type) {
  auto object = api.Object(k8s::resources::Pods(), "team-a", pod);
  if (!object || !object->contains("status") || !(*object)["status"].contains("conditions")) {
    return {};
  }
  for (const json& condition : (*object)["status"]["conditions"]) {
    if (condition.value("type", "") == type) {
      return condition.value("reason", "");
    }
  }
  return {};
}

Status ServerError() {
  return Status(StatusCode::kUnavailable, "etcdserver: leader changed")
      .WithHttp(500, "InternalError");
}

// While one write to a pod is in flight, newer writes of the same condition
// replace each other: the next write carries only the newest.
TEST(PodStatusReporterTest, WritesToOnePodAreCoalesced) {
  FakeApiClient api;
  api.Seed(k8s::resources::Pods(), PlainPod("p"));
  RequestGate gate;
  std::atomic<int> patches{0};
  api.SetFault([&](const FakeApiClient::Request& request) -> std::optional<Status> {
    if (request.verb == "patch" && patches++ == 0) {
      gate.PassWhenOpen();
    }
    return std::nullopt;
  });
  PodStatusReporter reporter(api);
  reporter.Mark("team-a", "p", {{"PodScheduled", false, "First", "1"}});
  const OpenOnExit open_on_exit(gate);
  ASSERT_TRUE(gate.WaitForARequest());
  reporter.Mark("team-a", "p", {{"PodScheduled", false, "Second", "2"}});
  reporter.Mark("team-a", "p", {{"PodScheduled", false, "Third", "3"}});
  gate.Open();
  ASSERT_TRUE(Eventually([&] { return ConditionReason(api, "p", "PodScheduled") == "Third"; }));
  reporter.Stop();
  EXPECT_EQ(api.CountRequests("patch"), 2u);
  EXPECT_EQ(reporter.written(), 2u);
}

TEST(PodStatusReporterTest, AFailedWriteIsTriedAgainAndAGonePodIsNot) {
  FakeApiClient api;
  api.Seed(k8s::resources::Pods(), PlainPod("p"));
  std::atomic<int> failures{2};
  api.SetFault([&](const FakeApiClient::Request& request) -> std::optional<Status> {
    if (request.verb == "patch" && request.name == "p" && failures.fetch_sub(1) > 0) {
      return ServerError();
    }
    return std::nullopt;
  });
  PodStatusReporter reporter(api);
  reporter.Mark("team-a", "p", {{"PodScheduled", false, "GangSurplus", "left out"}});
  reporter.Mark("team-a", "gone", {{"PodScheduled", false, "Unschedulable", "no room"}});
  ASSERT_TRUE(
      Eventually([&] { return ConditionReason(api, "p", "PodScheduled") == "GangSurplus"; }));
  reporter.Stop();
  size_t gone_patches = 0;
  for (const auto& request : api.Requests()) {
    gone_patches += request.verb == "patch" && request.name == "gone" ? 1 : 0;
  }
  EXPECT_EQ(gone_patches, 1u);
  EXPECT_EQ(reporter.given_up(), 0u);
}

// The binder against the fake server: what a failed gang leaves behind.
class GangBinderTest : public ::testing::Test {
 protected:
  GangBinderTest() : events_(api_, "gang-scheduler") {}

  void Seed(int count) {
    for (int i = 0; i < count; ++i) {
      json pod = api_.Seed(k8s::resources::Pods(), PlainPod("w-" + std::to_string(i)));
      gang_.members.push_back({"team-a", "w-" + std::to_string(i),
                               pod["metadata"]["uid"].get<std::string>(), "node-1"});
    }
    gang_.key = "team-a/train";
    gang_.namespace_name = "team-a";
    gang_.group_name = "train";
  }

  // Binds the gang and returns what the binder reported (nothing on success).
  std::vector<BindOutcome> Bind() {
    std::vector<BindOutcome> outcomes;
    std::mutex mu;
    GangBinder binder(
        api_,
        [](k8s::ApiClient& client, const std::string& ns, const std::string& pod,
           const std::string& uid, const std::string& node, const BindAnnotations& annotations) {
          return k8s::BindPod(client, ns, pod, uid, node, annotations);
        },
        events_, reporter_, stats_,
        [&](BindOutcome outcome) {
          std::lock_guard lock(mu);
          outcomes.push_back(std::move(outcome));
        });
    binder.Start(2);
    const uint64_t finished_before =
        stats_.groups_scheduled + stats_.groups_rolled_back + stats_.groups_grown;
    binder.Submit(gang_);
    EXPECT_TRUE(Eventually([&] {
      std::lock_guard lock(mu);
      return !outcomes.empty() || stats_.groups_scheduled + stats_.groups_grown > finished_before;
    }));
    binder.Stop();
    reporter_.Stop();
    return outcomes;
  }

  // The server refuses to bind this pod (403: it never binds).
  void RefuseBindingOf(const std::string& pod) {
    api_.SetFault([pod](const FakeApiClient::Request& request) -> std::optional<Status> {
      if (request.subresource == "binding" && request.name == pod) {
        return Status(StatusCode::kForbidden, "no").WithHttp(403, "Forbidden");
      }
      return std::nullopt;
    });
  }

  bool Bound(const std::string& pod) {
    auto object = api_.Object(k8s::resources::Pods(), "team-a", pod);
    return object && !(*object)["spec"].value("nodeName", "").empty();
  }

  // The Scheduled Events written, by the pod they are about.
  std::map<std::string, std::string> ScheduledEvents() {
    EXPECT_TRUE(events_.Flush(10s));
    std::map<std::string, std::string> out;
    auto events = api_.List(k8s::resources::Events(), "team-a", {});
    for (const json& event : events.ok() ? events->items : std::vector<json>{}) {
      if (event.value("reason", "") == "Scheduled") {
        out[event["involvedObject"].value("name", "")] = event.value("message", "");
      }
    }
    return out;
  }

  FakeApiClient api_;
  k8s::EventRecorder events_;
  PodStatusReporter reporter_{api_};
  SchedulerStats stats_;
  GangBind gang_;
};

TEST_F(GangBinderTest, ARefusedBindRollsTheNewGangBack) {
  Seed(3);
  RefuseBindingOf("w-1");
  std::vector<BindOutcome> outcomes = Bind();
  ASSERT_EQ(outcomes.size(), 1u);
  const BindOutcome& outcome = outcomes.front();
  ASSERT_EQ(outcome.failed.size(), 1u);
  EXPECT_EQ(outcome.failed[0].name, "w-1");
  ASSERT_TRUE(outcome.hold.has_value());
  EXPECT_EQ(outcome.hold->deleted.size(), 2u);
  EXPECT_FALSE(api_.Object(k8s::resources::Pods(), "team-a", "w-0").has_value());
  EXPECT_FALSE(api_.Object(k8s::resources::Pods(), "team-a", "w-2").has_value());
  EXPECT_TRUE(api_.Object(k8s::resources::Pods(), "team-a", "w-1").has_value())
      << "a refused member is not deleted";
  EXPECT_EQ(stats_.groups_rolled_back.load(), 1u);
}

// The binding took but its answer was lost: the pod read back is on a node,
// so the rollback deletes it too.
TEST_F(GangBinderTest, ABindWhoseAnswerWasLostIsReadBackAndRolledBack) {
  Seed(2);
  api_.SetFault([this](const FakeApiClient::Request& request) -> std::optional<Status> {
    if (request.subresource == "binding" && request.name == "w-1") {
      json pod = *api_.Object(k8s::resources::Pods(), "team-a", "w-1");
      pod["spec"]["nodeName"] = "node-1";
      api_.Seed(k8s::resources::Pods(), pod);
      return Status(StatusCode::kUnavailable, "connection reset");
    }
    if (request.subresource == "binding" && request.name == "w-0") {
      return Status(StatusCode::kForbidden, "no").WithHttp(403, "Forbidden");
    }
    return std::nullopt;
  });
  std::vector<BindOutcome> outcomes = Bind();
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_FALSE(api_.Object(k8s::resources::Pods(), "team-a", "w-1").has_value());
  EXPECT_TRUE(api_.Object(k8s::resources::Pods(), "team-a", "w-0").has_value());
  ASSERT_TRUE(outcomes[0].hold.has_value());
  ASSERT_EQ(outcomes[0].hold->deleted.size(), 1u);
  EXPECT_EQ(outcomes[0].hold->deleted[0].name, "w-1");
}

// A 409 from a pod still unbound (its scheduling gates) is a refusal: read
// back, the pod stays.
TEST_F(GangBinderTest, AConflictFromAnUnboundPodKeepsIt) {
  Seed(2);
  json gated = *api_.Object(k8s::resources::Pods(), "team-a", "w-1");
  gated["spec"]["schedulingGates"] = json::array({{{"name", "quota"}}});
  api_.Seed(k8s::resources::Pods(), gated);
  std::vector<BindOutcome> outcomes = Bind();
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_TRUE(api_.Object(k8s::resources::Pods(), "team-a", "w-1").has_value());
  EXPECT_FALSE(api_.Object(k8s::resources::Pods(), "team-a", "w-0").has_value());
}

// A growing gang keeps what bound; the others are candidates again.
TEST_F(GangBinderTest, AGrowingGangKeepsWhatBound) {
  Seed(2);
  gang_.grows = true;
  RefuseBindingOf("w-1");
  std::vector<BindOutcome> outcomes = Bind();
  ASSERT_EQ(outcomes.size(), 1u);
  EXPECT_FALSE(outcomes[0].hold.has_value());
  EXPECT_TRUE(Bound("w-0"));
  EXPECT_EQ(stats_.groups_rolled_back.load(), 0u);
}

// Every member bound gets its Scheduled Event, as kube-scheduler records one
// per pod; a gang rolled back gets none.
TEST_F(GangBinderTest, EveryBoundMemberGetsAScheduledEvent) {
  Seed(3);
  gang_.summary = "worker 3 (min 2, max 3)";
  EXPECT_TRUE(Bind().empty());
  const std::map<std::string, std::string> events = ScheduledEvents();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events.at("w-1"),
            "Successfully assigned team-a/w-1 to node-1 (gang train placed: worker 3 (min 2, "
            "max 3))");
}

TEST_F(GangBinderTest, ARolledBackGangGetsNoScheduledEvent) {
  Seed(3);
  RefuseBindingOf("w-1");
  ASSERT_EQ(Bind().size(), 1u);
  EXPECT_TRUE(ScheduledEvents().empty());
}

TEST_F(GangBinderTest, AGrowingGangsBoundMembersGetTheirScheduledEvent) {
  Seed(2);
  gang_.grows = true;
  gang_.summary = "worker 4 (min 2, max 4)";
  RefuseBindingOf("w-1");
  ASSERT_EQ(Bind().size(), 1u);
  const std::map<std::string, std::string> events = ScheduledEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events.at("w-0"),
            "Successfully assigned team-a/w-0 to node-1 (gang train grew: worker 4 (min 2, max "
            "4))");
}

TEST_F(GangBinderTest, APlacedGangMarksItsLeftOutMembers) {
  Seed(3);
  gang_.surplus.push_back(gang_.members.back());
  gang_.members.pop_back();
  EXPECT_TRUE(Bind().empty());
  EXPECT_TRUE(Bound("w-0"));
  EXPECT_TRUE(Bound("w-1"));
  EXPECT_FALSE(Bound("w-2"));
  EXPECT_EQ(ConditionReason(api_, "w-2", "PodScheduled"), api::kSurplusReason);
}

// The whole shell: reflectors list and watch the fake server, the loop plans
// from the deltas, the binder binds.
class GangSchedulerShellTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 2; ++i) {
      api_.Seed(k8s::resources::Nodes(),
                {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata", {{"name", "node-" + std::to_string(i)}}},
                 {"status",
                  {{"allocatable", {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}}},
                   {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}});
    }
    api_.Seed(k8s::resources::Namespaces(),
              {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "team-a"}}}});
  }

  void TearDown() override {
    if (scheduler_) {
      scheduler_->Stop();
    }
  }

  void StartScheduler(int64_t volume_bind_timeout_seconds = 600, bool dashboard = false) {
    SchedulerConfig config;
    config.scheduler_name = "gang-scheduler";
    config.gang_backoff_seconds = 60;  // no periodic cycle during a test
    config.bind_concurrency = 2;
    config.volume_bind_timeout_seconds = volume_bind_timeout_seconds;
    scheduler_ = std::make_unique<GangScheduler>(api_, config);
    if (dashboard) {
      scheduler_->EnableDashboard();
    }
    scheduler_->Start();
    ASSERT_TRUE(scheduler_->WaitForCacheSync(10s));
    scheduler_->SetActive(true);
  }

  // A HybridJob and its `count` one-cpu workers (min 2), as the controller
  // makes them; each mounts `claim` when one is named.
  void CreateJob(const std::string& job, int count, const std::string& claim = "",
                 const std::string& cpus = "1") {
    json created = api_.Seed(
        k8s::resources::HybridJobs(),
        {{"apiVersion", api::kApiVersion},
         {"kind", api::kKind},
         {"metadata", {{"name", job}, {"namespace", "team-a"}}},
         {"spec",
          {{"schedulerName", "gang-scheduler"},
           {"replicaSpecs",
            json::array({{{"name", "worker"},
                          {"minReplicas", 2},
                          {"maxReplicas", count},
                          {"template", {{"spec", {{"containers", json::array()}}}}}}})}}}});
    const std::string uid = created["metadata"]["uid"];
    const json spec = {
        {"roles", json::array({{{"name", "worker"}, {"min", 2}, {"max", count}, {"priority", 0}}})},
        {"queue", "default"}};
    for (int i = 0; i < count; ++i) {
      const std::string name = job + "-worker-" + std::to_string(i);
      api_.Seed(
          k8s::resources::Pods(),
          {{"apiVersion", "v1"},
           {"kind", "Pod"},
           {"metadata",
            {{"name", name},
             {"namespace", "team-a"},
             {"labels",
              {{std::string(api::kJobNameLabel), job},
               {std::string(api::kRoleLabel), "worker"},
               {std::string(api::kIndexLabel), std::to_string(i)}}},
             {"annotations", {{std::string(api::kGroupSpecAnnotation), spec.dump()}}},
             {"ownerReferences", json::array({{{"apiVersion", api::kApiVersion},
                                               {"kind", api::kKind},
                                               {"name", job},
                                               {"uid", uid},
                                               {"controller", true}}})}}},
           {"spec",
            {{"schedulerName", "gang-scheduler"},
             {"volumes", claim.empty()
                             ? json::array()
                             : json::array({{{"name", "data"},
                                             {"persistentVolumeClaim", {{"claimName", claim}}}}})},
             {"containers",
              json::array({{{"name", "main"}, {"resources", {{"requests", {{"cpu", cpus}}}}}}})}}},
           {"status", {{"phase", "Pending"}}}});
    }
  }

  // A WaitForFirstConsumer class with a provisioner, and a ReadWriteOnce claim of it.
  void CreateClaimToProvision(const std::string& claim) {
    api_.Seed(k8s::resources::StorageClasses(), {{"apiVersion", "storage.k8s.io/v1"},
                                                 {"kind", "StorageClass"},
                                                 {"metadata", {{"name", "local"}}},
                                                 {"provisioner", "example.com/local"},
                                                 {"volumeBindingMode", "WaitForFirstConsumer"}});
    api_.Seed(k8s::resources::PersistentVolumeClaims(),
              {{"apiVersion", "v1"},
               {"kind", "PersistentVolumeClaim"},
               {"metadata", {{"name", claim}, {"namespace", "team-a"}}},
               {"spec",
                {{"storageClassName", "local"},
                 {"accessModes", json::array({"ReadWriteOnce"})},
                 {"resources", {{"requests", {{"storage", "1Gi"}}}}}}},
               {"status", {{"phase", "Pending"}}}});
  }

  std::string SelectedNode(const std::string& claim) {
    auto object = api_.Object(k8s::resources::PersistentVolumeClaims(), "team-a", claim);
    if (!object) {
      return {};
    }
    return (*object)["metadata"]
        .value("annotations", json::object())
        .value(std::string(kAnnotationSelectedNode), "");
  }

  // What the provisioner and the PV controller do once a node is selected.
  void BindClaim(const std::string& claim) {
    json object = *api_.Object(k8s::resources::PersistentVolumeClaims(), "team-a", claim);
    object["spec"]["volumeName"] = "pvc-" + claim;
    object["status"]["phase"] = "Bound";
    api_.Seed(k8s::resources::PersistentVolumeClaims(), object);
  }

  int Bound(const std::string& job, int count) {
    int bound = 0;
    for (int i = 0; i < count; ++i) {
      auto pod =
          api_.Object(k8s::resources::Pods(), "team-a", job + "-worker-" + std::to_string(i));
      bound += pod && !(*pod)["spec"].value("nodeName", "").empty() ? 1 : 0;
    }
    return bound;
  }

  FakeApiClient api_;
  std::unique_ptr<GangScheduler> scheduler_;
};

TEST_F(GangSchedulerShellTest, TheLoopPlacesAGangFromWhatTheInformersSaw) {
  StartScheduler();
  CreateJob("train", 3);
  ASSERT_TRUE(Eventually([&] { return Bound("train", 3) == 3; })) << Bound("train", 3);
  // Counted once the binder has finished with the gang, a moment after the
  // server shows the last bind.
  EXPECT_TRUE(Eventually([&] { return scheduler_->stats().groups_scheduled.load() == 1u; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(scheduler_->stats().groups_scheduled.load(), 1u);
  EXPECT_TRUE(Eventually([&] { return scheduler_->PendingPods() == 0; }));
}

// An elastic gang larger than the cluster runs what fits; the rest is marked.
TEST_F(GangSchedulerShellTest, AGangLargerThanTheClusterRunsWhatFitsAndMarksTheRest) {
  StartScheduler();
  CreateJob("big", 9);  // 9 cpus, 8 in the cluster: the minimum of 2 fits, so 8 run
  ASSERT_TRUE(Eventually([&] { return Bound("big", 9) == 8; }));
  EXPECT_TRUE(Eventually([&] {
    return ConditionReason(api_, "big-worker-8", "PodScheduled") == api::kSurplusReason;
  }));
}

// A burst of binds against an API server slow to take Events: every member
// still gets its Scheduled Event, none dropped, once the server takes them.
TEST_F(GangSchedulerShellTest, EveryMemberOfABurstGetsItsScheduledEvent) {
  constexpr int kMembers = 1200;  // beyond an EventRecorder's default backlog
  for (int i = 2; i < 12; ++i) {  // room for 110 pods a node
    api_.Seed(k8s::resources::Nodes(),
              {{"apiVersion", "v1"},
               {"kind", "Node"},
               {"metadata", {{"name", "node-" + std::to_string(i)}}},
               {"status",
                {{"allocatable", {{"cpu", "4"}, {"memory", "16Gi"}, {"pods", "110"}}},
                 {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}}})}}}});
  }
  RequestGate events_gate;
  api_.SetFault([&](const FakeApiClient::Request& request) -> std::optional<Status> {
    if (request.verb == "create" && request.resource == "events") {
      events_gate.PassWhenOpen();
    }
    return std::nullopt;
  });
  // Opened before the scheduler stops, even when an assertion below fails.
  const OpenOnExit open_on_exit(events_gate);
  StartScheduler();
  CreateJob("burst", kMembers, "", "1m");
  ASSERT_TRUE(Eventually([&] { return Bound("burst", kMembers) == kMembers; }, 60s));
  ASSERT_TRUE(Eventually([&] { return scheduler_->stats().groups_scheduled.load() == 1u; }));
  EXPECT_EQ(scheduler_->EventsDropped(), 0u);
  events_gate.Open();
  auto scheduled = [&] {
    k8s::ListOptions options;
    options.field_selector = "reason=Scheduled";
    auto events = api_.List(k8s::resources::Events(), "team-a", options);
    std::set<std::string> pods;
    for (const json& event : events.ok() ? events->items : std::vector<json>{}) {
      if (event.value("reason", "") == "Scheduled") {
        pods.insert(event["involvedObject"].value("name", ""));
      }
    }
    return pods.size();
  };
  EXPECT_TRUE(Eventually([&] { return scheduled() == static_cast<size_t>(kMembers); }, 60s))
      << scheduled();
  EXPECT_EQ(scheduler_->EventsDropped(), 0u);
}

// Watches that end, and a history compacted meanwhile, are relisted: what
// changed in between still arrives.
TEST_F(GangSchedulerShellTest, AWatchThatEndsAndExpiresIsRelisted) {
  StartScheduler();
  CreateJob("first", 2);
  ASSERT_TRUE(Eventually([&] { return Bound("first", 2) == 2; }));
  // The watches end and cannot be opened again until the job created
  // meanwhile is compacted out of the history.
  std::atomic<bool> refuse_watches{true};
  api_.SetFault([&](const FakeApiClient::Request& request) -> std::optional<Status> {
    if (request.verb == "watch" && refuse_watches) {
      return Status(StatusCode::kUnavailable, "connection refused");
    }
    return std::nullopt;
  });
  api_.CloseWatches();
  CreateJob("second", 2);
  api_.Compact();
  refuse_watches = false;
  ASSERT_TRUE(Eventually([&] { return Bound("second", 2) == 2; }));
  size_t pod_lists = 0;
  for (const auto& request : api_.Requests()) {
    pod_lists += request.verb == "list" && request.resource == "pods" ? 1 : 0;
  }
  EXPECT_GE(pod_lists, 2u) << "the pod reflector relisted after 410 Gone";
}

// A status update that changes no plan runs no cycle; a new pod does.
TEST_F(GangSchedulerShellTest, OnlyChangesThatMayChangeAPlanRunACycle) {
  StartScheduler();
  CreateJob("train", 2);
  ASSERT_TRUE(Eventually([&] { return Bound("train", 2) == 2; }));
  ASSERT_TRUE(Eventually([&] { return scheduler_->PendingPods() == 0; }));
  std::this_thread::sleep_for(100ms);
  const uint64_t cycles = scheduler_->stats().cycles.load();
  json pod = *api_.Object(k8s::resources::Pods(), "team-a", "train-worker-0");
  pod["status"]["podIP"] = "10.0.0.7";
  api_.Seed(k8s::resources::Pods(), pod);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(scheduler_->stats().cycles.load(), cycles);
  CreateJob("next", 2);
  EXPECT_TRUE(Eventually([&] { return scheduler_->stats().cycles.load() > cycles; }));
}

std::string ConditionMessage(FakeApiClient& api, const std::string& pod, const std::string& type) {
  auto object = api.Object(k8s::resources::Pods(), "team-a", pod);
  for (const json& condition :
       object ? (*object)["status"].value("conditions", json::array()) : json::array()) {
    if (condition.value("type", "") == type) {
      return condition.value("message", "");
    }
  }
  return {};
}

// Event writes (creates and aggregating patches) that name `reason`.
size_t EventWrites(FakeApiClient& api, const std::string& reason) {
  size_t count = 0;
  for (const auto& request : api.Requests()) {
    count += request.resource == "events" &&
                     request.body.dump().find("\"" + reason + "\"") != std::string::npos
                 ? 1
                 : 0;
  }
  return count;
}

// A waiting gang's standing goes on one member, the one with the lowest
// index; a gang that can never fit gets one Warning Event on its job, not one
// per cycle; the condition goes False once the gang is placed.
TEST_F(GangSchedulerShellTest, AWaitingGangsStandingIsOnOneMemberAndNeverFitsIsSaidOnce) {
  const std::string waiting(api::kGangWaitingCondition);
  StartScheduler();
  CreateJob("huge", 3, "", "5");  // 5-cpu members, 4-cpu nodes
  ASSERT_TRUE(Eventually([&] { return ConditionReason(api_, "huge-worker-0", waiting) != ""; }));
  EXPECT_EQ(ConditionReason(api_, "huge-worker-0", waiting), "NeverFits");
  // Never fitting, it is not counted in the line.
  EXPECT_EQ(ConditionMessage(api_, "huge-worker-0", waiting), "queue default");
  EXPECT_EQ(ConditionReason(api_, "huge-worker-1", waiting), "");
  EXPECT_EQ(ConditionReason(api_, "huge-worker-0", "PodScheduled"), "Unschedulable");
  size_t carrier_patches = 0;
  for (const auto& request : api_.Requests()) {
    if (request.verb == "patch" && request.name == "huge-worker-0") {
      ++carrier_patches;
      EXPECT_EQ(request.body["status"]["conditions"].size(), 2u) << "one patch says both";
    }
  }
  EXPECT_EQ(carrier_patches, 1u);
  ASSERT_TRUE(Eventually([&] { return EventWrites(api_, "NeverFits") == 1; }));
  for (const auto& request : api_.Requests()) {
    if (request.resource == "events" && request.verb == "create" &&
        request.body.value("reason", "") == "NeverFits") {
      EXPECT_EQ(request.body["involvedObject"]["kind"], api::kKind);
      EXPECT_EQ(request.body["involvedObject"]["name"], "huge");
      EXPECT_EQ(request.body["type"], "Warning");
    }
  }

  // Cycles that change nothing for it write nothing more of it.
  CreateJob("train", 2, "", "4");  // at its minimum: nothing to reclaim from it
  ASSERT_TRUE(Eventually([&] { return Bound("train", 2) == 2; }));
  CreateJob("next", 2);
  ASSERT_TRUE(Eventually([&] { return ConditionReason(api_, "next-worker-0", waiting) != ""; }));
  EXPECT_EQ(ConditionReason(api_, "next-worker-0", waiting), "InsufficientCapacity");
  EXPECT_EQ(ConditionMessage(api_, "next-worker-0", waiting), "queue default, position 1")
      << "the older gang that can never start is not ahead of it";
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(EventWrites(api_, "NeverFits"), 1u);

  // Room again: it is placed and no longer waiting.
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(
        api_.Delete(k8s::resources::Pods(), "team-a", "train-worker-" + std::to_string(i)).ok());
  }
  ASSERT_TRUE(Eventually([&] { return Bound("next", 2) == 2; }));
  EXPECT_TRUE(
      Eventually([&] { return ConditionReason(api_, "next-worker-0", waiting) == "Placed"; }));
  EXPECT_EQ(ConditionReason(api_, "huge-worker-0", waiting), "NeverFits");
}

// The dashboard's state: what runs, what waits and why, the GPU map and the
// queues, as the loop last published it; nothing without EnableDashboard.
TEST_F(GangSchedulerShellTest, TheLoopPublishesTheDashboardsState) {
  StartScheduler(600, /*dashboard=*/true);
  CreateJob("train", 2, "", "4");
  ASSERT_TRUE(Eventually([&] { return Bound("train", 2) == 2; }));
  CreateJob("next", 2);
  std::shared_ptr<const DashboardState> state;
  ASSERT_TRUE(Eventually([&] {
    state = scheduler_->Dashboard();
    if (!state || state->running.size() != 1 || state->queues.empty()) {
      return false;
    }
    for (const QueueView& queue : state->queues) {
      if (!queue.waiting.empty()) {
        return true;
      }
    }
    return false;
  })) << (state ? ToJson(*state).dump() : "no state");
  EXPECT_TRUE(state->leading);
  EXPECT_EQ(state->running[0].name, "train");
  EXPECT_EQ(state->running[0].members, 2);
  ASSERT_EQ(state->queues.size(), 1u);
  EXPECT_EQ(state->queues[0].name, "default");
  EXPECT_EQ(state->queues[0].used.milli_cpu, 8000);
  ASSERT_EQ(state->queues[0].waiting.size(), 1u);
  EXPECT_EQ(state->queues[0].waiting[0].name, "next");
  EXPECT_EQ(state->queues[0].waiting[0].reason, "InsufficientCapacity");
  EXPECT_EQ(state->queues[0].waiting[0].position, 1);
  EXPECT_EQ(state->map.nodes.size(), 2u);
  const nlohmann::json shown = ToJson(*state);
  EXPECT_EQ(shown["queues"][0]["waiting"][0]["reason"], "InsufficientCapacity");
  EXPECT_EQ(shown["running"][0]["members"], 2);
  EXPECT_NE(DashboardPage().find("api/state"), std::string_view::npos);
}

TEST_F(GangSchedulerShellTest, WithoutTheDashboardNothingIsPublished) {
  StartScheduler();
  CreateJob("train", 2);
  ASSERT_TRUE(Eventually([&] { return Bound("train", 2) == 2; }));
  EXPECT_EQ(scheduler_->Dashboard(), nullptr);
}

// A placed gang whose claim must be provisioned: the node is selected on the
// claim first, and no member is bound until the claim is Bound.
TEST_F(GangSchedulerShellTest, AGangIsBoundOnlyOnceTheClaimsItsPlanDecidedAreBound) {
  CreateClaimToProvision("data");
  StartScheduler();
  CreateJob("train", 2, "data");
  ASSERT_TRUE(Eventually([&] { return !SelectedNode("data").empty(); }))
      << api_.Object(k8s::resources::Pods(), "team-a", "train-worker-0")->dump();
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(Bound("train", 2), 0) << "bound before the claim was";
  BindClaim("data");
  ASSERT_TRUE(Eventually([&] { return Bound("train", 2) == 2; }));
  // One ReadWriteOnce claim: both members on the node selected for it.
  for (int i = 0; i < 2; ++i) {
    auto pod = api_.Object(k8s::resources::Pods(), "team-a", "train-worker-" + std::to_string(i));
    EXPECT_EQ((*pod)["spec"]["nodeName"], SelectedNode("data"));
  }
}

// A claim not Bound within the timeout releases the gang with a reason; it is
// placed again and bound once the claim is.
TEST_F(GangSchedulerShellTest, AClaimNotBoundInTimeReleasesTheGangWithAReason) {
  CreateClaimToProvision("data");
  StartScheduler(/*volume_bind_timeout_seconds=*/1);
  CreateJob("train", 2, "data");
  ASSERT_TRUE(Eventually([&] {
    return ConditionReason(api_, "train-worker-0", "PodScheduled") == api::kVolumeBindingReason;
  }));
  EXPECT_EQ(Bound("train", 2), 0);
  EXPECT_GE(scheduler_->stats().groups_rolled_back.load(), 1u);
  BindClaim("data");
  ASSERT_TRUE(Eventually([&] { return Bound("train", 2) == 2; }));
}

// A volume chosen for a claim is pre-bound with the version read, and one
// reserved for another claim meanwhile is not taken.
TEST(ClaimWriterTest, PreBindsAnAvailableVolumeAndRefusesOneReservedForAnother) {
  FakeApiClient api;
  auto volume = [](const std::string& name) {
    return json{{"apiVersion", "v1"},
                {"kind", "PersistentVolume"},
                {"metadata", {{"name", name}}},
                {"spec", {{"capacity", {{"storage", "1Gi"}}}}},
                {"status", {{"phase", "Available"}}}};
  };
  api.Seed(k8s::resources::PersistentVolumes(), volume("free"));
  json taken = volume("taken");
  taken["spec"]["claimRef"] = {{"namespace", "team-b"}, {"name", "other"}};
  api.Seed(k8s::resources::PersistentVolumes(), taken);

  const ClaimDecision to_free{"team-a", "data", "free", "node-0", "uid-1"};
  ASSERT_TRUE(WriteClaimDecision(api, to_free).ok());
  const json pre_bound = *api.Object(k8s::resources::PersistentVolumes(), "", "free");
  EXPECT_EQ(pre_bound["spec"]["claimRef"]["name"], "data");
  EXPECT_EQ(pre_bound["spec"]["claimRef"]["uid"], "uid-1");
  EXPECT_EQ(pre_bound["metadata"]["annotations"][std::string(kAnnotationBoundByController)], "yes");
  // Written again (a retry): nothing to do.
  EXPECT_TRUE(WriteClaimDecision(api, to_free).ok());

  const Status refused = WriteClaimDecision(api, {"team-a", "data", "taken", "node-0", "uid-1"});
  EXPECT_TRUE(k8s::IsConflict(refused)) << refused.ToString();
  EXPECT_NE(refused.message().find("team-b/other"), std::string::npos) << refused.message();
  EXPECT_EQ(api.Object(k8s::resources::PersistentVolumes(), "", "taken")
                ->at("spec")
                .at("claimRef")
                .at("name"),
            "other");
}

// A volume changed between the read and the write is not overwritten.
TEST(ClaimWriterTest, AVolumeChangedSinceItWasReadIsNotPreBound) {
  FakeApiClient api;
  api.Seed(k8s::resources::PersistentVolumes(),
           {{"apiVersion", "v1"}, {"kind", "PersistentVolume"}, {"metadata", {{"name", "pv"}}}});
  bool raced = false;
  api.SetFault([&](const FakeApiClient::Request& request) -> std::optional<Status> {
    if (request.verb == "patch" && !raced) {
      raced = true;
      json changed = *api.Object(k8s::resources::PersistentVolumes(), "", "pv");
      changed["spec"]["claimRef"] = {{"namespace", "team-b"}, {"name", "other"}};
      api.Seed(k8s::resources::PersistentVolumes(), changed);
    }
    return std::nullopt;
  });
  const Status written = WriteClaimDecision(api, {"team-a", "data", "pv", "node-0", "uid-1"});
  EXPECT_TRUE(k8s::IsConflict(written)) << written.ToString();
  EXPECT_EQ(api.Object(k8s::resources::PersistentVolumes(), "", "pv")
                ->at("spec")
                .at("claimRef")
                .at("name"),
            "other");
}

TEST(ClaimWriterTest, SelectsTheNodeOnAClaimToProvisionAndNotOnAClaimMadeAgain) {
  FakeApiClient api;
  json claim = api.Seed(k8s::resources::PersistentVolumeClaims(),
                        {{"apiVersion", "v1"},
                         {"kind", "PersistentVolumeClaim"},
                         {"metadata", {{"name", "data"}, {"namespace", "team-a"}}}});
  const std::string uid = claim["metadata"]["uid"];
  ASSERT_TRUE(WriteClaimDecision(api, {"team-a", "data", "", "node-1", uid}).ok());
  EXPECT_EQ(api.Object(k8s::resources::PersistentVolumeClaims(), "team-a", "data")
                ->at("metadata")
                .at("annotations")
                .at(std::string(kAnnotationSelectedNode)),
            "node-1");
  EXPECT_FALSE(WriteClaimDecision(api, {"team-a", "data", "", "node-2", "another-uid"}).ok());
}

}  // namespace
}  // namespace hybridjob::scheduler
