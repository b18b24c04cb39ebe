#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>
#include <utility>

#include <hybridjob/api/names.h>
#include <hybridjob/scheduler/core/cycle.h>
#include <hybridjob/scheduler/core/fair_share.h>
#include <hybridjob/scheduler/core/fair_targets.h>
#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/policy_cycle.h>
#include <hybridjob/scheduler/core/queues.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/core/topology.h>
#include <hybridjob/sim/trace/engine.h>

namespace hybridjob::sim::trace {
namespace {

namespace sched = hybridjob::scheduler;

constexpr double kInfinity = std::numeric_limits<double>::infinity();
// Completions within this much virtual time of an event belong to its batch.
constexpr double kTimeEpsilon = 1e-6;
// Virtual time 0 as a wall-clock instant for the scheduler's timestamps.
constexpr int64_t kEpochSeconds = 1'700'000'000;
constexpr std::string_view kNamespace = "trace";

// Gangs that start only with every role at its maximum.
bool StartsAtMax(Policy policy) {
  return policy == Policy::kStaticGang || policy == Policy::kGangBackfill || policy == Policy::kLas;
}

// The pod priority of a las level: the least served level ranks highest, so
// the core's priority order and preemption carry out the policy.
int32_t LasPriority(int32_t level, int32_t levels) {
  return levels - 1 - level;
}

// What the replayed cluster can ever hold, to refuse jobs that could never
// start: worked out once, not per job.
struct ClusterShape {
  int64_t gpus = 0;
  int32_t largest_node_gpus = 0;
  std::set<std::string, std::less<>> gpu_models;  // of nodes with GPUs
  // Per configured topology level, the GPUs of its largest domain.
  std::map<std::string, int64_t, std::less<>> largest_domain_gpus;
};

ClusterShape ShapeOf(const ReplayOptions& options) {
  ClusterShape shape;
  shape.gpus = ClusterGpus(options);
  shape.largest_node_gpus =
      options.inventory.empty() ? options.gpus_per_node : LargestNodeGpus(options.inventory);
  for (const std::string& level : options.topology_levels) {
    std::map<std::string_view, int64_t> by_domain;
    for (const InventoryNode& node : options.inventory) {
      if (auto label = node.labels.find(level); label != node.labels.end()) {
        by_domain[label->second] += node.gpus;
      }
    }
    int64_t& largest = shape.largest_domain_gpus[level];
    for (const auto& [domain, gpus] : by_domain) {
      largest = std::max(largest, gpus);
    }
  }
  for (const InventoryNode& node : options.inventory) {
    if (auto model = node.labels.find(options.gpu_model_label);
        node.gpus > 0 && model != node.labels.end()) {
      shape.gpu_models.insert(model->second);
    }
  }
  return shape;
}

sched::Timestamp ToTimestamp(double seconds) {
  return sched::Timestamp{std::chrono::seconds{kEpochSeconds + static_cast<int64_t>(seconds)}};
}

// The queues of a replay: the configured ones without namespace restrictions
// (a trace has no namespaces), else one top-level queue per trace queue.
std::vector<sched::QueueSpec> ReplayQueues(const std::vector<TraceJob>& trace,
                                           const ReplayOptions& options) {
  std::vector<sched::QueueSpec> queues;
  if (!options.queues.empty()) {
    queues = options.queues;
    for (sched::QueueSpec& queue : queues) {
      queue.namespaces.clear();
      queue.namespace_selector.reset();
    }
    return queues;
  }
  std::set<std::string> names;
  for (const TraceJob& job : trace) {
    names.insert(job.queue);
  }
  for (const std::string& name : names) {
    sched::QueueSpec queue;
    queue.name = name;
    queues.push_back(queue);
  }
  return queues;
}

// Per-queue totals along the tree of `queues`: a job counts in its queue and
// in every ancestor.
std::vector<QueueRecord> QueueRecords(const std::vector<sched::QueueSpec>& queues,
                                      const std::vector<JobRecord>& jobs) {
  sched::QueueTable table(queues);
  std::unordered_map<std::string, QueueRecord> by_name;
  for (const sched::QueueSpec& queue : table.queues()) {
    QueueRecord& record = by_name[queue.name];
    record.name = queue.name;
    record.parent = queue.parent;
    record.leaf = table.IsLeaf(queue.name);
    record.depth = table.Depth(queue.name);
  }
  bool default_named = false;
  for (const JobRecord& job : jobs) {
    default_named |= job.queue == api::kDefaultQueue;
    std::vector<std::string> path = table.Ancestors(job.queue);
    path.insert(path.begin(), job.queue);
    for (const std::string& name : path) {
      auto it = by_name.find(name);
      if (it == by_name.end()) {
        continue;
      }
      QueueRecord& record = it->second;
      ++record.jobs;
      record.wait_seconds += job.not_running_seconds;
      if (job.start >= 0) {
        ++record.started;
        record.first_wait_seconds += job.start - job.submit;
      }
      if (job.finished()) {
        ++record.finished;
        record.jct_seconds += job.finish - job.submit;
      }
      record.gpu_seconds_held += job.gpu_seconds_held;
      record.partial_gpu_seconds += job.partial_gpu_seconds;
      record.evicted_members += job.evicted_members;
      record.lost_gpu_seconds += job.lost_gpu_seconds;
    }
  }
  bool default_configured = std::any_of(queues.begin(), queues.end(), [](const auto& queue) {
    return queue.name == api::kDefaultQueue;
  });
  if (!default_configured && !default_named) {
    by_name.erase(std::string(api::kDefaultQueue));
  }
  // Depth first: each parent, then its children by name.
  std::vector<QueueRecord> out;
  std::vector<std::string> top;
  for (const auto& [name, record] : by_name) {
    if (record.parent.empty()) {
      top.push_back(name);
    }
  }
  std::sort(top.begin(), top.end());
  std::vector<std::string> stack(top.rbegin(), top.rend());
  while (!stack.empty()) {
    std::string name = std::move(stack.back());
    stack.pop_back();
    out.push_back(by_name.at(name));
    const std::vector<std::string>& children = table.Children(name);
    stack.insert(stack.end(), children.rbegin(), children.rend());
  }
  return out;
}

struct Member {
  std::unique_ptr<sched::PodInfo> pod;  // the pending form; the snapshot holds the bound copy
  size_t role = 0;
  int32_t gpus = 0;
  uint32_t slot = 0;  // its node, while bound
  bool bound = false;
  bool leaving = false;  // evicted, still in its grace period
};

struct Job {
  const TraceJob* trace = nullptr;
  std::string name;
  std::vector<Member> members;
  std::vector<int32_t> bound_in_role;
  int64_t held_gpus = 0;
  bool submitted = false;
  bool finished = false;
  bool running = false;
  JobWork work;
  double start = -1;
  double finish = -1;
  int64_t resizes = 0;
  int64_t evicted_members = 0;
  int32_t start_members = 0;
  int32_t start_domains = 0;
  int32_t las_level = 0;
};

struct Removal {
  double time = 0;
  size_t job = 0;
  size_t member = 0;
  bool operator>(const Removal& other) const { return time > other.time; }
};

class Replayer {
 public:
  Replayer(const std::vector<TraceJob>& trace, const ReplayOptions& options)
      : trace_(trace), options_(options) {}

