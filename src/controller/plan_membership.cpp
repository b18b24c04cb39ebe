// Membership: which pods the job has and should have, what the gang scheduler
// placed, and the cluster ConfigMap that records it.
#include <algorithm>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <hybridjob/api/group_spec.h>
#include <hybridjob/api/labels.h>
#include <hybridjob/api/names.h>
#include <hybridjob/api/validation.h>
#include <hybridjob/controller/children.h>
#include <hybridjob/controller/planner.h>
#include <hybridjob/k8s/object_meta.h>

#include "plan_stages.h"

namespace hybridjob::controller::plan {
namespace {

using nlohmann::json;

using api::LearnsMembershipLive;

// The job as new members describe their gang to the scheduler, and the
// group spec they carry.
struct Shaped {
  api::HybridJob job;
  api::GroupSpec group_spec;
};

Shaped ShapedJob(const PlanView& view, const std::optional<Membership>& membership) {
  // A replacement tells the scheduler the gang's shape as it now stands.
  // Members that already succeeded are no longer pods it sees, so they
  // count toward the minimum (a gang placed only in part before, by a
  // binding whose answer was lost, say, can have those too), and their
  // indices are named, so that a replacement above one is not taken to wait
  // behind a missing member; and a job that never grows is complete with its
  // membership, rather than waiting for indices that will never come.
  Shaped shaped{view.job, {}};
  // Before a membership, a job whose other pods the API server refuses is
  // complete with the members it has.
  const std::optional<Membership>& limit = membership ? std::nullopt : view.refusal_limit;
  std::vector<std::vector<int32_t>> completed;
  for (api::ReplicaSpec& spec : shaped.job.spec.replica_specs) {
    const int32_t members = membership ? membership->Count(spec.name) : spec.EffectiveMaxReplicas();
    std::vector<int32_t>& succeeded = completed.emplace_back();
    for (int32_t i = 0; i < members; ++i) {
      const ObservedPod* pod = view.Live(spec.name, i);
      if (pod != nullptr && pod->phase == PodPhase::kSucceeded) {
        succeeded.push_back(i);
      }
    }
    // The maximum is pinned first: left unset it would follow the minimum
    // down, and the indices above it would be ignored.
    if (limit) {
      spec.max_replicas = limit->Count(spec.name);
    } else {
      spec.max_replicas = membership && !LearnsMembershipLive(view.job.spec.framework)
                              ? members
                              : spec.EffectiveMaxReplicas();
    }
    spec.min_replicas = std::max(0, std::min(spec.min_replicas, *spec.max_replicas) -
                                        static_cast<int32_t>(succeeded.size()));
    if (!succeeded.empty()) {
      // Their indices will never have pods again: the scheduler should not
      // wait for the gang to assemble.
      shaped.job.spec.run_policy.schedule_timeout_seconds = 0;
    }
    std::erase_if(succeeded, [&](int32_t index) { return index >= *spec.max_replicas; });
  }
  shaped.group_spec = api::GroupSpecOf(shaped.job);
  for (size_t r = 0; r < completed.size(); ++r) {
    shaped.group_spec.roles[r].completed = std::move(completed[r]);
  }
  return shaped;
}

// Indices [from, to) of `role`.
struct IndexRange {
  const api::ReplicaSpec* role;
  int32_t from;
  int32_t to;
};

// A pod is created only when no pod of that name exists at all, so a member
// never has two pods and dead pods never pile up. New pods carry the gang's
// shape under `membership`. The members every role's minimum needs come
// first: the reconciler's writes start one at a time and stop at the first
// refusal, so under a quota the minimum is what gets admitted.
void CreateAbsent(const PlanView& view, const std::optional<Membership>& membership,
                  const std::vector<IndexRange>& ranges, PlanBuilder& plan) {
  std::vector<MemberKey> absent;
  for (bool minimum : {true, false}) {
    for (const IndexRange& range : ranges) {
      for (int32_t i = range.from; i < range.to; ++i) {
        const std::string& role = range.role->name;
        if ((i < range.role->min_replicas) == minimum &&
            view.taken_names.count(
                api::MemberPodName(view.job.metadata.name, role, i, view.job.status.run)) == 0) {
          absent.emplace_back(role, i);
        }
      }
    }
  }
  if (absent.empty()) {
    return;
  }
  const Shaped shaped = ShapedJob(view, membership);
  for (const auto& [role, index] : absent) {
    plan.creates.push_back(BuildMemberPod(shaped.job, *shaped.job.spec.FindRole(role), index,
                                          shaped.group_spec, view.options));
  }
}

// A pod that may still join its role: an elastic role's index below max,
// in a job that can grow.
bool MayGrowInto(const PlanView& view, const std::string& role_name, int32_t index) {
  const api::ReplicaSpec* role = view.job.spec.FindRole(role_name);
  return LearnsMembershipLive(view.job.spec.framework) && role != nullptr &&
         role->min_replicas < role->EffectiveMaxReplicas() && index < role->EffectiveMaxReplicas();
}

}  // namespace

std::optional<Membership> CommittedMembership(const PlanView& view) {
  const json* config_map =
      FindByName(view.observed.config_maps, api::ClusterConfigMapName(view.job.metadata.name));
  if (config_map != nullptr && view.OwnedByJob(*config_map) && view.CurrentRun(*config_map)) {
    const json& meta = (*config_map)["metadata"];
    if (meta.contains("annotations") && meta["annotations"].is_object()) {
      const json& annotations = meta["annotations"];
      auto it = annotations.find(api::kMembersAnnotation);
      if (it != annotations.end() && it->is_string()) {
        if (auto membership = ParseMembership(it->get<std::string>(), view.job.spec)) {
          return membership;
        }
      }
    }
  }
  if (view.old_status.HasTrueCondition(api::kConditionScheduled)) {
    Membership membership;
    for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
      const api::ReplicaStatus* replica = view.old_status.FindReplicaStatus(role.name);
      if (replica == nullptr || replica->members < 0 ||
          replica->members > api::kMaxReplicasPerRole) {
        return std::nullopt;
      }
      membership.counts.emplace_back(role.name, replica->members);
    }
    return membership;
  }
  return std::nullopt;
}

