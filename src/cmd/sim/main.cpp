// hybridjob-sim: simulated GPU nodes and a kubelet for them. Flags, wiring and
// signals only; the logic lives in hybridjob_sim. `hybridjob-sim trace ...`
// replays a job trace in virtual time instead (trace_command.cpp).
#include <iostream>
#include <string_view>

#include <spdlog/spdlog.h>

#include <hybridjob/common/flags.h>
#include <hybridjob/common/logging.h>
#include <hybridjob/common/signals.h>
#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/rest_client.h>
#include <hybridjob/sim/simulator.h>

#include "trace_command.h"

namespace {

constexpr const char* kSummary =
    "Registers simulated GPU nodes (Ready, with Lease heartbeats) and plays the kubelet for pods\n"
    "bound to them: Running at once, then Succeeded or Failed after the time the pod asks for\n"
    "(annotations sim.hybridjob.io/duration and sim.hybridjob.io/exit-code). Removes its nodes\n"
    "on exit unless --keep-nodes.\n"
    "`hybridjob-sim trace --help`: replay a job trace in virtual time instead.";

int Fail(const std::string& message) {
  return hybridjob::FailStartup("hybridjob-sim", message);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "trace") {
    return hybridjob::sim::RunTraceCommand(argc, argv);
  }
  hybridjob::BlockShutdownSignals();
  hybridjob::sim::SimulatorOptions options;
  std::string kubeconfig;
  std::string labels;
  std::string taints;
  hybridjob::LoggingFlags logging;
  int64_t workers = options.workers;
  double qps = 500;
  int64_t burst = 1000;
  hybridjob::FlagSet flags("hybridjob-sim", kSummary);
  flags.String("kubeconfig", &kubeconfig, "kubeconfig file (else $KUBECONFIG, else in-cluster)");
  flags.Int("nodes", &options.nodes.count, "number of simulated nodes");
  flags.Int("gpus-per-node", &options.nodes.gpus_per_node, "GPUs per node");
  flags.String("gpu-resource", &options.nodes.gpu_resource, "extended resource name of a GPU");
  flags.String("cpu", &options.nodes.cpu, "CPU capacity per node");
  flags.String("memory", &options.nodes.memory, "memory capacity per node");
  flags.Int("max-pods", &options.nodes.max_pods, "pod capacity per node");
  flags.String("node-prefix", &options.nodes.name_prefix, "node names are <prefix>-<i>");
  flags.String("node-labels", &labels, "extra node labels, key=value,...");
  flags.String("taints", &taints, "node taints, key[=value]:Effect,...");
  flags.Duration("heartbeat-interval", &options.heartbeat_interval, "node Lease renewal period");
  flags.Int("workers", &workers, "concurrent pod status writers");
  flags.Double("qps", &qps, "API requests per second (0 = unlimited)");
  flags.Int("burst", &burst, "API request burst");
  flags.Bool("keep-nodes", &options.keep_nodes, "leave the nodes registered on exit");
  flags.Bool("kubelet-admission", &options.kubelet_admission,
             "refuse a bound pod that does not fit beside the pods already admitted on its "
             "node (Failed, reason OutOf<resource>), as a kubelet does; "
             "--kubelet-admission=false admits everything");
  hybridjob::AddLoggingFlags(flags, &logging);
  if (auto exit_code = hybridjob::ParseCommandLine(flags, argc, argv, logging)) {
    return *exit_code;
  }
  auto parsed_labels = hybridjob::sim::ParseLabels(labels);
  if (!parsed_labels) {
    return Fail("--node-labels: " + parsed_labels.status().message());
  }
  options.nodes.labels = *parsed_labels;
  auto parsed_taints = hybridjob::sim::ParseTaints(taints);
  if (!parsed_taints) {
    return Fail("--taints: " + parsed_taints.status().message());
  }
  options.nodes.taints = *parsed_taints;
  options.workers = static_cast<int>(workers);
  if (auto status = hybridjob::sim::ValidateNodePool(options.nodes); !status.ok()) {
    return Fail(status.message());
  }

  auto client =
      hybridjob::k8s::ConnectFromFlags(kubeconfig, qps, static_cast<int>(burst),
                                       std::max<int>(16, options.workers * 2), "hybridjob-sim");
  if (!client) {
    return Fail(client.status().message());
  }

  hybridjob::sim::Simulator simulator(**client, options);
  if (auto status = simulator.Start(); !status.ok()) {
    simulator.Stop();
    return Fail(status.ToString());
  }
  spdlog::info("simulating {} nodes; Ctrl-C to stop", options.nodes.count);
  const int signal = hybridjob::WaitForShutdownSignal();
  spdlog::info("signal {}: stopping", signal);
  simulator.Stop();
  const auto& stats = simulator.stats();
  spdlog::info("pods started {}, finished {}, removed {}; write errors {}",
               stats.pods_started.load(), stats.pods_finished.load(), stats.pods_removed.load(),
               stats.write_errors.load());
  return 0;
}
