// Lifecycle: how members end (success, restarts, replacements, failure), the
// job's deadline, and what a finished job still does (cleanup, TTL).
#include <algorithm>
#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/names.h>
#include <hybridjob/common/strings.h>
#include <hybridjob/controller/children.h>
#include <hybridjob/k8s/object_meta.h>

#include "plan_stages.h"

namespace hybridjob::controller::plan {
namespace {

using api::JobPhase;
using std::chrono::seconds;

std::string RestartPolicyText(api::RestartPolicy policy) {
  return std::string(api::ToString(policy));
}

// The last non-empty line of a termination message, at most 300 bytes: what
// the fetcher or uploader said last (what a store answered), for conditions.
std::string LastLine(std::string_view message) {
  constexpr size_t kMax = 300;
  while (!message.empty() && std::isspace(static_cast<unsigned char>(message.back()))) {
    message.remove_suffix(1);
  }
  const size_t newline = message.rfind('\n');
  std::string_view line = newline == std::string_view::npos ? message : message.substr(newline + 1);
  std::string out(line.substr(0, kMax));
  if (line.size() > kMax) {
    out += "...";
  }
  return out;
}

// What ended a member's pod, for messages.
std::string DescribeEnd(const ObservedPod& pod) {
  std::string out = pod.phase == PodPhase::kSucceeded ? "succeeded" : "failed";
  if (pod.exit_code && pod.phase == PodPhase::kFailed) {
    out += " with exit code " + std::to_string(*pod.exit_code);
  } else if (pod.init_exit_code && pod.phase == PodPhase::kFailed) {
    out += " in init container " + pod.failed_init_container + " with exit code " +
           std::to_string(*pod.init_exit_code);
  } else if (!pod.reason.empty()) {
    out += " (" + pod.reason + ")";
  }
  if (const std::string said = LastLine(pod.termination_message);
      pod.phase == PodPhase::kFailed && !said.empty()) {
    out += ": " + said;
  }
  return out;
}

// Why a member was taken away by the cluster, for messages.
std::string DescribeDisplacement(const ObservedPod& pod) {
  if (pod.AdmissionRefused()) {
    return "the kubelet on " + pod.node_name + " refused it (" + pod.reason + ")";
  }
  std::string out = "it was disrupted";
  if (!pod.disruption_reason.empty()) {
    out += " (" + pod.disruption_reason + ")";
  } else if (!pod.reason.empty()) {
    out += " (" + pod.reason + ")";
  }
  return out;
}

// A gang is never left running in part: when a kubelet refused members
// and a role is left with fewer working members than its minimum, the
// others could only wait, holding their nodes, for members that may not fit
// anywhere soon. The whole gang is re-placed as a unit instead (no restart
// counted). Members still starting up lose nothing; it is what happens when
// two schedulers bind onto one node at the moment the gang starts.
void ReplaceGangBelowMinimum(const PlanView& view, const Membership& membership,
                             PlanBuilder& plan) {
  std::string refused;
  for (const Restart& replacement : plan.replacements) {
    if (replacement.pod->AdmissionRefused()) {
      refused = replacement.pod->name + " (" + replacement.description + ")";
      break;
    }
  }
  if (refused.empty()) {
    return;
  }
  const std::set<std::string> leaving = plan.DeletedNames();
  std::string short_role;
  for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
    int32_t working = 0;
    for (int32_t i = 0; i < membership.Count(role.name); ++i) {
      const ObservedPod* pod = view.Live(role.name, i);
      working += pod != nullptr && pod->bound() && pod->active() && !pod->disrupted &&
                         !pod->reclaimed && leaving.count(pod->name) == 0
                     ? 1
                     : 0;
    }
    if (working < role.min_replicas) {
      short_role = role.name + " has " + std::to_string(working) + " of its minimum " +
                   std::to_string(role.min_replicas);
      break;
    }
  }
  if (short_role.empty()) {
    return;
  }
  for (const auto& [key, pod] : view.own) {
    if (!pod->terminating && IsMember(membership, key.first, key.second) && pod->active() &&
        leaving.count(pod->name) == 0) {
      plan.deletes.push_back({pod->name, pod->uid, "replace"});
    }
  }
  plan.gang_replaced = "re-placing the whole gang: member " + refused + "; " + short_role +
                       " working members; not counted as a restart";
}

}  // namespace

std::optional<Terminal> CheckDeadline(const PlanView& view, const std::string& start_time,
                                      PlanBuilder& plan) {
  const auto& deadline_seconds = view.job.spec.run_policy.active_deadline_seconds;
  if (!deadline_seconds) {
    return std::nullopt;
  }
  const api::TimePoint start = api::ParseTime(start_time).value_or(view.now);
  const api::TimePoint deadline = start + seconds(*deadline_seconds);
  if (view.now >= deadline) {
    return Terminal{JobPhase::kFailed, std::string(api::kReasonDeadlineExceeded),
                    "the job ran longer than activeDeadlineSeconds (" +
                        std::to_string(*deadline_seconds) + "s)"};
  }
  plan.Requeue(deadline - view.now);
  return std::nullopt;
}

