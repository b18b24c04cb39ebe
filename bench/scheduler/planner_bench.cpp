// Gang planner speed on a simulated cluster of 5,000 nodes with 8 GPUs each.
//
//   bench_scheduler_planner [--benchmark_filter=...] [--benchmark_repetitions=N]
//
// BM_PlanOneGang:     one group (1 PS + 64 one-GPU workers) planned against the
//                     cluster; the plan is not committed, so every iteration
//                     sees the same cluster. Target: <= 5 ms.
// BM_CycleOfBacklog:  1,000 pending groups of 10 pods (1 PS + 9 workers,
//                     worker min 4) grouped, ordered, planned and committed in
//                     one cycle. Target: <= 1 s.
//                     /topology:1 gives every group spec.topology Required
//                     at a rack level (racks of 40 nodes, 125 of them), the
//                     scheduler configured with levels rack and hostname.
//                     Target: at most 2x the cost without.
// BM_PolicyCycleOfBacklog: the same backlog spread over four weighted queues
//                     (one with a guarantee, one with a GPU ceiling) through
//                     PlanCycleWithPolicies: groups start at their minimum in
//                     DRF order, then grow. Target: <= 1 s. /rebalance:1 with
//                     rebalancing to fair shares: at most 1.2x the cost without.
// BM_ReclaimForWaitingGang: the cluster full of 1,000 elastic groups (40
//                     one-GPU workers each, min 8) in one queue; a 64-worker
//                     gang of another queue waits. One cycle: usage from the
//                     snapshot, the failed placement, the victim search and
//                     its what-if plans (victims are not applied, so every
//                     iteration sees the same cluster). Target: <= 200 ms.
// BM_PlanGangWithVolumes: one group (1 PS + 32 one-GPU workers) planned onto
//                     1,000 nodes, its workers' volumes checked as
//                     kube-scheduler's VolumeBinding plugin does: volumes=none
//                     (the baseline), local (each worker's own
//                     WaitForFirstConsumer claim matched among 2,000 node-local
//                     PVs, two per node), shared (one ReadWriteMany claim bound
//                     to a zonal PV: a quarter of the nodes qualify) and
//                     provisioned (each worker's claim provisioned by a class
//                     whose allowedTopologies name one zone).
// BM_PolicyCycleOnBusyCluster: the busy cluster (50,000 bound pods, all of
//                     this scheduler's, in four queues) and one pending group
//                     (1 PS + 9 workers): one policy cycle, as the live loop
//                     runs one per batch of watch events; its decision is not
//                     committed. /memo:1 keeps per-node queue usage between
//                     cycles (QueueUsageMemo, as gang-scheduler does); /memo:0
//                     sums every bound pod in every cycle.
// The /busy variants first load the cluster with 50,000 running pods (10 per
// node, a share of the GPUs taken) so scans meet full and partly used nodes.
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/scheduler/core/cycle.h>
#include <hybridjob/scheduler/core/fair_share.h>
#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/policy_cycle.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/core/volumes.h>