  Result<ReplayResult> Run();

 private:
  Status BuildCluster();
  void BuildJobs();
  sched::PolicyConfig MakePolicyConfig() const;
  double NextEventTime() const;
  void AdvanceTo(double now);
  // Adds `span` seconds of the queues' distance to their fair shares.
  void AccountShares(double span);
  void ProcessEvents(double now);
  void Finish(size_t job_index, double now);
  void RemoveMember(size_t job_index, size_t member_index);
  void RunCycles(double now);
  void RunPolicyCycle(double now, const std::vector<size_t>& job_indices);
  void ApplyPlacement(const sched::PodInfo* pod, const std::string& node);
  void UpdateRunning(size_t job_index, double now);
  // las: moves running jobs whose attained service reached a threshold to
  // their new level.
  void UpdateLasLevels();
  void SetPodPriority(Job& job, int32_t priority);
  // When the next running job reaches a las threshold; +inf when none will.
  double NextLasCrossing() const;
  void AddGpusInUse(uint32_t slot, int64_t delta);
  // Domains of the domain level the job's bound members span.
  int32_t DomainsSpanned(const Job& job) const;
  void Record(double now);

  const std::vector<TraceJob>& trace_;
  const ReplayOptions& options_;
  sched::Snapshot snapshot_;
  sched::PolicyConfig policy_;
  sched::PlannerConfig planner_;
  sched::PolicyState state_;
  uint32_t start_slot_ = 0;
  sched::QueueUsageMemo queue_usage_;    // per node, from one cycle to the next
  std::vector<int32_t> domain_of_slot_;  // empty without a domain level
  std::vector<double> las_thresholds_;   // empty unless the policy is las
  // Per snapshot slot: its GPUs and those its member pods hold; and the GPUs
  // free on slots where some are held (see fragmented_gpu_seconds).
  std::vector<int64_t> slot_gpus_;
  std::vector<int64_t> slot_gpus_in_use_;
  int64_t fragmented_free_gpus_ = 0;

  std::vector<Job> jobs_;
  std::unordered_map<const sched::PodInfo*, std::pair<size_t, size_t>> member_by_pod_;
  std::unordered_map<std::string, std::pair<size_t, size_t>> member_by_name_;
  std::unordered_map<std::string, size_t> job_by_name_;
  // Submitted, unfinished jobs in submit order.
  std::vector<size_t> active_;
  size_t next_arrival_ = 0;
  std::priority_queue<Removal, std::vector<Removal>, std::greater<>> removals_;
  double now_ = 0;
  bool dirty_ = true;  // something changed since the last cycle
  // Capacity was released since the last cycle (a job ended, a member left).
  bool capacity_freed_ = false;
  // Jobs that arrived since the last cycle, in submit order.
  std::vector<size_t> arrived_;

