// What serves a job's results, end to end with real processes: its
// TensorBoard Deployment, run by kube-controller-manager's deployment and
// replicaset controllers, bound by kube-scheduler beside the gang, started
// by hybridjob-sim --exec, and read where its Service leads. Real
// TensorBoard where it is installed; otherwise a stand-in
// (test/e2e/stand-ins/tensorboard) that answers TensorBoard's /data/runs,
// given to the TensorBoard image with --exec-image-paths.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

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

// The ready addresses ("ip:port") behind a Service's port, as kube-proxy
// reads them: from the EndpointSlices kube-controller-manager keeps for it
// (its ready pods, the Service's port resolved on them). Empty until then.
std::vector<std::string> ReadyEndpoints(System& system, const std::string& service_name) {
  auto service = system.client().Get(k8s::resources::Services(), "default", service_name);
  if (!service.ok()) {
    return {};
  }
  const std::string port_name = (*service)["spec"]["ports"][0].value("name", "");
  std::string listed;
  system.Kubectl("get endpointslices -l kubernetes.io/service-name=" + service_name + " -o json",
                 &listed);
  const json slices = json::parse(listed, nullptr, false);
  std::vector<std::string> ready;
  if (!slices.is_object()) {
    return ready;
  }
  for (const json& slice : slices.value("items", json::array())) {
    std::string port;
    for (const json& candidate : slice.value("ports", json::array())) {
      if (candidate.value("name", "") == port_name && candidate.contains("port")) {
        port = candidate["port"].dump();
      }
    }
    for (const json& endpoint : slice.value("endpoints", json::array())) {
      if (!port.empty() && endpoint.value("conditions", json::object()).value("ready", false)) {
        ready.push_back(endpoint["addresses"][0].get<std::string>() + ":" + port);
      }
    }
  }
  return ready;
}

// The one ready address of a Service, once there is exactly one (within 90 s,
// the time a Deployment's pod takes to be bound, started and seen); empty if
// there never was.
std::string WaitForOneReadyEndpoint(System& system, const std::string& service_name) {
  std::string address;
  WaitFor(
      [&] {
        const std::vector<std::string> ready = ReadyEndpoints(system, service_name);
        address = ready.size() == 1 ? ready[0] : "";
        return !address.empty();
      },
      90s);
  return address;
}

// curl's answer (body, then the HTTP status on its own last line).
std::string Curl(System& system, const std::vector<std::string>& args) {
  const std::string log = system.cluster().dir() + "/curl.log";
  std::filesystem::remove(log);
  std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "--max-time", "5", "-w",
                                   "\n%{http_code}"};
  argv.insert(argv.end(), args.begin(), args.end());
  ChildProcess curl(argv, log);
  curl.WaitForExit(10s);
  return curl.Log();
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
  const std::string address = WaitForOneReadyEndpoint(*system_, "watched-tensorboard");
  ASSERT_FALSE(address.empty()) << Kubectl("get svc,endpointslices,deploy,rs,pods -o wide")
                                << system_->Logs();
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

