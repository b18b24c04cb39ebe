#include "system.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>

#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>

namespace hybridjob::testing {
namespace {

// The first replica keeps the plain name, so single-replica logs look as before.
std::string LogName(const std::string& binary, int replica) {
  return replica == 0 ? binary + ".log" : binary + "-" + std::to_string(replica) + ".log";
}

// HYBRIDJOB_E2E_LOG_LEVEL (e.g. debug) sets the binaries' --log-level, to
// chase a failure that the info logs do not explain.
void AddLogLevel(std::vector<std::string>& argv) {
  if (const char* level = std::getenv("HYBRIDJOB_E2E_LOG_LEVEL"); level != nullptr && *level) {
    argv.push_back("--log-level");
    argv.push_back(level);
  }
}

// A binary of build/bin with the flags every component gets here: the
// cluster's kubeconfig, no metrics or health listeners, and the member key
// the controller signs members with and the scheduler checks.
// An empty kubeconfig leaves the binary to KUBECONFIG.
std::vector<std::string> ComponentArgv(const std::string& binary, const std::string& kubeconfig,
                                       const std::string& member_key_file) {
  std::vector<std::string> argv = {
      BinaryDir() + "/" + binary, "--metrics-addr", "0", "--health-addr", "0",
      "--member-key-file",        member_key_file};
  if (!kubeconfig.empty()) {
    argv.insert(argv.begin() + 1, {"--kubeconfig", kubeconfig});
  }
  AddLogLevel(argv);
  return argv;
}

// Stops a replica and starts it again with `argv`, logging to the same file.
bool Restart(std::unique_ptr<ChildProcess>& replica, const std::vector<std::string>& argv) {
  const std::string log_path = replica->log_path();
  replica->Stop();
  replica = std::make_unique<ChildProcess>(argv, log_path);
  return replica->Running();
}

}  // namespace

System::System(const SystemOptions& options, const ReplicaOptions& replicas) {
  if (!cluster_.ok()) {
    return;
  }
  client_ = cluster_.AdminClient();
  if (!client_) {
    return;
  }
  std::string output;
  if (Kubectl("apply -f " + SourceDir() + "/crds/", &output) != 0) {
    ADD_FAILURE() << "applying the CRD failed:\n" << output;
    return;
  }
  if (Kubectl("wait --for condition=established --timeout=60s crd/hybridjobs.batch.hybridjob.io",
              &output) != 0) {
    ADD_FAILURE() << "the CRD was not established:\n" << output;
    return;
  }
  const std::string dir = cluster_.dir();
  std::string kubeconfig = cluster_.kubeconfig();
  if (options.kubeconfig_env) {
    ::setenv("KUBECONFIG", options.kubeconfig_env(cluster_).c_str(), 1);
    kubeconfig.clear();
  }
  std::vector<std::string> sim_argv = {BinaryDir() + "/hybridjob-sim", "--nodes",
                                       std::to_string(options.nodes), "--gpus-per-node",
                                       std::to_string(options.gpus_per_node), "--cpu", "32",
                                       "--memory", "256Gi", "--heartbeat-interval", "20s",
                                       // The default class, as kind's `standard`.
                                       "--storage-class", "standard"};
  if (!kubeconfig.empty()) {
    sim_argv.insert(sim_argv.begin() + 1, {"--kubeconfig", kubeconfig});
  }
  AddLogLevel(sim_argv);
  sim_argv.insert(sim_argv.end(), replicas.sim_args.begin(), replicas.sim_args.end());
  sim_ = std::make_unique<ChildProcess>(sim_argv, dir + "/logs/hybridjob-sim.log");
  // Nodes first, so the scheduler's first cycle sees them.
  const bool nodes_ready = WaitFor(
      [&] {
        auto nodes = client_->List(k8s::resources::Nodes(), "", {});
        return nodes.ok() && static_cast<int>(nodes->items.size()) == options.nodes;
      },
      std::chrono::seconds(30));
  if (!nodes_ready) {
    ADD_FAILURE() << "simulated nodes did not register:\n" << sim_->Log();
    return;
  }
  // A fresh member key per system, as an install's Secret holds one.
  const std::string member_key_file = dir + "/member-key";
  {
    std::random_device random;
    std::ofstream key(member_key_file);
    for (int i = 0; i < 8; ++i) {
      char word[9];
      std::snprintf(word, sizeof(word), "%08x", random());
      key << word;
    }
    key << "\n";
  }
  scheduler_argv_ = ComponentArgv("gang-scheduler", kubeconfig, member_key_file);
  if (!options.scheduler_config.empty()) {
    const std::string config_path = dir + "/scheduler.yaml";
    std::ofstream(config_path) << options.scheduler_config;
    scheduler_argv_.push_back("--config");
    scheduler_argv_.push_back(config_path);
  }
  scheduler_argv_.insert(scheduler_argv_.end(), replicas.scheduler_args.begin(),
                         replicas.scheduler_args.end());
  controller_argv_ = ComponentArgv("hybridjob-controller", kubeconfig, member_key_file);
  controller_argv_.insert(controller_argv_.end(), replicas.controller_args.begin(),
                          replicas.controller_args.end());
  ok_ = sim_->Running();
  if (options.kube_scheduler) {
    const std::string config_path = dir + "/kube-scheduler.yaml";
    // With --config, kube-scheduler v1.20 ignores --port 0 and serves health
    // and metrics on 0.0.0.0:10251 unless its configuration says otherwise:
    // two systems at once would collide there.
    const std::string health = "127.0.0.1:" + std::to_string(FreeLoopbackPort());
    std::ofstream(config_path) << "apiVersion: kubescheduler.config.k8s.io/v1beta1\n"
                                  "kind: KubeSchedulerConfiguration\n"
                                  "clientConnection:\n  kubeconfig: "
                               << cluster_.kubeconfig()
                               << "\nleaderElection:\n  leaderElect: false\n"
                                  "healthzBindAddress: "
                               << health << "\nmetricsBindAddress: " << health << "\n";
    kube_scheduler_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{KubernetesBinDir() + "/kube-scheduler", "--config", config_path,
                                 "--port", "0", "--secure-port", "0"},
        dir + "/logs/kube-scheduler.log");
    ok_ = ok_ && kube_scheduler_->Running();
  }
  for (int i = 0; i < replicas.schedulers; ++i) {
    schedulers_.push_back(std::make_unique<ChildProcess>(
        scheduler_argv_, dir + "/logs/" + LogName("gang-scheduler", i)));
    ok_ = ok_ && schedulers_.back()->Running();
  }
  for (int i = 0; i < replicas.controllers; ++i) {
    controllers_.push_back(std::make_unique<ChildProcess>(
        controller_argv_, dir + "/logs/" + LogName("hybridjob-controller", i)));
    ok_ = ok_ && controllers_.back()->Running();
  }
  if (!ok_) {
    ADD_FAILURE() << "a binary did not start:\n" << Logs();
  }
}

