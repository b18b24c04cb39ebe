// hybridjob-sim at scale, against a real kube-apiserver:
//
//   bench_simulator --cluster-dir DIR [--nodes 5000] [--pods 50000] [--duration 60s] [--help]
//
// DIR is a cluster of hack/local-cluster.sh (its kubeconfig, and the pid files
// of its API server and etcd, whose memory is reported too). Runs the
// hybridjob-sim binary with N nodes and measures:
//  - the time until every node is registered and Ready;
//  - how fresh the node Leases stay (the oldest renewTime seen, sampled
//    throughout), i.e. whether the heartbeats keep up;
//  - P pods created already bound (spec.nodeName set, spread evenly), in
//    batches: create rate, time until all Running and all Succeeded (each pod
//    runs --duration), with the rate of each;
//  - the deletion of all of them (graceful, then removed by the simulated
//    kubelet);
//  - the simulator's CPU time and peak RSS, and the API server's and etcd's
//    RSS.
// Prints one Markdown table. Deletes its namespace unless --delete=false (then
// the cluster's teardown does); stopping the simulator removes its nodes.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <hybridjob/api/time.h>
#include <hybridjob/common/flags.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/informer.h>
#include <hybridjob/k8s/rest_client.h>

#include "../common/self_stats.h"
#include "child_process.h"
#include "process_stats.h"

namespace {

using hybridjob::testing::ChildProcess;

using hybridjob::Result;
using hybridjob::Status;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace k8s = hybridjob::k8s;

constexpr const char* kNamespace = "sim-bench";
constexpr const char* kNodePrefix = "sim-node";

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// ---- processes ---------------------------------------------------------------

pid_t ReadPid(const std::string& path) {
  std::ifstream in(path);
  pid_t pid = -1;
  in >> pid;
  return pid;
}

// ---- pods as the harness sees them ------------------------------------------

struct PodPhase {
  std::string name;
  std::string phase;
};

// Counts first arrivals at Running and Succeeded, with the time of the last one.
class PhaseTracker {
 public:
  void Observe(const PodPhase& pod) {
    const bool running = pod.phase == "Running" || pod.phase == "Succeeded";
    const bool succeeded = pod.phase == "Succeeded";
    std::lock_guard lock(mu_);
    auto& seen = seen_[pod.name];
    const auto now = Clock::now();
    if (running && !seen.running) {
      seen.running = true;
      ++running_;
      last_running_ = now;
    }
    if (succeeded && !seen.succeeded) {
      seen.succeeded = true;
      ++succeeded_;
      last_succeeded_ = now;
    }
  }
  int running() const { return running_.load(); }
  int succeeded() const { return succeeded_.load(); }
  Clock::time_point last_running() {
    std::lock_guard lock(mu_);
    return last_running_;
  }
  Clock::time_point last_succeeded() {
    std::lock_guard lock(mu_);
    return last_succeeded_;
  }

 private:
  struct Seen {
    bool running = false;
    bool succeeded = false;
  };
  std::mutex mu_;
  std::unordered_map<std::string, Seen> seen_;
  std::atomic<int> running_{0};
  std::atomic<int> succeeded_{0};
  Clock::time_point last_running_{};
  Clock::time_point last_succeeded_{};
};

json Pod(int index, int nodes, const std::string& duration) {
  char name[32];
  std::snprintf(name, sizeof(name), "pod-%05d", index);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name},
            {"namespace", kNamespace},
            {"annotations", {{"sim.hybridjob.io/duration", duration}}}}},
          {"spec",
           {{"nodeName", std::string(kNodePrefix) + "-" + std::to_string(index % nodes)},
            {"restartPolicy", "Never"},
            {"containers", json::array({{{"name", "main"}, {"image", "trainer:latest"}}})}}}};
}

// ---- nodes and leases ----------------------------------------------------------

