// The whole system under load, against a real kube-apiserver:
//
//   bench_controller --kubeconfig FILE [--jobs 1000] [--duration 20s] [--help]
//
// Runs the real hybridjob-controller binary (watching one fresh namespace),
// and in-process the gang scheduler and the node simulator (simulated GPU
// nodes and their kubelet). Submits N TensorFlow-shaped jobs of 10 members
// (chief 1, ps 1, worker 4..8; 9 GPUs) as fast as W writers can, on enough
// nodes for all of them at once, and measures from the first create:
//  - until every job has reached phase Running (gang bound, cluster spec
//    written) and until every member of every job runs;
//  - until every job Succeeded (the chief and workers run --duration; the
//    parameter servers never end and are deleted by the controller);
//  - the controller process's CPU time, resident memory (idle, at the end,
//    peak) and its API requests and reconciles (from its /metrics).
// Prints one Markdown table. Creates the CRD from crds/ when it is missing;
// deletes its namespace and nodes at the end.
#include <algorithm>
#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <netinet/in.h>
#include <optional>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>
#include <yaml-cpp/yaml.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/common/flags.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/informer.h>
#include <hybridjob/k8s/rest_client.h>
#include <hybridjob/scheduler/shell/gang_scheduler.h>
#include <hybridjob/sim/kubelet.h>
#include <hybridjob/sim/simulator.h>

#include "../common/self_stats.h"
#include "child_process.h"
#include "process_stats.h"

namespace {

using hybridjob::testing::ChildProcess;

using hybridjob::Status;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace k8s = hybridjob::k8s;

constexpr int kMembersPerJob = 10;  // chief 1 + ps 1 + worker 8
constexpr int kGpusPerJob = 9;      // chief and workers take one each

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// ---- the controller's endpoints -------------------------------------------

int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

// GET http://127.0.0.1:port/path; the body, or "" on any failure.
std::string HttpGet(int port, const std::string& path) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return "";
  }
  const std::string request =
      "GET " + path + " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (write(fd, request.data(), request.size()) != static_cast<ssize_t>(request.size())) {
    close(fd);
    return "";
  }
  std::string response;
  char buffer[16384];
  ssize_t n = 0;
  while ((n = read(fd, buffer, sizeof(buffer))) > 0) {
    response.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  if (response.rfind("HTTP/1.", 0) != 0 || response.find(" 200 ") == std::string::npos) {
    return "";
  }
  const size_t body = response.find("\r\n\r\n");
  return body == std::string::npos ? "" : response.substr(body + 4);
}

// Sum of a metric's samples (every label set) in Prometheus text, optionally
// only those whose labels contain `label_filter`.
double MetricSum(const std::string& text, const std::string& name,
                 const std::string& label_filter = "") {
  double sum = 0;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#' || line.rfind(name, 0) != 0) {
      continue;
    }
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != ' ' && next != '{') {
      continue;
    }
    if (!label_filter.empty() && line.find(label_filter) == std::string::npos) {
      continue;
    }
    const size_t space = line.rfind(' ');
    sum += std::strtod(line.c_str() + space + 1, nullptr);
  }
  return sum;
}

// ---- the CRD ----------------------------------------------------------------

// YAML as the API server reads it, for the CRD's needs: plain scalars are
// null, booleans, integers or strings; quoted ones stay strings.
json YamlNodeToJson(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar: {
      const std::string& text = node.Scalar();
      if (node.Tag() != "?") {
        return text;
      }
      if (text == "null" || text == "~") {
        return nullptr;
      }
      if (text == "true" || text == "false") {
        return text == "true";
      }
      const bool integer =
          !text.empty() &&
          text.find_first_not_of("0123456789", text[0] == '-' ? 1 : 0) == std::string::npos &&
          text != "-";
      return integer ? json(std::stoll(text)) : json(text);
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const YAML::Node& item : node) {
        out.push_back(YamlNodeToJson(item));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& item : node) {
        out[item.first.as<std::string>()] = YamlNodeToJson(item.second);
      }
      return out;
    }
    default:
      return nullptr;
  }
}

