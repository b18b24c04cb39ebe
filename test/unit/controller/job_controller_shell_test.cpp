// The controller's shell (informers, work queue, workers applying the
// planner's actions) against the fake API server, with the faults a real one
// gives: conflicts on status writes, 429 with Retry-After, quota refusals,
// server errors and watches that end and come back after compaction. What the
// plans contain is planner_test's business; here, that the shell applies them
// once, retries what can succeed and reports what cannot.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <k8s/eventually.h>
#include <k8s/fake_api_client.h>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <hybridjob/api/member_signature.h>
#include <hybridjob/api/names.h>
#include <hybridjob/controller/job_controller.h>
#include <hybridjob/k8s/base64.h>
#include <hybridjob/k8s/object_meta.h>
#include <hybridjob/k8s/resource.h>

#include "job_fixtures.h"

namespace hybridjob::controller {
namespace {

using k8s::testing::Eventually;
using k8s::testing::FakeApiClient;
using nlohmann::json;
using Request = FakeApiClient::Request;
using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

constexpr std::string_view kNamespace = "team-a";

bool IsPodCreate(const Request& request) {
  return request.verb == "create" && request.resource == "pods";
}

// A TensorFlow job (ps 1, worker 2..4): five member pods.
json TfJob(const std::string& name) {
  json job = hybridjob::testing::TfJobJson();
  job["metadata"] = {{"name", name}, {"namespace", kNamespace}};
  return job;
}

std::set<std::string> MembersOf(const std::string& job) {
  return {api::MemberPodName(job, "ps", 0), api::MemberPodName(job, "worker", 0),
          api::MemberPodName(job, "worker", 1), api::MemberPodName(job, "worker", 2),
          api::MemberPodName(job, "worker", 3)};
}

class JobControllerShellTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (controller_) {
      controller_->Stop();
    }
  }

  void StartController(int workers = 2, std::chrono::milliseconds status_batch_period =
                                            ControllerOptions{}.status_batch_period) {
    ControllerOptions options;
    options.member_keys = member_keys_;
    options.workers = workers;
    options.expectations_timeout = 5s;
    options.status_batch_period = status_batch_period;
    controller_ = std::make_unique<JobController>(api_, options);
    controller_->Start();
    ASSERT_TRUE(controller_->WaitForCacheSync(10s));
    controller_->StartWorkers();
  }

  json SeedJob(const std::string& name) {
    return api_.Seed(k8s::resources::HybridJobs(), TfJob(name));
  }

  std::set<std::string> PodsOf(const std::string& job) {
    std::set<std::string> names;
    auto pods = api_.List(k8s::resources::Pods(), kNamespace, {});
    if (!pods.ok()) {
      return names;
    }
    for (const json& pod : pods->items) {
      if (k8s::ControllerUidOf(pod) == JobUid(job)) {
        names.insert(k8s::NameOf(pod));
      }
    }
    return names;
  }

  std::string JobUid(const std::string& job) {
    auto object = api_.Object(k8s::resources::HybridJobs(), kNamespace, job);
    return object ? k8s::UidOf(*object) : "";
  }

  std::string Phase(const std::string& job) {
    auto object = api_.Object(k8s::resources::HybridJobs(), kNamespace, job);
    if (!object || !object->contains("status")) {
      return {};
    }
    return (*object)["status"].value("phase", "");
  }

  // Event reasons recorded about the job.
  std::multiset<std::string> EventReasons(const std::string& job) {
    std::multiset<std::string> reasons;
    auto events = api_.List(k8s::resources::Events(), kNamespace, {});
    if (!events.ok()) {
      return reasons;
    }
    for (const json& event : events->items) {
      const json& involved = event.value("involvedObject", json::object());
      if (involved.value("kind", "") == "HybridJob" && involved.value("name", "") == job) {
        reasons.insert(event.value("reason", ""));
      }
    }
    return reasons;
  }

  size_t Count(const std::function<bool(const Request&)>& which) {
    const auto requests = api_.Requests();
    return static_cast<size_t>(std::count_if(requests.begin(), requests.end(), which));
  }

