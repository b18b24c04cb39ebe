// End to end: queues, elastic reclaim and growth with the real binaries. The
// scheduler evicts elastic members for a waiting job, the controller shrinks
// the job's membership and publishes the new cluster spec, and when capacity
// is idle again the job grows back.
#include <map>
#include <thread>

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
  EXPECT_EQ(PublishedMembership(system, "elastic"), R"({"worker":8})");

  // Needs 4 of the 8 GPUs the elastic job holds.
  ASSERT_EQ(system.Apply(Job("waiting", "pytorch", {Member("worker", 4, 4, 1, "8s")})), 0);
  PhaseWatch elastic(system, "elastic");
  ASSERT_TRUE(elastic.WaitFor([&] { return system.Phase("waiting") == "Running"; }, 60s))
      << "the waiting job never ran: " << system.Phase("waiting") << "\n"
      << system.Logs();
  EXPECT_EQ(Members(system, "elastic", "worker"), 4);
  EXPECT_EQ(PublishedMembership(system, "elastic"), R"({"worker":4})");
  EXPECT_EQ(BoundCount(system, "elastic"), 4) << "exactly the 4 highest workers were evicted";
  EXPECT_GE(CountEvents(system, "Reclaimed"), 4);
  EXPECT_GE(CountEvents(system, "MembershipChanged"), 1);

  // When the waiting job is done, the elastic job grows back to 8.
  ASSERT_TRUE(elastic.WaitFor([&] { return Members(system, "elastic", "worker") == 8; }, 90s))
      << "members " << Members(system, "elastic", "worker") << ", waiting "
      << system.Phase("waiting") << "\n"
      << system.Logs();
  EXPECT_EQ(system.Phase("waiting"), "Succeeded");
  EXPECT_EQ(PublishedMembership(system, "elastic"), R"({"worker":8})");
  EXPECT_EQ(elastic.left_running(), "") << "PyTorch learns its membership live: no restart";
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
  System system({.nodes = 2, .gpus_per_node = 8, .scheduler_config = config});
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
  EXPECT_EQ(Members(system, "borrower", "worker"), 8) << "queue a gave back exactly 8";
  EXPECT_EQ(BoundCount(system, "borrower"), 8);
  // 1:1 and both at their guarantee: nothing moves any more.
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(BoundCount(system, "borrower"), 8);
  EXPECT_EQ(BoundCount(system, "owner"), 8);
  EXPECT_EQ(borrower.left_running(), "");

  // The unknown queue is refused with a reason on the job.
  ASSERT_EQ(system.Apply(Job("lost", "generic", {Member("worker", 1, 1, 1, "")}, "", "nope")), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        const json job = system.Job("lost");
        if (!job.is_object() || !job.contains("status") || !job["status"].is_object() ||
            !job["status"].contains("conditions") || !job["status"]["conditions"].is_array()) {
          return false;
        }
        for (const auto& c : job["status"]["conditions"]) {
          if (c.is_object() && c.value("type", "") == "Queued" &&
              c.value("reason", "") == "UnknownQueue") {
            return true;
          }
        }
        return false;
      },
      30s))
      << system.Job("lost").dump();
  EXPECT_EQ(system.Phase("lost"), "Queued");
}

}  // namespace
}  // namespace hybridjob::testing
