// hybridjob-sim's simulator against the real kube-apiserver.
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <hybridjob/k8s/api_status.h>
#include <hybridjob/sim/provisioner.h>
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

// A bound pod whose claim is not Bound, or whose ConfigMap does not exist,
// waits in ContainerCreating with a FailedMount Event, as under a kubelet;
// it starts once they are there. The provisioner makes the claim's volume on
// the node selected for it and deletes it once the claim is gone.
TEST(SimulatorTest, APodWaitsForItsVolumesAndTheProvisionerMakesThem) {
  auto client = AdminClient();
  TestNamespace ns(*client);
  SimulatorOptions options;
  options.nodes.name_prefix = "simvol-" + ns.name();
  options.nodes.count = 1;
  options.heartbeat_interval = 30s;
  options.workers = 2;
  Simulator simulator(*client, options);
  const std::string class_name = "simvol-" + ns.name();
  const auto names = simulator.NodeNames();
  Provisioner provisioner(*client, class_name, /*default_class=*/false,
                          std::set<std::string>(names.begin(), names.end()));
  ASSERT_TRUE(provisioner.Start().ok());
  ASSERT_TRUE(simulator.Start().ok());
  const std::string node = names.front();

  json claim = {{"apiVersion", "v1"},
                {"kind", "PersistentVolumeClaim"},
                {"metadata", {{"name", "data"}}},
                {"spec",
                 {{"storageClassName", class_name},
                  {"accessModes", json::array({"ReadWriteOnce"})},
                  {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
  ASSERT_TRUE(client->Create(k8s::resources::PersistentVolumeClaims(), ns.name(), claim).ok());
  json pod = SimPodManifest("mounts", node, "", "");
  pod["spec"]["volumes"] = {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "data"}}}},
                            {{"name", "cluster"}, {"configMap", {{"name", "cluster-spec"}}}}};
  ASSERT_TRUE(client->Create(k8s::resources::Pods(), ns.name(), pod).ok());

  auto waiting_reason = [&] {
    auto object = client->Get(k8s::resources::Pods(), ns.name(), "mounts");
    if (!object || !(*object)["status"].contains("containerStatuses")) {
      return std::string();
    }
    return (*object)["status"]["containerStatuses"][0]["state"]
        .value("waiting", json::object())
        .value("reason", "");
  };
  ASSERT_TRUE(WaitFor([&] { return waiting_reason() == "ContainerCreating"; }, 20s));
  EXPECT_EQ(Phase(*client, ns.name(), "mounts"), "Pending");
  k8s::ListOptions events;
  events.field_selector = "reason=FailedMount";
  EXPECT_TRUE(WaitFor([&] {
    auto list = client->List(k8s::resources::Events(), ns.name(), events);
    return list.ok() && !list->items.empty();
  }));

  // What a scheduler does for a WaitForFirstConsumer claim: the provisioner
  // and the PV controller do the rest.
  const json select = {
      {"metadata", {{"annotations", {{"volume.kubernetes.io/selected-node", node}}}}}};
  ASSERT_TRUE(client
                  ->Patch(k8s::resources::PersistentVolumeClaims(), ns.name(), "data",
                          k8s::PatchType::kMerge, select.dump())
                  .ok());
  std::string volume;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto object = client->Get(k8s::resources::PersistentVolumeClaims(), ns.name(), "data");
        if (!object || (*object)["status"].value("phase", "") != "Bound") {
          return false;
        }
        volume = (*object)["spec"].value("volumeName", "");
        return true;
      },
      30s));
  auto made = client->Get(k8s::resources::PersistentVolumes(), "", volume);
  ASSERT_TRUE(made.ok());
  EXPECT_EQ((*made)["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"]
                   [0]["values"][0],
            node);
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(Phase(*client, ns.name(), "mounts"), "Pending") << "started without its ConfigMap";

  json config_map = {{"apiVersion", "v1"},
                     {"kind", "ConfigMap"},
                     {"metadata", {{"name", "cluster-spec"}}},
                     {"data", {{"TF_CONFIG", "{}"}}}};
  ASSERT_TRUE(client->Create(k8s::resources::ConfigMaps(), ns.name(), config_map).ok());
  EXPECT_TRUE(WaitFor([&] { return Phase(*client, ns.name(), "mounts") == "Running"; }, 20s));

  // The claim goes: its volume is Released, then deleted (reclaim policy Delete).
  k8s::DeleteOptions now;
  now.grace_period_seconds = 0;
  ASSERT_TRUE(client->Delete(k8s::resources::Pods(), ns.name(), "mounts", now).ok());
  ASSERT_TRUE(client->Delete(k8s::resources::PersistentVolumeClaims(), ns.name(), "data").ok());
  EXPECT_TRUE(WaitFor(
      [&] {
        return k8s::IsNotFound(
            client->Get(k8s::resources::PersistentVolumes(), "", volume).status());
      },
      60s))
      << "the provisioned volume was not deleted";
  provisioner.Stop();
  simulator.Stop();
  (void)client->Delete(k8s::resources::StorageClasses(), "", class_name);
}

}  // namespace
}  // namespace hybridjob::sim