  FakeApiClient api_;
  api::MemberKeys member_keys_;  // set before StartController
  std::unique_ptr<JobController> controller_;
};

TEST_F(JobControllerShellTest, ANewJobGetsItsMembersAndServiceOnceAndIsQueued) {
  SeedJob("mnist");
  ASSERT_NO_FATAL_FAILURE(StartController());
  ASSERT_TRUE(Eventually([&] { return Phase("mnist") == "Queued"; })) << Phase("mnist");
  ASSERT_TRUE(Eventually([&] { return PodsOf("mnist") == MembersOf("mnist"); }));
  EXPECT_TRUE(
      api_.Object(k8s::resources::Services(), kNamespace, api::HeadlessServiceName("mnist")));
  // No cluster spec before the scheduler has placed a membership.
  EXPECT_FALSE(
      api_.Object(k8s::resources::ConfigMaps(), kNamespace, api::ClusterConfigMapName("mnist")));
  EXPECT_TRUE(Eventually([&] { return EventReasons("mnist").count("Created") == 1; }));
  // Level-based, but each write once: nothing the caches show is re-created.
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(Count(IsPodCreate), 5u);
  EXPECT_EQ(controller_->stats().reconcile_errors.load(), 0u);
}

// With a member key, every member is created with its own signature, which
// verifies for that pod alone; without one, none is signed.
TEST_F(JobControllerShellTest, WithAMemberKeyEachMemberIsSignedForItself) {
  member_keys_ = api::MemberKeys{{std::string(48, 'k')}};
  SeedJob("mnist");
  ASSERT_NO_FATAL_FAILURE(StartController());
  ASSERT_TRUE(Eventually([&] { return PodsOf("mnist") == MembersOf("mnist"); }));
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::set<std::string> nonces;
  for (const std::string& name : PodsOf("mnist")) {
    auto pod = api_.Object(k8s::resources::Pods(), kNamespace, name);
    ASSERT_TRUE(pod.has_value());
    const std::string signature = (*pod)["metadata"]["annotations"].value(
        std::string(api::kMemberSignatureAnnotation), "");
    auto verified =
        api::VerifyMember(member_keys_, {std::string(kNamespace), name, JobUid("mnist")}, signature, now);
    ASSERT_TRUE(verified.ok()) << name << ": " << verified.status().ToString();
    nonces.insert(verified->nonce);
    EXPECT_FALSE(api::VerifyMember(member_keys_, {std::string(kNamespace), name + "x", JobUid("mnist")},
                                   signature, now)
                     .ok());
  }
  EXPECT_EQ(nonces.size(), PodsOf("mnist").size()) << "a nonce per pod";
}

TEST_F(JobControllerShellTest, WithoutAMemberKeyNothingIsSigned) {
  SeedJob("mnist");
  ASSERT_NO_FATAL_FAILURE(StartController());
  ASSERT_TRUE(Eventually([&] { return PodsOf("mnist") == MembersOf("mnist"); }));
  for (const std::string& name : PodsOf("mnist")) {
    auto pod = api_.Object(k8s::resources::Pods(), kNamespace, name);
    ASSERT_TRUE(pod.has_value());
    EXPECT_FALSE((*pod)["metadata"]
                     .value("annotations", json::object())
                     .contains(std::string(api::kMemberSignatureAnnotation)));
  }
}