int ReadyNodes(k8s::RestClient& client) {
  k8s::ListOptions options;
  options.resource_version = "0";
  auto nodes = client.List(k8s::resources::Nodes(), "", options);
  if (!nodes) {
    return 0;
  }
  int ready = 0;
  for (const json& node : nodes->items) {
    if (node["metadata"].value("name", "").rfind(kNodePrefix, 0) != 0) {
      continue;
    }
    for (const json& condition : node["status"].value("conditions", json::array())) {
      if (condition.value("type", "") == "Ready" && condition.value("status", "") == "True") {
        ++ready;
      }
    }
  }
  return ready;
}

// The oldest renewTime among the simulator's node Leases, in seconds ago;
// `count` gets how many there are.
double OldestLeaseAge(k8s::RestClient& client, int* count) {
  auto leases = client.List(k8s::resources::Leases(), "kube-node-lease", {});
  *count = 0;
  if (!leases) {
    return -1;
  }
  const auto now = std::chrono::system_clock::now();
  double oldest = 0;
  for (const json& lease : leases->items) {
    if (lease["metadata"].value("name", "").rfind(kNodePrefix, 0) != 0) {
      continue;
    }
    ++*count;
    std::string renew = lease["spec"].value("renewTime", "");
    // MicroTime: 2026-01-02T03:04:05.000000Z; the seconds are enough here.
    if (renew.size() > 19) {
      renew = renew.substr(0, 19) + "Z";
    }
    auto parsed = hybridjob::api::ParseTime(renew);
    if (parsed) {
      oldest = std::max(oldest, std::chrono::duration<double>(now - *parsed).count());
    }
  }
  return oldest;
}

// Samples the Leases every few seconds on its own thread until stopped.
class LeaseWatch {
 public:
  explicit LeaseWatch(k8s::RestClient& client) : client_(client) {
    thread_ = std::thread([this] { Run(); });
  }
  ~LeaseWatch() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  LeaseWatch(const LeaseWatch&) = delete;
  LeaseWatch& operator=(const LeaseWatch&) = delete;

  double max_age() const { return max_age_.load(); }
  double last_age() const { return last_age_.load(); }
  int samples() const { return samples_.load(); }

 private:
  void Run() {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::seconds(5), [this] { return stopping_; })) {
      lock.unlock();
      int count = 0;
      const double age = OldestLeaseAge(client_, &count);
      if (age >= 0 && count > 0) {
        last_age_ = age;
        max_age_ = std::max(max_age_.load(), age);
        ++samples_;
      }
      lock.lock();
    }
  }

  k8s::RestClient& client_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::atomic<double> max_age_{0};
  std::atomic<double> last_age_{0};
  std::atomic<int> samples_{0};
  std::thread thread_;
};

std::unique_ptr<k8s::RestClient> NewClient(const std::string& kubeconfig) {
  auto config = k8s::LoadKubeconfigFile(kubeconfig);
  if (!config) {
    std::cerr << "kubeconfig: " << config.status().ToString() << "\n";
    return nullptr;
  }
  config->qps = 0;
  config->burst = 0;
  config->max_in_flight = 64;
  config->user_agent = "bench-simulator";
  auto client = k8s::RestClient::Create(*config);
  if (!client) {
    std::cerr << "client: " << client.status().ToString() << "\n";
    return nullptr;
  }
  return std::move(*client);
}