System::~System() {
  // Controllers and schedulers first, so nothing reacts to the nodes going.
  for (auto& controller : controllers_) {
    controller->Stop();
  }
  for (auto& scheduler : schedulers_) {
    scheduler->Stop();
  }
  if (kube_scheduler_) {
    kube_scheduler_->Stop();
  }
  if (sim_) {
    sim_->Stop();
  }
}

bool System::RestartScheduler(size_t replica) {
  return Restart(schedulers_.at(replica), scheduler_argv_);
}

bool System::RestartController(size_t replica) {
  return Restart(controllers_.at(replica), controller_argv_);
}

int System::Kubectl(const std::string& args, std::string* output) const {
  return RunCommand(cluster_.kubectl() + " --kubeconfig " + cluster_.kubeconfig() + " " + args,
                    output);
}

int System::Apply(const std::string& manifest, std::string* output) const {
  static int counter = 0;
  const std::string path = cluster_.dir() + "/manifest-" + std::to_string(counter++) + ".yaml";
  std::ofstream(path) << manifest;
  return Kubectl("apply -f " + path, output);
}

nlohmann::json System::Job(const std::string& name, const std::string& ns) {
  auto job = client_->Get(k8s::resources::HybridJobs(), ns, name);
  return job ? *job : nlohmann::json();
}

std::string System::Phase(const std::string& name, const std::string& ns) {
  nlohmann::json job = Job(name, ns);
  if (job.is_null() || !job.contains("status") || !job["status"].is_object()) {
    return "";
  }
  return job["status"].value("phase", "");
}

std::vector<nlohmann::json> System::Pods(const std::string& job, const std::string& ns) {
  k8s::ListOptions options;
  options.label_selector = std::string(api::kJobNameLabel) + "=" + job;
  auto pods = client_->List(k8s::resources::Pods(), ns, options);
  return pods ? pods->items : std::vector<nlohmann::json>{};
}

std::string System::Logs() const {
  // What the cluster holds now, then the binaries' logs.
  std::string out;
  std::string objects;
  Kubectl("get hybridjobs,pods --all-namespaces -o wide --request-timeout=10s", &objects);
  out += "==> kubectl get hybridjobs,pods --all-namespaces -o wide\n" + objects + "\n";
  // Why pending members wait, and the gang shape each carries.
  std::string waiting;
  Kubectl(
      "get pods --all-namespaces --field-selector=status.phase=Pending --request-timeout=10s "
      "-o custom-columns='POD:.metadata.name,"
      "SCHEDULED:.status.conditions[?(@.type==\"PodScheduled\")].reason,"
      "MESSAGE:.status.conditions[?(@.type==\"PodScheduled\")].message,"
      "GROUP:.metadata.annotations.batch\\.hybridjob\\.io/group-spec'",
      &waiting);
  out += "==> pending pods\n" + waiting + "\n";
  std::vector<const ChildProcess*> processes = {sim_.get(), kube_scheduler_.get()};
  for (const auto& scheduler : schedulers_) {
    processes.push_back(scheduler.get());
  }
  for (const auto& controller : controllers_) {
    processes.push_back(controller.get());
  }
  for (const auto* process : processes) {
    if (process != nullptr) {
      std::string log = process->Log();
      if (log.size() > 4000) {
        log = "..." + log.substr(log.size() - 4000);
      }
      out += "==> " + process->log_path() + "\n" + log + "\n";
    }
  }
  return out;
}

}  // namespace hybridjob::testing
