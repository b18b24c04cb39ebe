// kubeconfig exec credential plugins against the real kube-apiserver: the
// RestClient and the three binaries authenticate through a test-owned plugin
// that hands out the cluster's admin token and counts its runs.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>

#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/rest_client.h>

#include "child_process.h"
#include "crd.h"
#include "test_cluster.h"

namespace hybridjob::k8s {
namespace {

namespace fs = std::filesystem;
using hybridjob::testing::AdminClient;
using hybridjob::testing::AdminConfig;
using hybridjob::testing::BinaryDir;
using hybridjob::testing::ChildProcess;
using hybridjob::testing::ClusterDir;
using hybridjob::testing::RunCommand;
using hybridjob::testing::TestNamespace;
using hybridjob::testing::WaitFor;
using nlohmann::json;
using namespace std::chrono_literals;

struct Plugin {
  int lifetime_seconds = 0;  // 0: no expirationTimestamp
  int bad_runs = 0;          // the first runs hand out a token the server refuses
  bool fail = false;         // exit 1 with a message on stderr
  std::string command = "./plugin.sh";
  std::string script = "";  // replaces the generated script when set
};

class ExecCredentialTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto admin = AdminConfig();
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    admin_ = *admin;
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(ClusterDir()) /
           ("exec-" + std::string(info->name()) + "-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }

  void TearDown() override { fs::remove_all(dir_); }

  // The plugin script and a kubeconfig whose user runs it; returns the
  // kubeconfig's path. The command is relative: it resolves against the
  // kubeconfig's directory.
  std::string WriteKubeconfig(const Plugin& plugin) {
    std::string script =
        "#!/bin/sh\n"
        "dir=$(dirname \"$0\")\n"
        "echo \"$PLUGIN_MODE $*\" >> \"$dir/runs\"\n"
        "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$dir/exec-info\"\n";
    if (!plugin.script.empty()) {
      script += plugin.script;
    } else if (plugin.fail) {
      script += "echo 'error: not logged in, run the login command' >&2\nexit 1\n";
    } else {
      script += "token=" + admin_.bearer_token + "\n";
      script += "[ \"$(wc -l < \"$dir/runs\")\" -le " + std::to_string(plugin.bad_runs) +
                " ] && token=refused-token\n";
      std::string status = R"("token":"%s")";
      std::string values = "\"$token\"";
      if (plugin.lifetime_seconds > 0) {
        script += "expiry=$(date -u -d '+" + std::to_string(plugin.lifetime_seconds) +
                  " seconds' +%Y-%m-%dT%H:%M:%SZ)\n";
        status += R"(,"expirationTimestamp":"%s")";
        values += " \"$expiry\"";
      }
      script +=
          "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\","
          "\"kind\":\"ExecCredential\",\"status\":{" +
          status + "}}\\n' " + values + "\n";
    }
    const fs::path script_path = dir_ / "plugin.sh";
    std::ofstream(script_path) << script;
    fs::permissions(script_path, fs::perms::owner_all, fs::perm_options::replace);
    std::ofstream(dir_ / "ca.crt") << admin_.ca_pem;
    const fs::path kubeconfig = dir_ / "kubeconfig";
    std::ofstream(kubeconfig) << "apiVersion: v1\n"
                                 "kind: Config\n"
                                 "current-context: exec\n"
                                 "clusters:\n"
                                 "- name: local\n"
                                 "  cluster:\n"
                                 "    server: "
                              << admin_.server
                              << "\n"
                                 "    certificate-authority: ca.crt\n"
                                 "users:\n"
                                 "- name: plugin\n"
                                 "  user:\n"
                                 "    exec:\n"
                                 "      apiVersion: client.authentication.k8s.io/v1\n"
                                 "      command: "
                              << plugin.command
                              << "\n"
                                 "      args: [--cluster, local]\n"
                                 "      env: [{name: PLUGIN_MODE, value: test}]\n"
                                 "      installHint: Install the plugin from the test's dir.\n"
                                 "      provideClusterInfo: true\n"
                                 "      interactiveMode: Never\n"
                                 "contexts:\n"
                                 "- name: exec\n"
                                 "  context: {cluster: local, user: plugin}\n";
    return kubeconfig.string();
  }

  std::unique_ptr<RestClient> ClientFor(const std::string& kubeconfig) {
    auto config = LoadKubeconfigFile(kubeconfig);
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    if (!config.ok()) {
      return nullptr;
    }
    auto client = RestClient::Create(*config);
    EXPECT_TRUE(client.ok()) << client.status().ToString();
    return client.ok() ? std::move(*client) : nullptr;
  }

  int Runs() const {
    std::ifstream in(dir_ / "runs");
    int lines = 0;
    for (std::string line; std::getline(in, line);) {
      EXPECT_EQ(line, "test --cluster local") << "args or env did not reach the plugin";
      ++lines;
    }
    return lines;
  }

  ClientConfig admin_;
  fs::path dir_;
};

json ConfigMap(const std::string& name) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}}},
          {"data", {{"key", "value"}}}};
}

