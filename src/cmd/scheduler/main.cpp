// gang-scheduler: flags, wiring, leader election and signals only; the logic
// lives in hybridjob_scheduler.
#include <csignal>
#include <iostream>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <hybridjob/api/member_signature.h>
#include <hybridjob/common/flags.h>
#include <hybridjob/common/logging.h>
#include <hybridjob/common/signals.h>
#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/leader_election.h>
#include <hybridjob/k8s/rest_client.h>
#include <hybridjob/observability/http_server.h>
#include <hybridjob/observability/instrumentation.h>
#include <hybridjob/observability/secure_serving.h>
#include <hybridjob/scheduler/shell/config.h>
#include <hybridjob/scheduler/shell/config_watcher.h>
#include <hybridjob/scheduler/shell/gang_scheduler.h>
#include <hybridjob/scheduler/shell/metrics.h>

namespace {

constexpr const char* kSummary =
    "Schedules every pod whose spec.schedulerName is its name, gang by gang: all of a group's\n"
    "roles reach their minimum in one decision or nothing is bound; then roles grow toward their\n"
    "maximum by priority, with queues, fair share, elastic reclaim and starvation control.\n"
    "See docs/scheduler-config.md for the --config file; changes to it apply without a restart.";

int Fail(const std::string& message) {
  return hybridjob::FailStartup("gang-scheduler", message);
}

}  // namespace