// Under a burst, a job whose members were just bound gets its cluster spec
// (its members wait for it on their nodes) before jobs still waiting for a
// first pass get their members.
TEST_F(JobControllerShellTest, ABoundJobGoesAheadOfJobsNotYetLookedAt) {
  SeedJob("first");
  ASSERT_NO_FATAL_FAILURE(StartController(/*workers=*/1));
  ASSERT_TRUE(Eventually([&] { return PodsOf("first") == MembersOf("first"); }));
  std::this_thread::sleep_for(200ms);
  ASSERT_TRUE(Eventually([&] { return controller_->QueueDepth() == 0; }));

  // The later jobs' pod creates wait until released: the one worker is held
  // in the first of them while the others queue up behind it.
  struct Gate {
    std::mutex mu;
    std::condition_variable cv;
    bool open = false;
    std::atomic<bool> holding{false};
  };
  auto gate = std::make_shared<Gate>();
  api_.SetFault([gate](const Request& request) -> std::optional<Status> {
    if (IsPodCreate(request) &&
        request.body["metadata"].value("name", "").rfind("later-", 0) == 0) {
      gate->holding = true;
      std::unique_lock lock(gate->mu);
      gate->cv.wait_for(lock, 10s, [&] { return gate->open; });
    }
    return std::nullopt;
  });
  auto release = [gate] {
    {
      std::lock_guard lock(gate->mu);
      gate->open = true;
    }
    gate->cv.notify_all();
  };
  for (const char* name : {"later-0", "later-1", "later-2"}) {
    SeedJob(name);
  }
  const bool held =
      Eventually([&] { return gate->holding.load() && controller_->QueueDepth() == 2; });
  if (!held) {
    release();
  }
  ASSERT_TRUE(held) << controller_->QueueDepth();

  // Meanwhile the scheduler binds the first job's members. The worker is
  // released once the controller's caches hold every binding: a pass over
  // the first job with only some of them would rightly write nothing.
  for (const std::string& name : MembersOf("first")) {
    json pod = *api_.Object(k8s::resources::Pods(), kNamespace, name);
    pod["spec"]["nodeName"] = "node-1";
    api_.Seed(k8s::resources::Pods(), pod);
  }
  const bool queued =
      Eventually([&] { return api_.WatchesIdle() && controller_->QueueDepth() == 3; });
  release();
  ASSERT_TRUE(queued) << controller_->QueueDepth();

  ASSERT_TRUE(Eventually([&] {
    return api_.Object(k8s::resources::ConfigMaps(), kNamespace,
                       api::ClusterConfigMapName("first")) &&
           PodsOf("later-2") == MembersOf("later-2");
  }));
  const auto requests = api_.Requests();
  auto first_of = [&](const std::function<bool(const Request&)>& which) {
    return std::find_if(requests.begin(), requests.end(), which) - requests.begin();
  };
  const auto cluster_spec = first_of([](const Request& r) {
    return r.verb == "create" && r.resource == "configmaps" &&
           r.body["metadata"].value("name", "") == api::ClusterConfigMapName("first");
  });
  for (const std::string job : {"later-1", "later-2"}) {
    const auto members = first_of([&](const Request& r) {
      return IsPodCreate(r) && r.body["metadata"].value("name", "").rfind(job + "-", 0) == 0;
    });
    EXPECT_LT(cluster_spec, members) << job;
  }
  EXPECT_EQ(controller_->stats().reconcile_errors.load(), 0u);
}

TEST_F(JobControllerShellTest, AnMpiJobGetsOneSshKeySecretThatIsNeverRead) {
  json job = TfJob("allreduce");
  job["spec"]["framework"] = "mpi";
  job["spec"]["replicaSpecs"][0]["name"] = "launcher";
  job["spec"]["successPolicy"] = {{"roles", {"launcher"}}};
  // The first create is refused by a 500; the next pass makes it again.
  std::atomic<int> secret_creates{0};
  api_.SetFault([&](const Request& request) -> std::optional<Status> {
    if (request.verb == "create" && request.resource == "secrets" && secret_creates++ == 0) {
      return Unavailable("etcd leader changed");
    }
    return std::nullopt;
  });
  api_.Seed(k8s::resources::HybridJobs(), job);
  ASSERT_NO_FATAL_FAILURE(StartController());
  ASSERT_TRUE(Eventually([&] { return PodsOf("allreduce").size() == 5; }));
  auto secret = api_.Object(k8s::resources::Secrets(), kNamespace, "allreduce-ssh");
  ASSERT_TRUE(secret.has_value());
  EXPECT_EQ((*secret)["type"], "kubernetes.io/ssh-auth");
  auto private_key = k8s::Base64Decode((*secret)["data"]["ssh-privatekey"].get<std::string>());
  auto public_key = k8s::Base64Decode((*secret)["data"]["ssh-publickey"].get<std::string>());
  ASSERT_TRUE(private_key && public_key);
  EXPECT_EQ(private_key->rfind("-----BEGIN EC PRIVATE KEY-----", 0), 0u);
  EXPECT_EQ(public_key->rfind("ecdsa-sha2-nistp256 ", 0), 0u);
  EXPECT_EQ(k8s::ControllerUidOf(*secret), JobUid("allreduce"));
  // Once made, no pass creates it again, and nothing ever reads a Secret.
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(secret_creates.load(), 2);
  EXPECT_EQ(Count([](const Request& request) {
              return request.resource == "secrets" && request.verb != "create";
            }),
            0u);
}