namespace {

using namespace hybridjob::scheduler;  // NOLINT(google-build-using-namespace)

constexpr int kNodes = 5000;
constexpr int64_t kGpusPerNode = 8;
constexpr int64_t kGi = int64_t{1} << 30;
constexpr char kRackLabel[] = "example.com/rack";
constexpr int kNodesPerRack = 40;

NodeInfo MakeNode(int index) {
  NodeInfo node;
  node.name = "node-" + std::to_string(index);
  node.labels.Set("kubernetes.io/hostname", node.name);
  node.labels.Set("topology.kubernetes.io/zone", "zone-" + std::to_string(index % 4));
  node.labels.Set("node.kubernetes.io/instance-type", "gpu-8x");
  node.labels.Set(kRackLabel, "rack-" + std::to_string(index / kNodesPerRack));
  node.allocatable.milli_cpu = 96000;
  node.allocatable.memory = 768 * kGi;
  node.allocatable.ephemeral_storage = 1000 * kGi;
  node.allocatable.pods = 110;
  node.allocatable.SetScalar("nvidia.com/gpu", kGpusPerNode);
  node.taints.push_back(Taint{"nvidia.com/gpu", "present", TaintEffect::kNoSchedule});
  return node;
}

// The toleration every GPU job carries for the GPU nodes' taint.
Toleration GpuToleration() {
  return Toleration{"nvidia.com/gpu", TolerationOperator::kExists, "", {}};
}

// A cluster of kNodes GPU nodes; with `busy`, 10 running pods per node that
// take (node % 8) of its GPUs between them.
std::unique_ptr<Snapshot> MakeCluster(bool busy) {
  auto snapshot = std::make_unique<Snapshot>();
  for (int n = 0; n < kNodes; ++n) {
    (void)snapshot->UpsertNode(MakeNode(n));
    if (!busy) {
      continue;
    }
    int64_t gpus_left = n % kGpusPerNode;
    for (int p = 0; p < 10; ++p) {
      PodInfo pod;
      pod.namespace_name = "background";
      pod.name = "bg-" + std::to_string(n) + "-" + std::to_string(p);
      pod.node_name = "node-" + std::to_string(n);
      pod.phase = "Running";
      pod.labels.Set("app", "bg-" + std::to_string(p));
      pod.requests.milli_cpu = 2000;
      pod.requests.memory = 8 * kGi;
      pod.requests.pods = 1;
      if (gpus_left > 0) {
        pod.requests.SetScalar("nvidia.com/gpu", 1);
        --gpus_left;
      }
      (void)snapshot->AddPod(std::move(pod));
    }
  }
  return snapshot;
}

PodInfo MakeMember(const std::string& job, const GroupSpec& spec, const std::string& role,
                   int index, int64_t gpus, int64_t created) {
  PodInfo pod;
  pod.namespace_name = "ml";
  pod.name = job + "-" + role + "-" + std::to_string(index);
  pod.uid = "uid-" + pod.name;
  pod.scheduler_name = std::string(hybridjob::api::kDefaultSchedulerName);
  pod.phase = "Pending";
  pod.creation_time = Timestamp{std::chrono::seconds{created}};
  pod.job_name = job;
  pod.role = role;
  pod.index = index;
  pod.labels.Set(hybridjob::api::kJobNameLabel, job);
  pod.labels.Set(hybridjob::api::kRoleLabel, role);
  pod.labels.Set(hybridjob::api::kIndexLabel, std::to_string(index));
  pod.requests.milli_cpu = gpus > 0 ? 8000 : 4000;
  pod.requests.memory = (gpus > 0 ? 64 : 16) * kGi;
  pod.requests.pods = 1;
  if (gpus > 0) {
    pod.requests.SetScalar("nvidia.com/gpu", gpus);
  }
  pod.tolerations.push_back(GpuToleration());
  pod.group_spec = spec;
  return pod;
}

struct Backlog {
  std::vector<std::unique_ptr<PodInfo>> pods;
  std::vector<const PodInfo*> pending;
};

Backlog MakeBacklog(int groups, int workers_per_group, int32_t worker_min,
                    const std::vector<std::string>& queues = {"default"}, bool rack_bound = false) {
  Backlog backlog;
  for (int g = 0; g < groups; ++g) {
    std::string job = "job-" + std::to_string(g);
    GroupSpec spec;
    spec.queue = queues[static_cast<size_t>(g) % queues.size()];
    if (rack_bound) {
      spec.topology =
          hybridjob::api::TopologySpec{kRackLabel, hybridjob::api::TopologyMode::kRequired};
    }
    spec.roles = {GroupRole{"ps", 1, 1, 1}, GroupRole{"worker", worker_min, workers_per_group, 0}};
    backlog.pods.push_back(std::make_unique<PodInfo>(MakeMember(job, spec, "ps", 0, 0, g)));
    for (int w = 0; w < workers_per_group; ++w) {
      backlog.pods.push_back(std::make_unique<PodInfo>(MakeMember(job, spec, "worker", w, 1, g)));
    }
  }
  for (const auto& pod : backlog.pods) {
    backlog.pending.push_back(pod.get());
  }
  return backlog;
}

void BM_PlanOneGang(benchmark::State& state) {
  bool busy = state.range(0) != 0;
  std::unique_ptr<Snapshot> cluster = MakeCluster(busy);
  Backlog gang = MakeBacklog(1, 64, 64);
  std::vector<PodGroup> groups = BuildGroups(gang.pending, *cluster);
  PlannerConfig config;
  uint32_t start = 0;
  size_t placed = 0;
  for (auto _ : state) {
    GroupPlan plan = PlanGroup(*cluster, groups.front(), config, start);
    start = plan.next_start_slot;
    placed = plan.assignments.size();
    benchmark::DoNotOptimize(plan);
  }
  if (placed != 65) {
    state.SkipWithError("the gang was not placed whole");
  }
  state.counters["pods_placed"] = static_cast<double>(placed);
}
BENCHMARK(BM_PlanOneGang)
    ->ArgName("busy")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

void BM_CycleOfBacklog(benchmark::State& state) {
  bool busy = state.range(0) != 0;
  bool topology = state.range(1) != 0;
  Backlog backlog = MakeBacklog(1000, 9, 4, {"default"}, topology);
  PlannerConfig config;
  if (topology) {
    config.topology_levels = {kRackLabel, "kubernetes.io/hostname"};
  }
  size_t placed_pods = 0;
  size_t placed_groups = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<Snapshot> cluster = MakeCluster(busy);
    state.ResumeTiming();

    std::vector<PodGroup> groups = BuildGroups(backlog.pending, *cluster);
    CycleResult result =
        RunCycle(*cluster, std::move(groups), Timestamp{std::chrono::seconds{1000000}}, config);
    placed_pods = 0;
    placed_groups = 0;
    for (const GroupDecision& decision : result.decisions) {
      if (decision.plan.placed()) {
        ++placed_groups;
        placed_pods += decision.plan.assignments.size();
      }
    }
    benchmark::DoNotOptimize(result);

    state.PauseTiming();
    cluster.reset();  // freeing 50,000 pods is not part of the cycle
    state.ResumeTiming();
  }
  state.counters["groups_placed"] = static_cast<double>(placed_groups);
  state.counters["pods_placed"] = static_cast<double>(placed_pods);
}
BENCHMARK(BM_CycleOfBacklog)
    ->ArgNames({"busy", "topology"})
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

