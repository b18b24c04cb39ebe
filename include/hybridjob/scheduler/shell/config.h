// The gang scheduler's configuration file (YAML). Every field is documented in
// docs/scheduler-config.md. Unknown fields and bad values are refused with a
// message naming the field.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/core/gpu_resources.h>
#include <hybridjob/scheduler/core/queues.h>
#include <hybridjob/scheduler/core/scorers.h>

namespace hybridjob::scheduler {

struct LeaderElectionSettings {
  bool enabled = false;
  std::string lease_name = "gang-scheduler";
  std::string lease_namespace = "hybridjob-system";
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};

  friend bool operator==(const LeaderElectionSettings&, const LeaderElectionSettings&) = default;
};

// The cluster's network topology as node labels, outermost level first (zone,
// rack, NVLink clique, host). A node without a level's label belongs to no
// domain of that level. Jobs name a level in spec.topology.
struct TopologySettings {
  std::vector<std::string> levels;

  friend bool operator==(const TopologySettings&, const TopologySettings&) = default;
};

struct SchedulerConfig {
  std::string scheduler_name = "gang-scheduler";
  // The resources counted as GPUs and their weights: `gpuResources` as a list
  // of names (each weighs 1) or a map of name to GPUs per unit.
  GpuResources gpu_resources;
  // The node label naming a node's GPU model; empty turns the per-model
  // count of the waiting reasons off.
  std::string gpu_model_label = "nvidia.com/gpu.product";
  PackingPolicy scoring = PackingPolicy::kGpuBinPacking;
  int32_t percentage_of_nodes_to_score = 0;  // 0 = adaptive, as kube-scheduler
  int64_t gang_backoff_seconds = 5;
  double client_qps = 500;
  int64_t client_burst = 1000;
  int64_t bind_concurrency = 16;
  // How long a placed gang waits for its claims to be Bound (pre-bound or
  // provisioned) before it is planned again: kube-scheduler's
  // VolumeBinding bindTimeoutSeconds.
  int64_t volume_bind_timeout_seconds = 600;
  LeaderElectionSettings leader_election;
  std::string metrics_addr = "0.0.0.0:10261";
  std::string health_addr = "0.0.0.0:10262";
  // The read-only web dashboard (dashboard.h); "" or "0": off.
  std::string dashboard_addr;
  // Policies (docs/scheduler-policies.md). No queues configured: every group
  // runs in the implicit `default` queue.
  std::vector<QueueSpec> queues;
  ReclaimSettings reclaim;
  PreemptionSettings preemption;
  StarvationSettings starvation;
  // Levels and starvation guard of queues with order AttainedService.
  AttainedServiceSettings attained_service;
  TopologySettings topology;

  friend bool operator==(const SchedulerConfig&, const SchedulerConfig&) = default;
};

// The policy layer's configuration from the file's: queues, switches, and the
// scheduler name (pods of other schedulers belong to no queue).
PolicyConfig PolicyConfigFrom(const SchedulerConfig& config);

Result<SchedulerConfig> ParseSchedulerConfig(std::string_view yaml_text);
Result<SchedulerConfig> LoadSchedulerConfigFile(const std::string& path);

}  // namespace hybridjob::scheduler