// Another writer changed the job between the controller's read and its status
// write: the 409 is retried from the caches, and no member is created twice.
bool IsStatusWriteOf(const Request& request, const std::string& job) {
  return request.verb == "update" && request.subresource == "status" &&
         request.body["metadata"].value("name", "") == job;
}

// A job bound within the batch period is written once, Running: its first
// record (Queued) waited and went out with the change that mattered.
TEST_F(JobControllerShellTest, AJobBoundWithinTheBatchPeriodGetsOneStatusWrite) {
  SeedJob("mnist");
  ASSERT_NO_FATAL_FAILURE(StartController(2, /*status_batch_period=*/10s));
  ASSERT_TRUE(Eventually([&] { return PodsOf("mnist") == MembersOf("mnist"); }));
  EXPECT_EQ(Phase("mnist"), "") << "the first record waits";
  EXPECT_EQ(Count([](const Request& r) {
              return r.verb == "create" && r.resource == "controllerrevisions";
            }),
            1u)
      << "the run's spec is kept at once";
  for (const std::string& name : MembersOf("mnist")) {
    json pod = *api_.Object(k8s::resources::Pods(), kNamespace, name);
    pod["spec"]["nodeName"] = "node-1";
    api_.Seed(k8s::resources::Pods(), pod);
  }
  ASSERT_TRUE(Eventually([&] { return Phase("mnist") == "Running"; })) << Phase("mnist");
  EXPECT_EQ(Count([](const Request& r) { return IsStatusWriteOf(r, "mnist"); }), 1u);
  auto job = api_.Object(k8s::resources::HybridJobs(), kNamespace, "mnist");
  ASSERT_TRUE(job.has_value());
  EXPECT_TRUE((*job)["status"].contains("startTime"));
  EXPECT_TRUE((*job)["status"]["runSpec"].contains("revision"));
  EXPECT_GE(controller_->stats().status_writes_batched.load(), 1u);
}

// One that keeps waiting has its first record written when the period ends.
TEST_F(JobControllerShellTest, AWaitingJobIsWrittenQueuedWhenTheBatchPeriodEnds) {
  SeedJob("mnist");
  ASSERT_NO_FATAL_FAILURE(StartController(2, /*status_batch_period=*/300ms));
  ASSERT_TRUE(Eventually([&] { return Phase("mnist") == "Queued"; })) << Phase("mnist");
  EXPECT_EQ(Count([](const Request& r) { return IsStatusWriteOf(r, "mnist"); }), 1u);
}

TEST_F(JobControllerShellTest, AConflictOnTheStatusWriteIsRetried) {
  std::atomic<int> status_writes{0};
  api_.SetFault([&](const Request& request) -> std::optional<Status> {
    if (request.verb == "update" && request.subresource == "status" && status_writes++ == 0) {
      return Status(StatusCode::kConflict,
                    "Operation cannot be fulfilled on hybridjobs.batch.hybridjob.io \"mnist\": "
                    "the object has been modified; please apply your changes to the latest "
                    "version and try again")
          .WithHttp(409, "Conflict");
    }
    return std::nullopt;
  });
  SeedJob("mnist");
  ASSERT_NO_FATAL_FAILURE(StartController());
  ASSERT_TRUE(Eventually([&] { return Phase("mnist") == "Queued"; })) << Phase("mnist");
  EXPECT_GE(status_writes.load(), 2);
  EXPECT_GE(controller_->stats().conflicts.load(), 1u);
  ASSERT_TRUE(Eventually([&] { return PodsOf("mnist") == MembersOf("mnist"); }));
  EXPECT_EQ(Count(IsPodCreate), 5u);
}

