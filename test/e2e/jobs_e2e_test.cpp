// End to end: `kubectl apply` of HybridJobs against the real binaries.
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/k8s/config.h>

#include "manifests.h"
#include "system.h"
#include "tinyproxy.h"

namespace hybridjob::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

TEST(EndToEndTest, TensorflowJobSucceedsAndItsParameterServersAreCleanedUp) {
  System system;
  ASSERT_TRUE(system.ok());
  std::string output;
  ASSERT_EQ(system.Apply(Job("tf", "tensorflow",
                             {Member("chief", 1, 1, 1, "6s"), Member("ps", 2, 2, 0, ""),
                              Member("worker", 2, 4, 1, "")}),
                         &output),
            0)
      << output;
  ASSERT_TRUE(WaitFor([&] { return system.Phase("tf") == "Running"; }, 60s))
      << "phase " << system.Phase("tf") << "\n"
      << system.Logs();
  // The cluster spec lists the bound members. The controller commits the
  // membership to the status first and publishes the ConfigMap with the next
  // write of the same pass, so Running may be seen a moment before it exists.
  Result<json> cluster = NotFound("not read yet");
  ASSERT_TRUE(WaitFor(
      [&] {
        cluster = system.client().Get(k8s::resources::ConfigMaps(), "default", "tf-cluster");
        return cluster.ok();
      },
      10s))
      << cluster.status().ToString();
  const json spec = json::parse((*cluster)["data"]["cluster.json"].get<std::string>());
  EXPECT_EQ(spec["ps"].size(), 2u);
  EXPECT_EQ(spec["worker"].size(), 4u);
  EXPECT_EQ(spec["chief"][0], "tf-chief-0.tf.default.svc:2222");

  ASSERT_TRUE(WaitFor([&] { return system.Phase("tf") == "Succeeded"; }, 60s))
      << "phase " << system.Phase("tf") << "\n"
      << system.Logs();
  // Parameter servers never linger once the job is done.
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const auto& pod : system.Pods("tf")) {
          if (pod["metadata"]["labels"][std::string(api::kRoleLabel)] == "ps") {
            return false;
          }
        }
        return true;
      },
      30s))
      << "ps pods still exist";
  std::string kubectl_out;
  ASSERT_EQ(system.Kubectl("get hj tf", &kubectl_out), 0);
  EXPECT_NE(kubectl_out.find("Succeeded"), std::string::npos) << kubectl_out;
}

TEST(EndToEndTest, TwoCompetingJobsNeverDeadlock) {
  System system(
      {.nodes = 2, .gpus_per_node = 4, .scheduler_config = ""});  // 8 GPUs; each job needs 6
  ASSERT_TRUE(system.ok());
  ASSERT_EQ(system.Apply(Job("a", "pytorch", {Member("worker", 6, 6, 1, "5s")})), 0);
  ASSERT_EQ(system.Apply(Job("b", "pytorch", {Member("worker", 6, 6, 1, "5s")})), 0);
  // Sample while both run their course. The binds of one placement land a few
  // milliseconds apart, so a sample may catch a gang mid-binding; what must
  // never happen is a job holding part of its gang for longer than that.
  std::map<std::string, std::chrono::steady_clock::time_point> partial_since;
  std::chrono::steady_clock::duration longest_partial{};
  const auto deadline = std::chrono::steady_clock::now() + 90s;
  while (std::chrono::steady_clock::now() < deadline &&
         !(system.Phase("a") == "Succeeded" && system.Phase("b") == "Succeeded")) {
    for (const char* job : {"a", "b"}) {
      const int bound = BoundCount(system, job);
      const bool partial = system.Phase(job) != "Succeeded" && bound > 0 && bound < 6;
      const auto now = std::chrono::steady_clock::now();
      if (!partial) {
        partial_since.erase(job);
        continue;
      }
      auto [it, first] = partial_since.try_emplace(job, now);
      longest_partial = std::max(longest_partial, now - it->second);
    }
    std::this_thread::sleep_for(200ms);
  }
  const bool partial_seen = longest_partial > 3s;
  EXPECT_FALSE(partial_seen) << "a job held part of its gang for "
                             << std::chrono::duration<double>(longest_partial).count() << " s";
  EXPECT_EQ(system.Phase("a"), "Succeeded") << system.Logs();
  EXPECT_EQ(system.Phase("b"), "Succeeded") << system.Logs();
}

