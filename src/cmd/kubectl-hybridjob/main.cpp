// kubectl-hybridjob: the `kubectl hybridjob` plugin. Flags, the kubeconfig
// and the client only; the commands live in hybridjob_cli.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include <hybridjob/cli/commands.h>
#include <hybridjob/cli/workloads.h>
#include <hybridjob/common/flags.h>
#include <hybridjob/common/logging.h>
#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/rest_client.h>

namespace {

constexpr const char* kProgram = "kubectl hybridjob";
constexpr const char* kSummary =
    "Shows HybridJobs, the gang-scheduler's queues and the cluster's GPUs; serves a job's\n"
    "model, or opens a notebook on its volumes.\n"
    "\n"
    "Commands:\n"
    "  status JOB    roles, members, nodes, GPUs, phase, restarts, and why the job waits\n"
    "  queues        per queue: guaranteed, in use and max per resource, weight, order,\n"
    "                and the jobs waiting in it, in line order\n"
    "  nodes         the GPU map: per node (and per topology domain) GPUs, used, free,\n"
    "                the jobs that hold them, and how fragmented the free GPUs are\n"
    "  logs JOB      the members' logs (--role, --index, --tail, --container, --run,\n"
    "                -f to follow)\n"
    "  serve JOB     a Deployment and Service (and an autoscaler) serving a model from a\n"
    "                job volume: --volume, --model-path, --image, --port, [--replicas |\n"
    "                --min-replicas --max-replicas --cpu-percent], [--name], [-- COMMAND]\n"
    "  notebook JOB  Jupyter on the job's volumes and code: [--image], [--name], [--port]\n"
    "\n"
    "queues and nodes read nodes, pods, HybridJobs, namespaces and PriorityClasses in all\n"
    "namespaces, and the gang-scheduler's ConfigMap (--scheduler-config).";

int Fail(const std::string& message, int code = 1) {
  std::cerr << "error: " << message << "\n";
  return code;
}

// kubectl's order: --kubeconfig, $KUBECONFIG, ~/.kube/config, in-cluster.
std::string KubeconfigPath(const std::string& flag) {
  if (!flag.empty()) {
    return flag;
  }
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    return "";  // ResolveClientConfig reads it
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    const std::filesystem::path path = std::filesystem::path(home) / ".kube" / "config";
    std::error_code error;
    if (std::filesystem::exists(path, error)) {
      return path.string();
    }
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  std::string kubeconfig;
  std::string context;
  std::string ns;
  std::string output;
  hybridjob::cli::CommandOptions options;
  hybridjob::LoggingFlags logging;
  logging.level = "warn";
  hybridjob::FlagSet flags(kProgram, kSummary);
  flags.String("kubeconfig", &kubeconfig, "kubeconfig file (else $KUBECONFIG, ~/.kube/config)");
  flags.String("context", &context, "kubeconfig context (else its current-context)");
  flags.String("namespace", &ns, "the job's namespace (else the context's)");
  flags.String("output", &output, "json or yaml (else a table)");
  flags.String(
      "scheduler-config", &options.scheduler_config,
      "NAMESPACE/NAME of the gang-scheduler's ConfigMap (queues, GPU resources, topology)");
  flags.String("role", &options.role, "logs: only this role's members");
  flags.Int("index", &options.index, "logs: only the member with this index (-1: every one)");
  flags.Int("tail", &options.tail, "logs: lines from the end of each log (-1: all)");
  flags.String("container", &options.container, "logs: this container (else the main one)");
  flags.Int("run", &options.run,
            "logs: the members of this run, an earlier one kept after a re-run (-1: the "
            "current run)");
  flags.Bool("follow", &options.follow, "logs: stream the logs until every member's has ended");
  flags.Int("max-log-requests", &options.max_log_requests,
            "logs -f: at most this many members' logs followed at once");
  flags.Duration("pod-running-timeout", &options.pod_running_timeout,
                 "logs -f: how long to wait for a member whose container has not started yet");
  hybridjob::cli::ServeOptions serve;
  hybridjob::cli::NotebookOptions notebook;
  std::string name;
  std::string image;
  std::string dry_run;
  int64_t port = 0;
  int64_t replicas = -1;
  int64_t min_replicas = -1;
  int64_t max_replicas = -1;
  int64_t cpu_percent = serve.cpu_percent;
  flags.String("volume", &serve.volume, "serve: the job volume that holds the model");
  flags.String("model-path", &serve.model_path, "serve: where the volume is mounted, read-only");
  flags.String(
      "image", &image,
      "serve: the model server's image; notebook: Jupyter's (default " + notebook.image + ")");
  flags.Int("port", &port, "serve: the port the server listens on; notebook: Jupyter's (8888)");
  flags.Int("replicas", &replicas, "serve: a fixed number of replicas (default 1)");
  flags.Int("min-replicas", &min_replicas, "serve: the autoscaler's minimum (default 1)");
  flags.Int("max-replicas", &max_replicas,
            "serve: the autoscaler's maximum; above the minimum, an autoscaler is made");
  flags.Int("cpu-percent", &cpu_percent, "serve: the autoscaler's CPU target, % of the request");
  flags.String("cpu-request", &serve.cpu_request, "serve: each replica's CPU request");
  flags.String("name", &name,
               "serve, notebook: the objects' name (default JOB-serve, JOB-notebook)");
  flags.String("dry-run", &dry_run,
               "serve, notebook: client to print the objects, not create them");
  flags.Shorthand('n', "namespace");
  flags.Shorthand('o', "output");
  flags.Shorthand('c', "container");
  flags.Shorthand('f', "follow");
  hybridjob::AddLoggingFlags(flags, &logging);
  flags.Arguments("COMMAND [JOB]");
  if (std::optional<int> exit =
          hybridjob::ParseCommandLine(flags, argc, argv, logging, /*positional_allowed=*/true)) {
    return *exit;
  }
  const std::vector<std::string>& args = flags.positional();
  if (args.empty()) {
    std::cerr << flags.Usage();
    return 1;
  }
  const std::string& command = args[0];
  const bool writes = command == "serve" || command == "notebook";
  const bool takes_job = command == "status" || command == "logs" || writes;
  if (command != "status" && command != "logs" && command != "queues" && command != "nodes" &&
      !writes) {
    return Fail("unknown command \"" + command +
                "\": use status, queues, nodes, logs, serve or notebook");
  }
  if (!flags.after_dash_dash().empty() && command != "serve") {
    return Fail(command + " takes no command after --");
  }
  if (takes_job ? args.size() != 2 : args.size() != 1) {
    return Fail(takes_job ? command + " needs one job name: kubectl hybridjob " + command + " JOB"
                          : command + " takes no arguments");
  }
  if (!writes) {
    auto format = hybridjob::cli::ParseOutputFormat(output);
    if (!format.ok()) {
      return Fail(format.status().message());
    }
    options.format = *format;
  }

  auto config = hybridjob::k8s::ResolveClientConfig(KubeconfigPath(kubeconfig), context);
  if (!config.ok()) {
    return Fail(config.status().message());
  }
  options.namespace_name = ns.empty() ? config->namespace_name : ns;
  config->user_agent = "kubectl-hybridjob";
  auto client = hybridjob::k8s::RestClient::Create(*config);
  if (!client.ok()) {
    return Fail(client.status().message());
  }
  hybridjob::k8s::ApiClient& api = **client;

  if (writes) {
    auto write = hybridjob::cli::ParseWriteOptions(options.namespace_name, output, dry_run);
    if (!write.ok()) {
      return Fail(write.status().message());
    }
    hybridjob::Status status;
    if (command == "serve") {
      serve.name = name;
      serve.image = image;
      serve.command = flags.after_dash_dash();
      serve.port = static_cast<int32_t>(port);
      serve.cpu_percent = static_cast<int32_t>(cpu_percent);
      auto set = [](int64_t value) {
        return value >= 0 ? std::optional<int32_t>(static_cast<int32_t>(value)) : std::nullopt;
      };
      serve.replicas = set(replicas);
      serve.min_replicas = set(min_replicas);
      serve.max_replicas = set(max_replicas);
      status = hybridjob::cli::RunServe(api, args[1], serve, *write, std::cout, std::cerr);
    } else {
      notebook.name = name;
      if (!image.empty()) {
        notebook.image = image;
      }
      if (port != 0) {
        notebook.port = static_cast<int32_t>(port);
      }
      status = hybridjob::cli::RunNotebook(api, args[1], notebook, *write, std::cout, std::cerr);
    }
    return status.ok() ? 0 : Fail(status.message());
  }
  if (command == "logs") {
    hybridjob::Status status = hybridjob::cli::RunLogs(api, args[1], options, std::cout, std::cerr);
    return status.ok() ? 0 : Fail(status.message());
  }
  std::string note;
  hybridjob::Result<std::string> text =
      command == "status"   ? hybridjob::cli::RunStatus(api, args[1], options)
      : command == "queues" ? hybridjob::cli::RunQueues(api, options, &note)
                            : hybridjob::cli::RunNodes(api, options, &note);
  if (!note.empty()) {
    std::cerr << "note: " << note << "\n";
  }
  if (!text.ok()) {
    return Fail(text.status().message());
  }
  std::cout << *text;
  return 0;
}
