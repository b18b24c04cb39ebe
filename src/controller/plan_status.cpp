// Job status: replica statuses, ready members, phase and conditions of the
// world as the plan leaves it, the Events for what changed, and the Plan.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <hybridjob/api/group_spec.h>
#include <hybridjob/api/spec_edits.h>
#include <hybridjob/common/strings.h>
#include <hybridjob/controller/children.h>

#include "plan_stages.h"

namespace hybridjob::controller::plan {
namespace {

using api::JobPhase;

// Our pods as they will be once this plan is applied; a create the API server
// refused before is expected to be refused again.
std::vector<ObservedPod> ProjectedPods(const PlanView& view, const PlanBuilder& plan) {
  const std::set<std::string> deleted = plan.DeletedNames();
  std::vector<ObservedPod> pods;
  for (const auto& [key, pod] : view.own) {
    if (!pod->terminating && deleted.count(pod->name) == 0) {
      pods.push_back(*pod);
    }
  }
  for (const nlohmann::json& created : plan.creates) {
    ObservedPod pod = ObservePod(created);
    if (view.refused.count({pod.role, pod.index}) != 0) {
      continue;
    }
    pod.controller_uid = view.job.metadata.uid;
    pods.push_back(std::move(pod));
  }
  return pods;
}

// ReplicaFailure=True while the API server refuses member pods the job still
// wants (before a membership, any it lacks; after, those this pass creates
// again), quoting the server and saying what the job does meanwhile; removed
// once none is refused, as on a ReplicaSet.
void MarkReplicaFailure(const PlanView& view, const std::optional<Membership>& membership,
                        const std::optional<Membership>& limit, PlanBuilder& plan) {
  std::set<std::string> creating;
  for (const nlohmann::json& pod : plan.creates) {
    creating.insert(pod["metadata"].value("name", ""));
  }
  std::vector<const RefusedCreate*> refused;
  for (const auto& [key, create] : view.refused) {
    if (!membership || creating.count(create->pod) != 0) {
      refused.push_back(create);
    }
  }
  if (!membership && !view.observed.missing.empty()) {
    std::string message = "the members need ";
    for (size_t i = 0; i < view.observed.missing.size(); ++i) {
      message += (i == 0 ? "" : ", ") + Describe(view.observed.missing[i]);
    }
    const bool one = view.observed.missing.size() == 1;
    message += one ? ", which does not exist; no member is created until it exists"
                   : ", which do not exist; no member is created until they exist";
    message += " (or the reference is marked optional)";
    SetCondition(view, plan, api::kConditionReplicaFailure, true,
                 std::string(api::kReasonMissingConfigMap), message, true);
    return;
  }
  if (refused.empty()) {
    RemoveCondition(plan, api::kConditionReplicaFailure);
    return;
  }
  std::string message = "the API server refused member pod";
  message += refused.size() > 1 ? "s " : " ";
  for (size_t i = 0; i < refused.size(); ++i) {
    message += (i == 0 ? "" : ", ") + refused[i]->pod;
  }
  message += ": " + refused.front()->message + "; ";
  if (membership) {
    message += "they are created once it admits them";
  } else if (limit) {
    message += "every role has its minimum, so the gang goes on with the members it has:";
    for (const auto& [role, count] : limit->counts) {
      message += " " + role + " " + std::to_string(count);
    }
  } else {
    message += "the job waits until it admits every role's minimum:";
    for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
      int32_t live = 0;
      for (int32_t i = 0; i < role.EffectiveMaxReplicas(); ++i) {
        live += view.Live(role.name, i) != nullptr ? 1 : 0;
      }
      message +=
          " " + role.name + " " + std::to_string(live) + " of " + std::to_string(role.min_replicas);
    }
  }
  SetCondition(view, plan, api::kConditionReplicaFailure, true,
               std::string(api::kReasonFailedCreate), message, true);
}

// Scheduled=True once there is a membership; with the per-role members in
// the status, it is what later passes read the membership back from.
void MarkScheduled(const PlanView& view, const std::optional<Membership>& membership,
                   PlanBuilder& plan) {
  if (!membership) {
    return;
  }
  std::string message = "gang placed:";
  for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
    message += " " + role.name + " " + std::to_string(membership->Count(role.name)) + "/" +
               std::to_string(role.EffectiveMaxReplicas());
  }
  if (!plan.status.placement.empty()) {
    message += " in " + plan.status.placement;
  }
  if (plan.surplus_deleted > 0) {
    message += "; deleting " + std::to_string(plan.surplus_deleted) + " surplus pods";
  }
  SetCondition(view, plan, api::kConditionScheduled, true, std::string(api::kConditionScheduled),
               message, false);
}

