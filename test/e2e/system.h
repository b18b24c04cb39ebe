// The whole system for an end-to-end test: a private local cluster with the
// CRD applied, hybridjob-sim, gang-scheduler and hybridjob-controller running
// as the real binaries, and kubectl. Everything stops when the object goes.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "child_process.h"
#include "test_cluster.h"

namespace hybridjob::testing {

struct SystemOptions {
  int nodes = 4;
  int gpus_per_node = 4;
  std::string scheduler_config;  // YAML; empty = defaults
  // Also run kube-scheduler v1.20.2, which binds every pod that is not the
  // gang scheduler's onto the same simulated nodes.
  bool kube_scheduler = false;
  // When set, the binaries get no --kubeconfig: this process's KUBECONFIG is
  // set to what it returns for the private cluster (a list of files, say),
  // and the binaries read it as kubectl would.
  std::function<std::string(const PrivateCluster&)> kubeconfig_env;
};

// How many replicas of each binary run and what extra flags they get: fault
// tests run standbys with short leases. A separate
// struct so SystemOptions stays initialisable field by field.
struct ReplicaOptions {
  int controllers = 1;
  int schedulers = 1;
  std::vector<std::string> controller_args;
  std::vector<std::string> scheduler_args;
  std::vector<std::string> sim_args;
};

class System {
 public:
  explicit System(const SystemOptions& options = {}, const ReplicaOptions& replicas = {});
  ~System();
  System(const System&) = delete;
  System& operator=(const System&) = delete;

  bool ok() const { return ok_; }
  k8s::RestClient& client() { return *client_; }
  const PrivateCluster& cluster() const { return cluster_; }

  // kubectl against the cluster; returns its exit code, output in *output.
  int Kubectl(const std::string& args, std::string* output = nullptr) const;
  // kubectl apply -f of a manifest given as text.
  int Apply(const std::string& manifest, std::string* output = nullptr) const;

  nlohmann::json Job(const std::string& name, const std::string& ns = "default");
  std::string Phase(const std::string& name, const std::string& ns = "default");
  // Pods of a job by name, from a fresh list.
  std::vector<nlohmann::json> Pods(const std::string& job, const std::string& ns = "default");

  ChildProcess& scheduler(size_t replica = 0) { return *schedulers_.at(replica); }
  ChildProcess& controller(size_t replica = 0) { return *controllers_.at(replica); }
  ChildProcess& sim() { return *sim_; }
  size_t scheduler_count() const { return schedulers_.size(); }
  size_t controller_count() const { return controllers_.size(); }
  // Starts a replica again with its original flags (after Kill or Stop); its
  // log goes on in the same file. False when it did not come up.
  bool RestartScheduler(size_t replica = 0);
  bool RestartController(size_t replica = 0);
  // Logs of the three binaries, for failure messages.
  std::string Logs() const;

 private:
  PrivateCluster cluster_;
  std::unique_ptr<k8s::RestClient> client_;
  std::unique_ptr<ChildProcess> sim_;
  std::unique_ptr<ChildProcess> kube_scheduler_;
  std::vector<std::string> scheduler_argv_;
  std::vector<std::string> controller_argv_;
  std::vector<std::unique_ptr<ChildProcess>> schedulers_;
  std::vector<std::unique_ptr<ChildProcess>> controllers_;
  bool ok_ = false;
};

}  // namespace hybridjob::testing