  ReplayResult result_;
  // The replay's queue tree, for the fair shares of every policy.
  std::optional<sched::QueueTable> share_table_;
  // By queue: {seconds with work waiting, distance GPU-seconds}.
  std::unordered_map<std::string, std::pair<double, double>> share_distance_;
};

Status Replayer::BuildCluster() {
  for (const InventoryNode& listed : options_.inventory) {
    sched::NodeInfo node;
    node.name = listed.name;
    node.allocatable.milli_cpu = listed.milli_cpu;
    node.allocatable.memory = listed.memory_bytes;
    node.allocatable.pods = 110;
    if (listed.gpus > 0) {
      node.allocatable.SetScalar(sched::kResourceNvidiaGpu, listed.gpus);
    }
    for (const auto& [key, value] : listed.labels) {
      node.labels.Set(key, value);
    }
    if (Status status = snapshot_.UpsertNode(std::move(node)); !status.ok()) {
      return status;
    }
  }
  const int64_t nodes = options_.inventory.empty() ? options_.gpus / options_.gpus_per_node : 0;
  for (int64_t i = 0; i < nodes; ++i) {
    sched::NodeInfo node;
    char name[32];
    std::snprintf(name, sizeof(name), "node-%05lld", static_cast<long long>(i));
    node.name = name;
    node.allocatable.milli_cpu = 4000LL * options_.gpus_per_node + 8000;
    node.allocatable.memory = 1LL << 40;
    node.allocatable.pods = 110;
    node.allocatable.SetScalar(sched::kResourceNvidiaGpu, options_.gpus_per_node);
    if (Status status = snapshot_.UpsertNode(std::move(node)); !status.ok()) {
      return status;
    }
  }
  if (const std::string level = DomainLevel(options_); !level.empty()) {
    domain_of_slot_ = sched::BuildTopologyLevel(snapshot_.slots(), level).domain_of_slot;
  }
  for (const sched::NodeState& state : snapshot_.slots()) {
    slot_gpus_.push_back(state.in_use ? state.info.allocatable.Scalar(sched::kResourceNvidiaGpu)
                                      : 0);
  }
  slot_gpus_in_use_.assign(slot_gpus_.size(), 0);
  return Status::Ok();
}

void Replayer::BuildJobs() {
  bool lone_pods = options_.policy == Policy::kPodGreedy;
  bool at_max = StartsAtMax(options_.policy);
  bool own_queues =
      options_.policy == Policy::kElasticReclaim || options_.policy == Policy::kAttainedService;
  bool las = options_.policy == Policy::kLas;
  jobs_.resize(trace_.size());
  for (size_t j = 0; j < trace_.size(); ++j) {
    const TraceJob& source = trace_[j];
    Job& job = jobs_[j];
    job.trace = &source;
    char name[32];
    std::snprintf(name, sizeof(name), "job-%06zu", j);
    job.name = name;
    job_by_name_.emplace(job.name, j);
    job.work = JobWork(source.work_gpu_seconds, source.MaxGpus(), options_.speedup_exponent,
                       options_.checkpoint_interval_seconds);
    job.bound_in_role.assign(source.roles.size(), 0);
    sched::GroupSpec spec;
    spec.queue = own_queues ? source.queue : std::string(api::kDefaultQueue);
    spec.schedule_timeout_seconds = 0;  // every member pod exists from the start
    spec.topology = source.topology;
    for (const TraceRole& role : source.roles) {
      sched::GroupRole role_spec;
      role_spec.name = role.name;
      role_spec.min_replicas = at_max ? role.max_replicas : role.min_replicas;
      role_spec.max_replicas = role.max_replicas;
      spec.roles.push_back(role_spec);
    }
    for (size_t r = 0; r < source.roles.size(); ++r) {
      const TraceRole& role = source.roles[r];
      for (int32_t index = 0; index < role.max_replicas; ++index) {
        auto pod = std::make_unique<sched::PodInfo>();
        pod->namespace_name = std::string(kNamespace);
        char pod_name[64];
        std::snprintf(pod_name, sizeof(pod_name), "%s-r%zu-%04d", job.name.c_str(), r, index);
        pod->name = pod_name;
        pod->uid = pod->name;
        pod->scheduler_name = "gang-scheduler";
        pod->phase = "Pending";
        pod->creation_time = ToTimestamp(source.submit_seconds);
        pod->priority = las ? LasPriority(0, options_.las_levels) : 0;
        pod->requests.pods = 1;
        pod->requests.milli_cpu = 1000LL * std::max(1, role.gpus_per_member);
        if (role.gpus_per_member > 0) {
          pod->requests.SetScalar(sched::kResourceNvidiaGpu, role.gpus_per_member);
        }
        if (!source.gpu_model.empty()) {
          pod->node_selector.Set(options_.gpu_model_label, source.gpu_model);
        }
        if (!lone_pods) {
          // Gang policies see a group; pod-greedy sees lone pods, as kube-scheduler does.
          pod->job_name = job.name;
          pod->role = role.name;
          pod->index = index;
          pod->group_spec = spec;
        }
        Member member;
        member.role = r;
        member.gpus = role.gpus_per_member;
        member_by_pod_.emplace(pod.get(), std::make_pair(j, job.members.size()));
        member_by_name_.emplace(pod->name, std::make_pair(j, job.members.size()));
        member.pod = std::move(pod);
        job.members.push_back(std::move(member));
      }
    }
  }
}

sched::PolicyConfig Replayer::MakePolicyConfig() const {
  sched::PolicyConfig config;
  config.reclaim.enabled = false;
  config.reclaim.growth = false;
  config.starvation.max_wait_seconds = 0;
  switch (options_.policy) {
    case Policy::kPodGreedy:
      break;
    case Policy::kStaticGang: {
      // One strict FIFO line: nothing starts while an earlier job waits.
      sched::QueueSpec line;
      line.name = std::string(api::kDefaultQueue);
      line.order = sched::QueueOrder::kStrictFifo;
      config.queues.push_back(std::move(line));
      break;
    }
    case Policy::kGangBackfill:
      break;  // the default queue: a job that does not fit lets later ones by
    case Policy::kElasticGang:
      config.reclaim.growth = true;
      break;
    case Policy::kLas:
      // The default queue orders by priority (the level), then age; a gang
      // that does not fit evicts whole gangs of lower priority only, so jobs
      // of one level never preempt each other.
      config.preemption.enabled = true;
      break;
    case Policy::kElasticReclaim:
    case Policy::kAttainedService: {
      config.reclaim.enabled = true;
      config.reclaim.growth = true;
      config.starvation.max_wait_seconds = options_.starvation_seconds;
      config.reclaim.rebalance = options_.rebalance;
      config.reclaim.share_tolerance = options_.share_tolerance;
      config.reclaim.min_resize_interval_seconds = options_.min_resize_interval_seconds;
      config.queues = ReplayQueues(trace_, options_);
      if (options_.policy == Policy::kAttainedService) {
        config.attained_service = options_.attained_service;
        const sched::QueueTable table(config.queues);
        for (sched::QueueSpec& queue : config.queues) {
          if (table.IsLeaf(queue.name)) {
            queue.order = sched::QueueOrder::kAttainedService;
          }
        }
        if (table.Find(api::kDefaultQueue) != nullptr &&
            std::none_of(config.queues.begin(), config.queues.end(),
                         [](const auto& queue) { return queue.name == api::kDefaultQueue; })) {
          sched::QueueSpec fallback;
          fallback.name = std::string(api::kDefaultQueue);
          fallback.order = sched::QueueOrder::kAttainedService;
          config.queues.push_back(std::move(fallback));
        }
      }
      break;
    }
  }
  return config;
}

double Replayer::NextEventTime() const {
  double next = kInfinity;
  if (next_arrival_ < trace_.size()) {
    next = trace_[next_arrival_].submit_seconds;
  }
  if (!removals_.empty()) {
    next = std::min(next, removals_.top().time);
  }
  for (size_t j : active_) {
    if (jobs_[j].running) {
      next = std::min(next, jobs_[j].work.FinishTime());
    }
  }
  return std::min(next, NextLasCrossing());
}

double Replayer::NextLasCrossing() const {
  double next = kInfinity;
  for (size_t j : active_) {
    const Job& job = jobs_[j];
    if (!job.running || job.held_gpus <= 0 ||
        job.las_level >= static_cast<int32_t>(las_thresholds_.size())) {
      continue;
    }
    double missing =
        las_thresholds_[static_cast<size_t>(job.las_level)] - result_.jobs[j].gpu_seconds_held;
    next = std::min(next, now_ + std::max(missing, 0.0) / static_cast<double>(job.held_gpus));
  }
  return next;
}

void Replayer::UpdateLasLevels() {
  if (las_thresholds_.empty()) {
    return;
  }
  for (size_t j : active_) {
    // Waiting jobs too: one whose gang left at the instant it reached a
    // threshold is no longer running, and its new level must still count.
    Job& job = jobs_[j];
    int32_t level = LasLevel(result_.jobs[j].gpu_seconds_held, las_thresholds_);
    if (level != job.las_level) {
      job.las_level = level;
      SetPodPriority(job, LasPriority(level, options_.las_levels));
      dirty_ = true;
    }
  }
}

void Replayer::SetPodPriority(Job& job, int32_t priority) {
  for (Member& member : job.members) {
    member.pod->priority = priority;
    if (!member.bound) {
      continue;
    }
    // The snapshot holds the bound copy: replace it with one of the new priority.
    if (const sched::PodInfo* bound =
            snapshot_.FindPod(member.pod->namespace_name, member.pod->name)) {
      sched::PodInfo copy = *bound;
      copy.priority = priority;
      (void)snapshot_.AddPod(std::move(copy));
    }
  }
}

void Replayer::AddGpusInUse(uint32_t slot, int64_t delta) {
  if (slot >= slot_gpus_.size() || delta == 0) {
    return;
  }
  auto free_if_partly_used = [this](uint32_t s) {
    return slot_gpus_in_use_[s] > 0 ? std::max<int64_t>(0, slot_gpus_[s] - slot_gpus_in_use_[s])
                                    : 0;
  };
  fragmented_free_gpus_ -= free_if_partly_used(slot);
  slot_gpus_in_use_[slot] += delta;
  fragmented_free_gpus_ += free_if_partly_used(slot);
}

void Replayer::AdvanceTo(double now) {
  double span = now - now_;
  if (span <= 0) {
    return;
  }
  int64_t busy = 0;
  int64_t partial = 0;
  bool waiting = false;
  for (size_t j : active_) {
    Job& job = jobs_[j];
    if (job.running) {
      job.work.AdvanceTo(now);
      busy += job.held_gpus;
    } else {
      partial += job.held_gpus;
      waiting = true;
    }
  }
  result_.busy_gpu_seconds += static_cast<double>(busy) * span;
  result_.partial_gpu_seconds += static_cast<double>(partial) * span;
  if (waiting) {
    result_.waiting_seconds += span;
    result_.busy_gpu_seconds_while_waiting += static_cast<double>(busy) * span;
    result_.fragmented_gpu_seconds += static_cast<double>(fragmented_free_gpus_) * span;
  }
  AccountShares(span);
  for (size_t j : active_) {
    Job& job = jobs_[j];
    JobRecord& record = result_.jobs[j];
    if (job.running) {
      record.gpu_seconds_held += static_cast<double>(job.held_gpus) * span;
      // GPUs held through a restart delay do no work.
      const double paused = std::min(now, job.work.pause_until()) - now_;
      if (paused > 0) {
        record.lost_gpu_seconds += static_cast<double>(job.held_gpus) * paused;
      }
    } else {
      record.partial_gpu_seconds += static_cast<double>(job.held_gpus) * span;
      record.not_running_seconds += span;
    }
  }
  now_ = now;
}

void Replayer::AccountShares(double span) {
  if (!share_table_.has_value()) {
    share_table_.emplace(ReplayQueues(trace_, options_));
  }
  sched::ResourceList capacity;
  capacity.SetScalar(sched::kResourceNvidiaGpu, result_.cluster_gpus);
  sched::FairShare share(*share_table_, capacity, sched::GpuResources());
  std::map<std::string, sched::GroupDemand> wanted;
  for (size_t j : active_) {
    const Job& job = jobs_[j];
    const std::string& queue = trace_[j].queue;
    sched::ResourceList held;
    held.SetScalar(sched::kResourceNvidiaGpu, job.held_gpus);
    share.Add(queue, held);
    sched::GroupDemand& demand = wanted[queue];
    demand.key = queue;
    demand.queue = queue;
    sched::ResourceList more;
    more.SetScalar(sched::kResourceNvidiaGpu, std::max<int64_t>(0, trace_[j].MaxGpus() - job.held_gpus));
    demand.wanted += more;
  }
  std::vector<sched::GroupDemand> demands;
  std::unordered_map<std::string, int64_t> waiting;  // by queue, its subtree's
  for (auto& [queue, demand] : wanted) {
    int64_t gpus = demand.wanted.Scalar(sched::kResourceNvidiaGpu);
    for (const sched::QueueAccount* account : share.Path(queue)) {
      waiting[account->spec.name] += gpus;
    }
    demands.push_back(std::move(demand));
  }
  const sched::FairTargets targets = sched::ComputeFairTargets(share, demands, false);
  const auto cluster = static_cast<double>(result_.cluster_gpus);
  for (const sched::QueueAccount& account : share.accounts()) {
    auto it = waiting.find(account.spec.name);
    if (it == waiting.end() || it->second <= 0) {
      continue;
    }
    const double used = static_cast<double>(account.used.Scalar(sched::kResourceNvidiaGpu));
    auto& [seconds, distance] = share_distance_[account.spec.name];
    seconds += span;
    distance += std::abs(used - targets.Queue(account.spec.name) * cluster) * span;
  }
}

void Replayer::RemoveMember(size_t job_index, size_t member_index) {
  Job& job = jobs_[job_index];
  Member& member = job.members[member_index];
  if (!member.bound) {
    return;
  }
  (void)snapshot_.RemovePod(member.pod->namespace_name, member.pod->name);
  member.bound = false;
  member.leaving = false;
  --job.bound_in_role[member.role];
  job.held_gpus -= member.gpus;
  AddGpusInUse(member.slot, -member.gpus);
}

void Replayer::Finish(size_t job_index, double now) {
  Job& job = jobs_[job_index];
  for (size_t m = 0; m < job.members.size(); ++m) {
    RemoveMember(job_index, m);
  }
  job.work.Resize(now, 0, now);
  job.running = false;
  job.finished = true;
  job.finish = now;
}

void Replayer::ProcessEvents(double now) {
  while (next_arrival_ < trace_.size() && trace_[next_arrival_].submit_seconds <= now) {
    jobs_[next_arrival_].submitted = true;
    active_.push_back(next_arrival_);
    arrived_.push_back(next_arrival_);
    ++next_arrival_;
    dirty_ = true;
  }
  std::set<size_t> shrunk;  // one resize per job, however many members leave
  while (!removals_.empty() && removals_.top().time <= now + kTimeEpsilon) {
    Removal removal = removals_.top();
    removals_.pop();
    Job& job = jobs_[removal.job];
    if (!job.finished && job.members[removal.member].leaving) {
      RemoveMember(removal.job, removal.member);
      ++job.evicted_members;
      shrunk.insert(removal.job);
      dirty_ = true;
      capacity_freed_ = true;
    }
  }
  for (size_t j : shrunk) {
    UpdateRunning(j, now);
  }
  for (size_t j : active_) {
    Job& job = jobs_[j];
    if (job.running && job.work.FinishTime() <= now + kTimeEpsilon) {
      Finish(j, now);
      dirty_ = true;
      capacity_freed_ = true;
    }
  }
  std::erase_if(active_, [this](size_t j) { return jobs_[j].finished; });
  UpdateLasLevels();
}

void Replayer::UpdateRunning(size_t job_index, double now) {
  Job& job = jobs_[job_index];
  const std::vector<TraceRole>& roles = job.trace->roles;
  bool running = true;
  for (size_t r = 0; r < roles.size(); ++r) {
    int32_t minimum = StartsAtMax(options_.policy) ? roles[r].max_replicas : roles[r].min_replicas;
    if (job.bound_in_role[r] < minimum) {
      running = false;
    }
  }
  const int32_t domains = running ? DomainsSpanned(job) : 0;
  JobRecord& record = result_.jobs[job_index];
  if (running && !job.running) {
    // A job that lost its gang restarts from its checkpoint (the work since
    // it was rolled back when the gang was lost) and pays the restart delay.
    double pause_until = now;
    if (job.start >= 0) {
      pause_until = now + options_.restart_delay_seconds;
      ++record.restarts;
    }
    if (job.start < 0) {
      job.start = now;
      job.start_domains = domains;
      job.start_members = static_cast<int32_t>(std::count_if(
          job.members.begin(), job.members.end(), [](const Member& m) { return m.bound; }));
    }
    job.work.Resize(now, job.held_gpus, pause_until);
  } else if (running && job.work.gpus() != job.held_gpus) {
    ++job.resizes;
    ++record.restarts;
    record.lost_gpu_seconds +=
        job.work.Restart(now, job.held_gpus, now + options_.restart_delay_seconds);
  } else if (!running && job.running) {
    record.lost_gpu_seconds += job.work.Restart(now, 0, now);
  }
  if (running) {
    job.work.SetSlowdown(now, domains > 1 ? options_.cross_domain_slowdown : 1.0);
  }
  job.running = running;
}

int32_t Replayer::DomainsSpanned(const Job& job) const {
  if (domain_of_slot_.empty()) {
    return 0;
  }
  std::set<int64_t> domains;
  for (const Member& member : job.members) {
    if (!member.bound) {
      continue;
    }
    const int32_t domain = member.slot < domain_of_slot_.size() ? domain_of_slot_[member.slot] : -1;
    // A node without the label is a domain of its own.
    domains.insert(domain >= 0 ? domain : -1 - static_cast<int64_t>(member.slot));
  }
  return static_cast<int32_t>(domains.size());
}

void Replayer::ApplyPlacement(const sched::PodInfo* pod, const std::string& node) {
  auto it = member_by_pod_.find(pod);
  if (it == member_by_pod_.end()) {
    return;
  }
  Job& job = jobs_[it->second.first];
  Member& member = job.members[it->second.second];
  if (member.bound) {
    return;
  }
  member.bound = true;
  member.slot = snapshot_.FindNodeSlot(node).value_or(0);
  ++job.bound_in_role[member.role];
  job.held_gpus += member.gpus;
  AddGpusInUse(member.slot, member.gpus);
}

void Replayer::RunPolicyCycle(double now, const std::vector<size_t>& job_indices) {
  std::vector<const sched::PodInfo*> pending;
  for (size_t j : job_indices) {
    for (const Member& member : jobs_[j].members) {
      if (!member.bound) {
        pending.push_back(member.pod.get());
      }
    }
  }
  if (pending.empty()) {
    return;
  }
  auto wall_start = std::chrono::steady_clock::now();
  std::vector<sched::PodGroup> groups = sched::BuildGroups(pending, snapshot_);
  sched::PolicyCycleResult cycle =
      sched::PlanCycleWithPolicies(snapshot_, std::move(groups), policy_, planner_,
                                   ToTimestamp(now), state_, start_slot_, &queue_usage_);
  result_.planning_wall_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  ++result_.cycles;
  result_.decisions += static_cast<int64_t>(cycle.decisions.size());
  state_ = std::move(cycle.state);
  start_slot_ = cycle.next_start_slot;

  std::set<size_t> placed_jobs;
  for (const sched::PolicyDecision& decision : cycle.decisions) {
    if (!decision.plan.placed()) {
      continue;
    }
    for (const sched::Assignment& assignment : decision.plan.assignments) {
      auto it = member_by_pod_.find(assignment.pod);
      if (it != member_by_pod_.end()) {
        placed_jobs.insert(it->second.first);
        ApplyPlacement(assignment.pod, assignment.node_name);
      }
    }
  }
  std::set<size_t> preempted;
  for (const sched::Eviction& eviction : cycle.evictions) {
    auto it = member_by_name_.find(eviction.name);
    if (it == member_by_name_.end()) {
      continue;
    }
    Member& member = jobs_[it->second.first].members[it->second.second];
    if (!member.bound || member.leaving) {
      continue;
    }
    if (preempted.insert(it->second.first).second) {
      ++result_.jobs[it->second.first].preemptions;
    }
    member.leaving = true;
    ++result_.evictions;
    removals_.push(
        Removal{now + options_.eviction_grace_seconds, it->second.first, it->second.second});
  }
  for (size_t j : placed_jobs) {
    UpdateRunning(j, now);
  }
}

void Replayer::RunCycles(double now) {
  bool freed = std::exchange(capacity_freed_, false);
  std::vector<size_t> arrived = std::move(arrived_);
  arrived_.clear();
  if (options_.policy == Policy::kPodGreedy) {
    // Pods placed one by one with no reclaim, growth or reservations: after
    // arrivals alone, the pods that were pending before still fit nowhere
    // (capacity only shrank since they last failed) and go before the
    // newcomers, so planning just the newcomers places the same pods for a
    // fraction of the work. (Not done for elastic-gang: there the planner's
    // rotating scan start breaks ties between equal nodes differently.)
    RunPolicyCycle(now, freed ? active_ : arrived);
    return;
  }
  RunPolicyCycle(now, active_);
}

void Replayer::Record(double now) {
  TimelinePoint point;
  point.time = now;
  for (size_t j : active_) {
    const Job& job = jobs_[j];
    if (job.running) {
      point.busy_gpus += job.held_gpus;
      ++point.running_jobs;
    } else {
      point.partial_gpus += job.held_gpus;
      ++point.waiting_jobs;
    }
  }
  std::vector<TimelinePoint>& timeline = result_.timeline;
  if (!timeline.empty() && timeline.back().time == now) {
    timeline.back() = point;
  } else if (timeline.empty() || timeline.back().busy_gpus != point.busy_gpus ||
             timeline.back().partial_gpus != point.partial_gpus ||
             timeline.back().waiting_jobs != point.waiting_jobs ||
             timeline.back().running_jobs != point.running_jobs) {
    timeline.push_back(point);
  }
}

Result<ReplayResult> Replayer::Run() {
  if (Status status = BuildCluster(); !status.ok()) {
    return status;
  }
  BuildJobs();
  policy_ = MakePolicyConfig();
  if (options_.policy == Policy::kLas) {
    las_thresholds_ = LasThresholds(options_);
  }
  planner_.topology_levels = options_.topology_levels;
  if (Status status = sched::ValidatePolicyConfig(policy_); !status.ok()) {
    return status;
  }
  result_.policy = options_.policy;
  result_.cluster_gpus = ClusterGpus(options_);
  result_.jobs.resize(trace_.size());
  for (size_t j = 0; j < trace_.size(); ++j) {
    JobRecord& record = result_.jobs[j];
    record.id = trace_[j].id;
    record.queue = trace_[j].queue;
    record.min_gpus = StartsAtMax(options_.policy) ? trace_[j].MaxGpus() : trace_[j].MinGpus();
    record.max_gpus = trace_[j].MaxGpus();
    record.submit = trace_[j].submit_seconds;
    const int64_t max_gpus = trace_[j].MaxGpus();
    record.alone_jct_seconds =
        trace_[j].work_gpu_seconds / DrainRate(max_gpus, max_gpus, options_.speedup_exponent);
  }
  while (true) {
    double next = NextEventTime();
    if (next == kInfinity) {
      break;
    }
    AdvanceTo(std::max(next, now_));
    ProcessEvents(now_);
    if (dirty_) {
      RunCycles(now_);
      dirty_ = false;
    }
    Record(now_);
  }
  result_.end_time = now_;
  result_.stuck_jobs = static_cast<int64_t>(active_.size());
  for (size_t j = 0; j < jobs_.size(); ++j) {
    const Job& job = jobs_[j];
    JobRecord& record = result_.jobs[j];
    record.start = job.start;
    record.finish = job.finish;
    record.start_members = job.start_members;
    record.start_domains = job.start_domains;
    record.resizes = job.resizes;
    record.evicted_members = job.evicted_members;
    if (job.start >= 0) {
      double end = job.finish >= 0 ? job.finish : now_;
      if (end > job.start) {
        record.mean_gpus_running = record.gpu_seconds_held / (end - job.start);
      }
    }
  }
  result_.queues = QueueRecords(ReplayQueues(trace_, options_), result_.jobs);
  for (QueueRecord& queue : result_.queues) {
    if (auto it = share_distance_.find(queue.name); it != share_distance_.end()) {
      queue.seconds_with_work_waiting = it->second.first;
      queue.share_distance_gpu_seconds = it->second.second;
    }
  }
  return std::move(result_);
}

}  // namespace

std::string_view PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kPodGreedy:
      return "pod-greedy";
    case Policy::kStaticGang:
      return "static-gang";
    case Policy::kElasticGang:
      return "elastic-gang";
    case Policy::kElasticReclaim:
      return "elastic-reclaim";
    case Policy::kGangBackfill:
      return "gang-backfill";
    case Policy::kLas:
      return "las";
    case Policy::kAttainedService:
      return "attained-service";
  }
  return "unknown";
}