TEST_F(ExecCredentialTest, RestClientWorksWithPluginTokenAndRefreshesBeforeExpiry) {
  auto admin = AdminClient();
  TestNamespace ns(*admin, "exec");
  auto client = ClientFor(WriteKubeconfig({.lifetime_seconds = 3}));
  ASSERT_NE(client, nullptr);
  EXPECT_EQ(Runs(), 0) << "creating a client runs nothing";

  auto created = client->Create(resources::ConfigMaps(), ns.name(), ConfigMap("a"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto list = client->List(resources::ConfigMaps(), ns.name(), {});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(list->items.size(), 1U);
  EXPECT_EQ(Runs(), 1) << "the credential is cached";

  // The plugin was told which cluster it serves.
  std::ifstream info_file(dir_ / "exec-info");
  const json info = json::parse(info_file, nullptr, false);
  ASSERT_FALSE(info.is_discarded());
  EXPECT_EQ(info["apiVersion"], "client.authentication.k8s.io/v1");
  EXPECT_EQ(info["spec"]["interactive"], false);
  EXPECT_EQ(info["spec"]["cluster"]["server"], admin_.server);
  EXPECT_FALSE(info["spec"]["cluster"].value("certificate-authority-data", "").empty());

  // Watches authenticate the same way.
  WatchOptions options;
  options.resource_version = list->resource_version;
  options.timeout = 10s;
  auto watch = client->Watch(resources::ConfigMaps(), ns.name(), options);
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  ASSERT_TRUE(admin->Create(resources::ConfigMaps(), ns.name(), ConfigMap("b")).ok());
  auto event = (*watch)->Next();
  ASSERT_TRUE(event.ok()) << event.status().ToString();
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ((**event).object["metadata"]["name"], "b");
  (*watch)->Cancel();

  // Past the refresh point (a tenth of the lifetime before expiry) the plugin runs again.
  std::this_thread::sleep_for(3s);
  auto again = client->Get(resources::ConfigMaps(), ns.name(), "a");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(Runs(), 2);
}

TEST_F(ExecCredentialTest, FailingOrMissingPluginIsAClearError) {
  auto failing = ClientFor(WriteKubeconfig({.fail = true}));
  ASSERT_NE(failing, nullptr);
  auto list = failing->List(resources::Namespaces(), "", {});
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), StatusCode::kUnauthorized);
  EXPECT_NE(list.status().message().find(
                "./plugin.sh failed with exit code 1: error: not logged in, run the login command"),
            std::string::npos)
      << list.status().ToString();
  EXPECT_EQ(Runs(), 1);

  auto missing = ClientFor(WriteKubeconfig({.command = "./not-installed"}));
  ASSERT_NE(missing, nullptr);
  auto get = missing->Get(resources::Namespaces(), "", "default");
  ASSERT_FALSE(get.ok());
  EXPECT_EQ(get.status().code(), StatusCode::kUnauthorized);
  EXPECT_NE(get.status().message().find("not-installed not found"), std::string::npos)
      << get.status().ToString();
  EXPECT_NE(get.status().message().find("Install the plugin from the test's dir."),
            std::string::npos)
      << get.status().ToString();
}

