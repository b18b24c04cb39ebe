// End to end: queues, elastic reclaim and growth with the real binaries. The
// scheduler evicts elastic members for a waiting job, the controller shrinks
// the job's membership and publishes the new cluster spec, and when capacity
// is idle again the job grows back.
#include <map>
#include <regex>
#include <set>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>

#include "manifests.h"
#include "system.h"

namespace hybridjob::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// Members of a role as the job's status reports them; -1 when not reported.
int Members(System& system, const std::string& job, const std::string& role) {
  const json object = system.Job(job);
  if (!object.contains("status") || !object["status"].contains("replicaStatuses")) {
    return -1;
  }
  for (const auto& replica : object["status"]["replicaStatuses"]) {
    if (replica.value("name", "") == role) {
      return replica.value("members", -1);
    }
  }
  return -1;
}

// The membership the cluster spec ConfigMap carries, e.g. {"worker":4}.
std::string PublishedMembership(System& system, const std::string& job) {
  auto config_map = system.client().Get(k8s::resources::ConfigMaps(), "default", job + "-cluster");
  if (!config_map.ok()) {
    return "";
  }
  return (*config_map)["metadata"]["annotations"].value(std::string(api::kMembersAnnotation), "");
}

int CountEvents(System& system, const std::string& reason) {
  k8s::ListOptions options;
  options.field_selector = "reason=" + reason;
  auto list = system.client().List(k8s::resources::Events(), "default", options);
  return list.ok() ? static_cast<int>(list->items.size()) : -1;
}

// The reason of the job's Queued condition, or empty.
std::string QueuedReason(System& system, const std::string& job,
                         const std::string& ns = "default") {
  const json object = system.Job(job, ns);
  if (!object.is_object() || !object.contains("status") || !object["status"].is_object() ||
      !object["status"].contains("conditions") || !object["status"]["conditions"].is_array()) {
    return "";
  }
  for (const auto& c : object["status"]["conditions"]) {
    if (c.is_object() && c.value("type", "") == "Queued") {
      return c.value("reason", "");
    }
  }
  return "";
}

// Samples a job's phase until `done`, failing if it ever leaves Running.
class PhaseWatch {
 public:
  PhaseWatch(System& system, std::string job) : system_(system), job_(std::move(job)) {}
  bool WaitFor(const std::function<bool()>& done, std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string phase = system_.Phase(job_);
      if (phase != "Running") {
        left_running_ = phase;
      }
      if (done()) {
        return true;
      }
      std::this_thread::sleep_for(200ms);
    }
    return false;
  }
  // The phase other than Running seen last, if any.
  const std::string& left_running() const { return left_running_; }

 private:
  System& system_;
  std::string job_;
  std::string left_running_;
};

TEST(PolicyEndToEndTest, ElasticJobShrinksForAWaitingJobThenGrowsBack) {
  System system({.nodes = 2, .gpus_per_node = 4, .scheduler_config = "gangBackoffSeconds: 1\n"});
  ASSERT_TRUE(system.ok());
  ASSERT_EQ(system.Apply(Job("elastic", "pytorch", {Member("worker", 4, 8, 1, "")})), 0);
  ASSERT_TRUE(WaitFor([&] { return Members(system, "elastic", "worker") == 8; }, 60s))
      << "members " << Members(system, "elastic", "worker") << "\n"
      << system.Logs();
  // The controller writes the status before the ConfigMap in one pass.
  EXPECT_TRUE(WaitFor([&] { return PublishedMembership(system, "elastic") == R"({"worker":8})"; }))
      << PublishedMembership(system, "elastic");

  // Needs 4 of the 8 GPUs the elastic job holds.
  ASSERT_EQ(system.Apply(Job("waiting", "pytorch", {Member("worker", 4, 4, 1, "8s")})), 0);
  PhaseWatch elastic(system, "elastic");
  ASSERT_TRUE(elastic.WaitFor([&] { return system.Phase("waiting") == "Running"; }, 60s))
      << "the waiting job never ran: " << system.Phase("waiting") << "\n"
      << system.Logs();
  // The status may follow the published membership by the controller's
  // status batch period.
  EXPECT_TRUE(WaitFor([&] { return Members(system, "elastic", "worker") == 4; }))
      << Members(system, "elastic", "worker") << "\n"
      << system.Logs();
  EXPECT_TRUE(WaitFor([&] { return PublishedMembership(system, "elastic") == R"({"worker":4})"; }))
      << PublishedMembership(system, "elastic");
  EXPECT_EQ(BoundCount(system, "elastic"), 4) << "exactly the 4 highest workers were evicted";
  EXPECT_GE(CountEvents(system, "Reclaimed"), 4);
  EXPECT_GE(CountEvents(system, "MembershipChanged"), 1);

  // When the waiting job is done, the elastic job grows back to 8.
  ASSERT_TRUE(elastic.WaitFor([&] { return Members(system, "elastic", "worker") == 8; }, 90s))
      << "members " << Members(system, "elastic", "worker") << ", waiting "
      << system.Phase("waiting") << "\n"
      << system.Logs();
  EXPECT_EQ(system.Phase("waiting"), "Succeeded");
  EXPECT_TRUE(WaitFor([&] { return PublishedMembership(system, "elastic") == R"({"worker":8})"; }))
      << PublishedMembership(system, "elastic");
  EXPECT_EQ(elastic.left_running(), "") << "PyTorch learns its membership live: no restart";
}