// Why members restart or are replaced in this pass, for the Restarting
// condition; empty if none are.
std::string RestartMessage(const PlanView& view, const PlanBuilder& plan) {
  std::string message;
  for (const Restart& restart : plan.restarts) {
    message += message.empty() ? "" : "; ";
    message += "member " + restart.pod->name + " " + restart.description;
  }
  if (!message.empty()) {
    message += " (restart " + std::to_string(plan.status.restart_count) + " of at most " +
               std::to_string(view.job.spec.run_policy.backoff_limit) + ")";
  }
  for (const std::string* why : {&plan.membership_restart, &plan.gang_replaced}) {
    if (!why->empty()) {
      message += (message.empty() ? "" : "; ") + *why;
    }
  }
  return message;
}

std::vector<RecordEvent> TransitionEvents(const PlanView& view, const PlanBuilder& plan) {
  std::vector<RecordEvent> events;
  auto became_true = [&](std::string_view type) -> const api::Condition* {
    const api::Condition* now = plan.status.FindCondition(type);
    if (now == nullptr || now->status != "True") {
      return nullptr;
    }
    const api::Condition* before = view.old_status.FindCondition(type);
    return before == nullptr || before->status != "True" ? now : nullptr;
  };
  if (const api::Condition* created = became_true(api::kConditionCreated)) {
    // It counts this pass's creates as made: the reconciler records it once
    // they are, counting those that took.
    events.push_back({EventType::kNormal, created->reason, created->message, plan.created_members});
  }
  for (std::string_view type :
       {api::kConditionScheduled, api::kConditionRunning, api::kConditionSucceeded}) {
    if (const api::Condition* condition = became_true(type)) {
      events.push_back({EventType::kNormal, condition->reason, condition->message});
    }
  }
  if (const api::Condition* uploaded = became_true(api::kConditionArtifactsUploaded)) {
    events.push_back({EventType::kNormal, uploaded->reason, uploaded->message});
  }
  if (const api::Condition* upload = plan.status.FindCondition(api::kConditionArtifactsUploaded);
      upload != nullptr && upload->reason == api::kReasonUploadFailed) {
    const api::Condition* before = view.old_status.FindCondition(api::kConditionArtifactsUploaded);
    if (before == nullptr || before->reason != api::kReasonUploadFailed) {
      events.push_back({EventType::kWarning, upload->reason, upload->message});
    }
  }
  if (const api::Condition* suspended = became_true(api::kConditionSuspended)) {
    events.push_back({EventType::kNormal, suspended->reason, suspended->message});
  } else if (const api::Condition* resumed = plan.status.FindCondition(api::kConditionSuspended);
             resumed != nullptr && resumed->status == "False" &&
             view.old_status.HasTrueCondition(api::kConditionSuspended)) {
    events.push_back({EventType::kNormal, resumed->reason, resumed->message});
  }
  if (view.old_status.phase && api::IsTerminal(*view.old_status.phase) &&
      plan.status.run != view.old_status.run) {
    events.push_back({EventType::kNormal, std::string(api::kReasonRerun),
                      "run " + std::to_string(plan.status.run) +
                          " starts from the spec as it is now; run " +
                          std::to_string(view.old_status.run) + " ended " +
                          std::string(api::ToString(*view.old_status.phase))});
  }
  if (const api::Condition* ignored = plan.status.FindCondition(api::kConditionSpecChangeIgnored)) {
    const api::Condition* before = view.old_status.FindCondition(api::kConditionSpecChangeIgnored);
    if (before == nullptr || before->message != ignored->message) {
      events.push_back({EventType::kWarning, ignored->reason, ignored->message});
    }
  }
  if (const api::Condition* failure = became_true(api::kConditionReplicaFailure)) {
    events.push_back({EventType::kWarning, failure->reason, failure->message});
  }
  for (const std::string& change : plan.membership_events) {
    events.push_back({EventType::kNormal, std::string(api::kReasonMembershipChanged), change});
  }
  if (!plan.gang_replaced.empty()) {
    events.push_back(
        {EventType::kWarning, std::string(api::kReasonMemberReplaced), plan.gang_replaced});
  } else {
    for (const Restart& replacement : plan.replacements) {
      events.push_back({EventType::kWarning, std::string(api::kReasonMemberReplaced),
                        "replacing member " + replacement.pod->name + " at its index: " +
                            replacement.description + "; not counted as a restart"});
    }
  }
  for (const Restart& restart : plan.restarts) {
    events.push_back({EventType::kWarning, std::string(api::kConditionRestarting),
                      "restarting member " + restart.pod->name + ": it " + restart.description +
                          " (restart " + std::to_string(plan.status.restart_count) +
                          ", backoffLimit " +
                          std::to_string(view.job.spec.run_policy.backoff_limit) + ")"});
  }
  if (const api::Condition* invalid = became_true(api::kConditionInvalid)) {
    events.push_back({EventType::kWarning, invalid->reason, invalid->message});
  } else if (const api::Condition* failed = became_true(api::kConditionFailed)) {
    events.push_back({EventType::kWarning, failed->reason, failed->message});
  }
  return events;
}

}  // namespace

