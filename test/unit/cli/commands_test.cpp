#include <sstream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/cli/commands.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/resource.h>

#include "cluster_objects.h"
#include "k8s/fake_api_client.h"

namespace hybridjob::cli {
namespace {

using k8s::testing::FakeApiClient;
using ::testing::HasSubstr;
using testing::Job;
using testing::Member;
using testing::Node;
using ::testing::Not;

class CommandsTest : public ::testing::Test {
 protected:
  CommandsTest() {
    options_.namespace_name = "team";
    api_.Seed(k8s::resources::Nodes(), Node("n0", 8));
    api_.Seed(k8s::resources::HybridJobs(), Job("team", "bert", "default", 2, 2));
    api_.Seed(k8s::resources::Pods(), Member("team", "bert", "default", 0, 4, "n0", 2, 2));
    api_.Seed(k8s::resources::Pods(), Member("team", "bert", "default", 1, 4, "n0", 2, 2));
  }

  void SeedSchedulerConfig(const std::string& yaml) {
    api_.Seed(k8s::resources::ConfigMaps(),
              {{"apiVersion", "v1"},
               {"kind", "ConfigMap"},
               {"metadata", {{"name", "gang-scheduler-config"}, {"namespace", "hybridjob-system"}}},
               {"data", {{"config.yaml", yaml}}}});
  }

  FakeApiClient api_;
  CommandOptions options_;
};

TEST_F(CommandsTest, StatusReadsTheJobAndItsPods) {
  Result<std::string> text = RunStatus(api_, "bert", options_);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_THAT(*text, HasSubstr("Name:        bert\n"));
  EXPECT_THAT(*text, HasSubstr("bert-worker-1   worker   1       Running   n0"));
  options_.format = OutputFormat::kJson;
  text = RunStatus(api_, "bert", options_);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(nlohmann::json::parse(*text)["members"].size(), 2u);

  Result<std::string> missing = RunStatus(api_, "nope", options_);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "no HybridJob \"nope\" in namespace team");
}

TEST_F(CommandsTest, QueuesUseTheSchedulersConfigurationOrSayTheyCannot) {
  std::string note;
  Result<std::string> text = RunQueues(api_, options_, &note);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_THAT(note, HasSubstr("ConfigMap hybridjob-system/gang-scheduler-config) could not be "
                              "read"));
  EXPECT_THAT(*text, HasSubstr("default"));

  SeedSchedulerConfig("queues:\n  - name: research\n    weight: 3\n");
  note.clear();
  text = RunQueues(api_, options_, &note);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(note, "");
  EXPECT_THAT(*text, HasSubstr("research   -        3"));

  SeedSchedulerConfig("queues: [{name: a, weight: -1}]\n");
  Result<std::string> broken = RunQueues(api_, options_, &note);
  EXPECT_FALSE(broken.ok());
  EXPECT_THAT(broken.status().message(),
              HasSubstr("ConfigMap hybridjob-system/gang-scheduler-config"));

  options_.scheduler_config = "no-slash";
  EXPECT_THAT(RunQueues(api_, options_, &note).status().message(),
              HasSubstr("want NAMESPACE/NAME"));
}

TEST_F(CommandsTest, ACallerWhoMayNotListNodesIsToldWhatWasRefused) {
  api_.SetFault([](const FakeApiClient::Request& request) -> std::optional<Status> {
    if (request.verb == "list" && request.resource == "nodes") {
      return Status(StatusCode::kForbidden, "nodes is forbidden: User \"alice\" cannot list")
          .WithHttp(403, "Forbidden");
    }
    return std::nullopt;
  });
  std::string note;
  Result<std::string> text = RunNodes(api_, options_, &note);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(),
            "cannot list nodes in all namespaces: nodes is forbidden: User \"alice\" cannot list");
}