const std::vector<Policy>& AllPolicies() {
  static const std::vector<Policy> kAll = {Policy::kPodGreedy,      Policy::kStaticGang,
                                           Policy::kGangBackfill,   Policy::kElasticGang,
                                           Policy::kElasticReclaim, Policy::kLas,
                                           Policy::kAttainedService};
  return kAll;
}

Result<Policy> ParsePolicy(std::string_view name) {
  for (Policy policy : AllPolicies()) {
    if (PolicyName(policy) == name) {
      return policy;
    }
  }
  return InvalidArgument("unknown policy \"" + std::string(name) +
                         "\"; expected pod-greedy, static-gang, gang-backfill, elastic-gang, "
                         "elastic-reclaim, las, attained-service or all");
}

double DrainRate(int64_t gpus, int64_t max_gpus, double exponent) {
  if (gpus <= 0 || max_gpus <= 0) {
    return 0;
  }
  double share = static_cast<double>(gpus) / static_cast<double>(max_gpus);
  return static_cast<double>(max_gpus) * std::pow(share, exponent);
}

JobWork::JobWork(double work_gpu_seconds, int64_t max_gpus, double exponent)
    : JobWork(work_gpu_seconds, max_gpus, exponent, 0) {}

JobWork::JobWork(double work_gpu_seconds, int64_t max_gpus, double exponent,
                 double checkpoint_interval_seconds)
    : remaining_(work_gpu_seconds),
      max_gpus_(max_gpus),
      exponent_(exponent),
      checkpoint_interval_(checkpoint_interval_seconds) {}