// spec.suspend frees an elastic job's GPUs for another job; resumed, the job
// waits for room like any gang and is placed afresh once there is some.
TEST(PolicyEndToEndTest, ASuspendedElasticJobFreesItsGpusForAnotherAndResumes) {
  System system({.nodes = 2, .gpus_per_node = 4, .scheduler_config = "gangBackoffSeconds: 1\n"});
  ASSERT_TRUE(system.ok());
  ASSERT_EQ(system.Apply(Job("elastic", "pytorch", {Member("worker", 4, 8, 1, "")})), 0);
  ASSERT_TRUE(WaitFor([&] { return Members(system, "elastic", "worker") == 8; }, 60s))
      << system.Logs();
  auto suspend = [&](bool value) {
    return system.Kubectl(
        std::string("patch hybridjob elastic --type merge -p ") +
        (value ? R"('{"spec":{"suspend":true}}')" : R"('{"spec":{"suspend":false}}')"));
  };
  ASSERT_EQ(suspend(true), 0);
  ASSERT_TRUE(WaitFor(
      [&] { return system.Phase("elastic") == "Suspended" && system.Pods("elastic").empty(); },
      60s))
      << system.Phase("elastic") << "\n"
      << system.Logs();

  // Every GPU is free again: a rigid 8-GPU job runs on them.
  ASSERT_EQ(system.Apply(Job("whole", "pytorch", {Member("worker", 8, 8, 1, "8s")})), 0);
  ASSERT_TRUE(WaitFor([&] { return system.Phase("whole") == "Running"; }, 60s))
      << system.Phase("whole") << "\n"
      << system.Logs();

  // Resumed while the GPUs are taken, the job waits, then runs once they are free.
  ASSERT_EQ(suspend(false), 0);
  ASSERT_TRUE(WaitFor([&] { return Members(system, "elastic", "worker") == 8; }, 90s))
      << "elastic " << system.Phase("elastic") << ", whole " << system.Phase("whole") << "\n"
      << system.Logs();
  EXPECT_EQ(system.Phase("whole"), "Succeeded");
  EXPECT_EQ(system.Phase("elastic"), "Running");
  EXPECT_EQ(system.Job("elastic")["status"].value("restartCount", -1), 0);

  // maxReplicas lowered while it runs: the job shrinks to 6, the scheduler
  // never grows it back, and a 2-GPU job takes the two freed GPUs without
  // taking anything more from it.
  ASSERT_EQ(
      system.Kubectl(R"(patch hybridjob elastic --type json -p )"
                     R"('[{"op":"replace","path":"/spec/replicaSpecs/0/maxReplicas","value":6}]')"),
      0);
  ASSERT_TRUE(WaitFor(
      [&] {
        return Members(system, "elastic", "worker") == 6 && system.Pods("elastic").size() == 6;
      },
      60s))
      << "members " << Members(system, "elastic", "worker") << "\n"
      << system.Logs();
  ASSERT_EQ(system.Apply(Job("small", "pytorch", {Member("worker", 2, 2, 1, "")})), 0);
  ASSERT_TRUE(WaitFor([&] { return system.Phase("small") == "Running"; }, 60s))
      << system.Phase("small") << "\n"
      << system.Logs();
  EXPECT_EQ(Members(system, "elastic", "worker"), 6);
  EXPECT_EQ(system.Job("elastic")["status"].value("restartCount", -1), 0);
}

// MembershipChanged Events of a job: message -> count.
std::map<std::string, int> MembershipEvents(System& system, const std::string& job) {
  k8s::ListOptions options;
  options.field_selector = "reason=MembershipChanged,involvedObject.name=" + job;
  auto list = system.client().List(k8s::resources::Events(), "default", options);
  std::map<std::string, int> out;
  if (list.ok()) {
    for (const json& event : list->items) {
      out[event.value("message", "")] += event.value("count", 1);
    }
  }
  return out;
}