// Creates the HybridJob CRD from `path` unless the API server serves it.
Status EnsureCrd(k8s::ApiClient& client, const std::string& path) {
  k8s::ListOptions one;
  one.limit = 1;
  if (client.List(k8s::resources::HybridJobs(), "", one).ok()) {
    return Status::Ok();
  }
  json crd;
  try {
    crd = YamlNodeToJson(YAML::LoadFile(path));
  } catch (const std::exception& e) {
    return hybridjob::InvalidArgument(path + ": " + e.what());
  }
  auto created = client.Create(k8s::resources::CustomResourceDefinitions(), "", crd);
  if (!created.ok() && !k8s::IsAlreadyExists(created.status())) {
    return created.status();
  }
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    if (client.List(k8s::resources::HybridJobs(), "", one).ok()) {
      return Status::Ok();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return hybridjob::Unavailable("the HybridJob CRD was not served within 60 s");
}

// ---- the workload -----------------------------------------------------------

json Role(const std::string& name, int min, int max, int gpus, const std::string& duration,
          const std::string& pool) {
  json container = {{"name", "tensorflow"},
                    {"image", "tensorflow/tensorflow:2.15.0"},
                    {"command", json::array({"python", "train.py"})},
                    {"resources", {{"requests", {{"cpu", "1"}, {"memory", "2Gi"}}}}}};
  if (gpus > 0) {
    container["resources"]["limits"] = {{"nvidia.com/gpu", gpus}};
  }
  json annotations = json::object();
  if (!duration.empty()) {
    annotations[hybridjob::sim::kDurationAnnotation] = duration;
  }
  json spec = {{"nodeSelector", {{"bench.hybridjob.io/pool", pool}}},
               {"containers", json::array({container})}};
  json pod_template = {{"metadata", {{"annotations", annotations}}}, {"spec", spec}};
  return {{"name", name},
          {"minReplicas", min},
          {"maxReplicas", max},
          {"restartPolicy", "OnFailure"},
          {"template", pod_template}};
}

json Job(const std::string& name, const std::string& scheduler, const std::string& pool,
         const std::string& duration) {
  return {{"apiVersion", "batch.hybridjob.io/v1alpha1"},
          {"kind", "HybridJob"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"framework", "tensorflow"},
            {"schedulerName", scheduler},
            {"runPolicy", {{"backoffLimit", 3}, {"cleanPodPolicy", "Running"}}},
            {"replicaSpecs",
             json::array({Role("chief", 1, 1, 1, duration, pool), Role("ps", 1, 1, 0, "", pool),
                          Role("worker", 4, 8, 1, duration, pool)})}}}};
}

// When each job first reached a phase (or all members running), seen through
// an informer on the namespace's jobs.
class JobTracker {
 public:
  JobTracker(k8s::ApiClient& client, const std::string& ns) {
    k8s::InformerOptions<json> options;
    options.reflector.resource = k8s::resources::HybridJobs();
    options.reflector.namespace_name = ns;
    informer_ = std::make_unique<k8s::Informer<json>>(client, options);
    k8s::EventHandler<json> handler;
    handler.on_add = [this](const auto& job) { Observe(*job); };
    handler.on_update = [this](const auto&, const auto& job) { Observe(*job); };
    informer_->AddEventHandler(handler);
  }
  void Start() { informer_->Start(); }
  bool WaitForSync() { return informer_->WaitForSync(std::chrono::seconds(60)); }
  void Stop() { informer_->Stop(); }

  void Created(const std::string& name, Clock::time_point at) {
    std::lock_guard lock(mu_);
    jobs_[name].created = at;
  }

  struct Counts {
    int running = 0;  // reached Running (or finished after it)
    int members_running = 0;
    int succeeded = 0;
    int failed = 0;
    int members = 0;   // placed members, summed over jobs (status.replicaStatuses)
    int restarts = 0;  // status.restartCount, summed
  };
  Counts Count() {
    std::lock_guard lock(mu_);
    Counts counts;
    for (const auto& [name, job] : jobs_) {
      counts.running += job.running ? 1 : 0;
      counts.members_running += job.members_running ? 1 : 0;
      counts.succeeded += job.succeeded ? 1 : 0;
      counts.failed += job.failed ? 1 : 0;
      counts.members += job.members;
      counts.restarts += job.restarts;
    }
    return counts;
  }

  // Latest time each milestone was reached over all jobs, and per-job
  // latencies from its create to Running.
  struct Summary {
    Clock::time_point last_running{};
    Clock::time_point last_members_running{};
    Clock::time_point last_succeeded{};
    std::vector<double> create_to_running;
    std::vector<double> create_to_members_running;
  };
  Summary Summarize() {
    std::lock_guard lock(mu_);
    Summary summary;
    for (const auto& [name, job] : jobs_) {
      if (job.running) {
        summary.last_running = std::max(summary.last_running, *job.running);
        if (job.created) {
          summary.create_to_running.push_back(Seconds(*job.running - *job.created));
        }
      }
      if (job.members_running) {
        summary.last_members_running = std::max(summary.last_members_running, *job.members_running);
        if (job.created) {
          summary.create_to_members_running.push_back(Seconds(*job.members_running - *job.created));
        }
      }
      if (job.succeeded) {
        summary.last_succeeded = std::max(summary.last_succeeded, *job.succeeded);
      }
    }
    return summary;
  }