// An API server under load answers 429 with Retry-After: the job is not tried
// again sooner, and then completes.
TEST_F(JobControllerShellTest, TooManyRequestsIsRetriedNoSoonerThanTheServerAsked) {
  std::mutex mu;
  std::vector<SteadyClock::time_point> pod_creates;
  api_.SetFault([&](const Request& request) -> std::optional<Status> {
    if (!IsPodCreate(request)) {
      return std::nullopt;
    }
    std::lock_guard lock(mu);
    pod_creates.push_back(SteadyClock::now());
    if (pod_creates.size() == 1) {
      return Status(StatusCode::kTooManyRequests, "the server is busy")
          .WithHttp(429, "TooManyRequests")
          .WithRetryAfter(1s);
    }
    return std::nullopt;
  });
  SeedJob("mnist");
  ASSERT_NO_FATAL_FAILURE(StartController());
  ASSERT_TRUE(Eventually([&] { return PodsOf("mnist") == MembersOf("mnist"); }));
  std::lock_guard lock(mu);
  // Pod creates start one at a time (slow start), so the refused one was alone.
  ASSERT_GE(pod_creates.size(), 2u);
  EXPECT_GE(pod_creates[1] - pod_creates[0], 1s);
  EXPECT_EQ(pod_creates.size(), 6u);
}

// A refusal retrying cannot fix (a quota, admission) is said on the job as an
// Event; the job gets no pods until the refusal ends, then all of them.
TEST_F(JobControllerShellTest, AQuotaRefusalIsReportedOnTheJobAndRetried) {
  std::atomic<bool> refuse{true};
  api_.SetFault([&](const Request& request) -> std::optional<Status> {
    if (IsPodCreate(request) && refuse) {
      return Status(StatusCode::kForbidden,
                    "pods \"mnist-ps-0\" is forbidden: exceeded quota: gpus, requested: "
                    "requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=8, limited: "
                    "requests.nvidia.com/gpu=8")
          .WithHttp(403, "Forbidden");
    }
    return std::nullopt;
  });
  SeedJob("mnist");
  ASSERT_NO_FATAL_FAILURE(StartController());
  ASSERT_TRUE(Eventually([&] { return EventReasons("mnist").count("FailedCreate") > 0; }));
  EXPECT_TRUE(PodsOf("mnist").empty());
  // Slow start: each attempt stops at its first refused create (one attempt
  // may be between its create and its error count).
  const size_t creates = Count(IsPodCreate);
  EXPECT_LE(creates, controller_->stats().reconcile_errors.load() + 1);
  refuse = false;
  EXPECT_TRUE(Eventually([&] { return PodsOf("mnist") == MembersOf("mnist"); }, 15s));
}

// Pods of one role refused (a PriorityClass that does not exist): the
// Created Event counts the members that were created, not those planned,
// and each refusal is a Warning with the API server's words.
TEST_F(JobControllerShellTest, TheCreatedEventCountsOnlyTheMembersTheApiServerCreated) {
  std::atomic<bool> refuse{true};
  api_.SetFault([&](const Request& request) -> std::optional<Status> {
    const std::string name = request.body.is_object() ? k8s::NameOf(request.body) : "";
    if (IsPodCreate(request) && refuse && name.find("-worker-") != std::string::npos) {
      return Status(StatusCode::kForbidden, "pods \"" + name +
                                                "\" is forbidden: no PriorityClass with name "
                                                "no-such-class was found")
          .WithHttp(403, "Forbidden");
    }
    return std::nullopt;
  });
  SeedJob("mnist");
  ASSERT_NO_FATAL_FAILURE(StartController());
  ASSERT_TRUE(Eventually([&] { return EventReasons("mnist").count("FailedCreate") > 0; }));
  ASSERT_TRUE(Eventually([&] { return EventReasons("mnist").count("Created") > 0; }));
  auto messages = [&](const std::string& reason) {
    std::vector<std::string> out;
    auto events = api_.List(k8s::resources::Events(), kNamespace, {});
    for (const json& event : events.ok() ? events->items : std::vector<json>{}) {
      if (event.value("reason", "") == reason) {
        out.push_back(event.value("message", ""));
      }
    }
    return out;
  };
  EXPECT_EQ(PodsOf("mnist"), std::set<std::string>{"mnist-ps-0"});
  const std::vector<std::string> created = messages("Created");
  ASSERT_EQ(created.size(), 1u);
  EXPECT_EQ(created[0],
            "created 1 of 5 member pods: ps 1 worker 0; the others are not created yet (see "
            "FailedCreate)");
  const std::vector<std::string> failed = messages("FailedCreate");
  ASSERT_FALSE(failed.empty());
  EXPECT_NE(failed[0].find("no PriorityClass with name no-such-class was found"), std::string::npos)
      << failed[0];
  refuse = false;
  EXPECT_TRUE(Eventually([&] { return PodsOf("mnist") == MembersOf("mnist"); }, 15s));
}

