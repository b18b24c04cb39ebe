// deploy/ against a real API server: the kustomize base applies (server-side
// dry run first), and both binaries, run out of cluster with tokens of the
// base's ServiceAccounts, do their work with exactly the rights the base
// grants; a missing verb is reported as Forbidden instead of a silent hang;
// /metrics parses as Prometheus text; two replicas of each binary fail over
// when the leader is killed. Every test has a private cluster, since deploy/
// is cluster-wide (CRD, ClusterRoles, namespace hybridjob-system).
#include <algorithm>
#include <arpa/inet.h>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <netinet/in.h>
#include <regex>
#include <set>
#include <sstream>
#include <sys/socket.h>
#include <tuple>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/member_signature.h>
#include <hybridjob/k8s/api_status.h>

#include "child_process.h"
#include "test_cluster.h"

namespace hybridjob::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

constexpr const char* kSystem = "hybridjob-system";

k8s::Resource ClusterRoles() {
  return {"rbac.authorization.k8s.io", "v1", "clusterroles", false};
}
k8s::Resource ClusterRoleBindings() {
  return {"rbac.authorization.k8s.io", "v1", "clusterrolebindings", false};
}

std::string Address(int port) {
  return "127.0.0.1:" + std::to_string(port);
}

// curl's answer to `arguments`: the body, or "" with *code -1 when the
// server did not answer.
std::string CurlGet(const std::string& arguments, int* code) {
  std::string output;
  const int rc =
      RunCommand("curl -sS --max-time 5 -o - -w '\\n%{http_code}' " + arguments + " 2>/dev/null",
                 &output);
  const size_t last = output.rfind('\n');
  const int status =
      (rc == 0 && last != std::string::npos) ? std::atoi(output.c_str() + last + 1) : -1;
  if (code != nullptr) {
    *code = status;
  }
  return status > 0 ? output.substr(0, last) : "";
}

// GET http://127.0.0.1:<port><path>, as CurlGet.
std::string HttpGet(int port, const std::string& path, int* code = nullptr) {
  return CurlGet("http://" + Address(port) + path, code);
}

// GET https://127.0.0.1:<port><path> of a binary's self-signed listener, with
// `token` as bearer token when given; as CurlGet.
std::string HttpsGet(int port, const std::string& path, const std::string& token,
                     int* code = nullptr) {
  const std::string header = token.empty() ? "" : "-H 'Authorization: Bearer " + token + "' ";
  return CurlGet("-k " + header + "https://" + Address(port) + path, code);
}

// Prometheus text format, version 0.0.4: every sample line is
// `name{label="value",...} value`; # HELP / # TYPE lines name a metric.
// Samples keyed by `name{labels}` as written; errors name the bad line.
std::map<std::string, double> ParsePrometheus(const std::string& text,
                                              std::vector<std::string>* errors) {
  static const std::regex sample(
      R"(^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*")*\})? (\S+)$)");
  static const std::regex comment(
      R"(^# (HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*|TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (counter|gauge|histogram|summary|untyped))$)");
  std::map<std::string, double> samples;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) {
      continue;
    }
    if (line[0] == '#') {
      if (!std::regex_match(line, comment)) {
        errors->push_back("bad comment line: " + line);
      }
      continue;
    }
    std::smatch match;
    if (!std::regex_match(line, match, sample)) {
      errors->push_back("bad sample line: " + line);
      continue;
    }
    const std::string value = match[7].str();
    double number = 0;
    if (value == "+Inf") {
      number = INFINITY;
    } else if (value == "-Inf") {
      number = -INFINITY;
    } else if (value == "NaN") {
      number = NAN;
    } else {
      size_t used = 0;
      try {
        number = std::stod(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != value.size()) {
        errors->push_back("bad value: " + line);
        continue;
      }
    }
    const std::string key = line.substr(0, line.rfind(' '));
    if (!samples.emplace(key, number).second) {
      errors->push_back("duplicate sample: " + line);
    }
  }
  return samples;
}

bool HasMetric(const std::map<std::string, double>& samples, const std::string& name) {
  for (const auto& [key, value] : samples) {
    if (key == name || key.rfind(name + "{", 0) == 0) {
      return true;
    }
  }
  return false;
}