// Adds or updates a condition. A condition that never held is not added as
// False unless `add_when_false`. Times move only when the status (transition) or the reason or
// message (update) change; an unchanged status and reason keep their message
// unless `replace_message`, so planning again changes nothing.
void SetCondition(const PlanView& view, PlanBuilder& plan, std::string_view type, bool value,
                  const std::string& reason, const std::string& message, bool replace_message,
                  bool add_when_false) {
  std::vector<api::Condition>& conditions = plan.status.conditions;
  const std::string& now = view.now_text;
  const std::string state = value ? "True" : "False";
  auto it = std::find_if(conditions.begin(), conditions.end(),
                         [&](const api::Condition& c) { return c.type == type; });
  if (it == conditions.end()) {
    if (value || add_when_false) {
      conditions.push_back({std::string(type), state, reason, message, now, now});
    }
    return;
  }
  if (it->status != state) {
    *it = {std::string(type), state, reason, message, now, now};
  } else if (it->reason != reason || (replace_message && it->message != message)) {
    it->reason = reason;
    it->message = message;
    it->last_update_time = now;
  }
}

void RemoveCondition(PlanBuilder& plan, std::string_view type) {
  std::erase_if(plan.status.conditions,
                [&](const api::Condition& condition) { return condition.type == type; });
}

void ComputeReplicaStatuses(const PlanView& view, const std::optional<Membership>& membership,
                            EndedPods ended, PlanBuilder& plan) {
  const std::vector<ObservedPod> projected = ProjectedPods(view, plan);
  std::vector<api::ReplicaStatus> statuses;
  for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
    api::ReplicaStatus replica;
    replica.name = role.name;
    replica.members = membership ? membership->Count(role.name) : 0;
    const api::ReplicaStatus* previous = view.old_status.FindReplicaStatus(role.name);
    auto restarted = plan.restarted_per_role.find(role.name);
    replica.restarts = (previous != nullptr ? previous->restarts : 0) +
                       (restarted != plan.restarted_per_role.end() ? restarted->second : 0);
    for (const ObservedPod& pod : projected) {
      if (pod.role != role.name) {
        continue;
      }
      replica.scheduled += pod.bound() ? 1 : 0;
      replica.active += pod.active() ? 1 : 0;
      if (ended == EndedPods::kProjected) {
        replica.succeeded += pod.phase == PodPhase::kSucceeded ? 1 : 0;
        replica.failed += pod.phase == PodPhase::kFailed ? 1 : 0;
      }
    }
    if (ended == EndedPods::kObserved) {
      for (const auto& [key, pod] : view.own) {
        if (key.first != role.name || pod->terminating) {
          continue;
        }
        replica.succeeded += pod->phase == PodPhase::kSucceeded ? 1 : 0;
        replica.failed += pod->phase == PodPhase::kFailed ? 1 : 0;
      }
    }
    statuses.push_back(std::move(replica));
  }
  plan.status.replica_statuses = std::move(statuses);
}

void ComputeReadyMembers(const PlanView& view, const std::optional<Membership>& membership,
                         PlanBuilder& plan) {
  int32_t expected = 0;
  if (membership) {
    expected = membership->Total();
  } else {
    for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
      expected += role.min_replicas;
    }
  }
  int32_t running = 0;
  for (const ObservedPod& pod : ProjectedPods(view, plan)) {
    if (pod.phase == PodPhase::kRunning && IsMember(membership, pod.role, pod.index)) {
      ++running;
    }
  }
  plan.status.ready_members = std::to_string(running) + "/" + std::to_string(expected);
}