TEST_F(ExecCredentialTest, UnauthorizedRunsThePluginOnceMoreAndRetriesOnce) {
  auto client = ClientFor(WriteKubeconfig({.bad_runs = 1}));
  ASSERT_NE(client, nullptr);
  auto list = client->List(resources::Namespaces(), "", {});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_EQ(Runs(), 2) << "401 with the first token, a second run, the retry succeeded";
  ASSERT_TRUE(client->Get(resources::Namespaces(), "", "default").ok());
  EXPECT_EQ(Runs(), 2);

  // A plugin whose tokens are always refused: one re-run, one retry, then the 401.
  fs::remove(dir_ / "runs");
  auto refused = ClientFor(WriteKubeconfig({.bad_runs = 1000}));
  ASSERT_NE(refused, nullptr);
  auto get = refused->Get(resources::Namespaces(), "", "default");
  ASSERT_FALSE(get.ok());
  EXPECT_EQ(get.status().code(), StatusCode::kUnauthorized);
  EXPECT_EQ(get.status().http_status(), 401);
  EXPECT_EQ(Runs(), 2);
}

TEST_F(ExecCredentialTest, ClientCertificatesFromThePluginAreUsedAndRotated) {
  // Two client certificates signed by the cluster's CA, for users with no
  // rights: the 403 names the user the server authenticated.
  const std::string pki = ClusterDir() + "/pki";
  for (const std::string n : {"1", "2"}) {
    const std::string base = (dir_ / ("cert" + n)).string();
    std::string output;
    ASSERT_EQ(RunCommand("openssl req -newkey rsa:2048 -nodes -subj /CN=exec-cert-" + n +
                             " -keyout " + base + ".key -out " + base + ".csr && openssl x509 " +
                             "-req -days 1 -in " + base + ".csr -CA " + pki + "/ca.crt -CAkey " +
                             pki + "/ca.key -CAcreateserial -CAserial " +
                             (dir_ / "ca.srl").string() + " -out " + base + ".crt",
                         &output),
              0)
        << output;
    const auto read = [](const std::string& path) {
      std::ifstream in(path);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    };
    // The status fields after the expiry, as JSON.
    const json fields = {{"clientCertificateData", read(base + ".crt")},
                         {"clientKeyData", read(base + ".key")}};
    const std::string dumped = fields.dump();
    std::ofstream(dir_ / ("cert" + n + ".json")) << dumped.substr(1, dumped.size() - 2) << "}}\n";
  }
  Plugin plugin;
  plugin.script =
      "n=$(wc -l < \"$dir/runs\")\n"
      "[ \"$n\" -gt 2 ] && n=2\n"
      "expiry=$(date -u -d '+2 seconds' +%Y-%m-%dT%H:%M:%SZ)\n"
      "printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
      "\"ExecCredential\",\"status\":{\"expirationTimestamp\":\"%s\",' \"$expiry\"\n"
      "cat \"$dir/cert$n.json\"\n";
  auto client = ClientFor(WriteKubeconfig(plugin));
  ASSERT_NE(client, nullptr);
  auto first = client->List(resources::Namespaces(), "", {});
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), StatusCode::kForbidden) << first.status().ToString();
  EXPECT_NE(first.status().message().find("\"exec-cert-1\""), std::string::npos)
      << first.status().ToString();
  EXPECT_EQ(Runs(), 1);
  // After the refresh point the plugin's next certificate is used: the
  // connections are made anew with it.
  std::this_thread::sleep_for(2100ms);
  auto second = client->List(resources::Namespaces(), "", {});
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("\"exec-cert-2\""), std::string::npos)
      << second.status().ToString();
  EXPECT_EQ(Runs(), 2);
}