// A private cluster with deploy/ applied, and the means to run the binaries
// as the base's ServiceAccounts.
class DeployTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.ok());
    admin_ = cluster_.AdminClient();
    ASSERT_NE(admin_, nullptr);
    kubectl_ = cluster_.kubectl() + " --kubeconfig " + cluster_.kubeconfig() + " ";
  }

  void TearDown() override {
    // Binaries first, while the API server still answers.
    processes_.clear();
    if (HasFailure()) {
      for (const auto& [name, log] : final_logs_) {
        std::cerr << "==> " << name << "\n" << log << "\n";
      }
    }
  }

  int Kubectl(const std::string& args, std::string* output = nullptr) {
    std::string out;
    const int rc = RunCommand(kubectl_ + args, &out);
    if (output != nullptr) {
      *output = out;
    }
    return rc;
  }

  // kubectl apply -k deploy/ as an admin would: the namespace, a server-side
  // dry run of everything (which must create nothing), then the real apply.
  void ApplyDeploy() {
    const std::string deploy = SourceDir() + "/deploy";
    std::string output;
    ASSERT_EQ(Kubectl("apply -f " + deploy + "/namespace.yaml", &output), 0) << output;
    ASSERT_EQ(Kubectl("apply -k " + deploy + " --dry-run=server", &output), 0) << output;
    EXPECT_THAT(output, HasSubstr("(server dry run)"));
    EXPECT_TRUE(k8s::IsNotFound(
        admin_->Get(k8s::resources::Deployments(), kSystem, "hybridjob-controller").status()))
        << "the dry run created objects";
    ASSERT_EQ(Kubectl("apply -k " + deploy, &output), 0) << output;
    ASSERT_EQ(Kubectl("wait --for condition=established --timeout=60s "
                      "crd/hybridjobs.batch.hybridjob.io",
                      &output),
              0)
        << output;
  }

  // A kubeconfig for `account` in hybridjob-system, with a token from the
  // TokenRequest API and the cluster's server and CA.
  std::string KubeconfigFor(const std::string& account) {
    const json request = {{"apiVersion", "authentication.k8s.io/v1"},
                          {"kind", "TokenRequest"},
                          {"spec", {{"expirationSeconds", 3600}}}};
    auto response = admin_->CreateSubresource(k8s::resources::ServiceAccounts(), kSystem, account,
                                              "token", request);
    if (!response.ok()) {
      ADD_FAILURE() << "token for " << account << ": " << response.status().ToString();
      return "";
    }
    const std::string token = (*response)["status"].value("token", "");
    EXPECT_FALSE(token.empty()) << response->dump();
    auto admin = k8s::LoadKubeconfigFile(cluster_.kubeconfig());
    if (!admin.ok()) {
      ADD_FAILURE() << admin.status().ToString();
      return "";
    }
    const std::string ca_path = cluster_.dir() + "/" + account + "-ca.crt";
    std::ofstream(ca_path) << admin->ca_pem;
    const std::string path = cluster_.dir() + "/" + account + ".kubeconfig";
    std::ofstream(path) << "apiVersion: v1\n"
                           "kind: Config\n"
                           "clusters:\n"
                           "- name: local\n"
                           "  cluster:\n"
                           "    server: "
                        << admin->server
                        << "\n"
                           "    certificate-authority: "
                        << ca_path
                        << "\n"
                           "users:\n"
                           "- name: "
                        << account
                        << "\n"
                           "  user:\n"
                           "    token: "
                        << token
                        << "\n"
                           "contexts:\n"
                           "- name: local\n"
                           "  context: {cluster: local, user: "
                        << account << ", namespace: " << kSystem
                        << "}\n"
                           "current-context: local\n";
    return path;
  }

  // A token of ServiceAccount `ns`/`account` (made when missing), from the
  // TokenRequest API.
  std::string TokenOf(const std::string& ns, const std::string& account) {
    const json service_account = {{"apiVersion", "v1"},
                                  {"kind", "ServiceAccount"},
                                  {"metadata", {{"name", account}, {"namespace", ns}}}};
    auto made = admin_->Create(k8s::resources::ServiceAccounts(), ns, service_account);
    if (!made.ok() && !k8s::IsAlreadyExists(made.status())) {
      ADD_FAILURE() << made.status().ToString();
      return "";
    }
    const json request = {{"apiVersion", "authentication.k8s.io/v1"},
                          {"kind", "TokenRequest"},
                          {"spec", {{"expirationSeconds", 3600}}}};
    auto response =
        admin_->CreateSubresource(k8s::resources::ServiceAccounts(), ns, account, "token", request);
    if (!response.ok()) {
      ADD_FAILURE() << "token for " << ns << "/" << account << ": "
                    << response.status().ToString();
      return "";
    }
    return (*response)["status"].value("token", "");
  }

  // kubectl create (cluster)rolebinding NAME --(cluster)role=ROLE --serviceaccount=NS:ACCOUNT
  void Bind(const std::string& what, const std::string& arguments) {
    std::string output;
    ASSERT_EQ(Kubectl("create " + what + " " + arguments, &output), 0) << output;
  }

  // A token of Prometheus's account in `ns`, bound to deploy/'s
  // metrics-reader ClusterRole as the admin guide shows.
  std::string ScraperToken(const std::string& ns) {
    const std::string token = TokenOf(ns, "prometheus");
    Bind("clusterrolebinding", "prometheus-metrics --clusterrole=hybridjob-metrics-reader "
                               "--serviceaccount=" + ns + ":prometheus");
    return token;
  }

  ChildProcess& Start(const std::string& name, std::vector<std::string> argv) {
    processes_.push_back(
        std::make_unique<ChildProcess>(std::move(argv), cluster_.dir() + "/logs/" + name + ".log"));
    names_.push_back(name);
    return *processes_.back();
  }

  // hybridjob-sim as the admin (it registers nodes: not a right of deploy/).
  void StartNodes(int nodes = 2) {
    Start("hybridjob-sim", {BinaryDir() + "/hybridjob-sim", "--kubeconfig", cluster_.kubeconfig(),
                            "--nodes", std::to_string(nodes), "--gpus-per-node", "4", "--cpu", "32",
                            "--memory", "256Gi", "--heartbeat-interval", "20s"});
    ASSERT_TRUE(WaitFor(
        [&] {
          auto list = admin_->List(k8s::resources::Nodes(), "", {});
          return list.ok() && static_cast<int>(list->items.size()) == nodes;
        },
        30s))
        << Logs();
  }

  // The container's args of a Deployment of deploy/, as applied.
  std::vector<std::string> DeploymentArgs(const std::string& name) {
    auto deployment = admin_->Get(k8s::resources::Deployments(), kSystem, name);
    if (!deployment.ok()) {
      ADD_FAILURE() << deployment.status().ToString();
      return {};
    }
    return (*deployment)["spec"]["template"]["spec"]["containers"][0]["args"]
        .get<std::vector<std::string>>();
  }

  // hybridjob-controller with the args of deploy/'s Deployment (the
  // downward-API namespace expanded), endpoints moved to free ports.
  ChildProcess& StartControllerAsDeployed(const std::string& name, const std::string& kubeconfig,
                                          int metrics_port, int health_port) {
    std::vector<std::string> argv = {BinaryDir() + "/hybridjob-controller", "--kubeconfig",
                                     kubeconfig};
    for (std::string arg : DeploymentArgs("hybridjob-controller")) {
      const size_t variable = arg.find("$(POD_NAMESPACE)");
      if (variable != std::string::npos) {
        arg.replace(variable, std::string("$(POD_NAMESPACE)").size(), kSystem);
      }
      if (arg.rfind("--metrics-addr=", 0) == 0) {
        arg = "--metrics-addr=" + Address(metrics_port);
      } else if (arg.rfind("--health-addr=", 0) == 0) {
        arg = "--health-addr=" + Address(health_port);
      } else if (arg.rfind("--log-format=", 0) == 0) {
        arg = "--log-format=text";  // readable in failure messages
      } else if (arg.rfind("--member-key-file=", 0) == 0) {
        arg = "--member-key-file=" + MemberKeyFile();  // the Secret's file, here
      }
      argv.push_back(arg);
    }
    return Start(name, argv);
  }

  // gang-scheduler with deploy/'s ConfigMap as its config file and the args
  // of deploy/'s Deployment, endpoints moved to free ports.
  ChildProcess& StartSchedulerAsDeployed(const std::string& name, const std::string& kubeconfig,
                                         int metrics_port, int health_port,
                                         const std::vector<std::string>& extra_args = {}) {
    auto config_map = admin_->Get(k8s::resources::ConfigMaps(), kSystem, "gang-scheduler-config");
    EXPECT_TRUE(config_map.ok()) << config_map.status().ToString();
    const std::string config_path = cluster_.dir() + "/" + name + ".yaml";
    std::ofstream(config_path) << (config_map.ok() ? (*config_map)["data"].value("config.yaml", "")
                                                   : std::string());
    std::vector<std::string> argv = {BinaryDir() + "/gang-scheduler", "--kubeconfig", kubeconfig};
    bool config_flag = false;
    for (std::string arg : DeploymentArgs("gang-scheduler")) {
      if (arg.rfind("--config=", 0) == 0) {
        arg = "--config=" + config_path;
        config_flag = true;
      } else if (arg.rfind("--log-format=", 0) == 0) {
        arg = "--log-format=text";
      } else if (arg.rfind("--member-key-file=", 0) == 0) {
        arg = "--member-key-file=" + MemberKeyFile();
      }
      argv.push_back(arg);
    }
    EXPECT_TRUE(config_flag) << "deploy/'s scheduler gets no --config";
    argv.push_back("--metrics-addr=" + Address(metrics_port));
    argv.push_back("--health-addr=" + Address(health_port));
    argv.insert(argv.end(), extra_args.begin(), extra_args.end());
    return Start(name, argv);
  }

  // What the hybridjob-member-key Secret would hold, as a file the
  // Deployments' --member-key-file points at.
  std::string MemberKeyFile() {
    const std::string path = cluster_.dir() + "/member-key";
    if (!std::ifstream(path)) {
      std::ofstream(path) << std::string(64, 'f') << "\n";
    }
    return path;
  }

  json SmallJob(const std::string& name) const {
    return json::parse(R"({
      "apiVersion": "batch.hybridjob.io/v1alpha1",
      "kind": "HybridJob",
      "metadata": {"name": ")" +
                       name + R"("},
      "spec": {
        "framework": "generic",
        "replicaSpecs": [{
          "name": "worker", "minReplicas": 2, "maxReplicas": 2,
          "template": {
            "metadata": {"annotations": {"sim.hybridjob.io/duration": "1h"}},
            "spec": {"containers": [{
              "name": "worker", "image": "busybox:1.36",
              "resources": {"limits": {"nvidia.com/gpu": 1}}
            }]}
          }
        }]
      }
    })");
  }

  void SubmitJob(const std::string& ns, const std::string& name) {
    auto created = admin_->Create(k8s::resources::HybridJobs(), ns, SmallJob(name));
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  std::string Phase(const std::string& ns, const std::string& name) {
    auto job = admin_->Get(k8s::resources::HybridJobs(), ns, name);
    if (!job.ok() || !job->contains("status") || !(*job)["status"].is_object()) {
      return "";
    }
    return (*job)["status"].value("phase", "");
  }

  bool WaitForPhase(const std::string& ns, const std::string& name, const std::string& phase,
                    std::chrono::milliseconds timeout = 60s) {
    return WaitFor([&] { return Phase(ns, name) == phase; }, timeout);
  }

  std::string Logs() {
    std::string out;
    for (size_t i = 0; i < processes_.size(); ++i) {
      std::string log = processes_[i]->Log();
      if (log.size() > 6000) {
        log = "..." + log.substr(log.size() - 6000);
      }
      out += "==> " + names_[i] + "\n" + log + "\n";
    }
    return out;
  }

  // A ServiceAccount bound to a copy of one of deploy/'s ClusterRoles with
  // one verb taken away from one resource; returns its kubeconfig.
  std::string AccountMissingVerb(const std::string& cluster_role, const std::string& account,
                                 const std::string& resource, const std::string& verb) {
    auto role = admin_->Get(ClusterRoles(), "", cluster_role);
    if (!role.ok()) {
      ADD_FAILURE() << role.status().ToString();
      return "";
    }
    json rules = json::array();
    bool removed = false;
    for (json rule : (*role)["rules"]) {
      if (std::find(rule["resources"].begin(), rule["resources"].end(), resource) !=
          rule["resources"].end()) {
        json verbs = json::array();
        for (const json& v : rule["verbs"]) {
          if (v == verb) {
            removed = true;
          } else {
            verbs.push_back(v);
          }
        }
        if (verbs.empty()) {
          continue;
        }
        rule["verbs"] = verbs;
      }
      rules.push_back(rule);
    }
    EXPECT_TRUE(removed) << cluster_role << " has no " << verb << " " << resource;
    const json copy = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                       {"kind", "ClusterRole"},
                       {"metadata", {{"name", account}}},
                       {"rules", rules}};
    const json binding = {
        {"apiVersion", "rbac.authorization.k8s.io/v1"},
        {"kind", "ClusterRoleBinding"},
        {"metadata", {{"name", account}}},
        {"roleRef",
         {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "ClusterRole"}, {"name", account}}},
        {"subjects",
         json::array({{{"kind", "ServiceAccount"}, {"name", account}, {"namespace", kSystem}}})}};
    const json service_account = {{"apiVersion", "v1"},
                                  {"kind", "ServiceAccount"},
                                  {"metadata", {{"name", account}, {"namespace", kSystem}}}};
    for (const auto& [resource_type, ns, object] :
         std::vector<std::tuple<k8s::Resource, std::string, json>>{
             {k8s::resources::ServiceAccounts(), kSystem, service_account},
             {ClusterRoles(), "", copy},
             {ClusterRoleBindings(), "", binding}}) {
      auto created = admin_->Create(resource_type, ns, object);
      if (!created.ok()) {
        ADD_FAILURE() << created.status().ToString();
        return "";
      }
    }
    return KubeconfigFor(account);
  }

  // Keeps the logs of stopped or killed processes for failure output.
  void Remember(const std::string& name, const ChildProcess& process) {
    final_logs_[name] = process.Log();
  }

  PrivateCluster cluster_;  // destroyed last
  std::unique_ptr<k8s::RestClient> admin_;
  std::string kubectl_;
  std::vector<std::unique_ptr<ChildProcess>> processes_;
  std::vector<std::string> names_;
  std::map<std::string, std::string> final_logs_;
};

