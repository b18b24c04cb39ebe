#include "test_cluster.h"

#include <arpa/inet.h>
#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <netinet/in.h>
#include <random>
#include <set>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cluster_reset.h"

namespace hybridjob::testing {

std::string ClusterDir() {
  const char* dir = std::getenv("HYBRIDJOB_TEST_CLUSTER_DIR");  // NOLINT(concurrency-mt-unsafe)
  return dir == nullptr ? std::string() : std::string(dir);
}

std::string KubeconfigPath() {
  return ClusterDir() + "/kubeconfig";
}

namespace {
// Set for the tests of a binary that share one cluster (hybridjob_test's
// SHARED_CLUSTER); they have no HYBRIDJOB_TEST_CLUSTER_DIR.
std::string SharedClusterDir() {
  const char* dir = std::getenv("HYBRIDJOB_SHARED_CLUSTER_DIR");  // NOLINT(concurrency-mt-unsafe)
  return dir == nullptr ? std::string() : std::string(dir);
}

// Where the cluster in `cluster_dir` found its Kubernetes binaries.
std::string BinDirOf(const std::string& cluster_dir) {
  std::ifstream in(cluster_dir + "/k8s-bin-dir");
  std::string dir;
  std::getline(in, dir);
  return dir;
}
}  // namespace

std::string KubernetesBinDir() {
  return BinDirOf(ClusterDir().empty() ? SharedClusterDir() : ClusterDir());
}

Result<k8s::ClientConfig> AdminConfig() {
  if (ClusterDir().empty()) {
    return InvalidArgument(
        "HYBRIDJOB_TEST_CLUSTER_DIR is not set: run integration tests via ctest");
  }
  auto config = k8s::LoadKubeconfigFile(KubeconfigPath());
  if (config) {
    config->qps = 500;
    config->burst = 1000;
  }
  return config;
}

std::unique_ptr<k8s::RestClient> AdminClient() {
  auto config = AdminConfig();
  if (!config) {
    std::cerr << "integration test: " << config.status().ToString() << "\n";
    std::abort();
  }
  auto client = k8s::RestClient::Create(*config);
  if (!client) {
    std::cerr << "integration test: " << client.status().ToString() << "\n";
    std::abort();
  }
  return std::move(*client);
}

bool WaitFor(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return condition();
}

namespace {
std::string RandomSuffix() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string out;
  for (int i = 0; i < 6; ++i) {
    out.push_back(kChars[rng() % (sizeof(kChars) - 1)]);
  }
  return out;
}
}  // namespace

TestNamespace::TestNamespace(k8s::ApiClient& client, const std::string& prefix)
    : client_(client), name_(prefix + "-" + RandomSuffix()) {
  nlohmann::json ns = {
      {"apiVersion", "v1"},
      {"kind", "Namespace"},
      {"metadata", {{"name", name_}, {"labels", {{"hybridjob.io/test", "true"}}}}}};
  auto created = client_.Create(k8s::resources::Namespaces(), "", ns);
  if (!created) {
    ADD_FAILURE() << "create namespace " << name_ << ": " << created.status().ToString();
    return;
  }
  // The v1.20 ServiceAccount admission refuses pods until the tokens
  // controller has linked a token secret to the account, which can lag the
  // account itself on a busy machine.
  const bool ready = WaitFor(
      [&] {
        auto account = client_.Get(k8s::resources::ServiceAccounts(), name_, "default");
        if (!account.ok()) {
          return false;
        }
        const auto secrets = account->find("secrets");
        return secrets != account->end() && secrets->is_array() && !secrets->empty();
      },
      std::chrono::seconds(60));
  if (!ready) {
    ADD_FAILURE() << "namespace " << name_ << " got no default ServiceAccount with a token";
  }
}

TestNamespace::~TestNamespace() {
  k8s::DeleteOptions options;
  options.propagation_policy = "Background";
  (void)client_.Delete(k8s::resources::Namespaces(), "", name_, options);
}

std::string SourceDir() {
  return HYBRIDJOB_SOURCE_DIR;
}
std::string BinaryDir() {
  return HYBRIDJOB_BIN_DIR;
}

std::string LocalClusterScript() {
  return SourceDir() + "/hack/local-cluster.sh";
}

