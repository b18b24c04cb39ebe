// Small builders for nodes, pods and groups used across the scheduler tests.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <hybridjob/api/labels.h>
#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler::testing {

inline constexpr int64_t kGi = int64_t{1} << 30;

class NodeBuilder {
 public:
  explicit NodeBuilder(std::string name) {
    node_.name = std::move(name);
    node_.labels.Set("kubernetes.io/hostname", node_.name);
    node_.allocatable.milli_cpu = 32000;
    node_.allocatable.memory = 256 * kGi;
    node_.allocatable.ephemeral_storage = 100 * kGi;
    node_.allocatable.pods = 110;
  }
  NodeBuilder& Cpu(int64_t milli) {
    node_.allocatable.milli_cpu = milli;
    return *this;
  }
  NodeBuilder& Memory(int64_t bytes) {
    node_.allocatable.memory = bytes;
    return *this;
  }
  NodeBuilder& Pods(int64_t count) {
    node_.allocatable.pods = count;
    return *this;
  }
  NodeBuilder& Gpus(int64_t count) {
    node_.allocatable.SetScalar("nvidia.com/gpu", count);
    return *this;
  }
  NodeBuilder& Scalar(const std::string& name, int64_t amount) {
    node_.allocatable.SetScalar(name, amount);
    return *this;
  }
  NodeBuilder& Label(const std::string& key, const std::string& value) {
    node_.labels.Set(key, value);
    return *this;
  }
  NodeBuilder& Taint(const std::string& key, const std::string& value, TaintEffect effect) {
    node_.taints.push_back(scheduler::Taint{key, value, effect});
    return *this;
  }
  NodeBuilder& Unschedulable() {
    node_.unschedulable = true;
    return *this;
  }
  NodeBuilder& NotReady() {
    node_.ready = false;
    return *this;
  }
  NodeInfo Build() const { return node_; }

 private:
  NodeInfo node_;
};

class PodBuilder {
 public:
  explicit PodBuilder(std::string name) {
    pod_.name = std::move(name);
    pod_.namespace_name = "team";
    pod_.uid = "uid-" + pod_.name;
    pod_.scheduler_name = std::string(api::kDefaultSchedulerName);
    pod_.phase = "Pending";
    pod_.requests.milli_cpu = 100;
    pod_.requests.memory = kGi;
    pod_.requests.pods = 1;
  }
  PodBuilder& Namespace(const std::string& name) {
    pod_.namespace_name = name;
    return *this;
  }
  PodBuilder& Cpu(int64_t milli) {
    pod_.requests.milli_cpu = milli;
    return *this;
  }
  PodBuilder& Memory(int64_t bytes) {
    pod_.requests.memory = bytes;
    return *this;
  }
  PodBuilder& Gpus(int64_t count) {
    pod_.requests.SetScalar("nvidia.com/gpu", count);
    return *this;
  }
  PodBuilder& Scalar(const std::string& name, int64_t amount) {
    pod_.requests.SetScalar(name, amount);
    return *this;
  }
  PodBuilder& Label(const std::string& key, const std::string& value) {
    pod_.labels.Set(key, value);
    return *this;
  }
  // Group membership labels as the controller writes them.
  PodBuilder& Member(const std::string& job, const std::string& role, int32_t index) {
    pod_.job_name = job;
    pod_.role = role;
    pod_.index = index;
    pod_.labels.Set(api::kJobNameLabel, job);
    pod_.labels.Set(api::kRoleLabel, role);
    pod_.labels.Set(api::kIndexLabel, std::to_string(index));
    return *this;
  }
  PodBuilder& Spec(const GroupSpec& spec) {
    pod_.group_spec = spec;
    return *this;
  }
  PodBuilder& Priority(int32_t priority) {
    pod_.priority = priority;
    return *this;
  }
  PodBuilder& Created(int64_t unix_seconds) {
    pod_.creation_time = Timestamp{std::chrono::seconds{unix_seconds}};
    return *this;
  }
  PodBuilder& OnNode(const std::string& node) {
    pod_.node_name = node;
    pod_.phase = "Running";
    return *this;
  }
  PodBuilder& Phase(const std::string& phase) {
    pod_.phase = phase;
    return *this;
  }
  PodBuilder& NodeSelector(const std::string& key, const std::string& value) {
    pod_.node_selector.Set(key, value);
    return *this;
  }
  PodBuilder& RequiredNodeAffinity(std::vector<NodeSelectorTerm> terms) {
    pod_.required_node_affinity = std::move(terms);
    return *this;
  }
  PodBuilder& PreferredNodeAffinity(int32_t weight, NodeSelectorTerm term) {
    pod_.preferred_node_affinity.push_back(PreferredSchedulingTerm{weight, std::move(term)});
    return *this;
  }
  PodBuilder& Tolerate(Toleration toleration) {
    pod_.tolerations.push_back(std::move(toleration));
    return *this;
  }
  PodBuilder& Affinity(PodAffinityTerm term) {
    pod_.required_pod_affinity.push_back(std::move(term));
    return *this;
  }
  PodBuilder& AntiAffinity(PodAffinityTerm term) {
    pod_.required_pod_anti_affinity.push_back(std::move(term));
    return *this;
  }
  PodBuilder& HostPortUsed(int32_t port, const std::string& ip = "0.0.0.0",
                           const std::string& protocol = "TCP") {
    pod_.host_ports.push_back(HostPort{ip, protocol, port});
    return *this;
  }
  PodBuilder& Claim(const std::string& name) {
    pod_.claims.push_back(name);
    return *this;
  }
  PodInfo Build() const { return pod_; }

