// `kubectl logs` and `kubectl exec` on a pod the simulator runs in default
// mode (no --exec), through the real kube-apiserver: the synthetic log, and a
// refusal kubectl prints clearly.
#include <gtest/gtest.h>

#include <hybridjob/k8s/api_status.h>
#include <hybridjob/sim/simulator.h>

#include "test_cluster.h"

namespace hybridjob::sim {
namespace {

using hybridjob::testing::AdminClient;
using hybridjob::testing::TestNamespace;
using hybridjob::testing::WaitFor;
using nlohmann::json;

constexpr const char* kMember = "ddp-worker-1";

// A member pod as the controller makes it, bound to `node`: the job's
// variables as env and the cluster ConfigMap mounted at /etc/hybridjob.
json MemberPod(const std::string& node) {
  json trainer = {
      {"name", "trainer"},
      {"image", "pytorch:2.1"},
      {"command", {"python", "train.py"}},
      {"env",
       {{{"name", "HYBRIDJOB_JOB_NAME"}, {"value", "ddp"}},
        {{"name", "HYBRIDJOB_ROLE"}, {"value", "worker"}},
        {{"name", "HYBRIDJOB_INDEX"}, {"value", "1"}}}},
      {"volumeMounts", {{{"name", "hybridjob-cluster"}, {"mountPath", "/etc/hybridjob"}}}}};
  return {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", kMember}}},
      {"spec",
       {{"nodeName", node},
        {"containers", json::array({trainer})},
        {"volumes", {{{"name", "hybridjob-cluster"}, {"configMap", {{"name", "ddp-cluster"}}}}}}}}};
}

class DefaultModeKubectlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const json cluster_spec = {{"apiVersion", "v1"},
                               {"kind", "ConfigMap"},
                               {"metadata", {{"name", "ddp-cluster"}}},
                               {"data", {{"cluster.json", "{}"}}}};
    ASSERT_TRUE(client_->Create(k8s::resources::ConfigMaps(), ns_.name(), cluster_spec).ok());

    SimulatorOptions options;
    options.nodes.name_prefix = "kubectl-" + ns_.name();
    options.nodes.count = 1;
    options.nodes.gpus_per_node = 1;
    options.workers = 2;
    simulator_ = std::make_unique<Simulator>(*client_, options);
    ASSERT_TRUE(simulator_->Start().ok());
    auto node = client_->Get(k8s::resources::Nodes(), "", simulator_->NodeNames()[0]);
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    // As in exec mode, the node names its kubelet endpoint.
    EXPECT_GT((*node)["status"]["daemonEndpoints"]["kubeletEndpoint"].value("Port", 0), 0);

    auto created =
        client_->Create(k8s::resources::Pods(), ns_.name(), MemberPod(simulator_->NodeNames()[0]));
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    ASSERT_TRUE(WaitFor([&] {
      auto pod = client_->Get(k8s::resources::Pods(), ns_.name(), kMember);
      return pod.ok() && (*pod)["status"].value("phase", "") == "Running";
    }));
  }

  void TearDown() override {
    if (simulator_ == nullptr) {
      return;
    }
    // While the simulator runs, it confirms the graceful deletion.
    (void)client_->Delete(k8s::resources::Pods(), ns_.name(), kMember);
    EXPECT_TRUE(WaitFor([&] {
      return k8s::IsNotFound(client_->Get(k8s::resources::Pods(), ns_.name(), kMember).status());
    }));
    simulator_->Stop();
  }

  // Runs the cluster's kubectl in the test's namespace; `timeout` ends it
  // should it hang.
  int Kubectl(const std::string& args, std::string* output) const {
    return hybridjob::testing::RunCommand(
        "timeout 60 " + hybridjob::testing::KubernetesBinDir() + "/kubectl --kubeconfig " +
            hybridjob::testing::KubeconfigPath() + " -n " + ns_.name() + " " + args,
        output);
  }

  std::unique_ptr<k8s::RestClient> client_ = AdminClient();
  TestNamespace ns_{*client_, "kubectl"};
  std::unique_ptr<Simulator> simulator_;
};

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(DefaultModeKubectlTest, KubectlLogsShowsWhatTheSimulatedMemberWasGiven) {
  std::string log;
  ASSERT_EQ(Kubectl(std::string("logs ") + kMember, &log), 0) << log;
  EXPECT_TRUE(Contains(log, "hybridjob-sim simulates this member: no process runs")) << log;
  EXPECT_TRUE(Contains(log, "`hybridjob-sim --exec` runs the commands for real")) << log;
  EXPECT_TRUE(Contains(log, "command:       python train.py\n")) << log;
  EXPECT_TRUE(Contains(log, "HYBRIDJOB_ROLE=worker\n")) << log;
  EXPECT_TRUE(Contains(log, "HYBRIDJOB_INDEX=1\n")) << log;
  EXPECT_TRUE(Contains(log, "ConfigMap \"ddp-cluster\", mounted at /etc/hybridjob\n")) << log;
  EXPECT_TRUE(Contains(log, "  runs until the pod is deleted")) << log;

  std::string tail;
  ASSERT_EQ(Kubectl(std::string("logs ") + kMember + " -c trainer --tail 1", &tail), 0) << tail;
  EXPECT_EQ(tail, "  runs until the pod is deleted (no sim.hybridjob.io/duration annotation)\n");
  // Following a log no process writes returns it and ends.
  std::string followed;
  ASSERT_EQ(Kubectl(std::string("logs -f ") + kMember, &followed), 0) << followed;
  EXPECT_EQ(followed, log);

  std::string previous;
  EXPECT_NE(Kubectl(std::string("logs --previous ") + kMember, &previous), 0) << previous;
  EXPECT_TRUE(Contains(previous,
                       "Error from server (BadRequest): previous terminated container "
                       "\"trainer\" in pod \"ddp-worker-1\" not found"))
      << previous;
}

TEST_F(DefaultModeKubectlTest, KubectlExecIsRefusedWithWhatWorksInstead) {
  std::string output;
  EXPECT_NE(Kubectl(std::string("exec ") + kMember + " -- true", &output), 0) << output;
  EXPECT_TRUE(Contains(output,
                       "Error from server (BadRequest): cannot exec into container \"trainer\" of "
                       "pod \"ddp-worker-1\": this member is simulated by hybridjob-sim and no "
                       "process runs, so there is nothing to exec into; kubectl logs ddp-worker-1 "
                       "-c trainer shows what the member was given"))
      << output;
}

}  // namespace
}  // namespace hybridjob::sim