int main(int argc, char** argv) {
  hybridjob::BlockShutdownSignals();
  std::string kubeconfig;
  std::string config_path;
  hybridjob::LoggingFlags logging;
  // The flags override the configuration file: their defaults are its own.
  const hybridjob::scheduler::SchedulerConfig file_defaults;
  bool leader_elect = file_defaults.leader_election.enabled;
  hybridjob::ServingFlags serving{file_defaults.metrics_addr, file_defaults.health_addr};
  std::string dashboard_addr = file_defaults.dashboard_addr;
  hybridjob::FlagSet flags("gang-scheduler", kSummary);
  flags.String("kubeconfig", &kubeconfig, "kubeconfig file");
  flags.DescribeDefault("kubeconfig", "$KUBECONFIG, else the in-cluster service account");
  flags.String("config", &config_path, "scheduler configuration file (YAML)");
  flags.DescribeDefault("config", "none: the defaults of docs/scheduler-config.md");
  flags.Bool("leader-elect", &leader_elect, "campaign for leadership before scheduling");
  flags.DescribeDefault("leader-elect", "leaderElection.enabled of --config, else false");
  hybridjob::AddServingOverrideFlags(flags, &serving, "--config");
  flags.String("dashboard-addr", &dashboard_addr,
               "host:port of the read-only web dashboard; \"0\" disables it");
  flags.DescribeDefault("dashboard-addr", "dashboardAddr of --config, else disabled");
  std::string member_key_file;
  flags.String(std::string(hybridjob::api::kMemberKeyFileFlag), &member_key_file,
               "file of the keys member signatures are checked with (one per line; the "
               "controller's): a pending member is placed only with hybridjob-controller's "
               "signature");
  flags.DescribeDefault(std::string(hybridjob::api::kMemberKeyFileFlag),
                        "none: signatures are not checked");
  hybridjob::AddLoggingFlags(flags, &logging);
  if (auto exit_code = hybridjob::ParseCommandLine(flags, argc, argv, logging)) {
    return *exit_code;
  }
  auto member_keys = hybridjob::api::LoadMemberKeyFlag(member_key_file);
  if (!member_keys) {
    return Fail(member_keys.status().message());
  }
  if (!member_keys->warning.empty()) {
    spdlog::warn("{}", member_keys->warning);
  }
  // Flags override the file, at start and on every reload.
  auto apply_flags = [&](hybridjob::scheduler::SchedulerConfig& config) {
    if (flags.WasSet("leader-elect")) {
      config.leader_election.enabled = leader_elect;
    }
    if (flags.WasSet("metrics-addr")) {
      config.metrics_addr = serving.metrics_addr;
    }
    if (flags.WasSet("health-addr")) {
      config.health_addr = serving.health_addr;
    }
    if (flags.WasSet("dashboard-addr")) {
      config.dashboard_addr = dashboard_addr;
    }
  };
  namespace obs = hybridjob::observability;
  obs::Registry registry;
  auto& reloads_applied =
      registry.GetCounter("hybridjob_scheduler_config_reloads_total", "Configuration file changes",
                          {{"result", "applied"}});
  auto& reloads_refused =
      registry.GetCounter("hybridjob_scheduler_config_reloads_total", "Configuration file changes",
                          {{"result", "refused"}});
  // Set once the scheduler exists; the watcher starts after that.
  hybridjob::scheduler::GangScheduler* running = nullptr;
  std::unique_ptr<hybridjob::scheduler::ConfigFileWatcher> watcher;
  hybridjob::scheduler::SchedulerConfig config;
  if (!config_path.empty()) {
    watcher = std::make_unique<hybridjob::scheduler::ConfigFileWatcher>(
        config_path, std::chrono::seconds(2),
        [&](const hybridjob::scheduler::SchedulerConfig& changed) {
          hybridjob::scheduler::SchedulerConfig next = changed;
          apply_flags(next);
          std::vector<std::string> need_restart = running->Reconfigure(next);
          reloads_applied.Inc();
          spdlog::info("{}: reloaded queues and policies", config_path);
          for (const auto& field : need_restart) {
            spdlog::warn("{}: the change of {} takes effect after a restart", config_path, field);
          }
        },
        [&](const hybridjob::Status& refused) {
          reloads_refused.Inc();
          spdlog::error("{}", refused.message());
        });
    auto loaded = watcher->Load();
    if (!loaded) {
      return Fail(loaded.status().message());
    }
    config = std::move(*loaded);
  }
  apply_flags(config);

  auto client = hybridjob::k8s::ConnectFromFlags(
      kubeconfig, config.client_qps, static_cast<int>(config.client_burst),
      static_cast<int>(config.bind_concurrency) + 16, "gang-scheduler");
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

  // Events have a client of their own, with its own rate limit, as
  // kube-scheduler's: a pod's Scheduled Event never waits for a bind's turn.
  auto event_client = hybridjob::k8s::ConnectFromFlags(
      kubeconfig, config.client_qps, static_cast<int>(config.client_burst), 2, "gang-scheduler");
  if (!event_client) {
    return Fail(event_client.status().message());
  }

  obs::InstrumentClient(**client, registry);
  obs::InstrumentClient(**event_client, registry);
  hybridjob::scheduler::GangScheduler scheduler(**client, config);
  scheduler.SetEventClient(**event_client);
  scheduler.SetMemberKeys(std::move(member_keys->keys));
  running = &scheduler;
  std::atomic<bool> leading{false};
  hybridjob::scheduler::ExportSchedulerMetrics(registry, scheduler, leading);
  const bool dashboard_on = !config.dashboard_addr.empty() && config.dashboard_addr != "0";
  if (dashboard_on) {
    scheduler.EnableDashboard();
  }
  scheduler.Start();
  auto security = obs::MakeServingSecurity(
      serving, **client, "gang-scheduler",
      obs::ServingHosts({config.metrics_addr, config.dashboard_addr}));
  if (!security.ok()) {
    scheduler.Stop();
    return Fail(security.status().message());
  }
  obs::ServingEndpoints endpoints;
  if (auto status = endpoints.Start(
          registry, {"metricsAddr", config.metrics_addr}, {"healthAddr", config.health_addr},
          [&scheduler] { return scheduler.WaitForCacheSync(std::chrono::milliseconds(0)); },
          *security);
      !status.ok()) {
    scheduler.Stop();
    return Fail(status.message());
  }
  obs::HttpServer dashboard;
  if (dashboard_on) {
    hybridjob::scheduler::AddDashboardEndpoints(
        dashboard, [&scheduler] { return scheduler.Dashboard(); }, security->reviewer);
    const obs::ServingCertificate* tls = security->certificate ? &*security->certificate : nullptr;
    if (auto status = dashboard.Start(config.dashboard_addr, tls); !status.ok()) {
      endpoints.Stop();
      scheduler.Stop();
      return Fail("dashboardAddr: " + status.message());
    }
    spdlog::info("dashboard at {}://{}/", security->scheme(), config.dashboard_addr);
  }
  if (!scheduler.WaitForCacheSync(std::chrono::minutes(2))) {
    scheduler.Stop();
    return Fail("caches did not sync within 2 minutes");
  }
  std::unique_ptr<hybridjob::k8s::LeaderElector> elector;
  if (config.leader_election.enabled) {
    hybridjob::k8s::LeaderElectionConfig election;
    election.lease_namespace = config.leader_election.lease_namespace;
    election.lease_name = config.leader_election.lease_name;
    election.identity = hybridjob::k8s::DefaultLeaderIdentity();
    election.lease_duration = config.leader_election.lease_duration;
    election.renew_deadline = config.leader_election.renew_deadline;
    election.retry_period = config.leader_election.retry_period;
    election.on_started_leading = [&] {
      spdlog::info("became leader ({}); scheduling", election.identity);
      leading = true;
      scheduler.SetActive(true);
    };
    election.on_stopped_leading = [&] {
      // Another replica may be binding now: stop at once.
      spdlog::error("lost leadership; exiting");
      leading = false;
      scheduler.SetActive(false);
      kill(getpid(), SIGTERM);
    };
    if (auto status = hybridjob::k8s::ValidateLeaderElectionConfig(election); !status.ok()) {
      scheduler.Stop();
      return Fail(status.message());
    }
    elector = std::make_unique<hybridjob::k8s::LeaderElector>(**client, election);
    elector->Start();
  } else {
    leading = true;
    scheduler.SetActive(true);
  }
  if (watcher) {
    watcher->Start();
  }
  spdlog::info("scheduling pods with schedulerName {}", config.scheduler_name);
  const int signal = hybridjob::WaitForShutdownSignal();
  spdlog::info("signal {}: stopping", signal);
  if (watcher) {
    watcher->Stop();
  }
  if (elector) {
    elector->Stop();
  }
  dashboard.Stop();
  endpoints.Stop();
  scheduler.Stop();
  return 0;
}