std::optional<std::string> SuccessPolicyMet(const PlanView& view, const Membership& membership) {
  const api::SuccessPolicy policy = api::EffectiveSuccessPolicy(view.job.spec);
  int32_t members = 0;
  int32_t succeeded = 0;
  for (const std::string& role : policy.roles) {
    for (int32_t i = 0; i < membership.Count(role); ++i) {
      ++members;
      const ObservedPod* pod = view.Live(role, i);
      if (pod != nullptr && pod->phase == PodPhase::kSucceeded) {
        ++succeeded;
      }
    }
  }
  std::string roles;
  for (const std::string& role : policy.roles) {
    roles += roles.empty() ? role : ", " + role;
  }
  if (policy.op == api::SuccessOperator::kAll && members > 0 && succeeded == members) {
    return "all " + std::to_string(members) + " members of " + roles + " succeeded";
  }
  if (policy.op == api::SuccessOperator::kAny && succeeded > 0) {
    return "a member of " + roles + " succeeded";
  }
  return std::nullopt;
}

std::optional<Terminal> HandleEndedMembers(const PlanView& view, const Membership& membership,
                                           PlanBuilder& plan) {
  std::vector<Restart> restarts;
  for (const api::ReplicaSpec& role : view.job.spec.replica_specs) {
    for (int32_t i = 0; i < membership.Count(role.name); ++i) {
      const ObservedPod* pod = view.Live(role.name, i);
      if (pod == nullptr) {
        continue;
      }
      const api::RestartPolicy policy = role.restart_policy;
      if (pod->phase == PodPhase::kFailed && pod->DisplacedByCluster()) {
        // Not the job's failure: a drain, a node-pressure eviction or a
        // kubelet that refused the pod. Same index, same size, no restart.
        plan.deletes.push_back({pod->name, pod->uid, "replace"});
        plan.replacements.push_back({pod, role.name, DescribeDisplacement(*pod)});
        continue;
      }
      if (pod->phase == PodPhase::kFailed) {
        const bool permanent = policy == api::RestartPolicy::kNever ||
                               (policy == api::RestartPolicy::kExitCode && pod->exit_code &&
                                *pod->exit_code >= 1 && *pod->exit_code <= 127);
        if (permanent) {
          return Terminal{JobPhase::kFailed, std::string(api::kReasonMemberFailed),
                          "member " + pod->name + " " + DescribeEnd(*pod) + "; role " + role.name +
                              " has restartPolicy " + RestartPolicyText(policy)};
        }
        restarts.push_back({pod, role.name, DescribeEnd(*pod)});
      } else if (pod->phase == PodPhase::kSucceeded && policy == api::RestartPolicy::kAlways) {
        restarts.push_back({pod, role.name, DescribeEnd(*pod)});
      }
    }
  }
  ReplaceGangBelowMinimum(view, membership, plan);
  if (restarts.empty()) {
    return std::nullopt;
  }
  const int32_t limit = view.job.spec.run_policy.backoff_limit;
  const int32_t restarted_before = view.old_status.restart_count;
  const int64_t wanted = int64_t{restarted_before} + static_cast<int64_t>(restarts.size());
  if (wanted > limit) {
    const Restart& first = restarts.front();
    return Terminal{JobPhase::kFailed, std::string(api::kReasonBackoffLimitExceeded),
                    "member " + first.pod->name + " " + first.description + " after " +
                        std::to_string(restarted_before) + " restarts; backoffLimit is " +
                        std::to_string(limit)};
  }
  for (const Restart& restart : restarts) {
    plan.status.restart_count += 1;
    plan.restarted_per_role[restart.role] += 1;
    plan.deletes.push_back({restart.pod->name, restart.pod->uid, "restart"});
    plan.restarts.push_back(restart);
  }
  plan.status.last_restart_time = view.now_text;
  return std::nullopt;
}