TEST(EndToEndTest, FailedWorkerIsRestartedWithTheSameIndex) {
  System system;
  ASSERT_TRUE(system.ok());
  // Both workers fail with a retryable code. Once one has been restarted,
  // the fault "goes away": the test tells the simulated kubelet to end the
  // member pods that exist with 0. (Editing the job's template would not do:
  // a running job ignores that edit, and restarted members keep the run's
  // template.) A replacement must be annotated before its run ends, or it
  // fails again and waits out a longer back-off: members run 10 s, which a
  // loaded machine's kubectl does not miss.
  ASSERT_EQ(system.Apply(Job("r", "generic", {Member("worker", 2, 2, 1, "10s", "137", "ExitCode")},
                             "    backoffLimit: 3\n")),
            0);
  ASSERT_TRUE(WaitFor(
      [&] {
        const json job = system.Job("r");
        return !job.is_null() && job.contains("status") &&
               job["status"].value("restartCount", 0) >= 1;
      },
      60s))
      << system.Logs();
  std::set<std::string> fixed;  // pod uids
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const json& pod : system.Pods("r")) {
          const std::string uid = pod["metadata"].value("uid", "");
          if (!uid.empty() && fixed.insert(uid).second) {
            system.Kubectl("annotate pod " + pod["metadata"].value("name", "") +
                           " sim.hybridjob.io/exit-code=0 --overwrite");
          }
        }
        return system.Phase("r") == "Succeeded";
      },
      150s))
      << "phase " << system.Phase("r") << "\n"
      << system.Logs();
  const json job = system.Job("r");
  EXPECT_GE(job["status"].value("restartCount", 0), 1);
  EXPECT_LE(job["status"].value("restartCount", 0), 3);
}

TEST(EndToEndTest, JobThatDoesNotFitWaitsThenRunsWhenTheOtherFinishes) {
  System system({.nodes = 2, .gpus_per_node = 4, .scheduler_config = ""});  // 8 GPUs
  ASSERT_TRUE(system.ok());
  ASSERT_EQ(system.Apply(Job("first", "generic", {Member("worker", 8, 8, 1, "6s")})), 0);
  ASSERT_TRUE(WaitFor([&] { return BoundCount(system, "first") == 8; }, 60s)) << system.Logs();
  ASSERT_EQ(system.Apply(Job("second", "generic", {Member("worker", 4, 4, 1, "3s")})), 0);
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(BoundCount(system, "second"), 0);
  EXPECT_NE(system.Phase("second"), "Running");
  ASSERT_TRUE(WaitFor([&] { return system.Phase("second") == "Succeeded"; }, 90s))
      << "phase " << system.Phase("second") << "\n"
      << system.Logs();
  EXPECT_EQ(system.Phase("first"), "Succeeded");
}

