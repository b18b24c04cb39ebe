#include <algorithm>
#include <unordered_map>

#include <hybridjob/common/strings.h>
#include <hybridjob/scheduler/core/cycle.h>

namespace hybridjob::scheduler {

bool GroupGoesFirst(const PodGroup& a, const PodGroup& b) {
  if (a.priority != b.priority) {
    return a.priority > b.priority;
  }
  if (a.creation_time != b.creation_time) {
    return a.creation_time < b.creation_time;
  }
  if (a.namespace_name != b.namespace_name) {
    return a.namespace_name < b.namespace_name;
  }
  return a.name < b.name;
}

void SortGroups(std::vector<PodGroup>& groups) {
  std::sort(groups.begin(), groups.end(), GroupGoesFirst);
}

void HoldBlockedMembers(PodGroup& group) {
  const bool started = !group.bound.empty();
  std::vector<const PodInfo*> ready;
  ready.reserve(group.pending.size());
  for (const PodInfo* pod : group.pending) {
    if (!pod->resource_claims.empty() && group.unsupported_reason.empty()) {
      group.unsupported_reason = "pod " + pod->name + " asks for resourceClaims (" +
                                 Join(pod->resource_claims) +
                                 "): dynamic resource allocation is not supported by this "
                                 "scheduler; use device plugin resources (nvidia.com/gpu)";
    }
    if (pod->scheduling_gates.empty()) {
      ready.push_back(pod);
      continue;
    }
    if (!started && group.gated_reason.empty()) {
      group.gated_reason = "pod " + pod->name +
                           " has scheduling gates: " + Join(pod->scheduling_gates) +
                           "; the gang waits until every member's gates are removed";
    }
  }
  if (started) {
    group.pending = std::move(ready);
  }
}

std::vector<PodGroup> BuildGroups(std::span<const PodInfo* const> pending_pods,
                                  const Snapshot& snapshot) {
  std::vector<PodGroup> groups;
  std::unordered_map<std::string, size_t> group_by_key;
  for (const PodInfo* pod : pending_pods) {
    // A member whose job is not observed yet waits for it, unreported: the
    // informers deliver the job a moment later (or the garbage collector
    // deletes a pod whose owner never existed).
    if (!pod->node_name.empty() || pod->IsTerminal() || pod->awaiting_job) {
      continue;
    }
    bool in_group = !pod->job_name.empty();
    // A separator no Kubernetes name contains keeps lone pods and jobs apart.
    std::string key = PodKey(pod->namespace_name, in_group ? pod->job_name : pod->name) +
                      (in_group ? "" : "|pod");
    auto [it, inserted] = group_by_key.emplace(std::move(key), groups.size());
    if (inserted) {
      PodGroup group;
      group.namespace_name = pod->namespace_name;
      group.name = in_group ? pod->job_name : pod->name;
      group.priority = pod->priority;
      group.creation_time = pod->creation_time;
      group.namespace_labels = pod->namespace_labels;
      groups.push_back(std::move(group));
    }
    PodGroup& group = groups[it->second];
    group.pending.push_back(pod);
    group.preempts = group.preempts && pod->preempts;
    group.priority = std::max(group.priority, pod->priority);
    group.creation_time = std::min(group.creation_time, pod->creation_time);
  }

  for (PodGroup& group : groups) {
    std::sort(group.pending.begin(), group.pending.end(),
              [](const PodInfo* a, const PodInfo* b) { return a->name < b->name; });
    const PodInfo& first = *group.pending.front();
    if (first.job_name.empty()) {
      // A pod outside any group: a gang of one that never waits for others.
      group.spec.roles = {GroupRole{first.role, 1, 1, 0}};
      group.spec.schedule_timeout_seconds = 0;
      // A pod that claims a job it does not belong to is never placed: it
      // would take capacity in that job's name.
      group.invalid_reason = first.untrusted_reason;
      continue;
    }
    const PodInfo* with_spec = nullptr;
    for (const PodInfo* pod : group.pending) {
      if (pod->group_spec.has_value()) {
        with_spec = pod;
        break;
      }
    }
    if (with_spec != nullptr) {
      group.spec = *with_spec->group_spec;
    } else {
      const PodInfo* with_error = nullptr;
      for (const PodInfo* pod : group.pending) {
        if (!pod->group_spec_error.empty()) {
          with_error = pod;
          break;
        }
      }
      group.invalid_reason =
          with_error != nullptr ? "pod " + with_error->name +
                                      ": bad group-spec annotation: " + with_error->group_spec_error
                                : "pod " + first.name + ": no group-spec annotation";
    }
    for (const PodInfo* member : snapshot.GroupMembers(group.namespace_name, group.name)) {
      group.bound.push_back(member);
    }
  }
  for (PodGroup& group : groups) {
    HoldBlockedMembers(group);
  }
  std::erase_if(groups, [](const PodGroup& group) { return group.pending.empty(); });
  SortGroups(groups);
  return groups;
}

std::string MissingMembers(const PodGroup& group) {
  if (!group.bound.empty()) {
    return {};
  }
  std::string missing;
  for (const GroupRole& role : group.spec.roles) {
    std::vector<bool> present(static_cast<size_t>(role.max_replicas), false);
    int32_t count = 0;
    auto mark = [&](int32_t index) {
      if (index >= 0 && index < role.max_replicas && !present[static_cast<size_t>(index)]) {
        present[static_cast<size_t>(index)] = true;
        ++count;
      }
    };
    for (int32_t index : role.completed) {  // succeeded members never get a pod again
      mark(index);
    }
    for (const PodInfo* pod : group.pending) {
      if (pod->role == role.name) {
        mark(pod->index);
      }
    }
    if (count < role.max_replicas) {
      if (!missing.empty()) {
        missing += ", ";
      }
      missing += role.name + " has " + std::to_string(count) + " of " +
                 std::to_string(role.max_replicas) + " member pods";
    }
  }
  return missing;
}

CycleResult RunCycle(Snapshot& snapshot, std::vector<PodGroup> groups, Timestamp now,
                     const PlannerConfig& config, uint32_t start_slot) {
  SortGroups(groups);
  CycleResult result;
  result.next_start_slot = start_slot;
  result.decisions.reserve(groups.size());
  for (PodGroup& group : groups) {
    GroupDecision decision;
    bool single_pod = group.pending.size() == 1 && group.pending.front()->job_name.empty();
    if (group.invalid_reason.empty() && !group.HeldReason().empty()) {
      decision.plan.outcome = PlanOutcome::kWait;
      decision.plan.reason = group.HeldReason();
      decision.plan.next_start_slot = result.next_start_slot;
      decision.group = std::move(group);
      result.decisions.push_back(std::move(decision));
      continue;
    }
    if (group.invalid_reason.empty() && !single_pod && group.spec.ScheduleTimeoutSeconds() > 0) {
      std::string missing = MissingMembers(group);
      Timestamp deadline =
          group.creation_time + std::chrono::seconds{group.spec.ScheduleTimeoutSeconds()};
      if (!missing.empty() && now < deadline) {
        decision.plan.outcome = PlanOutcome::kWait;
        decision.plan.reason = "waiting for member pods: " + missing;
        decision.plan.next_start_slot = result.next_start_slot;
        decision.group = std::move(group);
        result.decisions.push_back(std::move(decision));
        continue;
      }
    }
    decision.plan = PlanGroup(snapshot, group, config, result.next_start_slot);
    result.next_start_slot = decision.plan.next_start_slot;
    if (decision.plan.placed()) {
      if (Status status = CommitPlan(snapshot, decision.plan); !status.ok()) {
        // The snapshot refused the plan (it should not): keep the gang whole by
        // placing none of it this cycle.
        decision.plan.outcome = PlanOutcome::kWait;
        decision.plan.reason = "could not assume the plan: " + status.ToString();
        decision.plan.assignments.clear();
        decision.plan.surplus.clear();
      }
    }
    decision.group = std::move(group);
    result.decisions.push_back(std::move(decision));
  }
  return result;
}

}  // namespace hybridjob::scheduler