// Unbound pods always go, so a finished job never takes capacity again; a
// missed deadline also stops everything still running; otherwise
// cleanPodPolicy decides.
void DeleteForCleanup(const PlanView& view, const std::optional<Membership>& membership,
                      JobPhase phase, const std::string& reason, PlanBuilder& plan) {
  const bool stop_active = phase == JobPhase::kFailed && reason == api::kReasonDeadlineExceeded;
  for (const auto& [key, pod] : view.own) {
    if (pod->terminating) {
      continue;
    }
    bool remove = false;
    if (!IsMember(membership, key.first, key.second) || (!pod->bound() && pod->active())) {
      remove = true;
    } else {
      switch (view.job.spec.run_policy.clean_pod_policy) {
        case api::CleanPodPolicy::kAll:
          remove = true;
          break;
        case api::CleanPodPolicy::kRunning:
          remove = pod->active();
          break;
        case api::CleanPodPolicy::kNone:
          remove = stop_active && pod->active();
          break;
      }
    }
    if (remove) {
      plan.deletes.push_back({pod->name, pod->uid, stop_active ? "deadline" : "cleanup"});
    }
  }
}

namespace {

void DeleteClusterConfigMap(const PlanView& view, PlanBuilder& plan) {
  const nlohmann::json* config_map =
      FindByName(view.observed.config_maps, api::ClusterConfigMapName(view.job.metadata.name));
  if (config_map != nullptr && view.OwnedByJob(*config_map)) {
    plan.config_map_action = DeleteConfigMap{k8s::NameOf(*config_map), k8s::UidOf(*config_map)};
  }
}

// The finished runs whose ended members stay: the newest
// spec.runHistoryLimit of `finished` (oldest first, as status.previousRuns).
std::set<int64_t> KeptRuns(const std::vector<api::PreviousRun>& finished, int32_t limit) {
  std::set<int64_t> kept;
  const size_t count = std::min(finished.size(), static_cast<size_t>(std::max(limit, 0)));
  for (size_t i = finished.size() - count; i < finished.size(); ++i) {
    kept.insert(finished[i].run);
  }
  return kept;
}

// A member of a run that is over: it stays while it has ended and its run
// is kept, for its log; one still running or waiting would hold what the
// next run needs, and goes.
void DeleteUnlessKept(const ObservedPod& pod, const std::set<int64_t>& kept, PlanBuilder& plan) {
  if (!pod.terminating && (pod.active() || kept.count(pod.run) == 0)) {
    plan.deletes.push_back({pod.name, pod.uid, "rerun"});
  }
}

void DeleteEarlierRuns(const PlanView& view, const std::set<int64_t>& kept, PlanBuilder& plan) {
  for (const ObservedPod* pod : view.stale) {
    DeleteUnlessKept(*pod, kept, plan);
  }
  const std::string uploader = api::ArtifactsPodName(view.job.metadata.name);
  for (const ObservedPod& pod : view.observed.pods) {
    if (pod.name == uploader && view.OwnedByJobUid(pod.controller_uid) &&
        !view.CurrentRun(pod.run) && !pod.terminating) {
      plan.deletes.push_back({pod.name, pod.uid, "rerun"});
    }
  }
}

}  // namespace

void DeleteForSuspend(const PlanView& view, PlanBuilder& plan) {
  for (const auto& [key, pod] : view.own) {
    if (!pod->terminating) {
      plan.deletes.push_back({pod->name, pod->uid, "suspend"});
    }
  }
  DeleteClusterConfigMap(view, plan);
}

void DeleteStaleRuns(const PlanView& view, PlanBuilder& plan) {
  DeleteEarlierRuns(view, KeptRuns(view.old_status.previous_runs, view.job.spec.run_history_limit),
                    plan);
}

void DeleteForRerun(const PlanView& view, PlanBuilder& plan) {
  std::vector<api::PreviousRun> finished = view.old_status.previous_runs;
  finished.push_back({.run = view.old_status.run});
  const std::set<int64_t> kept = KeptRuns(finished, view.job.spec.run_history_limit);
  for (const auto& [key, pod] : view.own) {
    DeleteUnlessKept(*pod, kept, plan);
  }
  DeleteClusterConfigMap(view, plan);
  DeleteEarlierRuns(view, kept, plan);
  const std::string uploader = api::ArtifactsPodName(view.job.metadata.name);
  for (const ObservedPod& pod : view.observed.pods) {
    if (pod.name == uploader && view.OwnedByJobUid(pod.controller_uid) &&
        view.CurrentRun(pod.run) && !pod.terminating) {
      plan.deletes.push_back({pod.name, pod.uid, "rerun"});
    }
  }
}

namespace {

// The node of a member that mounted `volume`: a node-local volume is there.
std::string NodeOfVolume(const PlanView& view, const std::string& volume_name) {
  const api::VolumeSpec* volume = view.job.spec.FindVolume(volume_name);
  for (const auto& [key, pod] : view.own) {
    if (volume != nullptr && volume->AppliesTo(key.first) && pod->bound()) {
      return pod->node_name;
    }
  }
  return "";
}

// Uploaded, or given up: nothing more happens to the upload.
bool UploadSettled(const api::Condition* uploaded) {
  return uploaded != nullptr &&
         (uploaded->status == "True" || uploaded->reason == api::kReasonUploadFailed);
}

std::string DescribeArtifacts(const api::ArtifactsSpec& artifacts) {
  return Join(artifacts.paths) + " of volume " + artifacts.volume + " to " + artifacts.destination;
}

}  // namespace