TEST_F(ExecCredentialTest, BinariesRunAJobWithAnExecKubeconfig) {
  auto admin = AdminClient();
  ASSERT_TRUE(hybridjob::testing::EnsureHybridJobCrd(*admin).ok());
  TestNamespace ns(*admin, "exec");
  // Short-lived tokens, so the binaries refresh while the test runs.
  const std::string kubeconfig = WriteKubeconfig({.lifetime_seconds = 4});
  const std::string scheduler_name = "gang-" + ns.name();
  const fs::path scheduler_config = dir_ / "scheduler.yaml";
  std::ofstream(scheduler_config) << "schedulerName: " << scheduler_name
                                  << "\ngangBackoffSeconds: 1\nleaderElection:\n  enabled: false\n";
  const std::string logs = (dir_ / "logs").string();
  fs::create_directories(logs);
  const std::vector<std::string> endpoints = {"--metrics-addr", "0", "--health-addr", "0"};

  std::vector<std::unique_ptr<ChildProcess>> binaries;
  binaries.push_back(std::make_unique<ChildProcess>(
      std::vector<std::string>{BinaryDir() + "/hybridjob-sim", "--kubeconfig", kubeconfig,
                               "--nodes", "1", "--node-prefix", ns.name(), "--node-labels",
                               "test-pool=" + ns.name(), "--gpus-per-node", "4", "--cpu", "16",
                               "--memory", "64Gi", "--heartbeat-interval", "20s"},
      logs + "/sim.log"));
  std::vector<std::string> scheduler = {BinaryDir() + "/gang-scheduler", "--kubeconfig", kubeconfig,
                                        "--config", scheduler_config.string()};
  scheduler.insert(scheduler.end(), endpoints.begin(), endpoints.end());
  binaries.push_back(std::make_unique<ChildProcess>(scheduler, logs + "/scheduler.log"));
  std::vector<std::string> controller = {BinaryDir() + "/hybridjob-controller", "--kubeconfig",
                                         kubeconfig, "--namespace", ns.name(),
                                         "--allowed-scheduler-names", scheduler_name};
  controller.insert(controller.end(), endpoints.begin(), endpoints.end());
  binaries.push_back(std::make_unique<ChildProcess>(controller, logs + "/controller.log"));
  const auto all_logs = [&] {
    std::string out;
    for (const auto& binary : binaries) {
      out += "==> " + binary->log_path() + "\n" + binary->Log() + "\n";
    }
    return out;
  };

  const json job = json::parse(R"({
    "apiVersion": "batch.hybridjob.io/v1alpha1",
    "kind": "HybridJob",
    "metadata": {"name": "small"},
    "spec": {
      "framework": "generic",
      "schedulerName": ")" + scheduler_name +
                               R"(",
      "replicaSpecs": [{
        "name": "worker", "minReplicas": 2, "maxReplicas": 2,
        "template": {
          "metadata": {"annotations": {"sim.hybridjob.io/duration": "1h"}},
          "spec": {
            "nodeSelector": {"test-pool": ")" +
                               ns.name() + R"("},
            "containers": [{"name": "worker", "image": "busybox:1.36",
                            "resources": {"limits": {"nvidia.com/gpu": 1}}}]
          }
        }
      }]
    }
  })");
  auto created = admin->Create(resources::HybridJobs(), ns.name(), job);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::string phase;
  const bool running = WaitFor(
      [&] {
        auto current = admin->Get(resources::HybridJobs(), ns.name(), "small");
        if (current.ok() && current->contains("status") && (*current)["status"].is_object()) {
          phase = (*current)["status"].value("phase", "");
        }
        return phase == "Running";
      },
      60s);
  EXPECT_TRUE(running) << "phase \"" << phase << "\"\n" << all_logs();
  // Both members were created by the controller, bound by the scheduler to
  // the simulated node, and run by the simulator: all three authenticated.
  // The job is Running once its members are bound; the simulated kubelet
  // reports each pod Running a moment later.
  EXPECT_TRUE(WaitFor(
      [&] {
        auto list = admin->List(resources::Pods(), ns.name(), {});
        if (!list.ok() || list->items.size() != 2) {
          return false;
        }
        return std::all_of(list->items.begin(), list->items.end(), [](const json& pod) {
          return pod["status"].value("phase", "") == "Running";
        });
      },
      30s))
      << all_logs();
  auto pods = admin->List(resources::Pods(), ns.name(), {});
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  EXPECT_EQ(pods->items.size(), 2U);
  for (const json& pod : pods->items) {
    EXPECT_EQ(pod["spec"].value("nodeName", ""), ns.name() + "-0") << pod.dump();
    EXPECT_EQ(pod["status"].value("phase", ""), "Running") << pod.dump();
  }
  EXPECT_GE(Runs(), 3) << "each binary runs the plugin";
  for (const auto& binary : binaries) {
    EXPECT_TRUE(binary->Running()) << all_logs();
    EXPECT_EQ(binary->Log().find("exec plugin"), std::string::npos) << all_logs();
  }
  for (auto& binary : binaries) {
    binary->Stop();
  }
}

}  // namespace
}  // namespace hybridjob::k8s