double JobWork::rate() const {
  return DrainRate(gpus_, max_gpus_, exponent_) / slowdown_;
}

void JobWork::AdvanceTo(double now) {
  const double from = std::max(last_update_, pause_until_);
  const double current = rate();
  if (now > from && current > 0) {
    remaining_ = std::max(0.0, remaining_ - current * (now - from));
    if (checkpoint_interval_ > 0 && now >= next_checkpoint_) {
      // The last checkpoint passed: only the work since it is at risk.
      const double last =
          next_checkpoint_ +
          std::floor((now - next_checkpoint_) / checkpoint_interval_) * checkpoint_interval_;
      since_checkpoint_ = current * (now - std::max(last, from));
      next_checkpoint_ = last + checkpoint_interval_;
    } else if (checkpoint_interval_ > 0) {
      since_checkpoint_ += current * (now - from);
    }
  }
  last_update_ = std::max(last_update_, now);
}

void JobWork::Resize(double now, int64_t gpus, double pause_until) {
  AdvanceTo(now);
  if (gpus_ == 0 && gpus > 0) {
    // Working again: the checkpoints count from when the work resumes.
    since_checkpoint_ = 0;
    next_checkpoint_ = std::max(pause_until, now) + checkpoint_interval_;
  }
  gpus_ = gpus;
  pause_until_ = std::max(pause_until, now);
}