void PlanArtifacts(const PlanView& view, JobPhase phase, PlanBuilder& plan) {
  if (!view.job.spec.artifacts || phase != JobPhase::kSucceeded) {
    return;
  }
  const api::ArtifactsSpec& artifacts = *view.job.spec.artifacts;
  if (UploadSettled(plan.status.FindCondition(api::kConditionArtifactsUploaded))) {
    return;
  }
  const std::string name = api::ArtifactsPodName(view.job.metadata.name);
  const ObservedPod* uploader = nullptr;
  for (const ObservedPod& pod : view.observed.pods) {
    if (pod.name == name && view.OwnedByJobUid(pod.controller_uid) && view.CurrentRun(pod.run)) {
      uploader = &pod;
    }
  }
  auto set = [&](bool uploaded, std::string_view reason, const std::string& message) {
    SetCondition(view, plan, api::kConditionArtifactsUploaded, uploaded, std::string(reason),
                 message, /*replace_message=*/true, /*add_when_false=*/true);
  };
  if (uploader == nullptr || uploader->terminating) {
    if (uploader == nullptr && view.taken_names.count(name) == 0) {
      plan.support.emplace_back(CreatePod{
          BuildArtifactsPod(view.job, NodeOfVolume(view, artifacts.volume), view.options)});
    }
    set(false, api::kReasonUploading, "uploading " + DescribeArtifacts(artifacts));
    return;
  }
  switch (uploader->phase) {
    case PodPhase::kSucceeded:
      set(true, api::kReasonUploaded, "uploaded " + DescribeArtifacts(artifacts));
      return;
    case PodPhase::kFailed: {
      std::string why = uploader->reason.empty() ? "it failed" : uploader->reason;
      if (uploader->restarts > 0) {
        why += " after " + std::to_string(uploader->restarts + 1) + " attempts";
      }
      const std::string said =
          LastLine(uploader->termination_message.empty() ? uploader->last_termination_message
                                                         : uploader->termination_message);
      if (!said.empty()) {
        why += "; the last said: " + said;
      }
      set(false, api::kReasonUploadFailed,
          "gave up uploading " + DescribeArtifacts(artifacts) + " (" + why +
              "); the job's success stands and its volume keeps the files");
      return;
    }
    default:
      if (uploader->restarts > 0) {
        const std::string said = LastLine(uploader->last_termination_message);
        set(false, api::kReasonRetrying,
            "attempt " + std::to_string(uploader->restarts) + " failed" +
                (uploader->last_exit_code
                     ? " with exit code " + std::to_string(*uploader->last_exit_code)
                     : std::string()) +
                (said.empty() ? std::string() : " (" + said + ")") +
                "; the kubelet retries with back-off for up to " +
                std::to_string(artifacts.deadline_seconds) + "s (kubectl logs " + name + ")");
      } else {
        set(false, api::kReasonUploading, "uploading " + DescribeArtifacts(artifacts));
      }
      return;
  }
}

bool RerunDue(const PlanView& view) {
  const api::HybridJobStatus& old = view.old_status;
  if (!old.phase || !api::IsTerminal(*old.phase) || view.job.spec.run_policy.rerun <= old.run) {
    return false;
  }
  // The uploader reads the finished run's files: the next run waits for it.
  return !view.job.spec.artifacts || *old.phase != JobPhase::kSucceeded ||
         UploadSettled(old.FindCondition(api::kConditionArtifactsUploaded));
}

bool ArtifactsPending(const PlanView& view, const PlanBuilder& plan) {
  if (!view.job.spec.artifacts || plan.status.phase != JobPhase::kSucceeded) {
    return false;
  }
  return !UploadSettled(plan.status.FindCondition(api::kConditionArtifactsUploaded));
}

void CheckTtl(const PlanView& view, const std::optional<std::string>& completion_time,
              PlanBuilder& plan) {
  if (ArtifactsPending(view, plan)) {
    return;  // the job's claims go with it; the pod's updates bring the next pass
  }
  const auto& ttl = view.job.spec.run_policy.ttl_seconds_after_finished;
  if (!ttl || !completion_time) {
    return;
  }
  std::optional<api::TimePoint> finished = api::ParseTime(*completion_time);
  if (!finished) {
    return;
  }
  const api::TimePoint expiry = *finished + seconds(*ttl);
  if (view.now >= expiry) {
    plan.delete_job = true;
  } else {
    plan.Requeue(expiry - view.now);
  }
}

}  // namespace hybridjob::controller::plan