// Server errors (etcd leader change) are retried with back-off until they pass.
TEST_F(JobControllerShellTest, ServerErrorsAreRetriedUntilTheyPass) {
  std::atomic<int> failures_left{4};
  std::atomic<int> injected{0};
  api_.SetFault([&](const Request& request) -> std::optional<Status> {
    if ((IsPodCreate(request) || request.resource == "services") && request.verb == "create" &&
        failures_left-- > 0) {
      ++injected;
      return Status(StatusCode::kUnavailable, "etcdserver: leader changed")
          .WithHttp(500, "InternalError");
    }
    return std::nullopt;
  });
  SeedJob("mnist");
  ASSERT_NO_FATAL_FAILURE(StartController());
  ASSERT_TRUE(Eventually([&] { return PodsOf("mnist") == MembersOf("mnist"); }));
  EXPECT_EQ(injected.load(), 4);
  // Each failed reconcile stops at its first failed write; concurrent pod
  // creates may fail together.
  EXPECT_GE(controller_->stats().reconcile_errors.load(), 1u);
  // Server errors are not the user's to fix: no FailedCreate on the job.
  EXPECT_EQ(EventReasons("mnist").count("FailedCreate"), 0u);
}

// A job created while the controller's watch was down, after the server
// compacted the history the watch would resume from (410 Gone): the
// relist finds it.
TEST_F(JobControllerShellTest, AJobCreatedWhileTheWatchWasGoneIsReconciled) {
  SeedJob("first");
  ASSERT_NO_FATAL_FAILURE(StartController());
  ASSERT_TRUE(Eventually([&] { return PodsOf("first") == MembersOf("first"); }));
  api_.SetFault([&](const Request& request) -> std::optional<Status> {
    if (request.verb == "watch" && request.resource == "hybridjobs") {
      return Status(StatusCode::kUnavailable, "connection refused");
    }
    return std::nullopt;
  });
  api_.CloseWatches();
  SeedJob("second");
  api_.Compact();
  api_.SetFault(nullptr);
  ASSERT_TRUE(Eventually([&] { return PodsOf("second") == MembersOf("second"); }, 15s));
  EXPECT_EQ(PodsOf("first"), MembersOf("first"));
  EXPECT_EQ(Count(IsPodCreate), 10u);
}

// A job deleted while its reconcile waits in the queue is forgotten without
// an error, and its key stops coming back.
TEST_F(JobControllerShellTest, ADeletedJobIsForgotten) {
  SeedJob("mnist");
  ASSERT_NO_FATAL_FAILURE(StartController());
  ASSERT_TRUE(Eventually([&] { return PodsOf("mnist") == MembersOf("mnist"); }));
  ASSERT_TRUE(api_.Delete(k8s::resources::HybridJobs(), kNamespace, "mnist").ok());
  ASSERT_TRUE(Eventually([&] { return controller_->QueueDepth() == 0; }));
  const uint64_t errors = controller_->stats().reconcile_errors.load();
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(controller_->stats().reconcile_errors.load(), errors);
  EXPECT_EQ(Count(IsPodCreate), 5u);
}

}  // namespace
}  // namespace hybridjob::controller