// Train, serve, develop: examples/exec/train-and-serve.yaml fits a model with
// PyTorch and leaves it on the job's retained volume with its model server;
// `kubectl hybridjob serve` runs that server in a Deployment mounting the
// claim read-only, and its predictions are the trained weights'. `kubectl
// hybridjob notebook` runs Debian's Jupyter on the same claim; its API
// answers through its Service with the token from its Secret, and lists the
// model. Every process is real; every pod is bound by kube-scheduler.
TEST_F(ServingEndToEndTest, ATrainedModelIsServedFromTheJobsVolumeAndOpenedInJupyter) {
  std::string output;
  ASSERT_EQ(
      system_->Kubectl("apply -f " + SourceDir() + "/examples/exec/train-and-serve.yaml", &output),
      0)
      << output;
  ASSERT_TRUE(WaitFor([&] { return system_->Phase("linear") == "Succeeded"; }, 120s))
      << system_->Phase("linear") << "\n"
      << Logs("linear-master-0") << system_->Logs();
  // What the trainer learned, as it printed it.
  const std::string trained = Logs("linear-master-0");
  double weight = 0;
  double bias = 0;
  const size_t at = trained.find("trained: weight ");
  ASSERT_NE(at, std::string::npos) << trained;
  ASSERT_EQ(std::sscanf(trained.c_str() + at, "trained: weight %lf bias %lf", &weight, &bias), 2)
      << trained;
  EXPECT_NEAR(weight, 3.0, 0.1) << trained;
  EXPECT_NEAR(bias, -2.0, 0.1) << trained;

  const std::string plugin =
      BinaryDir() + "/kubectl-hybridjob --kubeconfig " + system_->cluster().kubeconfig();
  const int serve_port = FreeLoopbackPort();
  ASSERT_GT(serve_port, 0);
  const std::string port = std::to_string(serve_port);
  ASSERT_EQ(
      RunCommand(plugin +
                     " serve linear --volume model --model-path /models"
                     " --image pytorch/pytorch:1.13.1-cuda11.6-cudnn8-runtime --port " +
                     port + " --replicas 1 -- python3 -u /models/linear/serve.py --port " + port,
                 &output),
      0)
      << output;
  EXPECT_NE(output.find("deployment.apps/linear-serve created"), std::string::npos) << output;
  // The claim is node-local: the command names the node, and the pod runs there.
  const size_t node_at = output.find("can run only on node ");
  ASSERT_NE(node_at, std::string::npos) << output;
  const std::string node =
      output.substr(node_at + 21, output.find_first_of(" ,\n", node_at + 21) - node_at - 21);

  std::string address = WaitForOneReadyEndpoint(*system_, "linear-serve");
  ASSERT_FALSE(address.empty()) << Kubectl("get svc,endpointslices,deploy,rs,pods -o wide")
                                << system_->Logs();
  EXPECT_EQ(address.substr(address.find(':') + 1), port);
  EXPECT_EQ(Kubectl("get pods -l batch.hybridjob.io/serve=linear-serve -o "
                    "jsonpath={.items[0].spec.nodeName}"),
            node);
  // The server is up once it has loaded the model (PyTorch takes a moment to import).
  std::string answer;
  ASSERT_TRUE(WaitFor(
      [&] {
        answer = Curl(*system_, {"http://" + address + "/v1/models/linear"});
        return answer.ends_with("\n200");
      },
      60s))
      << answer << "\n"
      << Kubectl("logs deploy/linear-serve");
  EXPECT_NE(answer.find(R"("state": "AVAILABLE")"), std::string::npos) << answer;

  answer = Curl(*system_,
                {"-H", "Content-Type: application/json", "-d", R"({"instances": [[1.5], [-1.0]]})",
                 "http://" + address + "/v1/models/linear:predict"});
  ASSERT_TRUE(answer.ends_with("\n200")) << answer;
  const json predictions = json::parse(answer.substr(0, answer.rfind('\n')), nullptr, false)
                               .value("predictions", json());
  ASSERT_TRUE(predictions.is_array() && predictions.size() == 2) << answer;
  // The trained weights, as printed to 6 places.
  EXPECT_NEAR(predictions[0][0].get<double>(), weight * 1.5 + bias, 1e-5) << answer;
  EXPECT_NEAR(predictions[1][0].get<double>(), -weight + bias, 1e-5) << answer;
  answer =
      Curl(*system_, {"-d", R"({"inputs": 1})", "http://" + address + "/v1/models/linear:predict"});
  EXPECT_TRUE(answer.ends_with("\n400")) << answer;
  EXPECT_NE(Kubectl("logs deploy/linear-serve").find("serving model linear: weight"),
            std::string::npos);

  // Jupyter on the same volume.
  const int notebook_port = FreeLoopbackPort();
  ASSERT_GT(notebook_port, 0);
  ASSERT_EQ(
      RunCommand(plugin + " notebook linear --port " + std::to_string(notebook_port), &output), 0)
      << output;
  EXPECT_NE(output.find("kubectl port-forward -n default service/linear-notebook"),
            std::string::npos)
      << output;
  address = WaitForOneReadyEndpoint(*system_, "linear-notebook");
  ASSERT_FALSE(address.empty()) << Kubectl("get svc,endpointslices,deploy,rs,pods -o wide")
                                << system_->Logs();
  // As the command says to read it.
  ASSERT_EQ(system_->Kubectl(
                "get secret linear-notebook-token -o jsonpath={.data.token} | base64 -d", &output),
            0)
      << output;
  const std::string token = output;
  ASSERT_GE(token.size(), 32u) << token;
  ASSERT_TRUE(WaitFor(
      [&] {
        answer = Curl(*system_,
                      {"-H", "Authorization: token " + token, "http://" + address + "/api/status"});
        return answer.ends_with("\n200");
      },
      60s))
      << answer << "\n"
      << Kubectl("logs deploy/linear-notebook");
  EXPECT_NE(answer.find(R"("started")"), std::string::npos) << answer;
  // The token guards it.
  answer = Curl(*system_, {"http://" + address + "/api/status"});
  EXPECT_TRUE(answer.ends_with("\n403")) << answer;
  // It opens the job's volume: the model and its server are there.
  answer = Curl(*system_, {"-H", "Authorization: token " + token,
                           "http://" + address + "/api/contents/linear"});
  ASSERT_TRUE(answer.ends_with("\n200")) << answer;
  EXPECT_NE(answer.find(R"("path": "linear/model.pt")"), std::string::npos) << answer;
  EXPECT_NE(answer.find(R"("path": "linear/serve.py")"), std::string::npos) << answer;

  // The documented clean-up removes each set of objects, and only it.
  ASSERT_EQ(system_->Kubectl(
                "delete deployment,service,hpa -l batch.hybridjob.io/serve=linear-serve", &output),
            0)
      << output;
  EXPECT_NE(output.find("deployment.apps \"linear-serve\" deleted"), std::string::npos) << output;
  EXPECT_EQ(Kubectl("get deploy -l batch.hybridjob.io/from-job=linear -o name"),
            "deployment.apps/linear-notebook\n");
}

}  // namespace
}  // namespace hybridjob::testing