// A TensorFlow job reads its cluster spec only at start, so a reclaim restarts
// every member. The scheduler takes four workers in one decision: the job
// must restart once, straight to its new size, not once per victim.
TEST(PolicyEndToEndTest, ARigidFrameworkRestartsOncePerReclaim) {
  System system({.nodes = 2, .gpus_per_node = 4, .scheduler_config = "gangBackoffSeconds: 1\n"});
  ASSERT_TRUE(system.ok());
  ASSERT_EQ(system.Apply(Job("tf", "tensorflow",
                             {Member("ps", 1, 1, 0, ""), Member("worker", 2, 8, 1, "")})),
            0);
  ASSERT_TRUE(WaitFor([&] { return Members(system, "tf", "worker") == 8; }, 60s))
      << "members " << Members(system, "tf", "worker") << "\n"
      << system.Logs();
  ASSERT_EQ(system.Apply(Job("waiting", "pytorch", {Member("worker", 4, 4, 1, "")})), 0);
  ASSERT_TRUE(WaitFor([&] { return system.Phase("waiting") == "Running"; }, 60s))
      << "the waiting job never ran: " << system.Phase("waiting") << "\n"
      << system.Logs();
  ASSERT_TRUE(WaitFor([&] { return system.Phase("tf") == "Running"; }, 60s))
      << system.Phase("tf") << "\n"
      << system.Logs();
  EXPECT_EQ(Members(system, "tf", "worker"), 4);
  EXPECT_EQ(PublishedMembership(system, "tf"), R"({"ps":1,"worker":4})");
  // Settled: no later change comes.
  std::this_thread::sleep_for(2s);
  const std::map<std::string, int> changes = MembershipEvents(system, "tf");
  ASSERT_EQ(changes.size(), 1u) << "one restart per reclaim decision; got:\n"
                                << [&] {
                                     std::string all;
                                     for (const auto& [message, count] : changes) {
                                       all += std::to_string(count) + "x " + message + "\n";
                                     }
                                     return all;
                                   }();
  EXPECT_EQ(changes.begin()->second, 1);
  EXPECT_NE(changes.begin()->first.find("worker 8 -> 4"), std::string::npos)
      << changes.begin()->first;
  EXPECT_EQ(system.Job("tf")["status"].value("restartCount", -1), 0);
}