PolicyConfig FourQueues() {
  PolicyConfig policy;
  QueueSpec research;
  research.name = "research";
  research.weight = 2;
  research.guaranteed.SetScalar("nvidia.com/gpu", 4000);
  QueueSpec production;
  production.name = "production";
  production.max.Set("nvidia.com/gpu", 6000);
  QueueSpec interns;
  interns.name = "interns";
  interns.weight = 0.5;
  QueueSpec fallback;
  fallback.name = "default";
  policy.queues = {research, production, interns, fallback};
  return policy;
}

void BM_PolicyCycleOfBacklog(benchmark::State& state) {
  bool busy = state.range(0) != 0;
  Backlog backlog = MakeBacklog(1000, 9, 4, {"research", "production", "interns", "default"});
  PlannerConfig config;
  PolicyConfig policy = FourQueues();
  policy.reclaim.rebalance = state.range(1) != 0;
  size_t placed_pods = 0;
  size_t placed_groups = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<Snapshot> cluster = MakeCluster(busy);
    state.ResumeTiming();

    std::vector<PodGroup> groups = BuildGroups(backlog.pending, *cluster);
    PolicyCycleResult result = PlanCycleWithPolicies(*cluster, std::move(groups), policy, config,
                                                     Timestamp{std::chrono::seconds{1000000}});
    placed_pods = 0;
    placed_groups = 0;
    for (const PolicyDecision& decision : result.decisions) {
      if (decision.plan.placed()) {
        ++placed_groups;
        placed_pods += decision.plan.assignments.size();
      }
    }
    benchmark::DoNotOptimize(result);

    state.PauseTiming();
    cluster.reset();
    state.ResumeTiming();
  }
  state.counters["groups_placed"] = static_cast<double>(placed_groups);
  state.counters["pods_placed"] = static_cast<double>(placed_pods);
}
void BM_PolicyCycleOnBusyCluster(benchmark::State& state) {
  const bool memoized = state.range(0) != 0;
  PolicyConfig policy = FourQueues();
  std::unique_ptr<Snapshot> cluster = std::make_unique<Snapshot>();
  const std::vector<std::string> queues = {"research", "production", "interns", "default"};
  for (int n = 0; n < kNodes; ++n) {
    (void)cluster->UpsertNode(MakeNode(n));
    for (int p = 0; p < 10; ++p) {
      GroupSpec spec;
      spec.queue = queues[static_cast<size_t>(n + p) % queues.size()];
      PodInfo pod = MakeMember("bound-" + std::to_string(n) + "-" + std::to_string(p), spec,
                               "worker", 0, p < 4 ? 1 : 0, 0);
      pod.node_name = "node-" + std::to_string(n);
      pod.phase = "Running";
      (void)cluster->AddPod(std::move(pod));
    }
  }
  Backlog waiting = MakeBacklog(1, 9, 9, {"research"});
  PlannerConfig config;
  QueueUsageMemo memo;
  size_t placed = 0;
  std::string reason;
  for (auto _ : state) {
    PolicyCycleResult result = PlanCycleWithPolicies(
        *cluster, BuildGroups(waiting.pending, *cluster), policy, config,
        Timestamp{std::chrono::seconds{1000000}}, {}, 0, memoized ? &memo : nullptr);
    placed = 0;
    reason = "no decision for job-0";
    for (const PolicyDecision& decision : result.decisions) {
      if (decision.group.name == "job-0" && decision.plan.placed()) {
        placed += decision.plan.assignments.size();
      } else if (decision.group.name == "job-0") {
        reason = decision.plan.reason;
      }
    }
    benchmark::DoNotOptimize(result);
    // The cycle assumed the placed group into the snapshot; the next cycle
    // meets it waiting again, on a snapshot whose touched nodes changed.
    state.PauseTiming();
    for (const PodInfo* pod : waiting.pending) {
      (void)cluster->RemovePod(pod->namespace_name, pod->name);
    }
    state.ResumeTiming();
  }
  if (placed != 10) {
    state.SkipWithError(("the waiting group was not placed: " + reason).c_str());
  }
  state.counters["bound_pods"] = static_cast<double>(cluster->pod_count());
}
BENCHMARK(BM_PolicyCycleOnBusyCluster)
    ->ArgName("memo")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

