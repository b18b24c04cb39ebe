#include "plan_view.h"

#include <algorithm>
#include <utility>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/names.h>
#include <hybridjob/api/spec_edits.h>
#include <hybridjob/k8s/object_meta.h>

namespace hybridjob::controller::plan {

const ObservedPod* PlanView::Own(const std::string& role, int32_t index) const {
  auto it = own.find({role, index});
  return it == own.end() ? nullptr : it->second;
}

const ObservedPod* PlanView::Live(const std::string& role, int32_t index) const {
  const ObservedPod* pod = Own(role, index);
  return pod != nullptr && !pod->terminating ? pod : nullptr;
}

bool PlanView::OwnedByJob(const nlohmann::json& object) const {
  return OwnedByJobUid(k8s::ControllerUidOf(object));
}

bool PlanView::OwnedByJobUid(const std::string& controller_uid) const {
  return job.metadata.uid.empty() || controller_uid == job.metadata.uid;
}

bool PlanView::CurrentRun(const nlohmann::json& object) const {
  return CurrentRun(ParseRun(k8s::LabelOf(object, api::kRunLabel)));
}

namespace {

std::optional<Membership> RefusalLimit(const PlanView& view) {
  if (view.refused.empty()) {
    return std::nullopt;
  }
  Membership limit;
  for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
    int32_t count = 0;
    while (count < role.EffectiveMaxReplicas() && view.Live(role.name, count) != nullptr) {
      ++count;
    }
    if (count < role.min_replicas) {
      return std::nullopt;
    }
    limit.counts.emplace_back(role.name, count);
  }
  return limit;
}

}  // namespace

PlanView MakePlanView(api::HybridJob job, const Observed& observed, api::TimePoint now,
                      const PlannerOptions& options) {
  api::RunningSpec running =
      api::EffectiveSpec(job, observed.run_spec ? &*observed.run_spec : nullptr);
  job.spec = std::move(running.spec);
  api::HybridJobStatus old_status = job.status;
  if (!job.status.phase) {
    job.status.run = job.spec.run_policy.rerun;
  }
  const int64_t run = job.status.run;
  std::map<MemberKey, const ObservedPod*> own;
  std::vector<const ObservedPod*> stale;
  std::set<MemberKey> evicted_gone;
  std::set<std::string> taken_names;
  const bool any_uid = job.metadata.uid.empty();
  for (const ObservedPod& pod : observed.pods) {
    if (pod.job_name != job.metadata.name) {
      continue;
    }
    taken_names.insert(pod.name);
    const bool ours = any_uid || pod.controller_uid == job.metadata.uid;
    // Named as member `index` of `role` in the run its label says (a
    // malformed run label reads as -1: a stale pod named as in run 0).
    const bool well_named = !pod.role.empty() && pod.index >= 0 &&
                            pod.name == api::MemberPodName(job.metadata.name, pod.role, pod.index,
                                                           std::max<int64_t>(pod.run, 0));
    if (!ours || !well_named) {
      continue;
    }
    if (pod.run != run) {
      stale.push_back(&pod);  // its role may be gone from the spec since
    } else if (job.spec.FindRole(pod.role) != nullptr) {
      own[{pod.role, pod.index}] = &pod;
    }
  }
  for (const ObservedPod& pod : observed.departed) {
    if (pod.reclaimed && pod.run == run && (any_uid || pod.controller_uid == job.metadata.uid)) {
      evicted_gone.insert({pod.role, pod.index});
    }
  }
  std::map<MemberKey, const RefusedCreate*> refused;
  for (const RefusedCreate& create : observed.refused) {
    const api::ReplicaSpec* role = job.spec.FindRole(create.role);
    if (role != nullptr && create.index >= 0 && create.index < role->EffectiveMaxReplicas() &&
        create.pod ==
            api::MemberPodName(job.metadata.name, create.role, create.index, job.status.run) &&
        taken_names.count(create.pod) == 0) {
      refused[{create.role, create.index}] = &create;
    }
  }
  PlanView view{.job = std::move(job),
                .observed = observed,
                .old_status = std::move(old_status),
                .own = std::move(own),
                .stale = std::move(stale),
                .ignored_edits = std::move(running.ignored),
                .evicted_gone = std::move(evicted_gone),
                .taken_names = std::move(taken_names),
                .refused = std::move(refused),
                .refusal_limit = std::nullopt,
                .now = now,
                .now_text = api::FormatTime(now),
                .options = options};
  view.refusal_limit = RefusalLimit(view);
  return view;
}

void PlanBuilder::Requeue(std::chrono::seconds delay) {
  delay = std::max(delay, std::chrono::seconds(1));
  if (!requeue || delay < *requeue) {
    requeue = delay;
  }
}

std::set<std::string> PlanBuilder::DeletedNames() const {
  std::set<std::string> names;
  for (const DeletePod& removal : deletes) {
    names.insert(removal.name);
  }
  return names;
}

const nlohmann::json* FindByName(const std::vector<nlohmann::json>& objects,
                                 const std::string& name) {
  for (const nlohmann::json& object : objects) {
    if (k8s::NameOf(object) == name) {
      return &object;
    }
  }
  return nullptr;
}

void PlanBuilder::DropActiveWork() {
  creates.clear();
  requeue.reset();
  support.clear();
  config_map_action.reset();
  deletes.clear();
  restarts.clear();
}

PlanBuilder StartPlan(const PlanView& view) {
  PlanBuilder plan;
  plan.status = view.old_status;
  plan.status.queue.reset();  // said again by every pass that finds the job queued
  plan.status.run = view.job.status.run;
  plan.status.observed_generation = view.job.metadata.generation;
  return plan;
}

}  // namespace hybridjob::controller::plan