// Where the members run, as the scheduler's bindings said: the placement most
// bound members carry (growth into a second domain of a Preferred job moves
// it only once most members are there). Kept when no member says anything,
// so a finished job still tells where it ran.
void ComputePlacement(const PlanView& view, PlanBuilder& plan) {
  std::map<std::string, int> votes;
  for (const auto& [key, pod] : view.own) {
    if (pod->bound() && !pod->terminating && !pod->placement.empty()) {
      ++votes[pod->placement];
    }
  }
  auto most = std::max_element(votes.begin(), votes.end(),
                               [](const auto& a, const auto& b) { return a.second < b.second; });
  if (most != votes.end()) {
    plan.status.placement = most->first;
  }
}

void ComputeActiveStatus(const PlanView& view, const std::optional<Membership>& membership,
                         PlanBuilder& plan) {
  // Before a membership, a job whose other pods are refused is complete
  // with the members it has.
  const std::optional<Membership>& limit = membership ? std::nullopt : view.refusal_limit;
  ComputeReplicaStatuses(view, membership, EndedPods::kProjected, plan);
  ComputeReadyMembers(view, membership, plan);
  ComputePlacement(view, plan);
  const std::vector<ObservedPod> projected = ProjectedPods(view, plan);
  std::map<MemberKey, const ObservedPod*> present;
  for (const ObservedPod& pod : projected) {
    present[{pod.role, pod.index}] = &pod;
  }

  // Under a refusal the job is complete with the members it has.
  auto wanted = [&](const api::ReplicaSpec& role) {
    return limit ? limit->Count(role.name) : role.EffectiveMaxReplicas();
  };
  bool all_created = true;
  for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
    for (int32_t i = 0; i < wanted(role); ++i) {
      all_created = all_created && present.count({role.name, i}) != 0;
    }
  }

  JobPhase phase = all_created ? JobPhase::kQueued : JobPhase::kPending;
  if (membership) {
    bool all_placed = true;
    for (const auto& [role, count] : membership->counts) {
      for (int32_t i = 0; i < count; ++i) {
        auto it = present.find({role, i});
        all_placed = all_placed && it != present.end() && it->second->bound();
      }
    }
    phase = all_placed ? JobPhase::kRunning : JobPhase::kRestarting;
  }
  plan.status.phase = phase;

  if (all_created || membership) {
    CreatedMembers& counted = plan.created_members;
    counted = CreatedMembers{};
    for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
      counted.roles.emplace_back(role.name, wanted(role));
    }
    counted.others_refused = limit.has_value();
    for (const nlohmann::json& created : plan.creates) {
      const ObservedPod pod = ObservePod(created);
      const api::ReplicaSpec* role = view.job.spec.FindRole(pod.role);
      if (role != nullptr && pod.index < wanted(*role) &&
          view.refused.count({pod.role, pod.index}) == 0) {
        counted.creates.emplace_back(pod.name, pod.role);
      }
    }
    // The message says what the job goes on with: decided under a refusal,
    // it stays once the membership is committed.
    SetCondition(view, plan, api::kConditionCreated, true, std::string(api::kConditionCreated),
                 CreatedMessage(counted), limit.has_value());
  } else if (!view.refused.empty()) {
    SetCondition(view, plan, api::kConditionCreated, false, std::string(api::kReasonFailedCreate),
                 "the API server refuses member pods (see ReplicaFailure)", true);
  }
  MarkScheduled(view, membership, plan);
  MarkReplicaFailure(view, membership, limit, plan);
  const std::string phase_text(api::ToString(phase));
  if (phase == JobPhase::kQueued) {
    // Why the gang waits, in the scheduler's words (first member that says),
    // and its standing as the member carrying it said last.
    std::string reason = std::string(api::kConditionQueued);
    std::string message = "every member pod exists; waiting for the gang scheduler";
    for (const auto& [key, pod] : view.own) {
      if (!pod->terminating && !pod->waiting_reason.empty()) {
        reason = pod->waiting_reason;
        message = pod->waiting_message;
        break;
      }
    }
    const ObservedPod* carrier = nullptr;
    for (const auto& [key, pod] : view.own) {
      if (!pod->terminating && pod->standing &&
          (carrier == nullptr || pod->standing_since > carrier->standing_since)) {
        carrier = pod;
      }
    }
    if (carrier != nullptr) {
      plan.status.queue = carrier->standing;
      reason = carrier->standing->reason;
    }
    SetCondition(view, plan, api::kConditionQueued, true, reason, message, true);
  } else {
    SetCondition(view, plan, api::kConditionQueued, false, phase_text, "", false);
  }
  SetCondition(view, plan, api::kConditionRunning, phase == JobPhase::kRunning,
               phase == JobPhase::kRunning ? std::string(api::kConditionRunning) : phase_text,
               "the job is running with " + std::to_string(membership ? membership->Total() : 0) +
                   " members",
               false);
  const std::string restart_message = RestartMessage(view, plan);
  SetCondition(view, plan, api::kConditionRestarting, phase == JobPhase::kRestarting,
               phase == JobPhase::kRestarting ? std::string(api::kConditionRestarting) : phase_text,
               restart_message.empty() ? "recreating missing members" : restart_message,
               !restart_message.empty());
  // Only a job that was suspended has the condition to flip.
  SetCondition(view, plan, api::kConditionSuspended, false, std::string(api::kReasonJobResumed),
               "the job resumed: its member pods are created again", false);
}

