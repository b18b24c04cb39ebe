// A node lost under a gang: reported NotReady, then deleted. The simulator
// stops playing its kubelet, and the pods bound to it are deleted (by podgc on
// the local cluster, as on a real one). The controller must bring the gang
// back to strength (members recreated per restart policy, or the job
// restarted) and the scheduler must place the replacements: the job ends
// Succeeded with every member finished on a node that still exists, never
// left below its minimum.
#include <memory>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>

#include "recovery_support.h"
#include "system.h"

namespace hybridjob::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr int kNodeLossMembers = 8;

std::string Name(const json& pod) {
  return pod["metadata"].value("name", "");
}

// name node phase [terminating], one pod a line, for failure messages.
std::string Describe(const std::vector<json>& pods) {
  std::string out;
  for (const auto& pod : pods) {
    out += "\n  " + Name(pod) + " " + NodeOf(pod) + " " + pod["status"].value("phase", "") +
           (Terminating(pod) ? " terminating" : "");
    for (const auto& condition : pod["status"].value("conditions", json::array())) {
      if (condition.value("type", "") == "PodScheduled" &&
          condition.value("status", "") != "True") {
        out += " (" + condition.value("reason", "") + ": " + condition.value("message", "") + ")";
      }
    }
  }
  return out;
}

class NodeLossTest : public ::testing::Test {
 protected:
  // Starts the system (16 GPUs) and the 8-member gang (1 GPU each), and
  // waits until it runs.
  void StartGang(const std::string& duration) {
    system_ = std::make_unique<System>(
        SystemOptions{.nodes = 4, .gpus_per_node = 4, .scheduler_config = ""});
    ASSERT_TRUE(system_->ok());
    WorkerJobSpec spec;
    spec.workers = kNodeLossMembers;
    spec.gpus = 1;
    spec.duration = duration;
    ASSERT_TRUE(CreateJobRetrying(system_->client(), "default", WorkerJob("gang", spec)).ok());
    ASSERT_TRUE(WaitFor([&] { return system_->Phase("gang") == "Running"; }, 60s))
        << system_->Logs();
  }

  // The node of member 0 reports NotReady (its kubelet is gone); the other
  // three nodes still have room for the whole gang.
  void LoseNodeOfMemberZero() {
    for (const auto& pod : system_->Pods("gang")) {
      if (pod["metadata"]["labels"].value(std::string(api::kIndexLabel), "") == "0") {
        lost_ = NodeOf(pod);
      }
    }
    ASSERT_FALSE(lost_.empty());
    for (const auto& pod : system_->Pods("gang")) {
      if (NodeOf(pod) == lost_) {
        lost_pods_.insert(pod["metadata"].value("uid", ""));
      }
    }
    const json not_ready = {{"status",
                             {{"conditions", json::array({{{"type", "Ready"},
                                                           {"status", "False"},
                                                           {"reason", "KubeletStopped"},
                                                           {"message", "the node was lost"}}})}}}};
    k8s::PatchOptions status_patch;
    status_patch.subresource = "status";
    auto patched =
        system_->client().Patch(k8s::resources::Nodes(), "", lost_, k8s::PatchType::kStrategicMerge,
                                not_ready.dump(), status_patch);
    ASSERT_TRUE(patched.ok()) << patched.status().ToString();
    ASSERT_TRUE(WaitFor(
        [&] {
          return system_->sim().Log().find("node " + lost_ + " reported not Ready") !=
                 std::string::npos;
        },
        10s))
        << "the simulator did not notice the node was lost\n"
        << system_->Logs();
  }

  void DeleteLostNode() {
    ASSERT_TRUE(system_->client().Delete(k8s::resources::Nodes(), "", lost_).ok());
  }

  // Members bound to a node that exists, recreated or not.
  int BoundElsewhere() {
    int bound = 0;
    for (const auto& pod : system_->Pods("gang")) {
      bound += !Terminating(pod) && !NodeOf(pod).empty() && NodeOf(pod) != lost_ ? 1 : 0;
    }
    return bound;
  }