TEST_F(CommandsTest, LogsOfEveryMemberOrOneRoleAndIndexPrefixedByPod) {
  api_.SetRaw("/api/v1/namespaces/team/pods/bert-worker-0/log?container=main", "a\nb\n");
  api_.SetRaw("/api/v1/namespaces/team/pods/bert-worker-1/log?container=main", "c\n");
  std::ostringstream out;
  std::ostringstream err;
  ASSERT_TRUE(RunLogs(api_, "bert", options_, out, err).ok());
  EXPECT_EQ(out.str(), "[pod/bert-worker-0] a\n[pod/bert-worker-0] b\n[pod/bert-worker-1] c\n");
  EXPECT_EQ(err.str(), "");

  options_.index = 1;
  std::ostringstream one;
  ASSERT_TRUE(RunLogs(api_, "bert", options_, one, err).ok());
  EXPECT_EQ(one.str(), "c\n");

  options_.tail = 5;
  std::ostringstream tail;
  EXPECT_FALSE(RunLogs(api_, "bert", options_, tail, err).ok())
      << "a path with tailLines was asked";
  bool asked = false;
  for (const auto& request : api_.Requests()) {
    asked |= request.subresource ==
             "/api/v1/namespaces/team/pods/bert-worker-1/log?container=main&tailLines=5";
  }
  EXPECT_TRUE(asked);

  options_.tail = -1;
  options_.role = "ps";
  std::ostringstream none;
  EXPECT_EQ(RunLogs(api_, "bert", options_, none, err).message(),
            "job bert has no member of role ps with index 1");
}

// As kubectl: the command succeeds when it could show something; a member
// without a log is noted with the API server's reason, on stderr.
TEST_F(CommandsTest, LogsSucceedWhenAnyMemberHasALogAndSayWhyTheOthersHaveNone) {
  api_.SetRaw("/api/v1/namespaces/team/pods/bert-worker-1/log?container=main", "c\n");
  std::ostringstream out;
  std::ostringstream err;
  Status status = RunLogs(api_, "bert", options_, out, err);
  EXPECT_TRUE(status.ok()) << status.ToString();
  EXPECT_EQ(out.str(), "[pod/bert-worker-1] c\n");
  EXPECT_THAT(err.str(), ::testing::StartsWith("[pod/bert-worker-0] (no log: "));
}

// Members are distinct pods (the fake API server serves no log of any):
// nothing shown is a failure, and each member still says why.
TEST_F(CommandsTest, LogsFailWhenNoMemberHasALog) {
  std::ostringstream out;
  std::ostringstream err;
  Status status = RunLogs(api_, "bert", options_, out, err);
  EXPECT_FALSE(status.ok());
  EXPECT_EQ(status.message(),
            "none of the 2 members of job bert has a log to show (each said why above)");
  EXPECT_EQ(out.str(), "");
  EXPECT_THAT(err.str(), HasSubstr("[pod/bert-worker-0] (no log: "));
  EXPECT_THAT(err.str(), HasSubstr("[pod/bert-worker-1] (no log: "));
}

// A member on no node has run nothing (the API server would answer an
// empty log): it is noted without asking.
TEST_F(CommandsTest, AMemberOnNoNodeHasNoLogYet) {
  nlohmann::json pending = Member("team", "bert", "default", 2, 4, "", 2, 3);
  pending["status"]["conditions"] = {
      {{"type", "PodScheduled"}, {"status", "False"}, {"reason", "GangSurplus"}}};
  api_.Seed(k8s::resources::Pods(), pending);
  api_.SetRaw("/api/v1/namespaces/team/pods/bert-worker-0/log?container=main", "a\n");
  api_.SetRaw("/api/v1/namespaces/team/pods/bert-worker-2/log?container=main", "");
  std::ostringstream out;
  std::ostringstream err;
  ASSERT_TRUE(RunLogs(api_, "bert", options_, out, err).ok());
  EXPECT_THAT(err.str(),
              HasSubstr("[pod/bert-worker-2] (no log: it is not on a node yet (GangSurplus))\n"));
  options_.index = 2;
  EXPECT_EQ(RunLogs(api_, "bert", options_, out, err).message(),
            "pod bert-worker-2 has no log to show: it is not on a node yet (GangSurplus)");
}