 private:
  struct Times {
    std::optional<Clock::time_point> created;
    std::optional<Clock::time_point> running;
    std::optional<Clock::time_point> members_running;
    std::optional<Clock::time_point> succeeded;
    std::optional<Clock::time_point> failed;
    int members = 0;
    int restarts = 0;
  };

  void Observe(const json& job) {
    const auto now = Clock::now();
    if (!job.contains("status") || !job["status"].is_object()) {
      return;
    }
    const json& status = job["status"];
    const std::string phase = status.value("phase", "");
    const std::string ready = status.value("readyMembers", "");
    const size_t slash = ready.find('/');
    const bool all_ready = slash != std::string::npos && slash > 0 &&
                           ready.substr(0, slash) == ready.substr(slash + 1) &&
                           ready.substr(0, slash) != "0";
    std::lock_guard lock(mu_);
    Times& times = jobs_[job["metadata"].value("name", "")];
    if (phase == "Running" || phase == "Succeeded") {
      times.running = times.running.value_or(now);
    }
    if (all_ready || phase == "Succeeded") {
      times.members_running = times.members_running.value_or(now);
    }
    if (phase == "Succeeded") {
      times.succeeded = times.succeeded.value_or(now);
    }
    if (phase == "Failed") {
      times.failed = times.failed.value_or(now);
    }
    if (status.contains("replicaStatuses") && status["replicaStatuses"].is_array()) {
      times.members = 0;
      for (const json& replica : status["replicaStatuses"]) {
        times.members += replica.value("members", 0);
      }
    }
    times.restarts = status.value("restartCount", 0);
  }

  std::unique_ptr<k8s::Informer<json>> informer_;
  std::mutex mu_;
  std::unordered_map<std::string, Times> jobs_;
};

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  const size_t index = static_cast<size_t>(std::ceil(p / 100.0 * values.size())) - 1;
  return values[std::min(index, values.size() - 1)];
}

std::unique_ptr<k8s::RestClient> NewClient(const k8s::ClientConfig& base, double qps, int burst,
                                           int in_flight, const std::string& agent) {
  k8s::ClientConfig config = base;
  config.qps = qps;
  config.burst = burst;
  config.max_in_flight = in_flight;
  config.user_agent = agent;
  auto client = k8s::RestClient::Create(config);
  if (!client) {
    std::cerr << "client: " << client.status().ToString() << "\n";
    return nullptr;
  }
  return std::move(*client);
}

}  // namespace