double JobWork::Restart(double now, int64_t gpus, double pause_until) {
  AdvanceTo(now);
  const double lost = since_checkpoint_;
  remaining_ += lost;
  since_checkpoint_ = 0;
  gpus_ = gpus;
  pause_until_ = std::max(pause_until, now);
  next_checkpoint_ = pause_until_ + checkpoint_interval_;
  return lost;
}

void JobWork::SetSlowdown(double now, double factor) {
  if (factor == slowdown_) {
    return;
  }
  AdvanceTo(now);
  slowdown_ = factor;
}

double JobWork::FinishTime() const {
  double current = rate();
  if (current <= 0) {
    return kInfinity;
  }
  return std::max(last_update_, pause_until_) + remaining_ / current;
}

int64_t ClusterGpus(const ReplayOptions& options) {
  if (!options.inventory.empty()) {
    return TotalGpus(options.inventory);
  }
  return options.gpus_per_node <= 0 ? 0
                                    : options.gpus / options.gpus_per_node * options.gpus_per_node;
}

std::vector<double> LasThresholds(const ReplayOptions& options) {
  // The same discretisation as the scheduler's AttainedService queues.
  sched::AttainedServiceSettings levels;
  levels.levels = options.las_levels;
  levels.first_threshold_gpu_hours = options.las_first_threshold_gpu_hours;
  levels.threshold_factor = options.las_threshold_factor;
  return sched::ServiceThresholds(levels);
}