// kube-scheduler binds every pod that is not the gang scheduler's: plain GPU
// pods land on the same simulated nodes as HybridJobs, and both schedulers may
// bind onto one node at once. The simulated kubelet refuses a pod that no
// longer fits (OutOfnvidia.com/gpu); the controller replaces a refused member
// and every job completes. No node ever runs more GPUs than it has.
TEST(EndToEndTest, KubeSchedulerBindsPlainGpuPodsBesideHybridJobs) {
  System system({.nodes = 3, .gpus_per_node = 4, .scheduler_config = "", .kube_scheduler = true});
  ASSERT_TRUE(system.ok());
  std::string plain;
  for (int i = 0; i < 6; ++i) {
    plain += "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: plain-" + std::to_string(i) +
             "\n  annotations:\n    sim.hybridjob.io/duration: \"3s\"\nspec:\n"
             "  restartPolicy: Never\n  containers:\n    - name: main\n      image: tool:1\n"
             "      resources:\n        limits:\n          nvidia.com/gpu: 1\n";
  }
  std::string output;
  ASSERT_EQ(system.Apply(Job("a", "pytorch", {Member("worker", 3, 3, 2, "4s")})), 0);
  ASSERT_EQ(system.Apply(plain, &output), 0) << output;
  ASSERT_EQ(system.Apply(Job("b", "tensorflow",
                             {Member("ps", 1, 1, 0, "4s"), Member("worker", 2, 2, 2, "4s")})),
            0);

  // Sample GPU use per node while everything runs its course.
  int most_on_a_node = 0;
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  auto all_done = [&] {
    if (system.Phase("a") != "Succeeded" || system.Phase("b") != "Succeeded") {
      return false;
    }
    auto pods = system.client().List(k8s::resources::Pods(), "default", {});
    if (!pods.ok()) {
      return false;
    }
    for (const json& pod : pods->items) {
      const std::string phase = pod["status"].value("phase", "");
      if (pod["metadata"]["name"].get<std::string>().rfind("plain-", 0) == 0 &&
          phase != "Succeeded" && phase != "Failed") {
        return false;
      }
    }
    return true;
  };
  while (std::chrono::steady_clock::now() < deadline && !all_done()) {
    auto pods = system.client().List(k8s::resources::Pods(), "default", {});
    if (pods.ok()) {
      std::map<std::string, int> running;
      for (const json& pod : pods->items) {
        if (pod["status"].value("phase", "") != "Running") {
          continue;
        }
        int gpus = 0;
        for (const json& container : pod["spec"]["containers"]) {
          if (container.contains("resources") && container["resources"].contains("limits")) {
            gpus += std::stoi(
                container["resources"]["limits"].value("nvidia.com/gpu", std::string("0")));
          }
        }
        running[pod["spec"].value("nodeName", "")] += gpus;
      }
      for (const auto& [node, gpus] : running) {
        most_on_a_node = std::max(most_on_a_node, gpus);
      }
    }
    std::this_thread::sleep_for(200ms);
  }
  EXPECT_EQ(system.Phase("a"), "Succeeded") << system.Logs();
  EXPECT_EQ(system.Phase("b"), "Succeeded") << system.Logs();
  EXPECT_LE(most_on_a_node, 4) << "a node ran more GPUs than it has";
  // A plain pod has no controller: it either ran, or its kubelet refused it.
  auto pods = system.client().List(k8s::resources::Pods(), "default", {});
  ASSERT_TRUE(pods.ok());
  int plain_seen = 0;
  for (const json& pod : pods->items) {
    const std::string name = pod["metadata"].value("name", "");
    if (name.rfind("plain-", 0) != 0) {
      continue;
    }
    ++plain_seen;
    const std::string phase = pod["status"].value("phase", "");
    EXPECT_TRUE(phase == "Succeeded" ||
                (phase == "Failed" && pod["status"].value("reason", "").rfind("OutOf", 0) == 0))
        << name << " " << pod["status"].dump();
    EXPECT_EQ(pod["spec"].value("schedulerName", ""), "default-scheduler");
  }
  EXPECT_EQ(plain_seen, 6);
}