int main(int argc, char** argv) {
  std::string kubeconfig;
  std::string controller_binary = HYBRIDJOB_BIN_DIR "/hybridjob-controller";
  std::string controller_log;
  std::string crd_path = HYBRIDJOB_SOURCE_DIR "/crds/batch.hybridjob.io_hybridjobs.yaml";
  int64_t jobs = 1000;
  int64_t writers = 16;
  int64_t gpus_per_node = 8;
  int64_t nodes = 0;
  int64_t controller_workers = 16;
  double controller_qps = 1000;
  int64_t controller_burst = 2000;
  std::chrono::milliseconds duration{std::chrono::seconds(20)};
  std::chrono::milliseconds timeout{std::chrono::minutes(20)};
  hybridjob::FlagSet flags("bench_controller",
                           "The whole system (controller binary, gang scheduler, node simulator)\n"
                           "running N jobs of 10 members against a real API server.");
  flags.String("kubeconfig", &kubeconfig, "kubeconfig file (else $KUBECONFIG)");
  flags.String("controller-binary", &controller_binary, "the hybridjob-controller to run");
  flags.String("controller-log", &controller_log, "controller output to this file (else ours)");
  flags.String("crd", &crd_path, "the HybridJob CRD, created when the server lacks it");
  flags.Int("jobs", &jobs, "jobs to run");
  flags.Int("writers", &writers, "concurrent job creators");
  flags.Int("nodes", &nodes, "simulated nodes (0: enough for every job at once)");
  flags.Int("gpus-per-node", &gpus_per_node, "GPUs per simulated node");
  flags.Int("controller-workers", &controller_workers, "the controller's --workers");
  flags.Double("controller-qps", &controller_qps, "the controller's --qps");
  flags.Int("controller-burst", &controller_burst, "the controller's --burst");
  flags.Duration("duration", &duration, "how long the chief and workers run");
  flags.Duration("timeout", &timeout, "give up after this long");
  if (Status parsed = flags.Parse(argc, argv); !parsed.ok()) {
    std::cerr << parsed.message() << "\n";
    return 2;
  }
  if (flags.help_requested()) {
    std::cout << flags.Usage();
    return 0;
  }
  if (jobs < 1 || writers < 1 || gpus_per_node < 1) {
    std::cerr << "--jobs, --writers and --gpus-per-node must be positive\n";
    return 2;
  }
  if (nodes == 0) {
    nodes = (jobs * kGpusPerJob + gpus_per_node - 1) / gpus_per_node;
  }
  spdlog::set_level(spdlog::level::warn);

  auto config = k8s::ResolveClientConfig(kubeconfig);
  if (!config) {
    std::cerr << config.status().ToString() << "\n";
    return 1;
  }
  auto bench_client = NewClient(*config, 0, 0, 64, "bench-controller");
  auto sim_client = NewClient(*config, 2000, 4000, 64, "bench-sim");
  auto scheduler_client = NewClient(*config, 1000, 2000, 64, "bench-gang-scheduler");
  if (!bench_client || !sim_client || !scheduler_client) {
    return 1;
  }
  if (Status crd = EnsureCrd(*bench_client, crd_path); !crd.ok()) {
    std::cerr << "CRD: " << crd.ToString() << "\n";
    return 1;
  }

  const std::string run = "cbench-" + std::to_string(::getpid());
  const std::string ns = run;
  const std::string pool = run;
  const std::string scheduler_name = run;
  if (auto created = bench_client->Create(
          k8s::resources::Namespaces(), "",
          {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
      !created) {
    std::cerr << "namespace: " << created.status().ToString() << "\n";
    return 1;
  }
  const auto sa_deadline = Clock::now() + std::chrono::seconds(30);
  while (!bench_client->Get(k8s::resources::ServiceAccounts(), ns, "default").ok() &&
         Clock::now() < sa_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  // Nodes and their kubelet.
  hybridjob::sim::SimulatorOptions sim_options;
  sim_options.nodes.name_prefix = run;
  sim_options.nodes.count = nodes;
  sim_options.nodes.gpus_per_node = gpus_per_node;
  sim_options.nodes.cpu = "64";
  sim_options.nodes.memory = "512Gi";
  sim_options.nodes.labels = {{"bench.hybridjob.io/pool", pool}};
  sim_options.workers = 32;
  auto simulator = std::make_unique<hybridjob::sim::Simulator>(*sim_client, sim_options);
  const auto nodes_start = Clock::now();
  if (Status started = simulator->Start(); !started.ok()) {
    std::cerr << "simulator: " << started.ToString() << "\n";
    return 1;
  }
  const double node_seconds = Seconds(Clock::now() - nodes_start);

  // The gang scheduler.
  hybridjob::scheduler::SchedulerConfig scheduler_config;
  scheduler_config.scheduler_name = scheduler_name;
  scheduler_config.gang_backoff_seconds = 1;
  auto scheduler =
      std::make_unique<hybridjob::scheduler::GangScheduler>(*scheduler_client, scheduler_config);
  scheduler->Start();
  if (!scheduler->WaitForCacheSync(std::chrono::seconds(60))) {
    std::cerr << "scheduler cache did not sync\n";
    return 1;
  }
  scheduler->SetActive(true);

  // The controller binary, on this namespace.
  const int health_port = FreePort();
  std::vector<std::string> controller_args = {controller_binary,
                                              "--namespace",
                                              ns,
                                              "--workers",
                                              std::to_string(controller_workers),
                                              "--qps",
                                              std::to_string(controller_qps),
                                              "--burst",
                                              std::to_string(controller_burst),
                                              "--metrics-addr",
                                              "0",
                                              "--health-addr",
                                              "127.0.0.1:" + std::to_string(health_port),
                                              "--log-level",
                                              "warn"};
  if (!kubeconfig.empty()) {
    controller_args.insert(controller_args.end(), {"--kubeconfig", kubeconfig});
  }
  ChildProcess controller(controller_args, controller_log);
  const auto ready_deadline = Clock::now() + std::chrono::seconds(60);
  while (HttpGet(health_port, "/readyz").empty() && controller.Running() &&
         Clock::now() < ready_deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (!controller.Running() || HttpGet(health_port, "/readyz").empty()) {
    std::cerr << "hybridjob-controller did not become ready\n";
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  const double cpu_idle = hybridjob::testing::ProcessCpuSeconds(controller.pid());
  const int64_t rss_idle = hybridjob::testing::ProcessMemoryBytes(controller.pid(), "VmRSS");
  const double bench_cpu_before = hybridjob::bench::CpuSeconds();

  JobTracker tracker(*bench_client, ns);
  tracker.Start();
  tracker.WaitForSync();

  // Submit.
  const std::string duration_text = std::to_string(duration.count()) + "ms";
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> create_failures{0};
  const std::string load_start = hybridjob::bench::LoadAverage();
  const uint64_t bound_before = scheduler->stats().pods_bound.load();
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int64_t w = 0; w < writers; ++w) {
    threads.emplace_back([&] {
      for (int64_t i = next++; i < jobs; i = next++) {
        const std::string name = "job-" + std::to_string(i);
        tracker.Created(name, Clock::now());
        auto created = bench_client->Create(k8s::resources::HybridJobs(), ns,
                                            Job(name, scheduler_name, pool, duration_text));
        if (!created) {
          ++create_failures;
          std::cerr << name << ": " << created.status().ToString() << "\n";
        }
      }
    });
  }
  for (auto& thread : threads) {
    thread.join();
  }
  const double submit_seconds = Seconds(Clock::now() - start);

  // Wait for every job to succeed (or fail, or the timeout).
  bool done = false;
  auto last_report = Clock::now();
  int64_t peak_rss = rss_idle;
  std::optional<Clock::time_point> all_bound;
  while (Clock::now() - start < timeout) {
    const JobTracker::Counts counts = tracker.Count();
    peak_rss =
        std::max(peak_rss, hybridjob::testing::ProcessMemoryBytes(controller.pid(), "VmRSS"));
    if (!all_bound && scheduler->stats().pods_bound.load() - bound_before >=
                          static_cast<uint64_t>(jobs * kMembersPerJob)) {
      all_bound = Clock::now();
    }
    if (counts.succeeded + counts.failed >= jobs) {
      done = true;
      break;
    }
    if (!controller.Running()) {
      std::cerr << "hybridjob-controller exited\n";
      break;
    }
    if (Clock::now() - last_report > std::chrono::seconds(10)) {
      last_report = Clock::now();
      std::cerr << "t=" << static_cast<int>(Seconds(last_report - start)) << "s running "
                << counts.running << " all-members-running " << counts.members_running
                << " succeeded " << counts.succeeded << " failed " << counts.failed << " of "
                << jobs << "\n";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  const JobTracker::Counts counts = tracker.Count();
  const JobTracker::Summary summary = tracker.Summarize();
  const double controller_cpu = hybridjob::testing::ProcessCpuSeconds(controller.pid()) - cpu_idle;
  const int64_t rss_end = hybridjob::testing::ProcessMemoryBytes(controller.pid(), "VmRSS");
  const int64_t rss_peak =
      std::max(peak_rss, hybridjob::testing::ProcessMemoryBytes(controller.pid(), "VmHWM"));
  const std::string metrics = HttpGet(health_port, "/metrics");
  const double bench_cpu = hybridjob::bench::CpuSeconds() - bench_cpu_before;
  const std::string load_end = hybridjob::bench::LoadAverage();
  const uint64_t pods_bound = scheduler->stats().pods_bound.load() - bound_before;
  const uint64_t surplus = scheduler->stats().surplus_marked.load();
  const uint64_t bind_errors = scheduler->stats().bind_errors.load();
  const uint64_t rolled_back = scheduler->stats().groups_rolled_back.load();

  // Tear down: controller and scheduler first, then the namespace (the
  // simulator still plays the kubelet so its pods can go), then the nodes.
  controller.Stop();
  tracker.Stop();
  scheduler->Stop();
  k8s::DeleteOptions background;
  background.propagation_policy = "Background";
  (void)bench_client->Delete(k8s::resources::Namespaces(), "", ns, background);
  const auto cleanup_deadline = Clock::now() + std::chrono::minutes(3);
  while (Clock::now() < cleanup_deadline) {
    k8s::ListOptions limit;
    limit.limit = 1;
    auto pods = bench_client->List(k8s::resources::Pods(), ns, limit);
    if (pods.ok() && pods->items.empty()) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  simulator->Stop();

  auto mib = [](int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); };
  std::printf("| measure | value |\n|---|---|\n");
  std::printf("| jobs x members | %lld x %d (chief 1, ps 1, worker 4..8), %lld GPUs each |\n",
              static_cast<long long>(jobs), kMembersPerJob, static_cast<long long>(kGpusPerJob));
  std::printf("| simulated nodes | %lld x %lld GPUs (registered in %.1f s) |\n",
              static_cast<long long>(nodes), static_cast<long long>(gpus_per_node), node_seconds);
  std::printf("| member run time | %.0f s |\n", static_cast<double>(duration.count()) / 1000.0);
  std::printf("| controller | --workers %lld --qps %.0f --burst %lld |\n",
              static_cast<long long>(controller_workers), controller_qps,
              static_cast<long long>(controller_burst));
  std::printf("| all jobs submitted (%lld writers) | %.1f s (%lld failed) |\n",
              static_cast<long long>(writers), submit_seconds,
              static_cast<long long>(create_failures.load()));
  // "12.3 s (81 jobs/s)", or how far it got.
  auto milestone = [&](int reached, Clock::time_point last) {
    char text[128];
    if (reached >= jobs) {
      const double seconds = Seconds(last - start);
      std::snprintf(text, sizeof(text), "%.1f s (%.0f jobs/s)", seconds,
                    static_cast<double>(jobs) / seconds);
    } else {
      std::snprintf(text, sizeof(text), "not reached: %d of %lld", reached,
                    static_cast<long long>(jobs));
    }
    return std::string(text);
  };
  std::printf("| first create -> every job Running | %s |\n",
              milestone(counts.running, summary.last_running).c_str());
  std::printf("| first create -> every member of every job running | %s |\n",
              milestone(counts.members_running, summary.last_members_running).c_str());
  std::printf("| job create -> Running, p50 / p99 / max | %.1f / %.1f / %.1f s |\n",
              Percentile(summary.create_to_running, 50), Percentile(summary.create_to_running, 99),
              Percentile(summary.create_to_running, 100));
  std::printf("| first create -> every job Succeeded | %s%s |\n",
              milestone(counts.succeeded, summary.last_succeeded).c_str(),
              counts.failed > 0 ? (", " + std::to_string(counts.failed) + " failed").c_str() : "");
  std::printf("| members placed (of %lld at most) / member restarts | %d / %d |\n",
              static_cast<long long>(jobs * kMembersPerJob), counts.members, counts.restarts);
  std::printf(
      "| gang scheduler: pods bound / surplus marked / bind errors / groups rolled back | "
      "%llu / %llu / %llu / %llu |\n",
      static_cast<unsigned long long>(pods_bound), static_cast<unsigned long long>(surplus),
      static_cast<unsigned long long>(bind_errors), static_cast<unsigned long long>(rolled_back));
  if (all_bound) {
    std::printf("| first create -> every member pod bound | %.1f s |\n",
                Seconds(*all_bound - start));
  }
  std::printf("| controller CPU time (from first create) | %.1f s |\n", controller_cpu);
  std::printf(
      "| controller RSS idle / end / peak (delta end-idle) | %.1f / %.1f / %.1f MiB "
      "(+%.1f MiB) |\n",
      mib(rss_idle), mib(rss_end), mib(rss_peak), mib(rss_end - rss_idle));
  std::printf("| controller reconciles (errors) | %.0f (%.0f) |\n",
              MetricSum(metrics, "hybridjob_controller_reconcile_duration_seconds_count"),
              MetricSum(metrics, "hybridjob_controller_reconcile_errors_total"));
  std::printf("| controller API requests (write verbs) | %.0f (%.0f) |\n",
              MetricSum(metrics, "hybridjob_api_requests_total"),
              MetricSum(metrics, "hybridjob_api_requests_total", "verb=\"CREATE\"") +
                  MetricSum(metrics, "hybridjob_api_requests_total", "verb=\"UPDATE\"") +
                  MetricSum(metrics, "hybridjob_api_requests_total", "verb=\"PATCH\"") +
                  MetricSum(metrics, "hybridjob_api_requests_total", "verb=\"DELETE\""));
  std::printf("| bench process CPU (scheduler + simulator + submit) | %.1f s |\n", bench_cpu);
  std::printf("| machine load average (1 min) at first create / at the end | %s / %s |\n",
              load_start.c_str(), load_end.c_str());
  return done && counts.failed == 0 ? 0 : 1;
}