void YieldToMinimum(const PlanView& view, PlanBuilder& plan) {
  const bool minimum_refused =
      std::any_of(view.refused.begin(), view.refused.end(), [&](const auto& entry) {
        const api::ReplicaSpec* role = view.job.spec.FindRole(entry.first.first);
        return role != nullptr && entry.first.second < role->min_replicas;
      });
  if (!minimum_refused) {
    return;
  }
  for (const auto& [key, pod] : view.own) {
    const api::ReplicaSpec* role = view.job.spec.FindRole(key.first);
    if (role != nullptr && key.second >= role->min_replicas && !pod->terminating && !pod->bound() &&
        pod->phase == PodPhase::kPending) {
      plan.deletes.push_back({pod->name, pod->uid, "yield to the minimum"});
    }
  }
}

std::optional<Membership> PlacementFromPods(const PlanView& view) {
  const std::optional<Membership>& limit = view.refusal_limit;
  auto wanted = [&](const api::ReplicaSpec& role) {
    return limit ? limit->Count(role.name) : role.EffectiveMaxReplicas();
  };
  for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
    for (int32_t i = 0; i < wanted(role); ++i) {
      const ObservedPod* pod = view.Live(role.name, i);
      if (pod == nullptr || !(pod->bound() || pod->surplus)) {
        return std::nullopt;
      }
    }
  }
  Membership membership;
  for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
    int32_t count = 0;
    while (count < wanted(role) && view.Live(role.name, count)->bound()) {
      ++count;
    }
    if (count < role.min_replicas) {
      return std::nullopt;  // not a placement the scheduler may commit; wait
    }
    membership.counts.emplace_back(role.name, count);
  }
  return membership;
}

void CreateMissingPods(const PlanView& view, PlanBuilder& plan) {
  std::vector<IndexRange> ranges;
  for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
    ranges.push_back({&role, 0, role.EffectiveMaxReplicas()});
  }
  CreateAbsent(view, std::nullopt, ranges, plan);
}