void ComputeFinishedStatus(const PlanView& view, const Terminal& terminal,
                           const std::optional<Membership>& membership, PlanBuilder& plan) {
  plan.status.phase = terminal.phase;
  plan.status.completion_time = view.now_text;
  // Edits are the next run's business now.
  RemoveCondition(plan, api::kConditionSpecChangeIgnored);
  if (!plan.status.start_time) {
    plan.status.start_time = view.now_text;
  }
  // What happened is read before the cleanup; what remains, after it.
  ComputeReplicaStatuses(view, membership, EndedPods::kObserved, plan);
  ComputeReadyMembers(view, membership, plan);
  MarkScheduled(view, membership, plan);  // placement and the end may be seen in one pass
  const std::string phase_text(api::ToString(terminal.phase));
  for (std::string_view type :
       {api::kConditionRunning, api::kConditionRestarting, api::kConditionQueued}) {
    SetCondition(view, plan, type, false, phase_text, "", false);
  }
  RemoveCondition(plan, api::kConditionReplicaFailure);
  SetCondition(
      view, plan,
      terminal.phase == JobPhase::kSucceeded ? api::kConditionSucceeded : api::kConditionFailed,
      true, terminal.reason, terminal.message, true);
}

void ComputeSuspendedStatus(const PlanView& view, PlanBuilder& plan) {
  plan.status.phase = JobPhase::kSuspended;
  // Resumed, the job starts from its spec as it is then.
  if (plan.status.run_spec) {
    plan.support.emplace_back(DeleteRunRevision{plan.status.run_spec->revision});
  }
  plan.status.run_spec.reset();
  RemoveCondition(plan, api::kConditionSpecChangeIgnored);
  plan.status.start_time.reset();
  plan.status.placement.clear();
  ComputeReplicaStatuses(view, std::nullopt, EndedPods::kProjected, plan);
  ComputeReadyMembers(view, std::nullopt, plan);
  const std::string phase_text(api::ToString(JobPhase::kSuspended));
  for (std::string_view type :
       {api::kConditionRunning, api::kConditionRestarting, api::kConditionQueued}) {
    SetCondition(view, plan, type, false, phase_text, "", false);
  }
  // Scheduled=False gives the membership up: resumed, the gang is placed
  // afresh, at any size its minimums and maximums allow.
  SetCondition(view, plan, api::kConditionScheduled, false, phase_text,
               "the job is suspended; its gang is placed afresh when it resumes", true);
  RemoveCondition(plan, api::kConditionReplicaFailure);
  SetCondition(view, plan, api::kConditionSuspended, true, std::string(api::kReasonJobSuspended),
               "the job is suspended: its member pods are deleted and it holds no GPUs; set "
               "spec.suspend to false to resume it",
               true);
}

void RecordRunSpec(const PlanView& view, PlanBuilder& plan) {
  std::optional<api::RunSpecRecord>& record = plan.status.run_spec;
  if (record && !view.observed.run_spec_lost) {
    record->group = api::GroupSpecOf(view.job);
    return;
  }
  if (record) {
    plan.support.emplace_back(RecordEvent{
        EventType::kWarning, "RunSpecLost",
        "the spec this run started with (ControllerRevision " + record->revision +
            ") is gone or is not this job's; the run goes on with the spec as it is now"});
  }
  record =
      api::RunSpecRecord{.hash = api::RunFixedHash(view.job.spec),
                         .revision = api::RunRevisionName(view.job.metadata.name, view.job.spec),
                         .group = api::GroupSpecOf(view.job)};
  plan.run_revision = BuildRunRevision(view.job, view.job.spec);
}