TEST(PolicyEndToEndTest, QueueBorrowsAllSixteenGpusAndGivesBackEight) {
  const std::string config =
      "gangBackoffSeconds: 1\n"
      "queues:\n"
      "  - name: a\n    weight: 1\n    guaranteed: {nvidia.com/gpu: 8}\n"
      "  - name: b\n    weight: 1\n    guaranteed: {nvidia.com/gpu: 8}\n";
  const int dashboard_port = FreeLoopbackPort();
  ASSERT_GT(dashboard_port, 0);
  // HTTPS with a self-signed certificate, as the scheduler serves it by default.
  const std::string dashboard = "https://127.0.0.1:" + std::to_string(dashboard_port) + "/";
  System system(
      {.nodes = 2, .gpus_per_node = 8, .scheduler_config = config},
      {.scheduler_args = {"--dashboard-addr", "127.0.0.1:" + std::to_string(dashboard_port)}});
  ASSERT_TRUE(system.ok());
  ASSERT_EQ(system.Apply(Job("borrower", "generic", {Member("worker", 2, 16, 1, "")}, "", "a")), 0);
  ASSERT_TRUE(WaitFor([&] { return Members(system, "borrower", "worker") == 16; }, 60s))
      << "queue a should borrow all 16 GPUs: " << Members(system, "borrower", "worker") << "\n"
      << system.Logs();

  ASSERT_EQ(system.Apply(Job("owner", "generic", {Member("worker", 8, 8, 1, "")}, "", "b")), 0);
  PhaseWatch borrower(system, "borrower");
  ASSERT_TRUE(borrower.WaitFor([&] { return system.Phase("owner") == "Running"; }, 60s))
      << "queue b never got its guarantee: " << system.Phase("owner") << "\n"
      << system.Logs();
  EXPECT_EQ(BoundCount(system, "owner"), 8);
  EXPECT_TRUE(WaitFor([&] { return Members(system, "borrower", "worker") == 8; }))
      << "queue a gave back exactly 8: " << Members(system, "borrower", "worker");
  EXPECT_EQ(BoundCount(system, "borrower"), 8);
  // 1:1 and both at their guarantee: nothing moves any more.
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(BoundCount(system, "borrower"), 8);
  EXPECT_EQ(BoundCount(system, "owner"), 8);
  EXPECT_EQ(borrower.left_running(), "");

  // The unknown queue is refused with a reason on the job.
  ASSERT_EQ(system.Apply(Job("lost", "generic", {Member("worker", 1, 1, 1, "")}, "", "nope")), 0);
  ASSERT_TRUE(WaitFor([&] { return QueuedReason(system, "lost") == "UnknownQueue"; }, 30s))
      << system.Job("lost").dump();
  EXPECT_EQ(system.Phase("lost"), "Queued");

  // Why jobs wait, as a user reads it: a member larger than any node never
  // fits (one Warning Event, not one per cycle); a job behind full queues
  // waits for capacity, first in its queue's line.
  ASSERT_EQ(system.Apply(Job("huge", "generic", {Member("worker", 1, 1, 9, "")}, "", "a")), 0);
  ASSERT_EQ(system.Apply(Job("next", "generic", {Member("worker", 2, 2, 1, "")}, "", "b")), 0);
  auto standing = [&](const std::string& job) {
    const json object = system.Job(job);
    json queue = object.is_object() && object.contains("status") && object["status"].is_object()
                     ? object["status"].value("queue", json::object())
                     : json::object();
    return queue.is_object() ? queue : json::object();
  };
  ASSERT_TRUE(WaitFor([&] { return standing("huge").value("reason", "") == "NeverFits"; }, 30s))
      << system.Job("huge").dump();
  EXPECT_EQ(QueuedReason(system, "huge"), "NeverFits");
  EXPECT_FALSE(standing("huge").contains("position")) << "a job that never fits is not in line";
  ASSERT_TRUE(
      WaitFor([&] { return standing("next").value("reason", "") == "InsufficientCapacity"; }, 30s))
      << system.Job("next").dump();
  EXPECT_EQ(standing("next"),
            json({{"name", "b"}, {"position", 1}, {"reason", "InsufficientCapacity"}}));
  std::string described;
  ASSERT_EQ(system.Kubectl("describe hj huge", &described), 0);
  EXPECT_TRUE(std::regex_search(described, std::regex(R"(Reason:\s+NeverFits)"))) << described;
  EXPECT_TRUE(std::regex_search(described, std::regex(R"(Warning\s+NeverFits)"))) << described;
  std::this_thread::sleep_for(3s);  // a few cycles (gangBackoffSeconds: 1)
  EXPECT_EQ(CountEvents(system, "NeverFits"), 1);

  // The scheduler's dashboard shows the same to the cluster's admin: its
  // state as JSON, and the page in a headless browser with the admin's token
  // (a screenshot under build/test-output/).
  std::string token;
  ASSERT_EQ(system.Kubectl("config view --raw -o jsonpath={.users[0].user.token}", &token), 0);
  ASSERT_FALSE(token.empty());
  std::string text;
  EXPECT_EQ(RunCommand("curl -sk -o /dev/null -w '%{http_code}' " + dashboard + "api/state", &text),
            0);
  EXPECT_EQ(text, "401") << "no token, no state";
  ASSERT_TRUE(WaitFor(
      [&] {
        text.clear();
        return RunCommand("curl -sfk -H 'Authorization: Bearer " + token + "' " + dashboard +
                              "api/state",
                          &text) == 0 &&
               text.find("\"next\"") != std::string::npos;
      },
      15s))
      << text;
  const json state = json::parse(text);
  EXPECT_EQ(state["leading"], true);
  std::set<std::string> running;
  for (const json& job : state["running"]) {
    running.insert(job["name"].get<std::string>());
  }
  EXPECT_EQ(running, (std::set<std::string>{"borrower", "owner"}));
  std::map<std::string, std::string> reasons;
  for (const json& queue : state["queues"]) {
    for (const json& job : queue["waiting"]) {
      reasons[job["name"].get<std::string>()] = job["reason"].get<std::string>();
    }
  }
  EXPECT_EQ(reasons["huge"], "NeverFits");
  EXPECT_EQ(reasons["next"], "InsufficientCapacity");
  EXPECT_EQ(state["gpuMap"]["usedGpus"], "16");

  const std::string out_dir = BinaryDir() + "/../test-output";
  const std::string profile = out_dir + "/chromium-profile";
  const std::string screenshot = out_dir + "/dashboard.png";
  ASSERT_EQ(RunCommand("mkdir -p " + out_dir + " && rm -rf " + profile + " " + screenshot), 0);
  const std::string chromium =
      "chromium --headless --no-sandbox --disable-gpu --ignore-certificate-errors "
      "--disable-dev-shm-usage --user-data-dir=" +
      profile + " --virtual-time-budget=5000 --window-size=1280,1400 ";
  const std::string page = dashboard + "#token=" + token;
  std::string dom;
  ASSERT_EQ(RunCommand("(" + chromium + "--dump-dom '" + page + "' 2>/dev/null)", &dom), 0)
      << dom;
  EXPECT_NE(dom.find("default/borrower"), std::string::npos) << dom;
  EXPECT_NE(dom.find("default/huge"), std::string::npos) << dom;
  EXPECT_NE(dom.find("NeverFits"), std::string::npos) << dom;
  size_t used_gpus = 0;
  for (size_t at = dom.find("class=\"gpu used\""); at != std::string::npos;
       at = dom.find("class=\"gpu used\"", at + 1)) {
    ++used_gpus;
  }
  EXPECT_EQ(used_gpus, 16u) << "every GPU of the map drawn as held";
  std::string shot;
  EXPECT_EQ(RunCommand("(" + chromium + "--screenshot=" + screenshot + " '" + page +
                           "' 2>/dev/null) && test -s " + screenshot,
                       &shot),
            0)
      << shot;
  EXPECT_EQ(RunCommand("rm -rf " + profile), 0);
}

// Bound GPUs of a namespace's pods (one GPU per member in these tests).
int BoundInNamespace(System& system, const std::string& ns) {
  auto list = system.client().List(k8s::resources::Pods(), ns, {});
  if (!list.ok()) {
    return -1;
  }
  int bound = 0;
  for (const auto& pod : list->items) {
    const std::string phase = pod["status"].value("phase", "");
    bound += !pod["spec"].value("nodeName", "").empty() && phase != "Succeeded" ? 1 : 0;
  }
  return bound;
}

