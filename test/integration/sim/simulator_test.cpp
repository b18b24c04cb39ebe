// hybridjob-sim's simulator against the real kube-apiserver.
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
using namespace std::chrono_literals;

json SimPodManifest(const std::string& name, const std::string& node, const std::string& duration,
                    const std::string& exit_code) {
  json annotations = json::object();
  if (!duration.empty()) {
    annotations[kDurationAnnotation] = duration;
  }
  if (!exit_code.empty()) {
    annotations[kExitCodeAnnotation] = exit_code;
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"annotations", annotations}}},
          {"spec",
           {{"nodeName", node},
            {"terminationGracePeriodSeconds", 30},
            {"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
}

std::string Phase(k8s::ApiClient& client, const std::string& ns, const std::string& name) {
  auto pod = client.Get(k8s::resources::Pods(), ns, name);
  if (!pod) {
    return k8s::IsNotFound(pod.status()) ? "<gone>" : "<error>";
  }
  return (*pod)["status"].value("phase", "");
}

TEST(SimulatorTest, RegistersReadyNodesAndPlaysTheKubelet) {
  auto client = AdminClient();
  TestNamespace ns(*client);
  SimulatorOptions options;
  options.nodes.name_prefix = "simtest-" + ns.name();
  options.nodes.count = 3;
  options.nodes.gpus_per_node = 2;
  options.nodes.taints = {{"dedicated", "ml", "NoSchedule"}};
  options.heartbeat_interval = 1s;
  options.workers = 4;
  Simulator simulator(*client, options);
  ASSERT_TRUE(simulator.Start().ok());

  const std::string node0 = options.nodes.name_prefix + "-0";
  auto node = client->Get(k8s::resources::Nodes(), "", node0);
  ASSERT_TRUE(node.ok());
  EXPECT_EQ((*node)["status"]["allocatable"]["nvidia.com/gpu"], "2");
  bool ready = false;
  for (const auto& condition : (*node)["status"]["conditions"]) {
    ready = ready || (condition["type"] == "Ready" && condition["status"] == "True");
  }
  EXPECT_TRUE(ready);
  ASSERT_EQ((*node)["spec"]["taints"].size(), 1u) << (*node)["spec"].dump();
  EXPECT_EQ((*node)["spec"]["taints"][0]["key"], "dedicated");  // not-ready taint removed

  // Heartbeats renew the node's Lease.
  auto lease = client->Get(k8s::resources::Leases(), "kube-node-lease", node0);
  ASSERT_TRUE(lease.ok());
  const std::string first_renew = (*lease)["spec"]["renewTime"];
  EXPECT_TRUE(WaitFor(
      [&] {
        auto again = client->Get(k8s::resources::Leases(), "kube-node-lease", node0);
        return again.ok() && (*again)["spec"]["renewTime"] != first_renew;
      },
      10s));

  ASSERT_TRUE(
      client->Create(k8s::resources::Pods(), ns.name(), SimPodManifest("ok", node0, "1s", ""))
          .ok());
  ASSERT_TRUE(
      client->Create(k8s::resources::Pods(), ns.name(), SimPodManifest("fails", node0, "1s", "3"))
          .ok());
  ASSERT_TRUE(
      client->Create(k8s::resources::Pods(), ns.name(), SimPodManifest("forever", node0, "", ""))
          .ok());
  ASSERT_TRUE(client
                  ->Create(k8s::resources::Pods(), ns.name(),
                           SimPodManifest("elsewhere", "not-a-sim-node", "1s", ""))
                  .ok());

  EXPECT_TRUE(WaitFor([&] { return Phase(*client, ns.name(), "ok") == "Succeeded"; }, 20s));
  EXPECT_TRUE(WaitFor([&] { return Phase(*client, ns.name(), "fails") == "Failed"; }, 20s));
  auto failed = client->Get(k8s::resources::Pods(), ns.name(), "fails");
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ((*failed)["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 3);
  EXPECT_EQ(Phase(*client, ns.name(), "forever"), "Running");
  auto running = client->Get(k8s::resources::Pods(), ns.name(), "forever");
  EXPECT_FALSE((*running)["status"].value("podIP", "").empty());
  EXPECT_EQ(Phase(*client, ns.name(), "elsewhere"), "Pending");  // not ours: untouched

  // Graceful deletion of a running pod: the kubelet finishes it off.
  ASSERT_TRUE(client->Delete(k8s::resources::Pods(), ns.name(), "forever").ok());
  EXPECT_TRUE(WaitFor([&] { return Phase(*client, ns.name(), "forever") == "<gone>"; }, 20s));

  simulator.Stop();
  EXPECT_TRUE(k8s::IsNotFound(client->Get(k8s::resources::Nodes(), "", node0).status()));
  EXPECT_GE(simulator.stats().pods_started.load(), 3u);
  EXPECT_EQ(simulator.stats().write_errors.load(), 0u);
}

}  // namespace
}  // namespace hybridjob::sim
