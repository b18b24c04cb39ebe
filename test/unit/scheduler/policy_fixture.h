// A cluster for policy tests: nodes, running (bound) groups, pending groups,
// and cycles run with PlanCycleWithPolicies, carrying the policy state.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/cycle.h>
#include <hybridjob/scheduler/core/policy_cycle.h>

#include "builders.h"

namespace hybridjob::scheduler::testing {

inline Timestamp At(int64_t unix_seconds) {
  return Timestamp{std::chrono::seconds{unix_seconds}};
}

inline QueueSpec Queue(const std::string& name, double weight = 1.0, int64_t guaranteed_gpus = 0,
                       int64_t max_gpus = -1) {
  QueueSpec queue;
  queue.name = name;
  queue.weight = weight;
  if (guaranteed_gpus > 0) {
    queue.guaranteed.SetScalar("nvidia.com/gpu", guaranteed_gpus);
  }
  if (max_gpus >= 0) {
    queue.max.Set("nvidia.com/gpu", max_gpus);
  }
  return queue;
}

inline GroupSpec QueueSpecFor(const std::string& queue, std::vector<GroupRole> roles,
                              int64_t timeout_seconds = 0) {
  GroupSpec spec = MakeSpec(std::move(roles), timeout_seconds);
  spec.queue = queue;
  return spec;
}

class PolicyTest : public ::testing::Test {
 protected:
  PolicyTest() { policy_.starvation.max_wait_seconds = 0; }

  void AddNodes(const std::string& prefix, int count, int64_t gpus) {
    for (int i = 0; i < count; ++i) {
      ASSERT_TRUE(
          snapshot_.UpsertNode(NodeBuilder(prefix + std::to_string(i)).Gpus(gpus).Build()).ok());
    }
  }

  // Bound members job-role-i for i in [first, first + count) on `node`.
  void AddRunning(const std::string& job, const GroupSpec& spec, const std::string& role, int first,
                  int count, int64_t gpus, const std::string& node, int32_t priority = 0,
                  int64_t created = 0) {
    for (int i = first; i < first + count; ++i) {
      PodInfo pod = PodBuilder(job + "-" + role + "-" + std::to_string(i))
                        .Member(job, role, i)
                        .Spec(spec)
                        .Gpus(gpus)
                        .Priority(priority)
                        .Created(created)
                        .OnNode(node)
                        .Build();
      ASSERT_TRUE(snapshot_.AddPod(std::move(pod)).ok());
    }
  }

  // Pending members job-role-i for i in [first, first + count).
  void AddPending(const std::string& job, const GroupSpec& spec, const std::string& role, int first,
                  int count, int64_t gpus, int64_t created = 0, int32_t priority = 0) {
    AppendMembers(pods_, job, spec, role, first, count, gpus, created, priority);
  }

  // Pending pods not yet in the snapshot (placed ones are assumed there).
  std::vector<const PodInfo*> Pending() const {
    std::vector<const PodInfo*> out;
    for (const auto& pod : pods_) {
      if (snapshot_.FindPod(pod->namespace_name, pod->name) == nullptr &&
          !removed_.contains(pod->name)) {
        out.push_back(pod.get());
      }
    }
    return out;
  }

  PolicyCycleResult Run(Timestamp now = At(1000)) {
    std::vector<const PodInfo*> pending = Pending();
    PolicyCycleResult result = PlanCycleWithPolicies(snapshot_, BuildGroups(pending, snapshot_),
                                                     policy_, planner_, now, state_);
    state_ = result.state;
    return result;
  }

  // Carries out evictions: the pods leave the snapshot.
  void ApplyEvictions(const PolicyCycleResult& result) {
    for (const Eviction& eviction : result.evictions) {
      ASSERT_TRUE(snapshot_.RemovePod(eviction.namespace_name, eviction.name).ok());
    }
  }

  // Drops a pending pod for good (the controller deleted it).
  void Forget(const std::string& name) { removed_.insert(name); }

  static const PolicyDecision* Find(const PolicyCycleResult& result, const std::string& name) {
    for (const PolicyDecision& decision : result.decisions) {
      if (decision.group.name == name) {
        return &decision;
      }
    }
    return nullptr;
  }

  static std::vector<std::string> Evicted(const PolicyCycleResult& result) {
    std::vector<std::string> names;
    for (const Eviction& eviction : result.evictions) {
      names.push_back(eviction.name);
    }
    return names;
  }

  static std::vector<std::string> AssignedNames(const PolicyDecision& decision) {
    std::vector<std::string> names;
    for (const Assignment& assignment : decision.plan.assignments) {
      names.push_back(assignment.pod->name);
    }
    return names;
  }

  // Bound (or assumed) pods of a queue in the snapshot.
  int64_t QueueGpus(const std::string& queue) const {
    int64_t total = 0;
    for (const NodeState& node : snapshot_.slots()) {
      for (const PodInfo* pod : node.pods) {
        if (QueueOfPod(*pod) == queue) {
          total += pod->requests.Scalar("nvidia.com/gpu");
        }
      }
    }
    return total;
  }

  Snapshot snapshot_;
  PolicyConfig policy_;
  PlannerConfig planner_;
  PolicyState state_;
  std::vector<std::unique_ptr<PodInfo>> pods_;
  std::set<std::string> removed_;
};

}  // namespace hybridjob::scheduler::testing