int32_t LasLevel(double attained_gpu_seconds, const std::vector<double>& thresholds) {
  return sched::ServiceLevel(attained_gpu_seconds, thresholds);
}

std::string DomainLevel(const ReplayOptions& options) {
  if (!options.domain_level.empty()) {
    return options.domain_level;
  }
  for (auto level = options.topology_levels.rbegin(); level != options.topology_levels.rend();
       ++level) {
    if (*level != "kubernetes.io/hostname") {
      return *level;
    }
  }
  return "";
}

Status ValidateReplayOptions(const ReplayOptions& options) {
  if (!options.inventory.empty()) {
    if (TotalGpus(options.inventory) <= 0) {
      return InvalidArgument("inventory: no node has a GPU");
    }
  } else if (options.gpus_per_node <= 0) {
    return InvalidArgument("gpus per node: must be positive");
  } else if (options.gpus < options.gpus_per_node) {
    return InvalidArgument("gpus: must be at least the GPUs of one node (" +
                           std::to_string(options.gpus_per_node) + ")");
  }
  if (!(options.speedup_exponent > 0 && options.speedup_exponent <= 1)) {
    return InvalidArgument("speedup exponent: must be in (0, 1]");
  }
  if (!(options.eviction_grace_seconds >= 0) || !(options.restart_delay_seconds >= 0) ||
      !(options.checkpoint_interval_seconds >= 0) ||
      !std::isfinite(options.checkpoint_interval_seconds)) {
    return InvalidArgument(
        "eviction grace, restart delay and checkpoint interval: must be finite and not negative");
  }
  if (options.starvation_seconds < 0) {
    return InvalidArgument("starvation seconds: must not be negative");
  }
  if (!(options.cross_domain_slowdown >= 1) || !std::isfinite(options.cross_domain_slowdown)) {
    return InvalidArgument("cross-domain slowdown: must be a finite number >= 1");
  }
  if (options.las_levels < 1 || options.las_levels > 16) {
    return InvalidArgument("las levels: must be 1 to 16");
  }
  if (!(options.las_first_threshold_gpu_hours > 0) ||
      !std::isfinite(options.las_first_threshold_gpu_hours) ||
      !(options.las_threshold_factor > 1) || !std::isfinite(options.las_threshold_factor)) {
    return InvalidArgument(
        "las thresholds: the first must be a positive number of GPU-hours, the factor above 1");
  }
  if (!options.domain_level.empty() && !api::IsQualifiedName(options.domain_level)) {
    return InvalidArgument("domain level: \"" + options.domain_level + "\" is not a label key");
  }
  return sched::ValidateQueues(options.queues);
}