PrivateCluster::PrivateCluster() {
  if (const std::string shared_dir = SharedClusterDir(); !shared_dir.empty()) {
    ok_ = UseShared(shared_dir);
    return;
  }
  const std::string base =
      ClusterDir().empty() ? "/tmp/hybridjob-cluster" : ClusterDir() + "-private";
  dir_ = cluster_dir_ = base + "-" + RandomSuffix();
  std::string output;
  ok_ = RunCommand(LocalClusterScript() + " up --dir " + dir_, &output) == 0;
  if (!ok_) {
    ADD_FAILURE() << "private cluster did not start:\n" << output;
  }
}

namespace {

// Kills what an earlier test of the binary left running on the shared
// cluster (one that ctest killed at its timeout never stopped its binaries):
// every process that names the cluster's directory, but for the control plane.
void KillLeftovers(const std::string& shared_dir) {
  static const std::set<std::string> kControlPlane = {"etcd", "kube-apiserver",
                                                      "kube-controller-manager"};
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string pid = entry.path().filename();
    if (pid.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(pid) == static_cast<int>(getpid())) {
      continue;
    }
    std::ifstream in(entry.path() / "cmdline");
    std::vector<std::string> argv;
    for (std::string arg; std::getline(in, arg, '\0');) {
      argv.push_back(arg);
    }
    if (argv.empty() ||
        kControlPlane.count(std::filesystem::path(argv[0]).filename().string()) != 0) {
      continue;
    }
    for (const auto& arg : argv) {
      if (arg.find(shared_dir + "/") != std::string::npos) {
        std::cerr << "shared cluster: killing " << argv[0] << " (pid " << pid
                  << "), left running by an earlier test\n";
        ::kill(std::stoi(pid), SIGKILL);
        break;
      }
    }
  }
}

// The shared cluster's control plane sleeps (SIGSTOP) while no test of this
// process uses it, so that after the binary's last test it costs no CPU
// until the cleanup test stops it; an idle control plane keeps about 5 % of a
// core busy, and ctest runs cleanup tests only after the tests of the other
// binaries have started.
int live_shared_clusters = 0;

void SignalControlPlane(const std::string& shared_dir, int signal) {
  for (const char* component : {"etcd", "apiserver", "controller-manager"}) {
    std::ifstream pid_file(shared_dir + "/" + component + ".pid");
    int pid = 0;
    if (pid_file >> pid && pid > 0) {
      ::kill(pid, signal);
    }
  }
}

}  // namespace

bool PrivateCluster::UseShared(const std::string& shared_dir) {
  shared_ = true;
  cluster_dir_ = shared_dir;
  if (live_shared_clusters++ == 0) {
    SignalControlPlane(shared_dir, SIGCONT);  // awake, if an earlier test left it asleep
  }
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  dir_ = shared_dir + "/tests/" +
         (test == nullptr ? std::string("system")
                          : std::string(test->test_suite_name()) + "." + test->name()) +
         "-" + RandomSuffix();
  std::error_code error;
  std::filesystem::create_directories(dir_ + "/logs", error);
  if (error) {
    ADD_FAILURE() << "cannot make " << dir_ << ": " << error.message();
    return false;
  }
  const std::string baseline_path = shared_dir + "/baseline-uids";
  const bool first = !std::filesystem::exists(shared_dir + "/kubeconfig");
  if (first) {
    std::string output;
    if (RunCommand(LocalClusterScript() + " up --dir " + shared_dir, &output) != 0) {
      ADD_FAILURE() << "the shared cluster did not start:\n" << output;
      return false;
    }
  }
  auto client = AdminClient();
  if (!client) {
    return false;
  }
  if (first) {
    auto uids = ObjectUids(*client);
    if (!uids) {
      ADD_FAILURE() << "recording the shared cluster's objects: " << uids.status().ToString();
      return false;
    }
    std::ofstream out(baseline_path);
    for (const auto& uid : *uids) {
      out << uid << "\n";
    }
    return true;
  }
  KillLeftovers(shared_dir);
  std::set<std::string> baseline;
  std::ifstream in(baseline_path);
  for (std::string uid; std::getline(in, uid);) {
    baseline.insert(uid);
  }
  if (baseline.empty()) {
    ADD_FAILURE() << "the shared cluster has no record of its objects in " << baseline_path;
    return false;
  }
  const Status emptied = DeleteAllBut(*client, baseline);
  if (!emptied.ok()) {
    ADD_FAILURE() << "emptying the shared cluster: " << emptied.ToString();
  }
  return emptied.ok();
}