bool WaitUntil(const std::function<bool()>& done, std::chrono::seconds timeout,
               const std::function<void()>& progress) {
  const auto deadline = Clock::now() + timeout;
  auto last_progress = Clock::now();
  while (Clock::now() < deadline) {
    if (done()) {
      return true;
    }
    if (Clock::now() - last_progress > std::chrono::seconds(10)) {
      progress();
      last_progress = Clock::now();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return done();
}

}  // namespace

int main(int argc, char** argv) {
  std::string cluster_dir;
  std::string sim_binary = HYBRIDJOB_BIN_DIR "/hybridjob-sim";
  int64_t nodes = 5000;
  int64_t pods = 50000;
  int64_t writers = 16;
  int64_t batch = 5000;
  int64_t sim_workers = 32;
  double sim_qps = 0;
  bool delete_pods = true;
  std::chrono::milliseconds heartbeat{std::chrono::seconds(40)};
  std::chrono::milliseconds duration{std::chrono::seconds(60)};
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  hybridjob::FlagSet flags("bench_simulator",
                           "hybridjob-sim with N nodes and P pods bound to them, against a\n"
                           "local cluster of hack/local-cluster.sh.");
  flags.String("cluster-dir", &cluster_dir, "the cluster's directory (kubeconfig, pid files)");
  flags.String("sim-binary", &sim_binary, "the hybridjob-sim to run");
  flags.Int("nodes", &nodes, "simulated nodes");
  flags.Int("pods", &pods, "pods to create, bound to the nodes round-robin");
  flags.Int("writers", &writers, "concurrent pod creators");
  flags.Int("batch", &batch, "pods per batch (the next batch starts when one is created)");
  flags.Int("sim-workers", &sim_workers, "the simulator's --workers");
  flags.Double("sim-qps", &sim_qps, "the simulator's --qps (0 = unlimited)");
  flags.Duration("heartbeat-interval", &heartbeat, "the simulator's --heartbeat-interval");
  flags.Duration("duration", &duration, "how long each pod runs");
  flags.Bool("delete", &delete_pods, "delete the pods at the end and time their removal");
  flags.Duration("timeout", &timeout, "give up on a stage after this long");
  if (Status parsed = flags.Parse(argc, argv); !parsed.ok()) {
    std::cerr << parsed.message() << "\n";
    return 2;
  }
  if (flags.help_requested()) {
    std::cout << flags.Usage();
    return 0;
  }
  if (cluster_dir.empty() || nodes < 1 || pods < 1 || writers < 1 || batch < 1) {
    std::cerr
        << "--cluster-dir is required; --nodes, --pods, --writers, --batch must be positive\n";
    return 2;
  }
  spdlog::set_level(spdlog::level::warn);
  const std::string kubeconfig = cluster_dir + "/kubeconfig";
  const pid_t apiserver = ReadPid(cluster_dir + "/apiserver.pid");
  const pid_t etcd = ReadPid(cluster_dir + "/etcd.pid");
  auto client = NewClient(kubeconfig);
  if (!client) {
    return 1;
  }
  const auto stage_timeout = std::chrono::duration_cast<std::chrono::seconds>(timeout);
  const std::string load_at_start = hybridjob::bench::LoadAverage();

  // A namespace of our own, with the ServiceAccount pods need.
  json ns = {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", kNamespace}}}};
  if (auto created = client->Create(k8s::resources::Namespaces(), "", ns);
      !created && !k8s::IsAlreadyExists(created.status())) {
    std::cerr << "namespace: " << created.status().ToString() << "\n";
    return 1;
  }
  WaitUntil(
      [&] { return client->Get(k8s::resources::ServiceAccounts(), kNamespace, "default").ok(); },
      std::chrono::seconds(60), [] {});

  // ---- nodes
  const auto sim_start = Clock::now();
  ChildProcess sim(
      {sim_binary, "--kubeconfig", kubeconfig, "--nodes", std::to_string(nodes), "--node-prefix",
       kNodePrefix, "--workers", std::to_string(sim_workers), "--qps", std::to_string(sim_qps),
       "--burst", "10000", "--heartbeat-interval", std::to_string(heartbeat.count()) + "ms"},
      cluster_dir + "/logs/bench-simulator-sim.log");
  if (!sim.Running()) {
    std::cerr << "hybridjob-sim did not start\n";
    return 1;
  }
  int ready = 0;
  const bool all_ready = WaitUntil(
      [&] {
        ready = ReadyNodes(*client);
        return ready >= nodes;
      },
      stage_timeout, [&] { std::cerr << "nodes Ready: " << ready << "/" << nodes << "\n"; });
  const double nodes_ready_seconds = Seconds(Clock::now() - sim_start);
  if (!all_ready) {
    std::cerr << "only " << ready << " of " << nodes << " nodes Ready\n";
    return 1;
  }
  const double sim_cpu_registered = hybridjob::testing::ProcessCpuSeconds(sim.pid());
  std::cerr << "all " << nodes << " nodes Ready after " << nodes_ready_seconds << " s\n";
  LeaseWatch leases(*client);

  // ---- pods
  PhaseTracker tracker;
  k8s::InformerOptions<PodPhase> informer_options;
  informer_options.reflector.resource = k8s::resources::Pods();
  informer_options.reflector.namespace_name = kNamespace;
  informer_options.decode = [](json&& pod) -> Result<PodPhase> {
    PodPhase out;
    out.name = pod["metadata"].value("name", "");
    if (pod.contains("status") && pod["status"].is_object()) {
      out.phase = pod["status"].value("phase", "");
    }
    return out;
  };
  k8s::Informer<PodPhase> informer(*client, informer_options);
  k8s::EventHandler<PodPhase> handler;
  handler.on_add = [&](const auto& pod) { tracker.Observe(*pod); };
  handler.on_update = [&](const auto&, const auto& pod) { tracker.Observe(*pod); };
  informer.AddEventHandler(handler);
  informer.Start();
  informer.WaitForSync(std::chrono::seconds(60));

  const auto first_create = Clock::now();
  std::atomic<int> create_errors{0};
  for (int64_t begin = 0; begin < pods; begin += batch) {
    const int64_t end = std::min(pods, begin + batch);
    std::atomic<int64_t> next{begin};
    std::vector<std::thread> pool;
    for (int w = 0; w < writers; ++w) {
      pool.emplace_back([&] {
        for (int64_t i = next++; i < end; i = next++) {
          auto created = client->Create(k8s::resources::Pods(), kNamespace,
                                        Pod(static_cast<int>(i), static_cast<int>(nodes),
                                            std::to_string(duration.count()) + "ms"));
          if (!created && !k8s::IsAlreadyExists(created.status())) {
            if (create_errors++ < 5) {
              std::cerr << "create pod " << i << ": " << created.status().ToString() << "\n";
            }
          }
        }
      });
    }
    for (auto& thread : pool) {
      thread.join();
    }
    std::cerr << "created " << end << " pods after " << Seconds(Clock::now() - first_create)
              << " s; running " << tracker.running() << ", succeeded " << tracker.succeeded()
              << "\n";
  }
  const double create_seconds = Seconds(Clock::now() - first_create);
  auto progress = [&] {
    std::cerr << Seconds(Clock::now() - first_create) << " s: running " << tracker.running()
              << ", succeeded " << tracker.succeeded() << "; oldest lease " << leases.last_age()
              << " s; sim CPU " << hybridjob::testing::ProcessCpuSeconds(sim.pid()) << " s, RSS "
              << hybridjob::testing::ProcessMemoryMiB(sim.pid(), "VmRSS") << " MiB; load "
              << hybridjob::bench::LoadAverage() << "\n";
  };
  const bool all_succeeded =
      WaitUntil([&] { return tracker.succeeded() >= pods; }, stage_timeout, progress);
  const double running_seconds = Seconds(tracker.last_running() - first_create);
  const double succeeded_seconds = Seconds(tracker.last_succeeded() - first_create);
  const double sim_cpu_pods = hybridjob::testing::ProcessCpuSeconds(sim.pid()) - sim_cpu_registered;
  const double apiserver_rss = hybridjob::testing::ProcessMemoryMiB(apiserver, "VmRSS");
  const double apiserver_peak = hybridjob::testing::ProcessMemoryMiB(apiserver, "VmHWM");
  const double etcd_rss = hybridjob::testing::ProcessMemoryMiB(etcd, "VmRSS");

  // ---- deletion: graceful, then the simulated kubelet removes each pod
  const auto delete_start = Clock::now();
  k8s::DeleteOptions background;
  background.propagation_policy = "Background";
  bool all_deleted = true;
  if (delete_pods) {
    (void)client->Delete(k8s::resources::Namespaces(), "", kNamespace, background);
    all_deleted = WaitUntil([&] { return informer.store().Size() == 0; }, stage_timeout,
                            [&] { std::cerr << "pods left: " << informer.store().Size() << "\n"; });
  }
  const double delete_seconds = Seconds(Clock::now() - delete_start);
  informer.Stop();
  const double sim_cpu_total = hybridjob::testing::ProcessCpuSeconds(sim.pid());
  const double sim_peak = hybridjob::testing::ProcessMemoryMiB(sim.pid(), "VmHWM");
  const double lease_max = leases.max_age();
  const int lease_samples = leases.samples();
  const std::string load_at_end = hybridjob::bench::LoadAverage();

  const auto stop_start = Clock::now();
  sim.Stop(std::chrono::seconds(300));
  const double stop_seconds = Seconds(Clock::now() - stop_start);

  const double heartbeat_seconds = static_cast<double>(heartbeat.count()) / 1000.0;
  std::printf("| measure | value |\n|---|---|\n");
  std::printf("| simulated nodes / pods | %lld / %lld (%lld per node), each pod runs %.0f s |\n",
              static_cast<long long>(nodes), static_cast<long long>(pods),
              static_cast<long long>((pods + nodes - 1) / nodes),
              static_cast<double>(duration.count()) / 1000.0);
  std::printf("| simulator flags | --workers %lld --qps %.0f --heartbeat-interval %.0fs |\n",
              static_cast<long long>(sim_workers), sim_qps, heartbeat_seconds);
  std::printf("| start -> every node registered and Ready | %.1f s (%.0f nodes/s) |\n",
              nodes_ready_seconds, static_cast<double>(nodes) / nodes_ready_seconds);
  std::printf(
      "| pods created (%lld writers, batches of %lld) | %.1f s (%.0f pods/s, %d errors) |\n",
      static_cast<long long>(writers), static_cast<long long>(batch), create_seconds,
      static_cast<double>(pods) / create_seconds, create_errors.load());
  std::printf("| first create -> every pod Running | %s%.1f s (%.0f pods/s) |\n",
              tracker.running() >= pods ? "" : "NOT ALL: ", running_seconds,
              static_cast<double>(tracker.running()) / std::max(running_seconds, 1e-3));
  std::printf("| first create -> every pod Succeeded | %s%.1f s (%d of %lld) |\n",
              all_succeeded ? "" : "NOT ALL: ", succeeded_seconds, tracker.succeeded(),
              static_cast<long long>(pods));
  if (delete_pods) {
    std::printf("| namespace deleted -> every pod removed | %s%.1f s (%.0f pods/s) |\n",
                all_deleted ? "" : "NOT ALL: ", delete_seconds,
                static_cast<double>(pods) / delete_seconds);
  }
  std::printf(
      "| oldest node Lease seen (%d samples, every 5 s; lease duration %.0f s) | %.1f s |\n",
      lease_samples, heartbeat_seconds + 1, lease_max);
  std::printf("| simulator CPU: registering / pods / total | %.1f / %.1f / %.1f s |\n",
              sim_cpu_registered, sim_cpu_pods, sim_cpu_total);
  std::printf("| simulator peak RSS | %.1f MiB |\n", sim_peak);
  std::printf("| kube-apiserver RSS with every pod stored / peak | %.0f / %.0f MiB |\n",
              apiserver_rss, apiserver_peak);
  std::printf("| etcd RSS with every pod stored | %.0f MiB |\n", etcd_rss);
  std::printf("| simulator stop (removes its nodes) | %.1f s |\n", stop_seconds);
  std::printf("| machine load average (1 min) at start / end | %s / %s |\n", load_at_start.c_str(),
              load_at_end.c_str());
  return all_succeeded && all_deleted && lease_max < heartbeat_seconds + 1 ? 0 : 1;
}
