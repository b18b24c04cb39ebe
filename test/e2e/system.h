// The whole system for an end-to-end test: a private local cluster with the
// CRD applied, hybridjob-sim, gang-scheduler and hybridjob-controller running
// as the real binaries, and kubectl. Everything stops when the object goes.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "child_process.h"
#include "test_cluster.h"

namespace hybridjob::testing {

struct SystemOptions {
  int nodes = 4;
  int gpus_per_node = 4;
  std::string scheduler_config;  // YAML; empty = defaults
};

class System {
 public:
  explicit System(const SystemOptions& options = {});
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

  ChildProcess& scheduler() { return *scheduler_; }
  ChildProcess& controller() { return *controller_; }
  // Logs of the three binaries, for failure messages.
  std::string Logs() const;

 private:
  PrivateCluster cluster_;
  std::unique_ptr<k8s::RestClient> client_;
  std::unique_ptr<ChildProcess> sim_;
  std::unique_ptr<ChildProcess> scheduler_;
  std::unique_ptr<ChildProcess> controller_;
  bool ok_ = false;
};

}  // namespace hybridjob::testing