void ReportIgnoredEdits(const PlanView& view, PlanBuilder& plan) {
  if (view.ignored_edits.empty()) {
    RemoveCondition(plan, api::kConditionSpecChangeIgnored);
    return;
  }
  SetCondition(view, plan, api::kConditionSpecChangeIgnored, true,
               std::string(api::kConditionSpecChangeIgnored),
               "the running job does not take these edits: " + Join(view.ignored_edits, "; ") +
                   ". They apply when it is suspended and resumed, re-run once finished, or "
                   "created again; until then it runs as it started",
               /*replace_message=*/true);
}

void ComputeRerunStatus(const PlanView& view, PlanBuilder& plan) {
  const api::HybridJobStatus& old = view.old_status;
  api::PreviousRun finished{.run = old.run, .phase = *old.phase};
  const api::Condition* ended = old.FindCondition(
      *old.phase == JobPhase::kSucceeded ? api::kConditionSucceeded : api::kConditionFailed);
  if (ended != nullptr) {
    finished.reason = ended->reason;
    finished.message = ended->message;
  }
  finished.start_time = old.start_time;
  finished.completion_time = old.completion_time;
  finished.restart_count = old.restart_count;

  if (old.run_spec) {
    plan.support.emplace_back(DeleteRunRevision{old.run_spec->revision});
  }
  api::HybridJobStatus next;
  next.previous_runs = old.previous_runs;
  next.previous_runs.push_back(std::move(finished));
  if (next.previous_runs.size() > api::kMaxPreviousRuns) {
    next.previous_runs.erase(
        next.previous_runs.begin(),
        next.previous_runs.end() - static_cast<std::ptrdiff_t>(api::kMaxPreviousRuns));
  }
  next.phase = JobPhase::kPending;
  next.run = view.job.spec.run_policy.rerun;
  next.observed_generation = plan.status.observed_generation;
  plan.status = std::move(next);
}

void ComputeInvalidStatus(const PlanView& view, const std::string& message, PlanBuilder& plan) {
  plan.status.phase = JobPhase::kFailed;
  if (!plan.status.completion_time) {
    plan.status.completion_time = view.now_text;
  }
  SetCondition(view, plan, api::kConditionInvalid, true, std::string(api::kReasonInvalid), message,
               true);
  SetCondition(view, plan, api::kConditionFailed, true, std::string(api::kReasonInvalid),
               "the job's spec is invalid: " + message, true);
}

Plan Assemble(const PlanView& view, PlanBuilder plan) {
  Plan out;
  if (plan.run_revision) {
    out.actions.emplace_back(CreateRunRevision{std::move(*plan.run_revision)});
  }
  if (plan.status != view.old_status) {
    out.actions.emplace_back(UpdateStatus{plan.status});
  }
  // An Event that counts this pass's creates follows them.
  std::vector<RecordEvent> after_creates;
  for (RecordEvent& event : TransitionEvents(view, plan)) {
    if (event.created && !event.created->creates.empty()) {
      after_creates.push_back(std::move(event));
    } else {
      out.actions.emplace_back(std::move(event));
    }
  }
  for (Action& action : plan.support) {
    out.actions.push_back(std::move(action));
  }
  // Members mount it; the kubelet holds them until it exists.
  if (!plan.creates.empty() && view.job.spec.framework == api::Framework::kMPI) {
    out.actions.emplace_back(CreateSshKeySecret{BuildSshKeySecret(view.job)});
  }
  if (plan.config_map_action) {
    out.actions.push_back(std::move(*plan.config_map_action));
  }
  for (DeletePod& removal : plan.deletes) {
    out.actions.emplace_back(std::move(removal));
  }
  for (PatchPodGroupSpec& patch : plan.patches) {
    out.actions.emplace_back(std::move(patch));
  }
  for (nlohmann::json& pod : plan.creates) {
    out.actions.emplace_back(CreatePod{std::move(pod)});
  }
  for (RecordEvent& event : after_creates) {
    out.actions.emplace_back(std::move(event));
  }
  if (plan.delete_job) {
    out.actions.emplace_back(DeleteJob{view.job.metadata.uid});
  } else {
    out.requeue_after = plan.requeue;
  }
  return out;
}

}  // namespace hybridjob::controller::plan