Result<ReplayResult> Replay(const std::vector<TraceJob>& jobs, const ReplayOptions& options) {
  if (Status status = ValidateReplayOptions(options); !status.ok()) {
    return status;
  }
  const sched::QueueTable table(options.queues);
  const ClusterShape shape = ShapeOf(options);
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (Status status = ValidateJob(jobs[i]); !status.ok()) {
      return InvalidArgument("job " + jobs[i].id + ": " + status.message());
    }
    if (i > 0 && jobs[i].submit_seconds < jobs[i - 1].submit_seconds) {
      return InvalidArgument("jobs must be sorted by submit time");
    }
    // With configured queues a job in a queue it cannot run in would wait for
    // good: refuse it.
    if (!options.queues.empty()) {
      if (table.Find(jobs[i].queue) == nullptr) {
        return InvalidArgument("job " + jobs[i].id + ": queue \"" + jobs[i].queue +
                               "\" is not configured; configured queues: " + table.Names());
      }
      if (!table.IsLeaf(jobs[i].queue)) {
        return InvalidArgument("job " + jobs[i].id + ": queue \"" + jobs[i].queue +
                               "\" has child queues; jobs run in a leaf queue");
      }
    }
    // A job that can never start would wait for good (and stall strict
    // FIFO): refuse it.
    const int64_t needed = StartsAtMax(options.policy) ? jobs[i].MaxGpus() : jobs[i].MinGpus();
    if (const auto& topology = jobs[i].topology; topology.has_value()) {
      auto domain = shape.largest_domain_gpus.find(topology->level);
      if (domain == shape.largest_domain_gpus.end()) {
        return InvalidArgument("job " + jobs[i].id + ": topology level " + topology->level +
                               " is not one of the scheduler configuration's topology.levels");
      }
      if (topology->mode == api::TopologyMode::kRequired && options.policy != Policy::kPodGreedy &&
          needed > domain->second) {
        return InvalidArgument("job " + jobs[i].id + ": needs " + std::to_string(needed) +
                               " GPUs in one " + topology->level + " domain to start under " +
                               std::string(PolicyName(options.policy)) + ", the largest has " +
                               std::to_string(domain->second));
      }
    }
    if (!jobs[i].gpu_model.empty() && !shape.gpu_models.contains(jobs[i].gpu_model)) {
      return InvalidArgument("job " + jobs[i].id + ": no node has GPU model " + jobs[i].gpu_model +
                             " (label " + options.gpu_model_label + ")");
    }
    for (const TraceRole& role : jobs[i].roles) {
      if (role.gpus_per_member > shape.largest_node_gpus) {
        return InvalidArgument("job " + jobs[i].id + ": role " + role.name + " wants " +
                               std::to_string(role.gpus_per_member) +
                               " GPUs per member, the largest node has " +
                               std::to_string(shape.largest_node_gpus));
      }
    }
    if (needed > shape.gpus) {
      return InvalidArgument("job " + jobs[i].id + ": needs " + std::to_string(needed) +
                             " GPUs to start under " + std::string(PolicyName(options.policy)) +
                             ", the cluster has " + std::to_string(shape.gpus));
    }
  }
  Replayer replayer(jobs, options);
  return replayer.Run();
}

}  // namespace hybridjob::sim::trace