// The seeds' storage layout on the default WaitForFirstConsumer class: a data
// volume for the workers only, a log volume for every role that outlives the
// job; the same job created again mounts the retained log volume.
TEST(EndToEndTest, PerRoleVolumesAreProvisionedAndARetainedOneIsMountedAgain) {
  System system({.nodes = 2, .gpus_per_node = 4, .scheduler_config = ""});
  ASSERT_TRUE(system.ok());
  const std::string manifest =
      Job("vivo", "tensorflow", {Member("ps", 1, 1, 0, ""), Member("worker", 2, 2, 1, "4s")}) +
      "  volumes:\n"
      "    - name: data\n      size: 1Gi\n      mountPath: /data\n      roles: [worker]\n"
      "    - name: logs\n      size: 1Gi\n      accessModes: [ReadWriteMany]\n"
      "      mountPath: /logs\n      retain: true\n";
  auto claim = [&](const std::string& name) {
    auto object = system.client().Get(k8s::resources::PersistentVolumeClaims(), "default", name);
    return object.ok() ? *object : json();
  };
  auto bound_volume = [&](const std::string& name) {
    const json object = claim(name);
    return !object.is_null() && object["status"].value("phase", "") == "Bound"
               ? object["spec"].value("volumeName", "")
               : std::string();
  };
  std::string output;
  ASSERT_EQ(system.Apply(manifest, &output), 0) << output;
  ASSERT_TRUE(WaitFor([&] { return system.Phase("vivo") == "Running"; }, 60s))
      << system.Phase("vivo") << "\n"
      << system.Logs();
  EXPECT_FALSE(bound_volume("vivo-data").empty());
  const std::string logs_volume = bound_volume("vivo-logs");
  ASSERT_FALSE(logs_volume.empty());
  std::string node;
  for (const json& pod : system.Pods("vivo")) {
    std::set<std::string> claims;
    for (const json& volume : pod["spec"]["volumes"]) {
      if (volume.contains("persistentVolumeClaim")) {
        claims.insert(volume["persistentVolumeClaim"]["claimName"].get<std::string>());
      }
    }
    const bool worker = pod["metadata"]["labels"][std::string(api::kRoleLabel)] == "worker";
    const std::set<std::string> expected = worker ? std::set<std::string>{"vivo-data", "vivo-logs"}
                                                  : std::set<std::string>{"vivo-logs"};
    EXPECT_EQ(claims, expected) << pod["metadata"]["name"];
    // The log volume was provisioned on one node, and holds every member there.
    const std::string on = pod["spec"].value("nodeName", "");
    EXPECT_TRUE(node.empty() || on == node) << on << " and " << node;
    node = on;
  }
  ASSERT_TRUE(WaitFor([&] { return system.Phase("vivo") == "Succeeded"; }, 60s)) << system.Logs();

  // Deleted, the job takes its data claim along and leaves the retained one.
  ASSERT_EQ(system.Kubectl("delete hj vivo --wait=true"), 0);
  ASSERT_TRUE(WaitFor([&] { return claim("vivo-data").is_null(); }, 60s))
      << claim("vivo-data").dump();
  EXPECT_EQ(bound_volume("vivo-logs"), logs_volume);

  // Created again, it mounts the same log volume.
  ASSERT_EQ(system.Apply(manifest, &output), 0) << output;
  ASSERT_TRUE(WaitFor([&] { return system.Phase("vivo") == "Succeeded"; }, 90s))
      << system.Phase("vivo") << "\n"
      << system.Logs();
  EXPECT_EQ(bound_volume("vivo-logs"), logs_volume);
}

// A ResourceQuota that admits the GPUs of only the minimum (2 of 4 workers):
// the job runs at its minimum at once, with a cluster spec of exactly the
// members it has, and the refusal is said on the job.
TEST(EndToEndTest, AQuotaThatAdmitsOnlyTheMinimumRunsTheJobAtItsMinimum) {
  System system({.nodes = 2, .gpus_per_node = 4, .scheduler_config = ""});
  ASSERT_TRUE(system.ok());
  std::string output;
  ASSERT_EQ(system.Apply("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: gpus\n"
                         "spec:\n  hard:\n    requests.nvidia.com/gpu: \"2\"\n",
                         &output),
            0)
      << output;
  // The quota admits nothing until kube-controller-manager has counted it.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto quota =
            system.client().Get(k8s::Resource{"", "v1", "resourcequotas", true}, "default", "gpus");
        return quota.ok() && (*quota)["status"].contains("used");
      },
      30s));
  ASSERT_EQ(system.Apply(Job("capped", "tensorflow",
                             {Member("ps", 1, 1, 0, ""), Member("worker", 2, 4, 1, "5s")}),
                         &output),
            0)
      << output;
  // Well before the scheduler's 300 s wait for missing members.
  ASSERT_TRUE(WaitFor([&] { return system.Phase("capped") == "Running"; }, 60s))
      << "phase " << system.Phase("capped") << "\n"
      << system.Job("capped")["status"].dump(2) << "\n"
      << system.Logs();
  Result<json> cluster = NotFound("not read yet");
  ASSERT_TRUE(WaitFor(
      [&] {
        cluster = system.client().Get(k8s::resources::ConfigMaps(), "default", "capped-cluster");
        return cluster.ok();
      },
      10s))
      << cluster.status().ToString();
  const json spec = json::parse((*cluster)["data"]["cluster.json"].get<std::string>());
  EXPECT_EQ(spec["ps"], json({"capped-ps-0.capped.default.svc:2222"}));
  EXPECT_EQ(spec["worker"], json({"capped-worker-0.capped.default.svc:2222",
                                  "capped-worker-1.capped.default.svc:2222"}));
  const json status = system.Job("capped")["status"];
  for (const json& replica : status["replicaStatuses"]) {
    EXPECT_EQ(replica["members"], replica["name"] == "worker" ? 2 : 1) << replica.dump();
  }
  std::set<std::string> pods;
  for (const json& pod : system.Pods("capped")) {
    pods.insert(pod["metadata"]["name"].get<std::string>());
    EXPECT_FALSE(pod["spec"].value("nodeName", "").empty()) << pod["metadata"]["name"];
  }
  EXPECT_EQ(pods, (std::set<std::string>{"capped-ps-0", "capped-worker-0", "capped-worker-1"}));
  ASSERT_EQ(system.Kubectl("get events --field-selector reason=FailedCreate", &output), 0);
  EXPECT_NE(output.find("exceeded quota: gpus"), std::string::npos) << output;

  ASSERT_TRUE(WaitFor([&] { return system.Phase("capped") == "Succeeded"; }, 60s))
      << system.Phase("capped") << "\n"
      << system.Logs();
}