// After placement the gang scheduler may shrink an elastic role (it evicts
// members, highest index first, for a waiting group: reclaim, preemption)
// and grow it again (it binds the pending pods beyond the members). The
// membership follows: a member the scheduler evicts (its GangEviction
// condition; any other disruption is replaced instead), or left out when the gang
// was placed anew, ends its role at its index (never below minReplicas); a
// bound pod right after the last member joins. Frameworks that read their
// cluster spec only at start restart every member with the new one.
Membership FollowScheduler(const PlanView& view, const Membership& membership, PlanBuilder& plan) {
  Membership next = membership;
  std::string changes;
  std::string lowered;
  for (auto& [role_name, count] : next.counts) {
    const api::ReplicaSpec* role = view.job.spec.FindRole(role_name);
    // maxReplicas lowered while the job runs: the members above it go.
    if (role != nullptr && count > role->EffectiveMaxReplicas()) {
      lowered += (lowered.empty() ? "" : ", ") + role_name + " " + std::to_string(count) + " -> " +
                 std::to_string(role->EffectiveMaxReplicas());
      count = role->EffectiveMaxReplicas();
      continue;
    }
    if (role == nullptr || role->min_replicas >= role->EffectiveMaxReplicas()) {
      continue;  // a rigid role never changes size
    }
    const int32_t before = count;
    for (int32_t i = role->min_replicas; i < before; ++i) {
      const ObservedPod* pod = view.Own(role_name, i);
      const bool left_out = pod != nullptr && !pod->terminating && !pod->bound() && pod->surplus;
      // Evicted and already gone: the pod's last state said so.
      const bool evicted_gone = pod == nullptr && view.evicted_gone.count({role_name, i}) != 0;
      if ((pod != nullptr && (pod->reclaimed || left_out)) || evicted_gone) {
        count = i;
        break;
      }
    }
    if (count == before) {
      while (count < role->EffectiveMaxReplicas()) {
        const ObservedPod* pod = view.Live(role_name, count);
        if (pod == nullptr || !pod->bound() || pod->disrupted || pod->reclaimed) {
          break;
        }
        ++count;
      }
    }
    if (count != before) {
      changes += (changes.empty() ? "" : ", ") + role_name + " " + std::to_string(before) + " -> " +
                 std::to_string(count);
    }
  }
  if (changes.empty() && lowered.empty()) {
    return membership;
  }
  std::string message;
  if (!lowered.empty()) {
    message = "maxReplicas was lowered: " + lowered;
  }
  if (!changes.empty()) {
    message += (message.empty() ? "" : "; ") +
               std::string("the gang scheduler changed the membership: ") + changes;
  }
  const api::Framework framework = view.job.spec.framework;
  if (!LearnsMembershipLive(framework)) {
    // TF_CONFIG, DMLC_* and MPI hostfiles are read once at start: restart
    // every member; the new pods read the new cluster spec.
    for (const auto& [key, pod] : view.own) {
      if (!pod->terminating && IsMember(next, key.first, key.second) && pod->active()) {
        plan.deletes.push_back({pod->name, pod->uid, "membership"});
      }
    }
    plan.membership_restart = message + "; " + std::string(api::ToString(framework)) +
                              " reads its cluster spec only at start, so every member restarts";
    message = plan.membership_restart;
  } else {
    message += "; members read the new cluster spec from /etc/hybridjob";
  }
  plan.membership_events.push_back(message);
  return next;
}

void CreateMissingMembers(const PlanView& view, const Membership& membership, PlanBuilder& plan) {
  // The restarts counted so far, this pass's included.
  const api::HybridJobStatus& status = plan.status;
  if (status.last_restart_time) {
    if (std::optional<api::TimePoint> last = api::ParseTime(*status.last_restart_time)) {
      const api::TimePoint ready = *last + RestartBackoff(status.restart_count, view.options);
      if (view.now < ready) {
        plan.Requeue(ready - view.now);
        return;
      }
    }
  }
  std::vector<IndexRange> ranges;
  for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
    ranges.push_back({&role, 0, membership.Count(role.name)});
  }
  // Elastic roles of frameworks that learn their membership live keep a
  // pending pod for every index up to maxReplicas: the scheduler binds them
  // when capacity is idle, and the job grows. Growing the others would
  // restart every member each time, so they only ever shrink.
  if (LearnsMembershipLive(view.job.spec.framework)) {
    for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
      ranges.push_back({&role, membership.Count(role.name), role.EffectiveMaxReplicas()});
    }
  }
  CreateAbsent(view, membership, ranges, plan);
}

