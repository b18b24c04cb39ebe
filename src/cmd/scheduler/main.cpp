// gang-scheduler: flags, wiring, leader election and signals only; the logic
// lives in hybridjob_scheduler.
#include <spdlog/spdlog.h>

#include <iostream>
#include <random>
#include <unistd.h>

#include <hybridjob/common/flags.h>
#include <hybridjob/common/logging.h>
#include <hybridjob/common/signals.h>
#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/leader_election.h>
#include <hybridjob/k8s/rest_client.h>
#include <hybridjob/scheduler/config.h>
#include <hybridjob/scheduler/gang_scheduler.h>

namespace {

constexpr const char* kSummary =
    "Schedules every pod whose spec.schedulerName is its name, gang by gang: all of a group's\n"
    "roles reach their minimum in one decision or nothing is bound; then roles grow toward their\n"
    "maximum by priority. See docs/scheduler-config.md for the --config file.";

int Fail(const std::string& message) {
  std::cerr << "gang-scheduler: " << message << "\n";
  return 1;
}

std::string Identity() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::random_device random;
  return std::string(host) + "_" + std::to_string(random() % 1000000);
}

}  // namespace

int main(int argc, char** argv) {
  hybridjob::BlockShutdownSignals();
  std::string kubeconfig;
  std::string config_path;
  std::string log_level = "info";
  std::string log_format = "text";
  bool leader_elect = false;
  std::string metrics_addr;
  std::string health_addr;
  hybridjob::FlagSet flags("gang-scheduler", kSummary);
  flags.String("kubeconfig", &kubeconfig, "kubeconfig file (else $KUBECONFIG, else in-cluster)");
  flags.String("config", &config_path, "scheduler configuration file (YAML)");
  flags.Bool("leader-elect", &leader_elect, "campaign for leadership (overrides the config file)");
  flags.String("metrics-addr", &metrics_addr, "overrides metricsAddr of the config file");
  flags.String("health-addr", &health_addr, "overrides healthAddr of the config file");
  flags.String("log-level", &log_level, "trace, debug, info, warn or error");
  flags.String("log-format", &log_format, "text or json");
  if (auto status = flags.Parse(argc, argv); !status.ok()) {
    return Fail(status.message());
  }
  if (flags.help_requested()) {
    std::cout << flags.Usage();
    return 0;
  }
  if (!flags.positional().empty()) {
    return Fail("unexpected argument \"" + flags.positional().front() + "\" (see --help)");
  }
  if (auto status = hybridjob::ConfigureLogging(log_level, log_format, "gang-scheduler");
      !status.ok()) {
    return Fail(status.message());
  }
  hybridjob::scheduler::SchedulerConfig config;
  if (!config_path.empty()) {
    auto loaded = hybridjob::scheduler::LoadSchedulerConfigFile(config_path);
    if (!loaded) {
      return Fail(loaded.status().message());
    }
    config = std::move(*loaded);
  }
  if (flags.WasSet("leader-elect")) {
    config.leader_election.enabled = leader_elect;
  }
  if (flags.WasSet("metrics-addr")) {
    config.metrics_addr = metrics_addr;
  }
  if (flags.WasSet("health-addr")) {
    config.health_addr = health_addr;
  }

  auto client_config = hybridjob::k8s::ResolveClientConfig(kubeconfig);
  if (!client_config) {
    return Fail(client_config.status().message());
  }
  client_config->qps = config.client_qps;
  client_config->burst = static_cast<int>(config.client_burst);
  client_config->max_in_flight = static_cast<int>(config.bind_concurrency) + 16;
  client_config->user_agent = "gang-scheduler";
  auto client = hybridjob::k8s::RestClient::Create(*client_config);
  if (!client) {
    return Fail(client.status().message());
  }
  // Fail fast, and clearly, when the API server is unreachable or we may not
  // read what we schedule.
  hybridjob::k8s::ListOptions one_node;
  one_node.limit = 1;
  if (auto probe = (*client)->List(hybridjob::k8s::resources::Nodes(), "", one_node); !probe) {
    return Fail("cannot list nodes: " + probe.status().ToString());
  }

  hybridjob::scheduler::GangScheduler scheduler(**client, config);
  scheduler.Start();
  if (!scheduler.WaitForCacheSync(std::chrono::minutes(2))) {
    scheduler.Stop();
    return Fail("caches did not sync within 2 minutes");
  }
  std::unique_ptr<hybridjob::k8s::LeaderElector> elector;
  if (config.leader_election.enabled) {
    hybridjob::k8s::LeaderElectionConfig election;
    election.lease_namespace = config.leader_election.lease_namespace;
    election.lease_name = config.leader_election.lease_name;
    election.identity = Identity();
    election.lease_duration = config.leader_election.lease_duration;
    election.renew_deadline = config.leader_election.renew_deadline;
    election.retry_period = config.leader_election.retry_period;
    election.on_started_leading = [&] {
      spdlog::info("became leader ({})", election.identity);
      scheduler.SetActive(true);
    };
    election.on_stopped_leading = [&] {
      spdlog::warn("lost leadership; scheduling paused");
      scheduler.SetActive(false);
    };
    elector = std::make_unique<hybridjob::k8s::LeaderElector>(**client, election);
    elector->Start();
  } else {
    scheduler.SetActive(true);
  }
  spdlog::info("scheduling pods with schedulerName {}", config.scheduler_name);
  const int signal = hybridjob::WaitForShutdownSignal();
  spdlog::info("signal {}: stopping", signal);
  if (elector) {
    elector->Stop();
  }
  scheduler.Stop();
  return 0;
}
