// hybridjob-sim: simulated GPU nodes and a kubelet for them. Flags, wiring and
// signals only; the logic lives in hybridjob_sim. `hybridjob-sim trace ...`
// replays a job trace in virtual time instead (trace_command.cpp).
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include <hybridjob/common/flags.h>
#include <hybridjob/common/logging.h>
#include <hybridjob/common/signals.h>
#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/rest_client.h>
#include <hybridjob/sim/provisioner.h>
#include <hybridjob/sim/simulator.h>

#include "trace_command.h"

namespace {

constexpr const char* kSummary =
    "Registers simulated GPU nodes (Ready, with Lease heartbeats) and plays the kubelet for pods\n"
    "bound to them: Running at once, then Succeeded or Failed after the time the pod asks for\n"
    "(annotations sim.hybridjob.io/duration and sim.hybridjob.io/exit-code). `kubectl logs` of a\n"
    "member shows what it was given; `kubectl exec` is refused, saying why. Removes its nodes\n"
    "on exit unless --keep-nodes. With --storage-class, also a volume provisioner for its nodes:\n"
    "a WaitForFirstConsumer class whose claims get a PV on the node their scheduler selected.\n"
    "With --exec (as root), runs the pods' containers as real local processes instead, each with\n"
    "its volumes, environment, hostname and a loopback address of its own, and serves their output\n"
    "to `kubectl logs`.\n"
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
  std::string storage_class;
  bool default_storage_class = true;
  bool exec = false;
  std::string exec_dir;
  std::string exec_image_paths;
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
  flags.Int("zones", &options.nodes.layout.zones,
            "lay the nodes out in this many zones (label topology.kubernetes.io/zone=zone-Z); "
            "0: no layout");
  flags.Int("racks-per-zone", &options.nodes.layout.racks_per_zone,
            "racks per zone (label topology.hybridjob.io/rack=zone-Z-rack-R)");
  flags.Int("nodes-per-rack", &options.nodes.layout.nodes_per_rack,
            "nodes per rack; --nodes defaults to zones x racks x nodes");
  flags.String("gpu-product", &options.nodes.gpu_product,
               "GPU model on GPU nodes (label nvidia.com/gpu.product), e.g. NVIDIA-A100-SXM4-80GB");
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
  flags.String("storage-class", &storage_class,
               "create this StorageClass (WaitForFirstConsumer, provisioner "
               "sim.hybridjob.io/local) and provision node-local volumes for claims of any class "
               "with that provisioner once a node of this sim is selected for them; empty: none");
  flags.Bool("default-storage-class", &default_storage_class,
             "mark the --storage-class class as the cluster's default (claims without a class "
             "get it)");
  flags.Bool("exec", &exec,
             "run bound pods' containers as local processes (needs root: each container gets "
             "its own mount and UTS namespace over an overlay of /); the image is ignored");
  flags.String("exec-dir", &exec_dir,
               "with --exec: where containers' root overlays, volumes, claims' data and logs "
               "live (default: a temporary directory, removed on exit)");
  flags.String("exec-image-paths", &exec_image_paths,
               "with --exec: IMAGE=PATH[,IMAGE=PATH...], the PATH a container of that image runs "
               "with unless it sets one, standing in for the programs the image holds (other "
               "images: the host's usual PATH)");
  hybridjob::AddLoggingFlags(flags, &logging);
  if (auto exit_code = hybridjob::ParseCommandLine(flags, argc, argv, logging)) {
    return *exit_code;
  }
  auto parsed_labels = hybridjob::sim::ParseLabels(labels);
  if (!parsed_labels) {
    return Fail("--node-labels: " + parsed_labels.status().message());
  }
  options.nodes.labels = *parsed_labels;
  if (options.nodes.layout.zones > 0 && !flags.WasSet("nodes")) {
    options.nodes.count = options.nodes.layout.node_count();
  }
  auto parsed_taints = hybridjob::sim::ParseTaints(taints);
  if (!parsed_taints) {
    return Fail("--taints: " + parsed_taints.status().message());
  }
  options.nodes.taints = *parsed_taints;
  options.workers = static_cast<int>(workers);
  if (!exec_dir.empty() && !exec) {
    return Fail("--exec-dir goes with --exec");
  }
  // A temporary state directory is this process's own, removed on exit.
  std::optional<std::filesystem::path> temporary_exec_dir;
  if (exec && exec_dir.empty()) {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "hybridjob-sim-exec-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return Fail(std::string("--exec: cannot make a temporary directory: ") +
                  std::strerror(errno));
    }
    temporary_exec_dir = pattern;
    exec_dir = pattern;
  }
  if (!exec_image_paths.empty() && !exec) {
    return Fail("--exec-image-paths goes with --exec");
  }
  if (exec) {
    options.exec_dir = exec_dir;
    auto image_paths = hybridjob::sim::ParseExecImagePaths(exec_image_paths);
    if (!image_paths.ok()) {
      return Fail("--exec-image-paths: " + image_paths.status().message());
    }
    options.exec_image_paths = std::move(image_paths).value();
  }
  struct RemoveOnExit {
    std::optional<std::filesystem::path> dir;
    ~RemoveOnExit() {
      if (dir) {
        std::error_code ec;
        std::filesystem::remove_all(*dir, ec);
      }
    }
  } remove_on_exit{temporary_exec_dir};
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
  // The class before the nodes: whoever waits for the nodes may create
  // claims at once, and the default class is given at a claim's creation.
  std::unique_ptr<hybridjob::sim::Provisioner> provisioner;
  if (!storage_class.empty()) {
    const auto names = simulator.NodeNames();
    provisioner = std::make_unique<hybridjob::sim::Provisioner>(
        **client, storage_class, default_storage_class,
        std::set<std::string>(names.begin(), names.end()));
    if (auto status = provisioner->Start(); !status.ok()) {
      provisioner->Stop();
      return Fail(status.ToString());
    }
  }
  if (auto status = simulator.Start(); !status.ok()) {
    simulator.Stop();
    if (provisioner) {
      provisioner->Stop();
    }
    return Fail(status.ToString());
  }
  spdlog::info("simulating {} nodes; Ctrl-C to stop", options.nodes.count);
  const int signal = hybridjob::WaitForShutdownSignal();
  spdlog::info("signal {}: stopping", signal);
  if (provisioner) {
    provisioner->Stop();
  }
  simulator.Stop();
  const auto& stats = simulator.stats();
  spdlog::info("pods started {}, finished {}, removed {}; write errors {}",
               stats.pods_started.load(), stats.pods_finished.load(), stats.pods_removed.load(),
               stats.write_errors.load());
  return 0;
}