PrivateCluster::~PrivateCluster() {
  if (!shared_) {
    (void)RunCommand(LocalClusterScript() + " down --dir " + cluster_dir_);
  } else if (--live_shared_clusters == 0) {
    SignalControlPlane(cluster_dir_, SIGSTOP);
  }
}

std::string PrivateCluster::kubectl() const {
  return BinDirOf(cluster_dir_) + "/kubectl";
}

std::unique_ptr<k8s::RestClient> PrivateCluster::AdminClient() const {
  auto config = k8s::LoadKubeconfigFile(kubeconfig());
  if (!config) {
    ADD_FAILURE() << config.status().ToString();
    return nullptr;
  }
  config->qps = 500;
  config->burst = 1000;
  auto client = k8s::RestClient::Create(*config);
  if (!client) {
    ADD_FAILURE() << client.status().ToString();
    return nullptr;
  }
  return std::move(*client);
}

bool PrivateCluster::Restart(const std::string& component) const {
  std::string output;
  const int rc = RunCommand(
      LocalClusterScript() + " restart " + component + " --dir " + cluster_dir_, &output);
  if (rc != 0) {
    ADD_FAILURE() << "restart " << component << ":\n" << output;
  }
  return rc == 0;
}

bool PrivateCluster::Stop(const std::string& component) const {
  if (shared_) {
    ADD_FAILURE() << "stopping " << component << " would leave the shared cluster broken for "
                  << "the tests after this one: give the test a cluster of its own";
    return false;
  }
  return RunCommand(LocalClusterScript() + " stop " + component + " --dir " + cluster_dir_) == 0;
}

int64_t PrivateCluster::CompactEtcd() const {
  std::ifstream endpoint_file(cluster_dir_ + "/etcd.endpoint");
  std::string endpoint;
  std::getline(endpoint_file, endpoint);
  // etcd's JSON gateway: a range read answers with the current revision.
  std::string output;
  const std::string curl = "curl -fsS -X POST -H 'Content-Type: application/json' ";
  if (RunCommand(curl + "-d '{\"key\":\"AA==\"}' " + endpoint + "/v3/kv/range", &output) != 0) {
    ADD_FAILURE() << "etcd range read failed:\n" << output;
    return -1;
  }
  const auto range = nlohmann::json::parse(output, nullptr, false);
  if (range.is_discarded() || !range.contains("header") || !range["header"].contains("revision")) {
    ADD_FAILURE() << "etcd range read answered:\n" << output;
    return -1;
  }
  const std::string revision = range["header"]["revision"].get<std::string>();
  if (RunCommand(curl + "-d '{\"revision\":\"" + revision + "\",\"physical\":true}' " + endpoint +
                     "/v3/kv/compaction",
                 &output) != 0) {
    ADD_FAILURE() << "etcd compaction at " << revision << " failed:\n" << output;
    return -1;
  }
  return std::stoll(revision);
}

namespace {

// The low end of the kernel's ephemeral range, which binds to port 0 and
// outgoing connections draw from.
int EphemeralLow() {
  std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
  int low = 0;
  if (range >> low && low > 0) {
    return low;
  }
  return 32768;
}

}  // namespace

int FreeLoopbackPort() {
  // Chosen below the ephemeral range: a port the kernel hands to any process
  // binding port 0 (the simulated kubelet) or connecting out can then never be
  // the one chosen here for a listener that starts a moment later. The kernel
  // may offer a just-closed port again, so each is handed out once.
  static std::set<int> given;
  static std::mt19937 random(std::random_device{}());
  const int low = EphemeralLow();
  const bool below = low > 21000;
  std::uniform_int_distribution<int> pick(20000, below ? low - 1 : 20000);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      return -1;
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(below ? static_cast<uint16_t>(pick(random)) : 0);
    socklen_t length = sizeof(address);
    int port = -1;
    if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port = ntohs(address.sin_port);
    }
    close(fd);
    if (port > 0 && given.insert(port).second) {
      return port;
    }
  }
  return -1;
}

int RunCommand(const std::string& command, std::string* output) {
  const std::string full = command + " 2>&1";
  FILE* pipe = popen(full.c_str(), "r");  // NOLINT(cert-env33-c): test-only helper
  if (pipe == nullptr) {
    return -1;
  }
  std::array<char, 4096> buffer{};
  std::string collected;
  while (fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
    collected += buffer.data();
  }
  const int status = pclose(pipe);
  if (output != nullptr) {
    *output = std::move(collected);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace hybridjob::testing