  // Waits for the job's end; meanwhile no member may come back on the lost node.
  void ExpectSucceededAndWhole(std::chrono::seconds timeout) {
    std::string violations;
    std::string phase;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      phase = system_->Phase("gang");
      for (const auto& pod : system_->Pods("gang")) {
        if (NodeOf(pod) == lost_ && lost_pods_.count(pod["metadata"].value("uid", "")) == 0) {
          violations += Name(pod) + " was bound to the lost node; ";
        }
      }
      if (phase == "Succeeded" || phase == "Failed") {
        break;
      }
      std::this_thread::sleep_for(500ms);
    }
    EXPECT_EQ(violations, "");
    ASSERT_EQ(phase, "Succeeded") << "status " << system_->Job("gang")["status"].dump(2)
                                  << "\npods " << Describe(system_->Pods("gang")) << "\n"
                                  << system_->Logs();
    const auto pods = system_->Pods("gang");
    EXPECT_EQ(DuplicateMembers("gang", pods), "");
    std::set<std::string> indices;
    for (const auto& pod : pods) {
      EXPECT_NE(NodeOf(pod), lost_) << Name(pod);
      EXPECT_EQ(pod["status"].value("phase", ""), "Succeeded") << Name(pod);
      indices.insert(pod["metadata"]["labels"].value(std::string(api::kIndexLabel), ""));
    }
    EXPECT_EQ(indices.size(), static_cast<size_t>(kNodeLossMembers));
  }

  std::unique_ptr<System> system_;
  std::string lost_;
  std::set<std::string> lost_pods_;
};

TEST_F(NodeLossTest, MembersOnALostNodeAreReplacedWhileTheGangRuns) {
  // The members run until told otherwise, so the gang is still running when
  // podgc (40 s quarantine after the node goes) deletes the lost members.
  ASSERT_NO_FATAL_FAILURE(StartGang("10m"));
  ASSERT_NO_FATAL_FAILURE(LoseNodeOfMemberZero());
  std::this_thread::sleep_for(1s);
  ASSERT_NO_FATAL_FAILURE(DeleteLostNode());
  // Back to full strength on the nodes that remain.
  ASSERT_TRUE(WaitFor([&] { return BoundElsewhere() == kNodeLossMembers; }, 150s))
      << "status " << system_->Job("gang")["status"].dump(2) << "\npods "
      << Describe(system_->Pods("gang")) << "\n"
      << system_->Logs();
  // Not silently: the job's conditions record that members were recreated.
  bool restarting_recorded = false;
  const json status = system_->Job("gang")["status"];
  for (const auto& condition : status.value("conditions", json::array())) {
    restarting_recorded |= condition.value("type", "") == "Restarting";
  }
  EXPECT_TRUE(restarting_recorded) << status.dump(2);
  // Training ends: every member's simulated run is cut short.
  for (const auto& pod : system_->Pods("gang")) {
    const json patch = {{"metadata", {{"annotations", {{"sim.hybridjob.io/duration", "1s"}}}}}};
    auto patched = system_->client().Patch(k8s::resources::Pods(), "default", Name(pod),
                                           k8s::PatchType::kMerge, patch.dump());
    EXPECT_TRUE(patched.ok()) << patched.status().ToString();
  }
  ExpectSucceededAndWhole(60s);
}

TEST_F(NodeLossTest, MembersLostAfterTheOthersFinishedAreReplaced) {
  // The members on the other nodes finish while the lost ones still look
  // Running (nobody reports for them); only then are the lost pods deleted,
  // as podgc does once the node is gone (done here at once, without its
  // quarantine).
  // The replacements' group spec counts the members that already succeeded
  // toward the minimum: the scheduler no longer sees those pods.
  ASSERT_NO_FATAL_FAILURE(StartGang("6s"));
  ASSERT_NO_FATAL_FAILURE(LoseNodeOfMemberZero());
  ASSERT_TRUE(WaitFor(
      [&] {
        int succeeded = 0;
        for (const auto& pod : system_->Pods("gang")) {
          succeeded += pod["status"].value("phase", "") == "Succeeded" ? 1 : 0;
        }
        return succeeded == kNodeLossMembers - static_cast<int>(lost_pods_.size());
      },
      30s))
      << Describe(system_->Pods("gang"));
  ASSERT_NO_FATAL_FAILURE(DeleteLostNode());
  for (const auto& pod : system_->Pods("gang")) {
    if (NodeOf(pod) == lost_) {
      k8s::DeleteOptions force;
      force.grace_period_seconds = 0;
      EXPECT_TRUE(
          system_->client().Delete(k8s::resources::Pods(), "default", Name(pod), force).ok());
    }
  }
  ExpectSucceededAndWhole(60s);
}

}  // namespace
}  // namespace hybridjob::testing