// Three teams in their own namespaces, two of them under one parent queue,
// share 16 GPUs as the documented queue tree says (docs/scheduler-policies.md,
// "Queue tree"): org (weight 2, guaranteed 8, max 12) holds team-a (weight 2)
// and team-b (weight 1, both guaranteed 4); team-c stands outside. Each
// namespace's jobs name no queue: the namespace's default-queue label picks
// it, and each queue admits only its team's namespace.
TEST(PolicyEndToEndTest, TwoTeamsUnderOneParentAndAThirdShareSixteenGpus) {
  const std::string config =
      "gangBackoffSeconds: 1\n"
      "queues:\n"
      "  - name: org\n    weight: 2\n    guaranteed: {nvidia.com/gpu: 8}\n"
      "    max: {nvidia.com/gpu: 12}\n"
      "  - name: team-a\n    parent: org\n    weight: 2\n    guaranteed: {nvidia.com/gpu: 4}\n"
      "    namespaces: [team-a]\n"
      "  - name: team-b\n    parent: org\n    guaranteed: {nvidia.com/gpu: 4}\n"
      "    namespaceSelector: {matchLabels: {team: b}}\n"
      "  - name: team-c\n    namespaces: [team-c]\n";
  System system({.nodes = 2, .gpus_per_node = 8, .scheduler_config = config});
  ASSERT_TRUE(system.ok());
  for (const auto& [ns, queue, team] :
       {std::tuple{"team-a", "team-a", "a"}, std::tuple{"team-b", "team-b", "b"},
        std::tuple{"team-c", "team-c", "c"}}) {
    json object = {{"apiVersion", "v1"},
                   {"kind", "Namespace"},
                   {"metadata",
                    {{"name", ns},
                     {"labels", {{"batch.hybridjob.io/default-queue", queue}, {"team", team}}}}}};
    ASSERT_TRUE(system.client().Create(k8s::resources::Namespaces(), "", object).ok());
  }
  auto in_namespace = [](std::string manifest, const std::string& ns) {
    const std::string marker = "metadata:\n";
    manifest.insert(manifest.find(marker) + marker.size(), "  namespace: " + ns + "\n");
    return manifest;
  };
  // team-c holds every GPU for a while, so the others' jobs all wait and are
  // placed in fair-share order when it ends, not in order of arrival.
  ASSERT_EQ(system.Apply(in_namespace(
                Job("blocker", "generic", {Member("worker", 16, 16, 1, "15s")}), "team-c")),
            0);
  ASSERT_TRUE(WaitFor([&] { return BoundInNamespace(system, "team-c") == 16; }, 60s))
      << system.Logs();
  std::string manifests;
  for (const char* ns : {"team-a", "team-b", "team-c"}) {
    for (int i = 0; i < 9; ++i) {
      manifests += in_namespace(Job(std::string("small-") + std::to_string(i), "generic",
                                    {Member("worker", 1, 1, 1, "")}),
                                ns) +
                   "---\n";
    }
  }
  ASSERT_EQ(system.Apply(manifests), 0);

  ASSERT_TRUE(WaitFor(
      [&] {
        return BoundInNamespace(system, "team-a") == 7 && BoundInNamespace(system, "team-b") == 4 &&
               BoundInNamespace(system, "team-c") == 5;
      },
      90s))
      << "team-a " << BoundInNamespace(system, "team-a") << " (want 7), team-b "
      << BoundInNamespace(system, "team-b") << " (want 4), team-c "
      << BoundInNamespace(system, "team-c") << " (want 5)\n"
      << system.Logs();
  // Settled: nothing moves any more, and the jobs left over say why they wait.
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(BoundInNamespace(system, "team-a"), 7);
  EXPECT_EQ(BoundInNamespace(system, "team-b"), 4);
  EXPECT_EQ(BoundInNamespace(system, "team-c"), 5);
  int queued = 0;
  for (const char* ns : {"team-a", "team-b", "team-c"}) {
    for (int i = 0; i < 9; ++i) {
      queued += system.Phase("small-" + std::to_string(i), ns) == "Queued" ? 1 : 0;
    }
  }
  EXPECT_EQ(queued, 27 - 16);

  // A team-a job naming team-c's queue never runs there, and says why.
  ASSERT_EQ(system.Apply(in_namespace(
                Job("sneak", "generic", {Member("worker", 1, 1, 0, "")}, "", "team-c"), "team-a")),
            0);
  ASSERT_TRUE(
      WaitFor([&] { return QueuedReason(system, "sneak", "team-a") == "NotAllowedInQueue"; }, 30s))
      << system.Job("sneak", "team-a").dump();
}

// Members of a job bound to a node, and each one's uid: a resize shows as a
// changed set.
std::set<std::string> BoundMembers(System& system, const std::string& job, const std::string& ns) {
  std::set<std::string> uids;
  for (const auto& pod : system.Pods(job, ns)) {
    if (!pod["spec"].value("nodeName", "").empty() &&
        !pod["metadata"].contains("deletionTimestamp")) {
      uids.insert(pod["metadata"].value("uid", ""));
    }
  }
  return uids;
}