// A job at run 1 whose run 0 ended: its worker is kept for its log.
class RerunLogsTest : public CommandsTest {
 protected:
  RerunLogsTest() {
    nlohmann::json job = Job("team", "gpt", "default", 1, 1, "Running");
    job["status"]["run"] = 1;
    job["status"]["previousRuns"] = {{{"run", 0},
                                      {"phase", "Succeeded"},
                                      {"reason", "Succeeded"},
                                      {"completionTime", "2026-12-01T01:00:00Z"}}};
    api_.Seed(k8s::resources::HybridJobs(), job);
    nlohmann::json ended = Member("team", "gpt", "default", 0, 1, "n0");
    ended["metadata"]["labels"][std::string(api::kRunLabel)] = "0";
    ended["status"]["phase"] = "Succeeded";
    api_.Seed(k8s::resources::Pods(), ended);
    nlohmann::json current = Member("team", "gpt", "default", 0, 1, "n0");
    current["metadata"]["name"] = "gpt-worker-0-run1";
    current["metadata"]["uid"] = "pod-gpt-0-run1";
    current["metadata"]["labels"][std::string(api::kRunLabel)] = "1";
    api_.Seed(k8s::resources::Pods(), current);
    api_.SetRaw("/api/v1/namespaces/team/pods/gpt-worker-0/log?container=main", "run zero\n");
    api_.SetRaw("/api/v1/namespaces/team/pods/gpt-worker-0-run1/log?container=main", "run one\n");
  }
};

TEST_F(RerunLogsTest, LogsShowTheCurrentRunUnlessAnEarlierOneIsAsked) {
  std::ostringstream out;
  std::ostringstream err;
  ASSERT_TRUE(RunLogs(api_, "gpt", options_, out, err).ok());
  EXPECT_EQ(out.str(), "run one\n");

  options_.run = 0;
  std::ostringstream earlier;
  ASSERT_TRUE(RunLogs(api_, "gpt", options_, earlier, err).ok());
  EXPECT_EQ(earlier.str(), "run zero\n");

  options_.run = 1;
  std::ostringstream current;
  ASSERT_TRUE(RunLogs(api_, "gpt", options_, current, err).ok());
  EXPECT_EQ(current.str(), "run one\n");

  options_.run = 5;
  EXPECT_EQ(RunLogs(api_, "gpt", options_, out, err).message(),
            "job gpt has no run 5: it is at run 1, and its earlier runs (the newest 10) are 0");
  options_.run = 3;
  EXPECT_THAT(RunLogs(api_, "bert", options_, out, err).message(),
              HasSubstr("job bert has no run 3: it is at run 0 and was never re-run"));
}

TEST_F(RerunLogsTest, AnEarlierRunWhosePodsAreGoneSaysWhy) {
  ASSERT_TRUE(api_.Delete(k8s::resources::Pods(), "team", "gpt-worker-0").ok());
  options_.run = 0;
  std::ostringstream out;
  std::ostringstream err;
  Status status = RunLogs(api_, "gpt", options_, out, err);
  EXPECT_EQ(status.code(), StatusCode::kNotFound);
  EXPECT_THAT(status.message(), HasSubstr("run 0 of job gpt has no member left: a re-run keeps "
                                          "the ended members of the newest spec.runHistoryLimit"));
}

TEST_F(RerunLogsTest, StatusListsTheEarlierRunsAndWhatTheyKept) {
  Result<std::string> text = RunStatus(api_, "gpt", options_);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_THAT(*text, HasSubstr("gpt-worker-0-run1"));
  EXPECT_THAT(*text, Not(HasSubstr("gpt-worker-0 "))) << "members are the current run's";
  EXPECT_THAT(*text,
              HasSubstr("Earlier runs:\n  RUN   ENDED       REASON      COMPLETED              "
                        "KEPT MEMBERS\n  0     Succeeded   Succeeded   2026-12-01T01:00:00Z   "
                        "1\n"));
  options_.format = OutputFormat::kJson;
  text = RunStatus(api_, "gpt", options_);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(nlohmann::json::parse(*text)["earlierRuns"][0]["keptMembers"], 1);
}