BENCHMARK(BM_PolicyCycleOfBacklog)
    ->ArgNames({"busy", "rebalance"})
    ->Args({0, 0})
    ->Args({0, 1})
    ->Args({1, 0})
    ->Args({1, 1})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

void BM_ReclaimForWaitingGang(benchmark::State& state) {
  auto cluster = std::make_unique<Snapshot>();
  for (int n = 0; n < kNodes; ++n) {
    (void)cluster->UpsertNode(MakeNode(n));
  }
  GroupSpec elastic;
  elastic.queue = "batch";
  elastic.roles = {GroupRole{"worker", 8, 40, 0}};
  for (int g = 0; g < 1000; ++g) {
    std::string job = "elastic-" + std::to_string(g);
    for (int w = 0; w < 40; ++w) {
      PodInfo pod = MakeMember(job, elastic, "worker", w, 1, g);
      pod.node_name = "node-" + std::to_string((g * 40 + w) / kGpusPerNode);
      pod.phase = "Running";
      (void)cluster->AddPod(std::move(pod));
    }
  }
  GroupSpec gang;
  gang.queue = "research";
  gang.roles = {GroupRole{"worker", 64, 64, 0}};
  Backlog waiting;
  for (int w = 0; w < 64; ++w) {
    waiting.pods.push_back(
        std::make_unique<PodInfo>(MakeMember("gang", gang, "worker", w, 1, 5000)));
    waiting.pending.push_back(waiting.pods.back().get());
  }
  PolicyConfig policy;
  QueueSpec batch;
  batch.name = "batch";
  QueueSpec research;
  research.name = "research";
  policy.queues = {batch, research};
  PlannerConfig config;
  size_t evictions = 0;
  for (auto _ : state) {
    PolicyCycleResult result =
        PlanCycleWithPolicies(*cluster, BuildGroups(waiting.pending, *cluster), policy, config,
                              Timestamp{std::chrono::seconds{1000000}});
    evictions = result.evictions.size();
    benchmark::DoNotOptimize(result);
  }
  if (evictions != 64) {
    state.SkipWithError("expected 64 evictions");
  }
  state.counters["evictions"] = static_cast<double>(evictions);
}
BENCHMARK(BM_ReclaimForWaitingGang)
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true);

enum class VolumeLayout : int64_t { kNone = 0, kLocal = 1, kShared = 2, kProvisioned = 3 };

constexpr int kVolumeNodes = 1000;
constexpr char kZoneLabel[] = "topology.kubernetes.io/zone";

NodeSelectorTerm Requiring(const std::string& key, const std::string& value) {
  NodeSelectorTerm term;
  term.match_expressions.push_back(SelectorRequirement{key, SelectorOperator::kIn, {value}});
  return term;
}

ClaimInfo MakeClaim(const std::string& name, const std::string& storage_class, AccessModes modes) {
  ClaimInfo claim;
  claim.namespace_name = "ml";
  claim.name = name;
  claim.uid = "uid-" + name;
  claim.storage_class = storage_class;
  claim.access_modes = modes;
  claim.requested_bytes = 50 * kGi;
  return claim;
}

