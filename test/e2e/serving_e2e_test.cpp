// What serves a job's results, end to end with real processes: its
// TensorBoard Deployment, run by kube-controller-manager's deployment and
// replicaset controllers, bound by kube-scheduler beside the gang, started
// by hybridjob-sim --exec, and read where its Service leads. Real
// TensorBoard where it is installed; otherwise a stand-in
// (test/e2e/stand-ins/tensorboard) that answers TensorBoard's /data/runs,
// given to the TensorBoard image with --exec-image-paths.
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include <gtest/gtest.h>

#include <hybridjob/k8s/resource.h>

#include "child_process.h"
#include "exec_system_test.h"
#include "system.h"

namespace hybridjob::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr const char* kTensorboardImage = "tensorflow/tensorflow:2.15.0";  // the controller's

bool TensorboardInstalled() {
  for (const char* dir : {"/usr/local/bin/", "/usr/bin/", "/bin/"}) {
    if (std::filesystem::exists(std::string(dir) + "tensorboard")) {
      return true;
    }
  }
  return false;
}

class ServingEndToEndTest : public ExecSystemTest {
 protected:
  static void SetUpTestSuite() {
    ReplicaOptions replicas;
    if (!TensorboardInstalled()) {
      replicas.sim_args = {"--exec-image-paths",
                           std::string(kTensorboardImage) + "=" + SourceDir() +
                               "/test/e2e/stand-ins:/usr/local/bin:/usr/bin:/bin"};
    }
    StartSystem({.nodes = 2, .gpus_per_node = 4, .scheduler_config = "", .kube_scheduler = true},
                replicas);
  }
};

TEST_F(ServingEndToEndTest, TensorboardServesTheJobsLogDirectoryThroughItsService) {
  std::string output;
  ASSERT_EQ(system_->Apply(R"(apiVersion: batch.hybridjob.io/v1alpha1
kind: HybridJob
metadata:
  name: watched
spec:
  volumes:
  - name: logs
    size: 1Gi
    mountPath: /logs
  tensorboard:
    logDir: /logs/tb
  replicaSpecs:
  - name: worker
    minReplicas: 1
    template:
      spec:
        containers:
        - name: main
          image: busybox
          command: [/bin/sh, -c, 'mkdir -p /logs/tb/train /logs/tb/eval && echo t > /logs/tb/train/events.out.tfevents.1.w0 && echo e > /logs/tb/eval/events.out.tfevents.1.w0 && sleep 2']
)",
                           &output),
            0)
      << output;
  // The Deployment's pod is bound by kube-scheduler, after the gang, to the
  // node of the volume the gang's member wrote. The Service leads to it as
  // kube-proxy follows it: through the EndpointSlices kube-controller-manager
  // keeps for the Service (its ready pods, its port resolved on them).
  std::string address;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto service =
            system_->client().Get(k8s::resources::Services(), "default", "watched-tensorboard");
        if (!service.ok()) {
          return false;
        }
        const std::string port_name = (*service)["spec"]["ports"][0].value("name", "");
        const json slices = json::parse(
            Kubectl("get endpointslices -l kubernetes.io/service-name=watched-tensorboard -o json"),
            nullptr, false);
        std::vector<std::string> ready;
        for (const json& slice : slices.value("items", json::array())) {
          std::string port;
          for (const json& candidate : slice.value("ports", json::array())) {
            if (candidate.value("name", "") == port_name && candidate.contains("port")) {
              port = candidate["port"].dump();
            }
          }
          for (const json& endpoint : slice.value("endpoints", json::array())) {
            if (!port.empty() &&
                endpoint.value("conditions", json::object()).value("ready", false)) {
              ready.push_back(endpoint["addresses"][0].get<std::string>() + ":" + port);
            }
          }
        }
        if (ready.size() != 1) {
          return false;
        }
        address = ready[0];
        return true;
      },
      90s))
      << Kubectl("get svc,endpointslices,deploy,rs,pods -o wide") << system_->Logs();
  EXPECT_EQ(Kubectl("get pods -l batch.hybridjob.io/tensorboard=watched -o "
                    "jsonpath={.items[0].spec.nodeName}"),
            Kubectl("get pod watched-worker-0 -o jsonpath={.spec.nodeName}"));
  EXPECT_EQ(address.substr(address.find(':')), ":6006");

  // What a browser behind the Service asks first: the runs.
  std::string runs;
  ASSERT_TRUE(WaitFor(
      [&] {
        std::filesystem::remove(system_->cluster().dir() + "/tensorboard-runs.log");
        ChildProcess curl(
            {"/usr/bin/curl", "-sS", "--max-time", "5", "http://" + address + "/data/runs"},
            system_->cluster().dir() + "/tensorboard-runs.log");
        curl.WaitForExit(10s);
        runs = curl.Log();
        return runs.find("train") != std::string::npos && runs.find("eval") != std::string::npos;
      },
      60s))
      << runs << "\n"
      << Kubectl("logs deploy/watched-tensorboard") << system_->Logs();
  EXPECT_EQ(json::parse(runs, nullptr, false), json({"eval", "train"})) << runs;
  ASSERT_TRUE(WaitFor([&] { return system_->Phase("watched") == "Succeeded"; }, 60s))
      << system_->Phase("watched");

  // It stays after the job ends: TensorBoard goes when the job is deleted
  // (an ownerReference, unit-tested; the deletion is the garbage collector's).
  EXPECT_EQ(Kubectl("get deploy watched-tensorboard -o jsonpath={.status.availableReplicas}"), "1");
}

}  // namespace
}  // namespace hybridjob::testing
