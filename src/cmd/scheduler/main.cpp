// gang-scheduler: flags, wiring, leader election and signals only; the logic
// lives in hybridjob_scheduler.
#include <csignal>
#include <iostream>
#include <map>
#include <random>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <hybridjob/common/flags.h>
#include <hybridjob/common/logging.h>
#include <hybridjob/common/signals.h>
#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/leader_election.h>
#include <hybridjob/k8s/rest_client.h>
#include <hybridjob/observability/http_server.h>
#include <hybridjob/observability/instrumentation.h>
#include <hybridjob/scheduler/config.h>
#include <hybridjob/scheduler/config_watcher.h>
#include <hybridjob/scheduler/gang_scheduler.h>

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
  bool leader_elect = false;
  std::string metrics_addr;
  std::string health_addr;
  hybridjob::FlagSet flags("gang-scheduler", kSummary);
  flags.String("kubeconfig", &kubeconfig, "kubeconfig file (else $KUBECONFIG, else in-cluster)");
  flags.String("config", &config_path, "scheduler configuration file (YAML)");
  flags.Bool("leader-elect", &leader_elect, "campaign for leadership (overrides the config file)");
  flags.String("metrics-addr", &metrics_addr, "overrides metricsAddr of the config file");
  flags.String("health-addr", &health_addr, "overrides healthAddr of the config file");
  hybridjob::AddLoggingFlags(flags, &logging);
  if (auto exit_code = hybridjob::ParseCommandLine(flags, argc, argv, logging)) {
    return *exit_code;
  }
  // Flags override the file, at start and on every reload.
  auto apply_flags = [&](hybridjob::scheduler::SchedulerConfig& config) {
    if (flags.WasSet("leader-elect")) {
      config.leader_election.enabled = leader_elect;
    }
    if (flags.WasSet("metrics-addr")) {
      config.metrics_addr = metrics_addr;
    }
    if (flags.WasSet("health-addr")) {
      config.health_addr = health_addr;
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

  obs::InstrumentClient(**client, registry);
  hybridjob::scheduler::GangScheduler scheduler(**client, config);
  running = &scheduler;
  auto& gang_latency =
      registry.GetHistogram("hybridjob_scheduler_gang_latency_seconds",
                            "From a group's oldest member's creation to its last member's binding",
                            obs::ExponentialBuckets(0.5, 2, 14));
  scheduler.SetGangLatencyObserver([&gang_latency](std::chrono::duration<double> latency) {
    gang_latency.Observe(latency.count());
  });
  std::atomic<bool> leading{false};
  // The labels each queue's info series was last given, so that a reload
  // moving a queue in the tree zeroes the series it leaves behind.
  std::map<std::string, obs::Labels> queue_info_labels;
  registry.AddCollector([&](obs::Registry& r) {
    const auto& stats = scheduler.stats();
    auto counter = [&r](const char* name, const char* help, double value) {
      auto& c = r.GetCounter(name, help);
      c.Inc(value - c.Value());
    };
    counter("hybridjob_scheduler_cycles_total", "Scheduling cycles run",
            static_cast<double>(stats.cycles.load()));
    counter("hybridjob_scheduler_groups_scheduled_total", "Pod groups placed and bound",
            static_cast<double>(stats.groups_scheduled.load()));
    counter("hybridjob_scheduler_pods_scheduled_total", "Pods bound",
            static_cast<double>(stats.pods_bound.load()));
    counter("hybridjob_scheduler_bind_errors_total", "Failed bindings",
            static_cast<double>(stats.bind_errors.load()));
    counter("hybridjob_scheduler_groups_rolled_back_total",
            "Groups whose binding failed part-way and was undone",
            static_cast<double>(stats.groups_rolled_back.load()));
    counter("hybridjob_scheduler_surplus_pods_total", "Members left out of placed groups",
            static_cast<double>(stats.surplus_marked.load()));
    r.GetGauge("hybridjob_scheduler_pending_groups", "Groups that waited in the last cycle")
        .Set(static_cast<double>(stats.groups_waiting.load()));
    r.GetGauge("hybridjob_scheduler_pending_pods", "Pods of this scheduler not yet bound")
        .Set(static_cast<double>(scheduler.cache().PendingCount()));
    r.GetGauge("hybridjob_scheduler_cycle_duration_seconds", "Duration of the last cycle")
        .Set(static_cast<double>(stats.last_cycle_micros.load()) / 1e6);
    for (const auto& [resource, totals] : scheduler.ResourceTotals()) {
      r.GetGauge("hybridjob_scheduler_allocatable", "Allocatable on schedulable nodes",
                 {{"resource", resource}})
          .Set(totals.first);
      r.GetGauge("hybridjob_scheduler_allocated", "Requested by pods on nodes",
                 {{"resource", resource}})
          .Set(totals.second);
    }
    counter("hybridjob_scheduler_groups_grown_total", "Running groups given more members",
            static_cast<double>(stats.groups_grown.load()));
    counter("hybridjob_scheduler_evictions_total", "Evictions the Eviction API accepted",
            static_cast<double>(stats.evictions.load()));
    counter("hybridjob_scheduler_evictions_refused_total",
            "Evictions the Eviction API refused (a PodDisruptionBudget, say)",
            static_cast<double>(stats.evictions_refused.load()));
    for (const auto& report : scheduler.QueueReports()) {
      const auto& queue = report.status;
      const obs::Labels labels = {{"queue", queue.name}};
      // The queue tree, to join on `queue`. A parent's pending groups, usage
      // and shares are its subtree's; its oldest-waiting age and eviction
      // counters count only groups in the queue itself (none: jobs run in
      // leaves), so they stay 0.
      const obs::Labels info = {
          {"queue", queue.name}, {"parent", queue.parent}, {"leaf", queue.leaf ? "true" : "false"}};
      const char* info_help =
          "1 per queue: its parent (empty at the top level) and whether jobs run in it";
      auto [last_info, first_seen] = queue_info_labels.try_emplace(queue.name, info);
      if (!first_seen && last_info->second != info) {
        r.GetGauge("hybridjob_queue_info", info_help, last_info->second).Set(0);
        last_info->second = info;
      }
      r.GetGauge("hybridjob_queue_info", info_help, info).Set(1);
      r.GetGauge("hybridjob_queue_pending_groups", "Groups of the queue waiting to start", labels)
          .Set(queue.waiting_groups);
      r.GetGauge("hybridjob_queue_oldest_waiting_seconds",
                 "Age of the queue's oldest group waiting to start", labels)
          .Set(report.oldest_waiting_seconds);
      r.GetGauge("hybridjob_queue_weighted_share", "Dominant share divided by weight", labels)
          .Set(queue.weighted_share);
      auto& reclaimed = r.GetCounter("hybridjob_queue_reclaimed_pods_total",
                                     "Members evicted from the queue by reclaim", labels);
      reclaimed.Inc(static_cast<double>(report.reclaimed_pods) - reclaimed.Value());
      auto& preempted = r.GetCounter("hybridjob_queue_preempted_pods_total",
                                     "Members evicted from the queue by preemption", labels);
      preempted.Inc(static_cast<double>(report.preempted_pods) - preempted.Value());
      auto resource_gauges = [&](const char* name, const char* help, auto&& amount) {
        for (const std::string& resource : std::vector<std::string>{"cpu", "memory"}) {
          r.GetGauge(name, help, {{"queue", queue.name}, {"resource", resource}})
              .Set(amount(resource));
        }
        for (const std::string& gpu : scheduler.gpu_resources()) {
          r.GetGauge(name, help, {{"queue", queue.name}, {"resource", gpu}}).Set(amount(gpu));
        }
      };
      // cpu in cores, as the cluster-wide gauges.
      auto scaled = [](const std::string& resource, int64_t amount) {
        return resource == "cpu" ? static_cast<double>(amount) / 1000.0
                                 : static_cast<double>(amount);
      };
      resource_gauges("hybridjob_queue_allocated", "Requested by the queue's bound pods",
                      [&](const std::string& res) { return scaled(res, queue.used.Get(res)); });
      resource_gauges(
          "hybridjob_queue_guaranteed", "What the queue is entitled to",
          [&](const std::string& res) { return scaled(res, queue.guaranteed.Get(res)); });
      resource_gauges("hybridjob_queue_max", "The queue's ceiling (-1: none)",
                      [&](const std::string& res) {
                        auto limit = queue.max.Limit(res);
                        return limit ? scaled(res, *limit) : -1.0;
                      });
    }
    r.GetGauge("hybridjob_scheduler_leader", "1 while this replica leads").Set(leading ? 1 : 0);
  });
  scheduler.Start();
  obs::ServingEndpoints endpoints;
  if (auto status = endpoints.Start(registry, {"metricsAddr", config.metrics_addr},
                                    {"healthAddr", config.health_addr},
                                    [&scheduler] { return scheduler.cache().HasSynced(); });
      !status.ok()) {
    scheduler.Stop();
    return Fail(status.message());
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
  endpoints.Stop();
  scheduler.Stop();
  return 0;
}