// kVolumeNodes GPU nodes and the storage of `layout`, tracked by the planner.
std::unique_ptr<Snapshot> MakeStorageCluster(VolumeLayout layout) {
  auto snapshot = std::make_unique<Snapshot>();
  for (int n = 0; n < kVolumeNodes; ++n) {
    (void)snapshot->UpsertNode(MakeNode(n));
  }
  StorageCatalog& storage = snapshot->storage();
  storage.set_tracked(true);
  storage.UpsertClass(StorageClassInfo{"local", std::string(kNoProvisioner), true, {}});
  storage.UpsertClass(
      StorageClassInfo{"zonal", "ebs.csi.aws.com", true, {Requiring(kZoneLabel, "zone-2")}});
  storage.UpsertClass(StorageClassInfo{"shared", "nfs.csi.k8s.io", false, {}});
  if (layout == VolumeLayout::kLocal) {
    for (int n = 0; n < kVolumeNodes; ++n) {
      for (int v = 0; v < 2; ++v) {
        VolumeInfo volume;
        volume.name = "local-" + std::to_string(n) + "-" + std::to_string(v);
        volume.storage_class = "local";
        volume.access_modes = kReadWriteOnce;
        volume.capacity_bytes = 100 * kGi;
        volume.node_affinity = std::vector<NodeSelectorTerm>{
            Requiring("kubernetes.io/hostname", "node-" + std::to_string(n))};
        storage.UpsertVolume(std::move(volume));
      }
    }
  }
  if (layout == VolumeLayout::kShared) {
    VolumeInfo volume;
    volume.name = "shared-pv";
    volume.storage_class = "shared";
    volume.access_modes = kReadWriteMany;
    volume.capacity_bytes = 1000 * kGi;
    volume.phase = "Bound";
    volume.claim_namespace = "ml";
    volume.claim_name = "shared";
    volume.node_affinity = std::vector<NodeSelectorTerm>{Requiring(kZoneLabel, "zone-1")};
    storage.UpsertVolume(std::move(volume));
    ClaimInfo claim = MakeClaim("shared", "shared", kReadWriteMany);
    claim.volume_name = "shared-pv";
    storage.UpsertClaim(std::move(claim));
  }
  return snapshot;
}

void BM_PlanGangWithVolumes(benchmark::State& state) {
  const auto layout = static_cast<VolumeLayout>(state.range(0));
  std::unique_ptr<Snapshot> cluster = MakeStorageCluster(layout);
  Backlog gang = MakeBacklog(1, 32, 32);
  for (const auto& pod : gang.pods) {
    if (pod->role != "worker") {
      continue;
    }
    const std::string claim = "data-" + std::to_string(pod->index);
    switch (layout) {
      case VolumeLayout::kNone:
        break;
      case VolumeLayout::kLocal:
        cluster->storage().UpsertClaim(MakeClaim(claim, "local", kReadWriteOnce));
        pod->claims.push_back(claim);
        break;
      case VolumeLayout::kShared:
        pod->claims.emplace_back("shared");
        break;
      case VolumeLayout::kProvisioned:
        cluster->storage().UpsertClaim(MakeClaim(claim, "zonal", kReadWriteOnce));
        pod->claims.push_back(claim);
        break;
    }
  }
  std::vector<PodGroup> groups = BuildGroups(gang.pending, *cluster);
  PlannerConfig config;
  uint32_t start = 0;
  size_t placed = 0;
  size_t claim_decisions = 0;
  for (auto _ : state) {
    GroupPlan plan = PlanGroup(*cluster, groups.front(), config, start);
    start = plan.next_start_slot;
    placed = plan.assignments.size();
    claim_decisions = plan.claim_decisions.size();
    benchmark::DoNotOptimize(plan);
  }
  if (placed != 33) {
    state.SkipWithError("the gang was not placed whole");
  }
  const size_t expected_decisions =
      layout == VolumeLayout::kLocal || layout == VolumeLayout::kProvisioned ? 32 : 0;
  if (claim_decisions != expected_decisions) {
    state.SkipWithError("unexpected number of claim decisions");
  }
  state.counters["pods_placed"] = static_cast<double>(placed);
  state.counters["claim_decisions"] = static_cast<double>(claim_decisions);
}
BENCHMARK(BM_PlanGangWithVolumes)
    ->ArgName("volumes")
    ->Arg(static_cast<int64_t>(VolumeLayout::kNone))
    ->Arg(static_cast<int64_t>(VolumeLayout::kLocal))
    ->Arg(static_cast<int64_t>(VolumeLayout::kShared))
    ->Arg(static_cast<int64_t>(VolumeLayout::kProvisioned))
    ->Unit(benchmark::kMillisecond)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