// The three binaries and the kubectl plugin read KUBECONFIG as kubectl does:
// two files, the first winning per key (its current-context and user; the
// second's cluster), and reach the API server only through the cluster's
// proxy-url, a real HTTP proxy (Debian's tinyproxy).
TEST(KubeconfigEndToEndTest, BinariesAndThePluginReadATwoFileKubeconfigAndUseItsProxy) {
  Tinyproxy proxy;
  ASSERT_TRUE(proxy.ready()) << proxy.Log();
  auto two_files = [&](const PrivateCluster& cluster) {
    auto admin = k8s::LoadKubeconfigFile(cluster.kubeconfig());
    EXPECT_TRUE(admin.ok()) << admin.status().ToString();
    const std::string dir = cluster.dir();
    std::ofstream(dir + "/ca.pem") << admin->ca_pem;
    std::ofstream(dir + "/user.kubeconfig")
        << "apiVersion: v1\nkind: Config\ncurrent-context: proxied\n"
           "contexts:\n- name: proxied\n  context: {cluster: local, user: admin, namespace: "
           "default}\n"
           "users:\n- name: admin\n  user: {token: "
        << admin->bearer_token << "}\n";
    // The second file's own current-context and user lose to the first's.
    std::ofstream(dir + "/clusters.kubeconfig")
        << "apiVersion: v1\nkind: Config\ncurrent-context: elsewhere\n"
           "clusters:\n- name: local\n  cluster:\n    server: "
        << admin->server << "\n    certificate-authority: " << dir
        << "/ca.pem\n    proxy-url: " << proxy.url()
        << "\n- name: nowhere\n  cluster: {server: 'https://127.0.0.1:1'}\n"
           "contexts:\n- name: elsewhere\n  context: {cluster: nowhere, user: admin}\n"
           "users:\n- name: admin\n  user: {token: not-the-token}\n";
    return dir + "/user.kubeconfig:" + dir + "/clusters.kubeconfig";
  };
  System system({.nodes = 2,
                 .gpus_per_node = 4,
                 .scheduler_config = "",
                 .kube_scheduler = false,
                 .kubeconfig_env = two_files});
  ASSERT_TRUE(system.ok()) << system.Logs();
  ASSERT_EQ(system.Apply(Job("proxied", "pytorch", {Member("worker", 2, 2, 1, "2s")})), 0);
  ASSERT_TRUE(WaitFor([&] { return system.Phase("proxied") == "Succeeded"; }, 60s))
      << system.Phase("proxied") << "\n"
      << proxy.Log() << system.Logs();
  // The simulator, the scheduler and the controller each opened tunnels.
  EXPECT_GE(proxy.Tunnels(), 3) << proxy.Log();

  const int before = proxy.Tunnels();
  std::string output;
  ASSERT_EQ(RunCommand(BinaryDir() + "/kubectl-hybridjob status proxied", &output), 0) << output;
  EXPECT_NE(output.find("Succeeded"), std::string::npos) << output;
  EXPECT_GT(proxy.Tunnels(), before) << proxy.Log();
  ::unsetenv("KUBECONFIG");
}

}  // namespace
}  // namespace hybridjob::testing
