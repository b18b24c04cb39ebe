// hybridjob-controller: flags, wiring, leader election, endpoints and signals
// only; the logic lives in hybridjob_controller.
#include <csignal>
#include <iostream>
#include <random>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <hybridjob/api/member_signature.h>
#include <hybridjob/common/flags.h>
#include <hybridjob/common/logging.h>
#include <hybridjob/common/signals.h>
#include <hybridjob/controller/job_controller.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/leader_election.h>
#include <hybridjob/k8s/rest_client.h>
#include <hybridjob/observability/http_server.h>
#include <hybridjob/observability/secure_serving.h>
#include <hybridjob/observability/instrumentation.h>

namespace {

constexpr const char* kSummary =
    "Runs HybridJobs (batch.hybridjob.io/v1alpha1): member pods, a headless Service, volumes,\n"
    "the cluster spec of the members the gang scheduler placed, status, restarts, deadlines,\n"
    "cleanup of parameter servers and TTL deletion.";

int Fail(const std::string& message) {
  return hybridjob::FailStartup("hybridjob-controller", message);
}

}  // namespace

int main(int argc, char** argv) {
  hybridjob::BlockShutdownSignals();
  std::string kubeconfig;
  hybridjob::LoggingFlags logging;
  hybridjob::ServingFlags serving{"0.0.0.0:10251", "0.0.0.0:10252"};
  std::string lease_namespace = "hybridjob-system";
  std::string lease_name = "hybridjob-controller";
  bool leader_elect = false;
  hybridjob::k8s::LeaderElectionConfig election;
  int64_t workers = 4;
  double qps = 100;
  int64_t burst = 200;
  hybridjob::controller::ControllerOptions options;
  hybridjob::FlagSet flags("hybridjob-controller", kSummary);
  flags.String("kubeconfig", &kubeconfig, "kubeconfig file");
  flags.DescribeDefault("kubeconfig", "$KUBECONFIG, else the in-cluster service account");
  flags.String("namespace", &options.namespace_name, "watch one namespace");
  flags.DescribeDefault("namespace", "every namespace");
  flags.Int("workers", &workers, "jobs reconciled concurrently");
  flags.Bool("leader-elect", &leader_elect, "campaign for leadership before reconciling");
  flags.String("leader-election-namespace", &lease_namespace, "namespace of the leader Lease");
  flags.String("leader-election-id", &lease_name, "name of the leader Lease");
  flags.Duration("leader-election-lease-duration", &election.lease_duration,
                 "how long a standby waits after the last renewal before taking over");
  flags.Duration("leader-election-renew-deadline", &election.renew_deadline,
                 "how long the leader keeps trying to renew before it gives up leading");
  flags.Duration("leader-election-retry-period", &election.retry_period,
                 "interval between renewals and acquisition attempts");
  hybridjob::AddServingFlags(flags, &serving);
  hybridjob::AddLoggingFlags(flags, &logging);
  flags.Double("qps", &qps, "API requests per second");
  flags.Int("burst", &burst, "API request burst");
  flags.Duration("status-batch-period", &options.status_batch_period,
                 "how long a job's status change that only reports progress (counts, its "
                 "place in the queue, Queued) may wait to be written with the next one; 0 "
                 "writes each at once");
  flags.String("code-fetcher-image", &options.planner.code_fetcher_image,
               "image of the init container that fetches spec.code.source");
  std::string gpu_resources = "nvidia.com/gpu";
  flags.String("gpu-resources", &gpu_resources,
               "comma-separated extended resources that count as GPUs (MPI hostfile slots)");
  std::string allowed_scheduler_names = "gang-scheduler";
  flags.String("allowed-scheduler-names", &allowed_scheduler_names,
               "comma-separated schedulers a job may name in spec.schedulerName; a job naming "
               "another is Invalid and gets no pod, so no job escapes the gang-scheduler's "
               "queues");
  std::string member_key_file;
  flags.String(std::string(hybridjob::api::kMemberKeyFileFlag), &member_key_file,
               "file of the keys member pods are signed with (the first; one per line), the "
               "same as the gang-scheduler's, so it places only members this controller made");
  flags.DescribeDefault(std::string(hybridjob::api::kMemberKeyFileFlag),
                        "none: members are not signed");
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
  options.member_keys = std::move(member_keys->keys);
  if (options.status_batch_period.count() < 0 ||
      options.status_batch_period > std::chrono::minutes(1)) {
    return Fail("--status-batch-period must be between 0 and 1m");
  }
  if (workers < 1 || workers > 256) {
    return Fail("--workers must be between 1 and 256");
  }
  auto gpu_resource_names = hybridjob::controller::ParseGpuResources(gpu_resources);
  if (!gpu_resource_names) {
    return Fail(gpu_resource_names.status().message());
  }
  options.planner.gpu_resources = std::move(*gpu_resource_names);
  auto scheduler_names = hybridjob::controller::ParseSchedulerNames(allowed_scheduler_names);
  if (!scheduler_names) {
    return Fail(scheduler_names.status().message());
  }
  options.planner.allowed_scheduler_names = std::move(*scheduler_names);
  // Checked before connecting, so a bad combination fails at once.
  if (!(election.lease_duration > election.renew_deadline &&
        election.renew_deadline > election.retry_period && election.retry_period.count() > 0)) {
    return Fail(
        "need --leader-election-lease-duration > --leader-election-renew-deadline > "
        "--leader-election-retry-period > 0");
  }
  options.workers = static_cast<int>(workers);

  auto client = hybridjob::k8s::ConnectFromFlags(kubeconfig, qps, static_cast<int>(burst),
                                                 std::max<int>(32, options.workers * 4),
                                                 "hybridjob-controller");
  if (!client) {
    return Fail(client.status().message());
  }
  // Fail fast, and clearly, when the API server is unreachable, the CRD is
  // missing or RBAC forbids reading jobs.
  hybridjob::k8s::ListOptions one;
  one.limit = 1;
  if (auto probe =
          (*client)->List(hybridjob::k8s::resources::HybridJobs(), options.namespace_name, one);
      !probe) {
    return Fail("cannot list hybridjobs: " + probe.status().ToString() +
                (hybridjob::k8s::IsNotFound(probe.status())
                     ? " (is crds/batch.hybridjob.io_hybridjobs.yaml applied?)"
                     : ""));
  }

  hybridjob::observability::Registry registry;
  hybridjob::observability::InstrumentClient(**client, registry);
  hybridjob::controller::JobController controller(
      **client, options, hybridjob::observability::WorkQueueMetrics(registry, "hybridjob"));
  auto& reconcile_seconds = registry.GetHistogram("hybridjob_controller_reconcile_duration_seconds",
                                                  "Time to reconcile one job",
                                                  hybridjob::observability::LatencyBuckets());
  auto& reconcile_errors = registry.GetCounter("hybridjob_controller_reconcile_errors_total",
                                               "Reconciles that failed and were requeued");
  controller.SetReconcileObserver([&](bool ok, std::chrono::steady_clock::duration duration) {
    reconcile_seconds.Observe(std::chrono::duration<double>(duration).count());
    if (!ok) {
      reconcile_errors.Inc();
    }
  });
  std::atomic<bool> leading{false};
  registry.AddCollector([&](hybridjob::observability::Registry& r) {
    for (const auto& [phase, count] : controller.JobsByPhase()) {
      r.GetGauge("hybridjob_jobs", "HybridJobs by phase",
                 {{"phase", phase.empty() ? "None" : phase}})
          .Set(count);
    }
    r.GetGauge("hybridjob_controller_leader", "1 while this replica leads").Set(leading ? 1 : 0);
  });

  auto security = hybridjob::observability::MakeServingSecurity(
      serving, **client, "hybridjob-controller",
      hybridjob::observability::ServingHosts({serving.metrics_addr}));
  if (!security.ok()) {
    return Fail(security.status().message());
  }
  controller.Start();
  hybridjob::observability::ServingEndpoints endpoints;
  if (auto status = endpoints.Start(
          registry, {"--metrics-addr", serving.metrics_addr},
          {"--health-addr", serving.health_addr},
          [&] { return controller.WaitForCacheSync(std::chrono::milliseconds(0)); }, *security);
      !status.ok()) {
    controller.Stop();
    return Fail(status.message());
  }
  if (!controller.WaitForCacheSync(std::chrono::minutes(2))) {
    controller.Stop();
    return Fail("caches did not sync within 2 minutes");
  }

  std::unique_ptr<hybridjob::k8s::LeaderElector> elector;
  if (leader_elect) {
    election.lease_namespace = lease_namespace;
    election.lease_name = lease_name;
    election.identity = hybridjob::k8s::DefaultLeaderIdentity();
    election.on_started_leading = [&] {
      spdlog::info("became leader ({}); reconciling", election.identity);
      leading = true;
      controller.StartWorkers();
    };
    election.on_stopped_leading = [&] {
      // Another replica may be reconciling now: stop at once.
      spdlog::error("lost leadership; exiting");
      leading = false;
      kill(getpid(), SIGTERM);
    };
    if (auto status = hybridjob::k8s::ValidateLeaderElectionConfig(election); !status.ok()) {
      controller.Stop();
      return Fail(status.message());
    }
    elector = std::make_unique<hybridjob::k8s::LeaderElector>(**client, election);
    elector->Start();
  } else {
    leading = true;
    controller.StartWorkers();
  }
  spdlog::info("hybridjob-controller running ({} workers, namespace {})", options.workers,
               options.namespace_name.empty() ? "all" : options.namespace_name);
  const int signal = hybridjob::WaitForShutdownSignal();
  spdlog::info("signal {}: stopping", signal);
  if (elector) {
    elector->Stop();
  }
  endpoints.Stop();
  controller.Stop();
  return 0;
}