 private:
  PodInfo pod_;
};

// A pod affinity term selecting pods whose label `key` equals `value`.
inline PodAffinityTerm TermSelecting(const std::string& key, const std::string& value,
                                     const std::string& topology_key) {
  PodAffinityTerm term;
  term.label_selector = LabelSelector{{SelectorRequirement{key, SelectorOperator::kIn, {value}}}};
  term.topology_key = topology_key;
  return term;
}

inline NodeSelectorTerm TermRequiring(const std::string& key, SelectorOperator op,
                                      std::vector<std::string> values) {
  NodeSelectorTerm term;
  term.match_expressions.push_back(SelectorRequirement{key, op, std::move(values)});
  return term;
}

inline GroupSpec MakeSpec(std::vector<GroupRole> roles, int64_t timeout_seconds = 300) {
  GroupSpec spec;
  spec.roles = std::move(roles);
  spec.schedule_timeout_seconds = timeout_seconds;
  return spec;
}

// Owns the pods of one group and hands out the PodGroup view of them.
class GroupFixture {
 public:
  GroupFixture(std::string job, GroupSpec spec) : job_(std::move(job)), spec_(std::move(spec)) {}

  // Adds `count` pending members of `role` starting at `first_index`, each
  // customised by `customize` (a PodBuilder& -> void callable).
  template <typename Customize>
  void AddMembers(const std::string& role, int32_t first_index, int32_t count,
                  Customize customize) {
    for (int32_t i = first_index; i < first_index + count; ++i) {
      PodBuilder builder(job_ + "-" + role + "-" + std::to_string(i));
      builder.Member(job_, role, i).Spec(spec_);
      customize(builder);
      pods_.push_back(std::make_unique<PodInfo>(builder.Build()));
    }
  }

  PodGroup Group(const Snapshot& snapshot) const {
    PodGroup group;
    group.namespace_name = "team";
    group.name = job_;
    group.spec = spec_;
    for (const auto& pod : pods_) {
      group.pending.push_back(pod.get());
      group.priority = std::max(group.priority, pod->priority);
    }
    group.bound = snapshot.GroupMembers("team", job_);
    return group;
  }

  const std::vector<std::unique_ptr<PodInfo>>& pods() const { return pods_; }

 private:
  std::string job_;
  GroupSpec spec_;
  std::vector<std::unique_ptr<PodInfo>> pods_;
};

// Appends pending members job-role-i for i in [first, first + count).
inline void AppendMembers(std::vector<std::unique_ptr<PodInfo>>& pods, const std::string& job,
                          const GroupSpec& spec, const std::string& role, int first, int count,
                          int64_t gpus, int64_t created, int32_t priority) {
  for (int i = first; i < first + count; ++i) {
    pods.push_back(std::make_unique<PodInfo>(PodBuilder(job + "-" + role + "-" + std::to_string(i))
                                                 .Member(job, role, i)
                                                 .Spec(spec)
                                                 .Gpus(gpus)
                                                 .Created(created)
                                                 .Priority(priority)
                                                 .Build()));
  }
}

// Removes one of `pods` (pods of namespace "team", as PodBuilder makes them),
// the one `choice` picks, from the snapshot and from the list; nothing when
// the list is empty. The random-change tests' removal.
inline Status RemoveListedPod(Snapshot& snapshot, std::vector<std::string>& pods, uint32_t choice) {
  if (pods.empty()) {
    return Status::Ok();
  }
  const auto at = static_cast<std::ptrdiff_t>(choice % pods.size());
  Status status = snapshot.RemovePod("team", pods[static_cast<size_t>(at)]);
  pods.erase(pods.begin() + at);
  return status;
}

}  // namespace hybridjob::scheduler::testing