void DeleteSurplus(const PlanView& view, const Membership& membership, PlanBuilder& plan) {
  for (const auto& [key, pod] : view.own) {
    // A member being evicted is the Eviction API's to remove (budgets,
    // grace period).
    if (!pod->terminating && !pod->disrupted && !pod->reclaimed &&
        !IsMember(membership, key.first, key.second) && !MayGrowInto(view, key.first, key.second)) {
      plan.deletes.push_back({pod->name, pod->uid, "surplus"});
      ++plan.surplus_deleted;
    }
  }
}

void EnsureConfigMap(const PlanView& view, const Membership& membership, PlanBuilder& plan) {
  json desired = BuildClusterConfigMap(view.job, membership, view.options);
  const json* current = FindByName(view.observed.config_maps, k8s::NameOf(desired));
  if (current == nullptr) {
    plan.config_map_action = CreateConfigMap{std::move(desired)};
    return;
  }
  if (!view.OwnedByJob(*current)) {
    return;  // a previous job's ConfigMap, still being collected
  }
  const json& meta = (*current)["metadata"];
  const std::string members =
      meta.contains("annotations") && meta["annotations"].is_object()
          ? meta["annotations"].value(std::string(api::kMembersAnnotation), std::string())
          : std::string();
  const json data = current->contains("data") ? (*current)["data"] : json::object();
  if (data != desired["data"] || members != FormatMembership(membership) ||
      !view.CurrentRun(*current)) {
    desired["metadata"]["resourceVersion"] = meta.value("resourceVersion", "");
    plan.config_map_action = UpdateConfigMap{std::move(desired)};
  }
}

// Members still waiting for the scheduler carry the shape their gang had
// when they were created; once it changes (a member succeeded) they are
// told, or the scheduler would wait forever for a minimum that counts pods
// it no longer sees.
void RefreshGroupSpecs(const PlanView& view, const std::optional<Membership>& membership,
                       PlanBuilder& plan) {
  const std::set<std::string> deleted = plan.DeletedNames();
  std::string current;
  for (const auto& [key, pod] : view.own) {
    if (pod->terminating || pod->bound() || pod->phase != PodPhase::kPending ||
        pod->group_spec.empty() || deleted.count(pod->name) != 0) {
      continue;
    }
    if (current.empty()) {
      current = api::FormatGroupSpec(ShapedJob(view, membership).group_spec);
    }
    if (pod->group_spec != current) {
      plan.patches.push_back({pod->name, pod->uid, current});
    }
  }
}

void EnsureSupportObjects(const PlanView& view, PlanBuilder& plan) {
  const std::string& name = view.job.metadata.name;
  for (const api::VolumeSpec& volume : view.job.spec.volumes) {
    if (volume.existing_claim) {
      continue;
    }
    if (FindByName(view.observed.claims, api::VolumeClaimName(name, volume.name)) == nullptr) {
      plan.support.emplace_back(CreatePVC{BuildVolumeClaim(view.job, volume)});
    }
  }
  if (FindByName(view.observed.services, api::HeadlessServiceName(name)) == nullptr) {
    plan.support.emplace_back(CreateService{BuildHeadlessService(view.job)});
  }
  if (view.job.spec.tensorboard) {
    const std::string tensorboard = api::TensorboardName(name);
    // TensorBoard reading a job's volume starts once the gang has been placed:
    // a WaitForFirstConsumer claim binds to the node of the first pod that
    // mounts it, and the gang would then have to follow TensorBoard there.
    const bool mounts_volume = std::any_of(
        view.job.spec.volumes.begin(), view.job.spec.volumes.end(),
        [&](const api::VolumeSpec& volume) { return HoldsTensorboardLogs(view.job, volume); });
    const bool placed = std::any_of(view.own.begin(), view.own.end(),
                                    [](const auto& entry) { return entry.second->bound(); });
    if (FindByName(view.observed.deployments, tensorboard) == nullptr &&
        (!mounts_volume || placed)) {
      plan.support.emplace_back(
          CreateDeployment{BuildTensorboardDeployment(view.job, view.options)});
    }
    if (FindByName(view.observed.services, tensorboard) == nullptr) {
      plan.support.emplace_back(CreateService{BuildTensorboardService(view.job)});
    }
  }
}

}  // namespace hybridjob::controller::plan