TEST(LogNotStartedYetTest, ThePodWithoutANodeAndTheWaitingContainerAreNotStartedYet) {
  EXPECT_TRUE(LogNotStartedYet(Status(StatusCode::kBadRequest,
                                      "container \"main\" in pod \"bert-worker-0\" is waiting "
                                      "to start: ContainerCreating")
                                   .WithHttp(400, "BadRequest")));
  EXPECT_TRUE(LogNotStartedYet(Status(StatusCode::kBadRequest,
                                      "container \"main\" in pod \"bert-worker-0\" is waiting "
                                      "to start: PodInitializing")));
  EXPECT_TRUE(LogNotStartedYet(
      Status(StatusCode::kBadRequest, "pod bert-worker-0 does not have a host assigned")));
  // Gone, or refused for another reason: asking again changes nothing.
  EXPECT_FALSE(LogNotStartedYet(Status(StatusCode::kNotFound, "pods \"bert-worker-0\" not found")));
  EXPECT_FALSE(LogNotStartedYet(
      Status(StatusCode::kBadRequest, "container nope is not valid for pod bert-worker-0")));
  EXPECT_FALSE(LogNotStartedYet(
      Status(StatusCode::kForbidden, "is waiting to start: but forbidden is forbidden")));
}

// -f waits for a member whose container has not started yet, as kubectl
// waits --pod-running-timeout for a pod to run, and then follows it; one
// that does not start in time says why.
TEST_F(CommandsTest, FollowWaitsForAContainerThatHasNotStartedYet) {
  const std::string path =
      "/api/v1/namespaces/team/pods/bert-worker-1/log?container=main&follow=true";
  api_.SetRaw(path, "started at last\n");
  int refusals_left = 2;
  api_.SetFault([&](const FakeApiClient::Request& request) -> std::optional<Status> {
    if (request.verb == "getstream" && request.subresource == path && refusals_left > 0) {
      --refusals_left;
      return Status(StatusCode::kBadRequest,
                    "container \"main\" in pod \"bert-worker-1\" is waiting to start: "
                    "ContainerCreating")
          .WithHttp(400, "BadRequest");
    }
    return std::nullopt;
  });
  options_.follow = true;
  options_.index = 1;
  options_.pod_running_timeout = std::chrono::seconds(20);
  std::ostringstream out;
  std::ostringstream err;
  ASSERT_TRUE(RunLogs(api_, "bert", options_, out, err).ok()) << err.str();
  EXPECT_EQ(out.str(), "started at last\n");
  EXPECT_EQ(api_.CountRequests("getstream", path), 3u);

  // Not started within the timeout: the kubelet's words.
  refusals_left = 1000;
  options_.pod_running_timeout = std::chrono::milliseconds(600);
  std::ostringstream never;
  const Status status = RunLogs(api_, "bert", options_, never, err);
  EXPECT_EQ(status.code(), StatusCode::kBadRequest);
  EXPECT_THAT(status.message(), HasSubstr("is waiting to start: ContainerCreating"));
  EXPECT_EQ(never.str(), "");

  // Without -f the refusal is the answer at once, as kubectl logs.
  options_.follow = false;
  const size_t before = api_.CountRequests("getraw");
  api_.SetFault([&](const FakeApiClient::Request& request) -> std::optional<Status> {
    if (request.verb == "getraw") {
      return Status(StatusCode::kBadRequest,
                    "container \"main\" in pod \"bert-worker-1\" is "
                    "waiting to start: ContainerCreating");
    }
    return std::nullopt;
  });
  EXPECT_FALSE(RunLogs(api_, "bert", options_, never, err).ok());
  EXPECT_EQ(api_.CountRequests("getraw"), before + 1);
}