// Fair elastic sharing, as a new user tries it: org {team-a, team-b} and
// team-c, weight 1 each, every team queue bound to its namespace, one elastic
// job of 1..16 one-GPU workers per team applied one after the other. The
// tree's shares are 4 / 4 / 8, and the jobs get there with the scheduler's
// defaults (tolerance 10 %, 30 s between two resizes of one job).
TEST(PolicyEndToEndTest, ElasticCapacityFlowsBackToTheTreesShares) {
  const std::string config =
      "gangBackoffSeconds: 1\n"
      "queues:\n"
      "  - name: org\n"
      "  - name: team-a\n    parent: org\n    namespaces: [team-a]\n"
      "  - name: team-b\n    parent: org\n    namespaces: [team-b]\n"
      "  - name: team-c\n    namespaces: [team-c]\n";
  const int dashboard_port = FreeLoopbackPort();
  ASSERT_GT(dashboard_port, 0);
  // The dashboard on plain HTTP for anyone, as --insecure-serving serves it.
  System system({.nodes = 2, .gpus_per_node = 8, .scheduler_config = config},
                {.scheduler_args = {"--dashboard-addr",
                                    "127.0.0.1:" + std::to_string(dashboard_port),
                                    "--insecure-serving"}});
  ASSERT_TRUE(system.ok());
  for (const char* ns : {"team-a", "team-b", "team-c"}) {
    json object = {{"apiVersion", "v1"},
                   {"kind", "Namespace"},
                   {"metadata",
                    {{"name", ns}, {"labels", {{"batch.hybridjob.io/default-queue", ns}}}}}};
    ASSERT_TRUE(system.client().Create(k8s::resources::Namespaces(), "", object).ok());
  }
  auto apply = [&system](const std::string& name, const std::string& ns) {
    std::string manifest = Job(name, "pytorch", {Member("worker", 1, 16, 1, "")});
    const std::string marker = "metadata:\n";
    manifest.insert(manifest.find(marker) + marker.size(), "  namespace: " + ns + "\n");
    return system.Apply(manifest);
  };
  auto bound = [&system](const std::string& job, const std::string& ns) {
    return static_cast<int>(BoundMembers(system, job, ns).size());
  };
  auto shares = [&] {
    return "team-a " + std::to_string(bound("a", "team-a")) + ", team-b " +
           std::to_string(bound("b", "team-b")) + ", team-c " +
           std::to_string(bound("c", "team-c")) + "\n" + system.Logs();
  };

  ASSERT_EQ(apply("a", "team-a"), 0);
  ASSERT_TRUE(WaitFor([&] { return bound("a", "team-a") == 16; }, 60s)) << shares();
  ASSERT_EQ(apply("b", "team-b"), 0);
  ASSERT_TRUE(WaitFor([&] { return bound("b", "team-b") >= 1; }, 60s)) << shares();
  ASSERT_EQ(apply("c", "team-c"), 0);
  const auto third_applied = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor(
      [&] {
        return bound("a", "team-a") == 4 && bound("b", "team-b") == 4 && bound("c", "team-c") == 8;
      },
      60s))
      << "not 4 / 4 / 8 within 60 s of the third job: " << shares();
  EXPECT_LE(std::chrono::steady_clock::now() - third_applied, 60s);

  // It holds: 30 s more without a resize of anyone.
  const std::set<std::string> a = BoundMembers(system, "a", "team-a");
  const std::set<std::string> b = BoundMembers(system, "b", "team-b");
  const std::set<std::string> c = BoundMembers(system, "c", "team-c");
  const auto hold_until = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < hold_until) {
    ASSERT_EQ(BoundMembers(system, "a", "team-a"), a) << shares();
    ASSERT_EQ(BoundMembers(system, "b", "team-b"), b) << shares();
    ASSERT_EQ(BoundMembers(system, "c", "team-c"), c) << shares();
    std::this_thread::sleep_for(1s);
  }

  // The shrunk job says why, and the dashboard shows each queue's share.
  k8s::ListOptions rebalanced;
  rebalanced.field_selector = "reason=Rebalanced,involvedObject.name=a";
  auto events = system.client().List(k8s::resources::Events(), "team-a", rebalanced);
  ASSERT_TRUE(events.ok());
  ASSERT_FALSE(events->items.empty()) << system.Logs();
  EXPECT_EQ(events->items[0].value("type", ""), "Normal");
  EXPECT_TRUE(std::regex_search(events->items[0].value("message", ""),
                                std::regex(R"(^rebalanced: \d+ workers? to queue team-[bc] )"
                                           R"(\(share [48] of 16 GPUs\))")))
      << events->items[0].value("message", "");
  std::string text;
  ASSERT_EQ(RunCommand("curl -sf http://127.0.0.1:" + std::to_string(dashboard_port) +
                           "/api/state",
                       &text),
            0);
  std::map<std::string, std::string> fair;
  const json state = json::parse(text);
  for (const json& queue : state["queues"]) {
    fair[queue["name"].get<std::string>()] = queue.value("gpusFair", "");
  }
  EXPECT_EQ(fair["org"], "8") << text;
  EXPECT_EQ(fair["team-a"], "4");
  EXPECT_EQ(fair["team-b"], "4");
  EXPECT_EQ(fair["team-c"], "8");

  // A second job in team-c splits team-c's 8 with the first; team-a and
  // team-b keep the very same members.
  ASSERT_EQ(apply("c2", "team-c"), 0);
  ASSERT_TRUE(WaitFor(
      [&] { return bound("c", "team-c") == 4 && bound("c2", "team-c") == 4; }, 60s))
      << "c " << bound("c", "team-c") << ", c2 " << bound("c2", "team-c") << "\n"
      << shares();
  EXPECT_EQ(BoundMembers(system, "a", "team-a"), a);
  EXPECT_EQ(BoundMembers(system, "b", "team-b"), b);
}