TEST_F(DeployTest, KustomizeBaseRendersDryRunsAndAppliesIdempotently) {
  std::string output;
  // kubectl 1.20's own kustomize (v2.0.3) renders the base.
  ASSERT_EQ(Kubectl("kustomize " + SourceDir() + "/deploy", &output), 0) << output;
  EXPECT_THAT(output, HasSubstr("kind: CustomResourceDefinition"));
  ASSERT_NO_FATAL_FAILURE(ApplyDeploy());
  // A second apply changes nothing.
  ASSERT_EQ(Kubectl("apply -k " + SourceDir() + "/deploy", &output), 0) << output;
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);) {
    EXPECT_THAT(line, HasSubstr(" unchanged")) << output;
  }
  // The API server's RBAC agrees with the least-privilege intent.
  const std::string controller = "--as=system:serviceaccount:hybridjob-system:hybridjob-controller";
  const std::string scheduler = "--as=system:serviceaccount:hybridjob-system:gang-scheduler";
  auto can = [&](const std::string& as, const std::string& what) {
    std::string answer;
    Kubectl("auth can-i " + what + " " + as, &answer);
    // The answer is a line of its own; warnings may come with it.
    std::istringstream lines(answer);
    for (std::string line; std::getline(lines, line);) {
      if (line == "yes") {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(can(controller, "create pods -n anywhere"));
  EXPECT_TRUE(
      can(controller, "update hybridjobs.batch.hybridjob.io --subresource=status -n anywhere"));
  EXPECT_TRUE(can(controller, "create deployments.apps -n anywhere"));
  EXPECT_TRUE(can(controller,
                  "update leases.coordination.k8s.io/hybridjob-controller -n "
                  "hybridjob-system"));
  EXPECT_FALSE(can(controller,
                   "update leases.coordination.k8s.io/gang-scheduler -n "
                   "hybridjob-system"));
  EXPECT_FALSE(can(controller, "create leases.coordination.k8s.io -n default"));
  EXPECT_FALSE(can(controller, "create pods --subresource=binding -n anywhere"));
  EXPECT_FALSE(can(controller, "get secrets -n anywhere"));
  EXPECT_FALSE(can(controller, "list secrets -n anywhere"));
  EXPECT_FALSE(can(controller, "update secrets -n anywhere"));
  EXPECT_TRUE(can(controller, "create secrets -n anywhere"));  // MPI jobs' SSH keys
  EXPECT_FALSE(can(controller, "update hybridjobs.batch.hybridjob.io -n anywhere"));
  EXPECT_TRUE(can(scheduler, "create pods --subresource=binding -n anywhere"));
  EXPECT_TRUE(can(scheduler, "patch pods --subresource=status -n anywhere"));
  EXPECT_TRUE(can(scheduler, "delete pods -n anywhere"));
  EXPECT_TRUE(can(scheduler, "create pods --subresource=eviction -n anywhere"));
  EXPECT_TRUE(can(scheduler, "watch nodes"));
  EXPECT_FALSE(can(scheduler, "create pods -n anywhere"));
  EXPECT_FALSE(can(scheduler, "update nodes"));
  // Read-only: what pods claim is checked against these (docs/security.md).
  EXPECT_TRUE(can(scheduler, "watch hybridjobs.batch.hybridjob.io -n anywhere"));
  EXPECT_TRUE(can(scheduler, "list namespaces"));
  EXPECT_TRUE(can(scheduler, "watch priorityclasses.scheduling.k8s.io"));
  EXPECT_FALSE(can(scheduler, "update hybridjobs.batch.hybridjob.io -n anywhere"));
  EXPECT_FALSE(can(scheduler, "update namespaces"));
  EXPECT_FALSE(can(scheduler, "get secrets -n anywhere"));
}

TEST_F(DeployTest, BinariesRunAJobWithTheServiceAccountsRights) {
  ASSERT_NO_FATAL_FAILURE(ApplyDeploy());
  ASSERT_NO_FATAL_FAILURE(StartNodes());
  const int controller_health = FreeLoopbackPort();
  const int scheduler_health = FreeLoopbackPort();
  ChildProcess& scheduler = StartSchedulerAsDeployed(
      "gang-scheduler", KubeconfigFor("gang-scheduler"), FreeLoopbackPort(), scheduler_health);
  ChildProcess& controller =
      StartControllerAsDeployed("hybridjob-controller", KubeconfigFor("hybridjob-controller"),
                                FreeLoopbackPort(), controller_health);
  // Ready (caches synced) and alive, as the Deployments' probes ask.
  for (const int port : {controller_health, scheduler_health}) {
    int code = 0;
    EXPECT_TRUE(WaitFor(
        [&] {
          HttpGet(port, "/readyz", &code);
          return code == 200;
        },
        30s))
        << "port " << port << " /readyz " << code << "\n"
        << Logs();
    HttpGet(port, "/healthz", &code);
    EXPECT_EQ(code, 200);
  }
  TestNamespace ns(*admin_, "deploy");
  ASSERT_NO_FATAL_FAILURE(SubmitJob(ns.name(), "small"));
  EXPECT_TRUE(WaitForPhase(ns.name(), "small", "Running"))
      << "phase " << Phase(ns.name(), "small") << "\n"
      << Logs();
  EXPECT_TRUE(controller.Running() && scheduler.Running()) << Logs();
  // The members were signed with the Deployments' member key, and placed.
  auto members = admin_->List(k8s::resources::Pods(), ns.name(), {});
  ASSERT_TRUE(members.ok());
  ASSERT_FALSE(members->items.empty());
  for (const json& pod : members->items) {
    EXPECT_TRUE(pod["metadata"]["annotations"].contains(
        std::string(api::kMemberSignatureAnnotation)))
        << pod.dump();
  }
  // Nothing the binaries did was refused: the ClusterRoles are sufficient.
  for (const ChildProcess* process : {&controller, &scheduler}) {
    EXPECT_THAT(process->Log(), ::testing::Not(HasSubstr("members are not signed"))) << Logs();
    EXPECT_THAT(process->Log(), ::testing::Not(HasSubstr("Forbidden"))) << Logs();
    EXPECT_THAT(process->Log(), ::testing::Not(HasSubstr("HTTP 403"))) << Logs();
  }
  // The leader Leases were taken with the Roles of deploy/.
  for (const std::string lease : {"hybridjob-controller", "gang-scheduler"}) {
    EXPECT_TRUE(admin_->Get(k8s::resources::Leases(), kSystem, lease).ok()) << lease;
  }
}

TEST_F(DeployTest, ControllerWithoutCreatePodsReportsForbidden) {
  ASSERT_NO_FATAL_FAILURE(ApplyDeploy());
  const std::string kubeconfig =
      AccountMissingVerb("hybridjob-controller", "controller-no-create-pods", "pods", "create");
  ASSERT_FALSE(kubeconfig.empty());
  ChildProcess& controller =
      Start("hybridjob-controller",
            {BinaryDir() + "/hybridjob-controller", "--kubeconfig", kubeconfig, "--metrics-addr",
             "0", "--health-addr", "0", "--log-format", "text"});
  TestNamespace ns(*admin_, "forbidden");
  ASSERT_NO_FATAL_FAILURE(SubmitJob(ns.name(), "denied"));
  // The log names the verb, the resource and the account within seconds.
  const std::string expected = "cannot create resource \"pods\"";
  EXPECT_TRUE(WaitFor([&] { return controller.Log().find(expected) != std::string::npos; }, 30s))
      << Logs();
  EXPECT_THAT(controller.Log(), HasSubstr("HTTP 403"));
  EXPECT_THAT(controller.Log(), HasSubstr("controller-no-create-pods"));
  EXPECT_TRUE(controller.Running()) << "a missing right must not crash the controller\n" << Logs();
}

TEST_F(DeployTest, SchedulerWithoutBindingReportsForbiddenAndBindsNothing) {
  ASSERT_NO_FATAL_FAILURE(ApplyDeploy());
  ASSERT_NO_FATAL_FAILURE(StartNodes());
  const std::string kubeconfig =
      AccountMissingVerb("gang-scheduler", "scheduler-no-binding", "pods/binding", "create");
  ASSERT_FALSE(kubeconfig.empty());
  ChildProcess& scheduler = Start(
      "gang-scheduler", {BinaryDir() + "/gang-scheduler", "--kubeconfig", kubeconfig,
                         "--metrics-addr", "0", "--health-addr", "0", "--log-format", "text"});
  StartControllerAsDeployed("hybridjob-controller", KubeconfigFor("hybridjob-controller"),
                            FreeLoopbackPort(), FreeLoopbackPort());
  TestNamespace ns(*admin_, "forbidden");
  ASSERT_NO_FATAL_FAILURE(SubmitJob(ns.name(), "unbound"));
  const std::string expected = "cannot create resource \"pods/binding\"";
  EXPECT_TRUE(WaitFor([&] { return scheduler.Log().find(expected) != std::string::npos; }, 45s))
      << Logs();
  EXPECT_THAT(scheduler.Log(), HasSubstr("HTTP 403"));
  // The gang was rolled back whole, and users see why on the pods' Events.
  EXPECT_TRUE(WaitFor(
      [&] {
        auto events = admin_->List(k8s::resources::Events(), ns.name(), {});
        if (!events.ok()) {
          return false;
        }
        for (const json& event : events->items) {
          if (event.value("reason", "") == "FailedBinding" &&
              event.value("message", "").find("pods/binding") != std::string::npos) {
            return true;
          }
        }
        return false;
      },
      30s))
      << Logs();
  k8s::ListOptions options;
  options.label_selector = std::string(api::kJobNameLabel) + "=unbound";
  auto pods = admin_->List(k8s::resources::Pods(), ns.name(), options);
  ASSERT_TRUE(pods.ok());
  for (const json& pod : pods->items) {
    EXPECT_EQ(pod["spec"].value("nodeName", ""), "") << pod["metadata"]["name"];
  }
  EXPECT_NE(Phase(ns.name(), "unbound"), "Running");
  EXPECT_TRUE(scheduler.Running()) << Logs();
}

TEST_F(DeployTest, MetricsOfBothBinariesAreValidPrometheusText) {
  ASSERT_NO_FATAL_FAILURE(ApplyDeploy());
  ASSERT_NO_FATAL_FAILURE(StartNodes());
  const int controller_metrics = FreeLoopbackPort();
  const int scheduler_metrics = FreeLoopbackPort();
  StartSchedulerAsDeployed("gang-scheduler", KubeconfigFor("gang-scheduler"), scheduler_metrics,
                           FreeLoopbackPort());
  StartControllerAsDeployed("hybridjob-controller", KubeconfigFor("hybridjob-controller"),
                            controller_metrics, FreeLoopbackPort());
  TestNamespace ns(*admin_, "metrics");
  ASSERT_NO_FATAL_FAILURE(SubmitJob(ns.name(), "measured"));
  ASSERT_TRUE(WaitForPhase(ns.name(), "measured", "Running")) << Logs();

  // HTTPS only, and only for a token allowed `get /metrics`: Prometheus's
  // account bound to deploy/'s metrics-reader ClusterRole, as the admin
  // guide shows.
  std::string scraper;
  ASSERT_NO_FATAL_FAILURE(scraper = ScraperToken(ns.name()));
  const std::string stranger = TokenOf(ns.name(), "stranger");
  for (const int port : {controller_metrics, scheduler_metrics}) {
    int code = 0;
    HttpGet(port, "/metrics", &code);
    EXPECT_NE(code, 200) << "plain HTTP on port " << port;
    HttpsGet(port, "/metrics", "", &code);
    EXPECT_EQ(code, 401) << "anonymous on port " << port;
    HttpsGet(port, "/metrics", "not-a-token", &code);
    EXPECT_EQ(code, 401) << "a made-up token on port " << port;
    const std::string refused = HttpsGet(port, "/metrics", stranger, &code);
    EXPECT_EQ(code, 403) << "a token without the role on port " << port;
    EXPECT_THAT(refused, HasSubstr("system:serviceaccount:" + ns.name() + ":stranger"));
  }

  auto scrape = [&](int port) {
    int code = 0;
    const std::string text = HttpsGet(port, "/metrics", scraper, &code);
    EXPECT_EQ(code, 200) << "port " << port;
    std::vector<std::string> errors;
    auto samples = ParsePrometheus(text, &errors);
    EXPECT_THAT(errors, ::testing::IsEmpty()) << text;
    return samples;
  };
  std::map<std::string, double> controller;
  ASSERT_TRUE(WaitFor(
      [&] {
        controller = scrape(controller_metrics);
        return controller["hybridjob_jobs{phase=\"Running\"}"] == 1;
      },
      20s))
      << Logs();
  for (const std::string name :
       {"hybridjob_api_requests_total", "hybridjob_api_request_duration_seconds_bucket",
        "hybridjob_workqueue_depth", "hybridjob_workqueue_queue_duration_seconds_count",
        "hybridjob_workqueue_work_duration_seconds_count", "hybridjob_workqueue_retries_total",
        "hybridjob_controller_reconcile_duration_seconds_bucket",
        "hybridjob_controller_reconcile_duration_seconds_sum",
        "hybridjob_controller_reconcile_duration_seconds_count",
        "hybridjob_controller_reconcile_errors_total", "hybridjob_jobs",
        "hybridjob_controller_leader"}) {
    EXPECT_TRUE(HasMetric(controller, name)) << "controller: " << name;
  }
  EXPECT_GT(controller["hybridjob_controller_reconcile_duration_seconds_count"], 0);
  EXPECT_EQ(controller["hybridjob_controller_leader"], 1);
  // Pods were created: some request answered 201 Created.
  double created = 0;
  for (const auto& [key, value] : controller) {
    if (key.rfind("hybridjob_api_requests_total{", 0) == 0 &&
        key.find("code=\"201\"") != std::string::npos) {
      created += value;
    }
  }
  EXPECT_GT(created, 0);

  std::map<std::string, double> scheduler;
  ASSERT_TRUE(WaitFor(
      [&] {
        scheduler = scrape(scheduler_metrics);
        return scheduler["hybridjob_scheduler_pods_scheduled_total"] == 2;
      },
      20s))
      << Logs();
  for (const std::string name :
       {"hybridjob_api_requests_total", "hybridjob_api_request_duration_seconds_bucket",
        "hybridjob_scheduler_cycles_total", "hybridjob_scheduler_groups_scheduled_total",
        "hybridjob_scheduler_pods_scheduled_total", "hybridjob_scheduler_bind_errors_total",
        "hybridjob_scheduler_groups_rolled_back_total", "hybridjob_scheduler_surplus_pods_total",
        "hybridjob_scheduler_events_dropped_total", "hybridjob_scheduler_pending_groups",
        "hybridjob_scheduler_pending_pods", "hybridjob_scheduler_cycle_duration_seconds",
        "hybridjob_scheduler_allocatable", "hybridjob_scheduler_allocated",
        "hybridjob_scheduler_leader", "hybridjob_scheduler_gang_latency_seconds_bucket",
        "hybridjob_scheduler_gang_latency_seconds_count"}) {
    EXPECT_TRUE(HasMetric(scheduler, name)) << "scheduler: " << name;
  }
  EXPECT_EQ(scheduler["hybridjob_scheduler_groups_scheduled_total"], 1);
  EXPECT_EQ(scheduler["hybridjob_scheduler_gang_latency_seconds_count"], 1);
  EXPECT_EQ(scheduler["hybridjob_scheduler_allocated{resource=\"nvidia.com/gpu\"}"], 2);
  EXPECT_EQ(scheduler["hybridjob_scheduler_allocatable{resource=\"nvidia.com/gpu\"}"], 8);
  EXPECT_EQ(scheduler["hybridjob_scheduler_leader"], 1);
}

// The dashboard as deployed, seen with three tokens: a namespace's reader
// (a Role to list hybridjobs there) sees that namespace's job and its queue,
// no GPU map; hybridjob-viewer (list nodes and hybridjobs everywhere) sees it
// all; a token with neither right gets 403, no token 401. The page renders in
// headless Chromium for the namespace's reader.
TEST_F(DeployTest, TheDashboardShowsEachTokenOnlyWhatItMayList) {
  ASSERT_NO_FATAL_FAILURE(ApplyDeploy());
  ASSERT_NO_FATAL_FAILURE(StartNodes());
  const int dashboard_port = FreeLoopbackPort();
  ChildProcess& scheduler = StartSchedulerAsDeployed(
      "gang-scheduler", KubeconfigFor("gang-scheduler"), FreeLoopbackPort(), FreeLoopbackPort(),
      {"--dashboard-addr=" + Address(dashboard_port)});
  StartControllerAsDeployed("hybridjob-controller", KubeconfigFor("hybridjob-controller"),
                            FreeLoopbackPort(), FreeLoopbackPort());
  TestNamespace team_a(*admin_, "team-a");
  TestNamespace team_b(*admin_, "team-b");
  ASSERT_NO_FATAL_FAILURE(SubmitJob(team_a.name(), "job-a"));
  ASSERT_NO_FATAL_FAILURE(SubmitJob(team_b.name(), "job-b"));
  ASSERT_TRUE(WaitForPhase(team_a.name(), "job-a", "Running")) << Logs();
  ASSERT_TRUE(WaitForPhase(team_b.name(), "job-b", "Running")) << Logs();

  const std::string reader = TokenOf(team_a.name(), "reader");
  ASSERT_NO_FATAL_FAILURE(Bind("role", "list-jobs -n " + team_a.name() +
                                           " --verb=list --resource=hybridjobs.batch.hybridjob.io"));
  ASSERT_NO_FATAL_FAILURE(Bind("rolebinding", "reader-lists-jobs -n " + team_a.name() +
                                                  " --role=list-jobs --serviceaccount=" +
                                                  team_a.name() + ":reader"));
  const std::string viewer = TokenOf(team_b.name(), "viewer");
  ASSERT_NO_FATAL_FAILURE(Bind("clusterrolebinding", "dashboard-viewer "
                                                     "--clusterrole=hybridjob-viewer "
                                                     "--serviceaccount=" +
                                                         team_b.name() + ":viewer"));
  const std::string nobody = TokenOf(team_a.name(), "nobody");

  int code = 0;
  const std::string page = HttpsGet(dashboard_port, "/", "", &code);
  EXPECT_EQ(code, 401) << "the page without a token\n" << Logs();
  EXPECT_THAT(page, HasSubstr("bearer token")) << "it asks for one";
  HttpsGet(dashboard_port, "/api/state", "", &code);
  EXPECT_EQ(code, 401);
  const std::string refused = HttpsGet(dashboard_port, "/api/state", nobody, &code);
  EXPECT_EQ(code, 403) << refused;
  EXPECT_THAT(refused, HasSubstr(":nobody"));
  HttpGet(dashboard_port, "/api/state", &code);
  EXPECT_NE(code, 200) << "no plain HTTP";

  // The reader: job-a, its queue, nothing of team-b, no map.
  json state;
  ASSERT_TRUE(WaitFor(
      [&] {
        const std::string text = HttpsGet(dashboard_port, "/api/state", reader, &code);
        state = code == 200 ? json::parse(text, nullptr, false) : json();
        return state.is_object() && state["running"].size() == 1;
      },
      20s))
      << code << " " << state.dump() << "\n"
      << Logs();
  EXPECT_EQ(state["running"][0]["name"], "job-a");
  EXPECT_EQ(state["running"][0]["namespace"], team_a.name());
  EXPECT_TRUE(state["gpuMap"].is_null());
  EXPECT_EQ(state.dump().find("job-b"), std::string::npos) << state.dump();
  EXPECT_EQ(state.dump().find(team_b.name()), std::string::npos) << state.dump();

  // hybridjob-viewer: both jobs and the map.
  const json all = json::parse(HttpsGet(dashboard_port, "/api/state", viewer, &code), nullptr, false);
  ASSERT_EQ(code, 200);
  std::set<std::string> running;
  for (const json& job : all["running"]) {
    running.insert(job["name"].get<std::string>());
  }
  EXPECT_EQ(running, (std::set<std::string>{"job-a", "job-b"}));
  ASSERT_TRUE(all["gpuMap"].is_object());
  EXPECT_EQ(all["gpuMap"]["usedGpus"], "4");

  // The page in a browser, with the reader's token in the address.
  const std::string profile = cluster_.dir() + "/chromium-profile";
  std::string dom;
  ASSERT_EQ(RunCommand("chromium --headless --no-sandbox --disable-gpu --ignore-certificate-errors "
                       "--disable-dev-shm-usage --user-data-dir=" +
                           profile + " --virtual-time-budget=5000 --dump-dom 'https://" +
                           Address(dashboard_port) + "/#token=" + reader + "' 2>/dev/null",
                       &dom),
            0)
      << dom;
  EXPECT_THAT(dom, HasSubstr(team_a.name() + "/job-a"));
  EXPECT_EQ(dom.find("job-b"), std::string::npos);
  EXPECT_THAT(dom, HasSubstr("need a token that may list nodes"));
  EXPECT_TRUE(scheduler.Running()) << Logs();
}

TEST_F(DeployTest, KilledLeadersAreReplacedByTheirStandbys) {
  ASSERT_NO_FATAL_FAILURE(ApplyDeploy());
  ASSERT_NO_FATAL_FAILURE(StartNodes());
  // Short durations so the test fails over in seconds; deploy/ uses 15s/10s/2s.
  const std::vector<std::string> durations = {"--leader-election-lease-duration=6s",
                                              "--leader-election-renew-deadline=4s",
                                              "--leader-election-retry-period=1s"};
  const std::string scheduler_config = cluster_.dir() + "/scheduler-ha.yaml";
  std::ofstream(scheduler_config) << "leaderElection:\n"
                                     "  enabled: true\n"
                                     "  leaseDuration: 6s\n"
                                     "  renewDeadline: 4s\n"
                                     "  retryPeriod: 1s\n";
  const std::string controller_kubeconfig = KubeconfigFor("hybridjob-controller");
  const std::string scheduler_kubeconfig = KubeconfigFor("gang-scheduler");
  std::string scraper;
  ASSERT_NO_FATAL_FAILURE(scraper = ScraperToken(kSystem));

  struct Replica {
    ChildProcess* process;
    int metrics_port;
    std::string name;
  };
  std::vector<Replica> controllers;
  std::vector<Replica> schedulers;
  for (int i = 0; i < 2; ++i) {
    const int port = FreeLoopbackPort();
    std::vector<std::string> argv = {BinaryDir() + "/hybridjob-controller",
                                     "--kubeconfig",
                                     controller_kubeconfig,
                                     "--leader-elect",
                                     "--metrics-addr",
                                     Address(port),
                                     "--health-addr",
                                     "0"};
    argv.insert(argv.end(), durations.begin(), durations.end());
    const std::string name = "hybridjob-controller-" + std::to_string(i);
    controllers.push_back({&Start(name, argv), port, name});
  }
  for (int i = 0; i < 2; ++i) {
    const int port = FreeLoopbackPort();
    const std::string name = "gang-scheduler-" + std::to_string(i);
    schedulers.push_back({&Start(name, {BinaryDir() + "/gang-scheduler", "--kubeconfig",
                                        scheduler_kubeconfig, "--config", scheduler_config,
                                        "--metrics-addr", Address(port), "--health-addr", "0"}),
                          port, name});
  }

  // Which replica leads, by its hybridjob_*_leader gauge; -1 until exactly one
  // does and the other answers 0.
  auto leader_of = [&](const std::vector<Replica>& replicas, const std::string& gauge) {
    int leader = -1;
    for (size_t i = 0; i < replicas.size(); ++i) {
      if (!replicas[i].process->Running()) {
        continue;
      }
      std::vector<std::string> errors;
      auto samples =
          ParsePrometheus(HttpsGet(replicas[i].metrics_port, "/metrics", scraper), &errors);
      auto it = samples.find(gauge);
      if (it == samples.end()) {
        return -1;
      }
      if (it->second == 1) {
        if (leader >= 0) {
          return -1;  // two leaders: never acceptable, and not settled
        }
        leader = static_cast<int>(i);
      }
    }
    return leader;
  };
  auto holder = [&](const std::string& lease) {
    auto object = admin_->Get(k8s::resources::Leases(), kSystem, lease);
    return object.ok() ? (*object)["spec"].value("holderIdentity", "") : std::string();
  };

  int controller_leader = -1;
  int scheduler_leader = -1;
  ASSERT_TRUE(WaitFor(
      [&] {
        controller_leader = leader_of(controllers, "hybridjob_controller_leader");
        scheduler_leader = leader_of(schedulers, "hybridjob_scheduler_leader");
        return controller_leader >= 0 && scheduler_leader >= 0;
      },
      30s))
      << Logs();
  const std::string controller_holder = holder("hybridjob-controller");
  const std::string scheduler_holder = holder("gang-scheduler");
  EXPECT_FALSE(controller_holder.empty());
  EXPECT_FALSE(scheduler_holder.empty());

  TestNamespace ns(*admin_, "failover");
  ASSERT_NO_FATAL_FAILURE(SubmitJob(ns.name(), "before"));
  ASSERT_TRUE(WaitForPhase(ns.name(), "before", "Running")) << Logs();

  // A crash, not a clean stop: the Lease is not released.
  for (const Replica* leader : {&controllers[static_cast<size_t>(controller_leader)],
                                &schedulers[static_cast<size_t>(scheduler_leader)]}) {
    leader->process->Kill();
    Remember(leader->name, *leader->process);
  }
  const auto killed_at = std::chrono::steady_clock::now();
  const int controller_standby = 1 - controller_leader;
  const int scheduler_standby = 1 - scheduler_leader;
  EXPECT_TRUE(WaitFor(
      [&] {
        return leader_of(controllers, "hybridjob_controller_leader") == controller_standby &&
               leader_of(schedulers, "hybridjob_scheduler_leader") == scheduler_standby;
      },
      30s))
      << Logs();
  const double failover_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count();
  // Takeover waits for the lease to expire: about leaseDuration plus a retry.
  EXPECT_LT(failover_seconds, 20) << Logs();
  EXPECT_NE(holder("hybridjob-controller"), controller_holder);
  EXPECT_NE(holder("gang-scheduler"), scheduler_holder);
  EXPECT_FALSE(holder("hybridjob-controller").empty());

  // The new leaders do the work.
  ASSERT_NO_FATAL_FAILURE(SubmitJob(ns.name(), "after"));
  EXPECT_TRUE(WaitForPhase(ns.name(), "after", "Running")) << Logs();
  EXPECT_EQ(Phase(ns.name(), "before"), "Running");
  EXPECT_TRUE(controllers[static_cast<size_t>(controller_standby)].process->Running());
  EXPECT_TRUE(schedulers[static_cast<size_t>(scheduler_standby)].process->Running());
}

}  // namespace
}  // namespace hybridjob::testing