// -f streams each log: lines are whole however the stream cuts them, and
// the last one is written when its log ends.
TEST_F(CommandsTest, FollowedLogsArriveLineByLineUntilEveryLogEnds) {
  api_.SetRaw("/api/v1/namespaces/team/pods/bert-worker-0/log?container=main&follow=true",
              "epoch 1 loss 0.9\nepoch 2 loss 0.5\nlast line without newline");
  api_.SetRaw("/api/v1/namespaces/team/pods/bert-worker-1/log?container=main&follow=true",
              "worker one\n");
  options_.follow = true;
  std::ostringstream out;
  std::ostringstream err;
  ASSERT_TRUE(RunLogs(api_, "bert", options_, out, err).ok()) << err.str();
  std::vector<std::string> lines;
  std::istringstream split(out.str());
  for (std::string line; std::getline(split, line);) {
    lines.push_back(line);
  }
  EXPECT_THAT(lines,
              ::testing::UnorderedElementsAre("[pod/bert-worker-0] epoch 1 loss 0.9",
                                              "[pod/bert-worker-0] epoch 2 loss 0.5",
                                              "[pod/bert-worker-0] last line without newline",
                                              "[pod/bert-worker-1] worker one"));
  EXPECT_EQ(err.str(), "");

  options_.max_log_requests = 1;
  EXPECT_THAT(RunLogs(api_, "bert", options_, out, err).message(),
              HasSubstr("you are attempting to follow 2 log streams, but the maximum allowed "
                        "concurrency is 1: use --max-log-requests"));
  options_.max_log_requests = 5;

  // A member whose log cannot be followed says why; the other goes on.
  api_.SetRaw("/api/v1/namespaces/team/pods/bert-worker-1/log?container=main&follow=true", "");
  options_.index = 0;
  options_.tail = 1;
  std::ostringstream tail;
  EXPECT_FALSE(RunLogs(api_, "bert", options_, tail, err).ok())
      << "no body is served for the tailLines path";
  bool asked = false;
  for (const auto& request : api_.Requests()) {
    asked |= request.verb == "getstream" &&
             request.subresource ==
                 "/api/v1/namespaces/team/pods/bert-worker-0/log?container=main&tailLines=1&"
                 "follow=true";
  }
  EXPECT_TRUE(asked);
}

TEST(LogsOutcomeTest, FailsOnlyWhenNothingCouldBeShown) {
  const Status pending = Status(StatusCode::kBadRequest,
                                "container \"main\" in pod \"bert-worker-0\" is waiting to start")
                             .WithHttp(400, "BadRequest");
  EXPECT_TRUE(LogsOutcome("bert", 3, {}).ok());
  EXPECT_TRUE(
      LogsOutcome("bert", 3, {{"bert-worker-0", pending}, {"bert-worker-1", pending}}).ok());

  const Status all =
      LogsOutcome("bert", 2, {{"bert-worker-0", pending}, {"bert-worker-1", pending}});
  EXPECT_EQ(all.code(), StatusCode::kBadRequest);
  EXPECT_EQ(all.message(),
            "none of the 2 members of job bert has a log to show (each said why above)");

  const Status one = LogsOutcome("bert", 1, {{"bert-worker-0", pending}});
  EXPECT_EQ(one.code(), StatusCode::kBadRequest);
  EXPECT_EQ(one.message(),
            "pod bert-worker-0 has no log to show: container \"main\" in pod \"bert-worker-0\" is "
            "waiting to start");
}

// `status` looks up the namespace's default queue for a job that names none,
// and says so when it may not read the namespace.
TEST_F(CommandsTest, StatusShowsTheNamespacesDefaultQueueForAJobThatNamesNone) {
  nlohmann::json unnamed = Job("team", "anon", "", 1, 1);
  unnamed["spec"].erase("queue");
  api_.Seed(k8s::resources::HybridJobs(), unnamed);
  Result<std::string> text = RunStatus(api_, "anon", options_);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_THAT(*text, HasSubstr("Queue:       default (no spec.queue; unless namespace team names a "
                               "default queue: it could not be read)\n"));

  api_.Seed(k8s::resources::Namespaces(),
            {{"apiVersion", "v1"},
             {"kind", "Namespace"},
             {"metadata",
              {{"name", "team"}, {"labels", {{"batch.hybridjob.io/default-queue", "research"}}}}}});
  text = RunStatus(api_, "anon", options_);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_THAT(
      *text,
      HasSubstr("Queue:       research (no spec.queue: the default queue of namespace team)\n"));
}

}  // namespace
}  // namespace hybridjob::cli