// spec.topology (`level`, `mode`) added to a manifest from Job.
std::string WithTopology(std::string manifest, const std::string& level, const std::string& mode) {
  const std::string marker = "\nspec:\n";
  manifest.insert(manifest.find(marker) + marker.size(),
                  "  topology:\n    level: " + level + "\n    mode: " + mode + "\n");
  return manifest;
}

// The Queued condition's message, or empty.
std::string QueuedMessage(System& system, const std::string& job) {
  const json object = system.Job(job);
  if (!object.is_object() || !object.contains("status") ||
      !object["status"].contains("conditions")) {
    return "";
  }
  for (const auto& c : object["status"]["conditions"]) {
    if (c.value("type", "") == "Queued" && c.value("status", "") == "True") {
      return c.value("message", "");
    }
  }
  return "";
}

// The sim's layout, 2 zones x 2 racks x 2 nodes x 4 GPUs, and the scheduler's
// levels: the acceptance of docs/api.md's spec.topology with the binaries.
// status.attainedService of a job: {gpuSeconds, level}; {-1, -1} when unset.
std::pair<int64_t, int> AttainedService(System& system, const std::string& job) {
  const json object = system.Job(job);
  if (!object.contains("status") || !object["status"].contains("attainedService")) {
    return {-1, -1};
  }
  const json& service = object["status"]["attainedService"];
  return {service.value("gpuSeconds", int64_t{-1}), service.value("level", -1)};
}

// In a queue ordered by AttainedService, a short job submitted behind a long
// one that has been served more starts first, and the long one's service,
// persisted in its status, survives a kill -9 of the gang-scheduler. (With
// the queue's order BestEffortFIFO the long job, older, goes first.)
TEST(PolicyEndToEndTest, AShortJobOvertakesALongOneByAttainedServiceAcrossASchedulerKill) {
  System system({.nodes = 1,
                 .gpus_per_node = 4,
                 .scheduler_config = "gangBackoffSeconds: 1\n"
                                     "queues:\n  - name: research\n    order: AttainedService\n"
                                     "attainedService:\n  levels: 2\n"
                                     "  firstThresholdGpuHours: 0.005\n"  // 18 GPU-seconds
                                     "  promoteAfterSeconds: 0\n"});
  ASSERT_TRUE(system.ok());
  auto rigid = [](const std::string& name, const std::string& duration) {
    return Job(name, "pytorch", {Member("worker", 4, 4, 1, duration)}, "", "research");
  };
  auto suspend = [&](const std::string& job, bool value) {
    return system.Kubectl("patch hybridjob " + job + " --type merge -p " +
                          (value ? R"('{"spec":{"suspend":true}}')"
                                 : R"('{"spec":{"suspend":false}}')"));
  };
  // The long job holds the 4 GPUs until it is past the first level.
  ASSERT_EQ(system.Apply(rigid("long", "")), 0);
  ASSERT_TRUE(WaitFor([&] { return AttainedService(system, "long").second == 1; }, 60s))
      << "attained " << AttainedService(system, "long").first << "\n"
      << system.Logs();
  // It makes way for a filler, and comes back to wait behind it.
  ASSERT_EQ(system.Apply(rigid("filler", "10s")), 0);
  ASSERT_EQ(suspend("long", true), 0);
  ASSERT_TRUE(WaitFor([&] { return system.Phase("filler") == "Running"; }, 60s))
      << system.Phase("filler") << "\n"
      << system.Logs();
  ASSERT_EQ(suspend("long", false), 0);
  ASSERT_TRUE(WaitFor([&] { return system.Pods("long").size() == 4; }, 30s)) << system.Logs();
  // Submitted after the long job's members exist: it is younger, but served less.
  ASSERT_EQ(system.Apply(rigid("short", "3s")), 0);
  ASSERT_TRUE(WaitFor([&] { return system.Pods("short").size() == 4; }, 30s)) << system.Logs();

  const int64_t persisted = AttainedService(system, "long").first;
  system.scheduler().Kill();
  ASSERT_TRUE(system.RestartScheduler()) << system.Logs();
  EXPECT_GE(AttainedService(system, "long").first, persisted);
  EXPECT_EQ(AttainedService(system, "long").second, 1);

  // When the filler ends, the short job goes first.
  std::string long_phase_when_short_ran;
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string phase = system.Phase("short");
        if (phase == "Running" || phase == "Succeeded") {
          long_phase_when_short_ran = system.Phase("long");
          return true;
        }
        return false;
      },
      90s))
      << "short " << system.Phase("short") << ", long " << system.Phase("long") << "\n"
      << system.Logs();
  EXPECT_NE(long_phase_when_short_ran, "Running");
  EXPECT_EQ(system.Phase("filler"), "Succeeded");
  ASSERT_TRUE(WaitFor([&] { return system.Phase("long") == "Running"; }, 60s))
      << system.Phase("long") << "\n"
      << system.Logs();
  EXPECT_EQ(system.Phase("short"), "Succeeded");
  EXPECT_GE(AttainedService(system, "long").first, persisted) << "it goes on from there";
}

TEST(PolicyEndToEndTest, TopologyKeepsEachGangInOneRack) {
  const std::string rack = "topology.hybridjob.io/rack";
  const std::string config =
      "gangBackoffSeconds: 1\n"
      "topology:\n  levels: [topology.kubernetes.io/zone, " +
      rack + ", kubernetes.io/hostname]\n";
  ReplicaOptions replicas;
  replicas.sim_args = {"--zones", "2", "--racks-per-zone", "2", "--nodes-per-rack", "2"};
  System system({.nodes = 8, .gpus_per_node = 4, .scheduler_config = config}, replicas);
  ASSERT_TRUE(system.ok());
  std::map<std::string, std::string> rack_of;
  std::map<std::string, std::string> zone_of;
  auto nodes = system.client().List(k8s::resources::Nodes(), "", {});
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  for (const json& node : nodes->items) {
    const json& labels = node["metadata"]["labels"];
    rack_of[node["metadata"]["name"]] = labels.value(rack, "");
    zone_of[node["metadata"]["name"]] = labels.value("topology.kubernetes.io/zone", "");
  }
  auto racks_of = [&](const std::string& job, std::set<std::string>* zones = nullptr) {
    std::set<std::string> racks;
    for (const json& pod : system.Pods(job)) {
      const std::string node = pod["spec"].value("nodeName", "");
      if (!node.empty()) {
        racks.insert(rack_of[node]);
        if (zones != nullptr) {
          zones->insert(zone_of[node]);
        }
      }
    }
    return racks;
  };

  // Two 8-GPU Required-rack jobs land in two different racks, one each.
  for (const char* name : {"rack-a", "rack-b"}) {
    ASSERT_EQ(system.Apply(WithTopology(Job(name, "generic", {Member("worker", 8, 8, 1, "")}), rack,
                                        "Required")),
              0);
  }
  ASSERT_TRUE(WaitFor(
      [&] { return BoundCount(system, "rack-a") + BoundCount(system, "rack-b") == 16; }, 60s))
      << system.Logs();
  const std::set<std::string> a = racks_of("rack-a");
  const std::set<std::string> b = racks_of("rack-b");
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_NE(*a.begin(), *b.begin());
  EXPECT_TRUE(WaitFor(
      [&] {
        return system.Job("rack-a")["status"].value("placement", "") == rack + "=" + *a.begin();
      },
      30s))
      << system.Job("rack-a")["status"].dump();

  // 12 GPUs Required in one rack of 8 waits, saying so; Preferred runs over two racks.
  ASSERT_EQ(system.Apply(WithTopology(Job("wide", "generic", {Member("worker", 3, 3, 4, "")}), rack,
                                      "Required")),
            0);
  ASSERT_TRUE(WaitFor(
      [&] {
        return QueuedMessage(system, "wide")
                   .find("no single " + rack +
                         " domain holds the gang's "
                         "minimum: largest rack") != std::string::npos;
      },
      30s))
      << QueuedMessage(system, "wide") << "\n"
      << system.Logs();
  EXPECT_NE(QueuedMessage(system, "wide").find("has 8 GPUs free; the gang needs 12"),
            std::string::npos)
      << QueuedMessage(system, "wide");
  ASSERT_EQ(system.Apply(WithTopology(Job("spread", "generic", {Member("worker", 3, 3, 4, "")}),
                                      rack, "Preferred")),
            0);
  ASSERT_TRUE(WaitFor([&] { return BoundCount(system, "spread") == 3; }, 60s)) << system.Logs();
  std::set<std::string> spread_zones;
  EXPECT_EQ(racks_of("spread", &spread_zones).size(), 2u);
  EXPECT_EQ(spread_zones.size(), 1u) << "two racks of one zone";
  EXPECT_EQ(BoundCount(system, "wide"), 0);

  // An elastic Required-rack job grows only inside its rack.
  ASSERT_EQ(system.Kubectl("delete hybridjob rack-a rack-b wide spread --wait=true --timeout=60s"),
            0);
  ASSERT_TRUE(
      WaitFor([&] { return system.Pods("rack-a").empty() && system.Pods("spread").empty(); }, 60s));
  ASSERT_EQ(system.Apply(WithTopology(Job("elastic", "pytorch", {Member("worker", 2, 12, 1, "")}),
                                      rack, "Required")),
            0);
  ASSERT_TRUE(WaitFor([&] { return BoundCount(system, "elastic") == 8; }, 60s))
      << BoundCount(system, "elastic") << "\n"
      << system.Logs();
  std::this_thread::sleep_for(3s);  // settled: it does not spill over
  EXPECT_EQ(BoundCount(system, "elastic"), 8);
  EXPECT_EQ(racks_of("elastic").size(), 1u);
}

}  // namespace
}  // namespace hybridjob::testing
