#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/group_spec.h>
#include <hybridjob/api/json.h>
#include <hybridjob/api/labels.h>
#include <hybridjob/api/names.h>
#include <hybridjob/api/time.h>
#include <hybridjob/api/validation.h>
#include <hybridjob/controller/children.h>
#include <hybridjob/controller/cluster_spec.h>
#include <hybridjob/controller/planner.h>
#include <hybridjob/k8s/object_meta.h>

namespace hybridjob::controller {
namespace {

using api::JobPhase;
using nlohmann::json;
using std::chrono::seconds;

using MemberKey = std::pair<std::string, int32_t>;  // role, index

using k8s::ControllerUidOf;
using k8s::NameOf;

const json* FindByName(const std::vector<json>& objects, const std::string& name) {
  for (const json& object : objects) {
    if (NameOf(object) == name) {
      return &object;
    }
  }
  return nullptr;
}

std::string RestartPolicyText(api::RestartPolicy policy) {
  return std::string(api::ToString(policy));
}

// What ended a member's pod, for messages.
std::string DescribeEnd(const ObservedPod& pod) {
  std::string out = pod.phase == PodPhase::kSucceeded ? "succeeded" : "failed";
  if (pod.exit_code && pod.phase == PodPhase::kFailed) {
    out += " with exit code " + std::to_string(*pod.exit_code);
  } else if (!pod.reason.empty()) {
    out += " (" + pod.reason + ")";
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

struct Terminal {
  JobPhase phase;
  std::string reason;
  std::string message;
};

struct Restart {
  const ObservedPod* pod;
  std::string role;
  std::string description;
};

class Planner {
 public:
  Planner(api::HybridJob job, const Observed& observed, api::TimePoint now,
          const PlannerOptions& options)
      : job_(std::move(job)),
        observed_(observed),
        now_(now),
        now_text_(api::FormatTime(now)),
        options_(options) {
    api::ApplyDefaults(job_);
    old_ = job_.status;
    status_ = old_;
    status_.observed_generation = job_.metadata.generation;
  }

  Plan Run() {
    if (job_.metadata.deletion_timestamp) {
      return {};  // the garbage collector takes the children
    }
    IndexPods();
    if (old_.phase && api::IsTerminal(*old_.phase)) {
      return PlanFinished();
    }
    std::vector<api::FieldError> errors = api::Validate(job_);
    if (!errors.empty()) {
      return PlanInvalid(api::JoinErrors(errors));
    }
    return PlanActive();
  }

  // A job that is not valid: say so once, create nothing.
  Plan PlanInvalid(const std::string& message) {
    if (old_.phase && api::IsTerminal(*old_.phase)) {
      return {};
    }
    status_.phase = JobPhase::kFailed;
    if (!status_.completion_time) {
      status_.completion_time = now_text_;
    }
    SetCondition(api::kConditionInvalid, true, std::string(api::kReasonInvalid), message, true);
    SetCondition(api::kConditionFailed, true, std::string(api::kReasonInvalid),
                 "the job's spec is invalid: " + message, true);
    return Assemble();
  }

 private:
  // ---- observation --------------------------------------------------------

  void IndexPods() {
    for (const ObservedPod& pod : observed_.pods) {
      if (pod.job_name != job_.metadata.name) {
        continue;
      }
      taken_names_.insert(pod.name);
      bool ours = job_.metadata.uid.empty() || pod.controller_uid == job_.metadata.uid;
      const api::ReplicaSpec* role = job_.spec.FindRole(pod.role);
      bool well_named = role != nullptr && pod.index >= 0 &&
                        pod.name == api::MemberPodName(job_.metadata.name, pod.role, pod.index);
      if (ours && well_named) {
        own_[{pod.role, pod.index}] = &pod;
      }
    }
    for (const ObservedPod& pod : observed_.departed) {
      if (pod.reclaimed && (job_.metadata.uid.empty() || pod.controller_uid == job_.metadata.uid)) {
        evicted_gone_.insert({pod.role, pod.index});
      }
    }
  }

  const ObservedPod* Own(const std::string& role, int32_t index) const {
    auto it = own_.find({role, index});
    return it == own_.end() ? nullptr : it->second;
  }

  // A live pod of ours: present and not on its way out.
  const ObservedPod* Live(const std::string& role, int32_t index) const {
    const ObservedPod* pod = Own(role, index);
    return pod != nullptr && !pod->terminating ? pod : nullptr;
  }

  bool OwnedByJob(const json& object) const {
    return job_.metadata.uid.empty() || ControllerUidOf(object) == job_.metadata.uid;
  }

  // The membership recorded by an earlier pass: the ConfigMap's annotation,
  // else the status written before it.
  std::optional<Membership> CommittedMembership() const {
    const json* config_map =
        FindByName(observed_.config_maps, api::ClusterConfigMapName(job_.metadata.name));
    if (config_map != nullptr && OwnedByJob(*config_map)) {
      const json& meta = (*config_map)["metadata"];
      if (meta.contains("annotations") && meta["annotations"].is_object()) {
        const json& annotations = meta["annotations"];
        auto it = annotations.find(api::kMembersAnnotation);
        if (it != annotations.end() && it->is_string()) {
          if (auto membership = ParseMembership(it->get<std::string>(), job_.spec)) {
            return membership;
          }
        }
      }
    }
    if (old_.HasTrueCondition(api::kConditionScheduled)) {
      Membership membership;
      for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
        const api::ReplicaStatus* replica = old_.FindReplicaStatus(role.name);
        if (replica == nullptr || replica->members < 0 ||
            replica->members > role.EffectiveMaxReplicas()) {
          return std::nullopt;
        }
        membership.counts.emplace_back(role.name, replica->members);
      }
      return membership;
    }
    return std::nullopt;
  }

  // The gang is placed when every member pod exists and is either bound or
  // marked surplus. Members of a role are its bound indices 0..k-1.
  std::optional<Membership> PlacementFromPods() const {
    for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
      for (int32_t i = 0; i < role.EffectiveMaxReplicas(); ++i) {
        const ObservedPod* pod = Live(role.name, i);
        if (pod == nullptr || !(pod->bound() || pod->surplus)) {
          return std::nullopt;
        }
      }
    }
    Membership membership;
    for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
      int32_t count = 0;
      while (count < role.EffectiveMaxReplicas() && Live(role.name, count)->bound()) {
        ++count;
      }
      if (count < role.min_replicas) {
        return std::nullopt;  // not a placement the scheduler may commit; wait
      }
      membership.counts.emplace_back(role.name, count);
    }
    return membership;
  }

  bool IsMember(const std::string& role, int32_t index) const {
    return membership_ && index < membership_->Count(role);
  }

  // ---- the job's life -----------------------------------------------------

  Plan PlanActive() {
    if (!status_.start_time) {
      status_.start_time = now_text_;
    }
    const api::TimePoint start = api::ParseTime(*status_.start_time).value_or(now_);
    if (const auto& deadline_seconds = job_.spec.run_policy.active_deadline_seconds) {
      const api::TimePoint deadline = start + seconds(*deadline_seconds);
      if (now_ >= deadline) {
        return Finish({JobPhase::kFailed, std::string(api::kReasonDeadlineExceeded),
                       "the job ran longer than activeDeadlineSeconds (" +
                           std::to_string(*deadline_seconds) + "s)"});
      }
      Requeue(deadline - now_);
    }

    membership_ = CommittedMembership();
    if (!membership_) {
      CreateMissingPods();
      if (creates_.empty()) {
        membership_ = PlacementFromPods();
      }
    }
    if (membership_) {
      FollowScheduler();
      if (std::optional<std::string> success = SuccessPolicyMet()) {
        return Finish({JobPhase::kSucceeded, std::string(api::kConditionSucceeded), *success});
      }
      if (std::optional<Terminal> failure = HandleEndedMembers()) {
        return Finish(*failure);
      }
      CreateMissingMembers();
      DeleteSurplus();
      EnsureConfigMap();
    }
    RefreshGroupSpecs();
    EnsureSupportObjects();
    ComputeActiveStatus();
    return Assemble();
  }

  Plan Finish(const Terminal& terminal) {
    terminal_ = terminal;
    if (!membership_) {
      membership_ = CommittedMembership();
    }
    creates_.clear();
    requeue_.reset();  // a finished job only waits for its TTL
    support_.clear();
    config_map_action_.reset();
    deletes_.clear();
    restarts_.clear();
    DeleteForCleanup(terminal.phase, terminal.reason);

    status_.phase = terminal.phase;
    status_.completion_time = now_text_;
    if (!status_.start_time) {
      status_.start_time = now_text_;
    }
    // What happened is read before the cleanup; what remains, after it.
    ComputeReplicaStatuses(/*ended_counts_before_cleanup=*/true);
    ComputeReadyMembers();
    MarkScheduled();  // placement and the end may be seen in one pass
    SetCondition(api::kConditionRunning, false, std::string(api::ToString(terminal.phase)), "",
                 false);
    SetCondition(api::kConditionRestarting, false, std::string(api::ToString(terminal.phase)), "",
                 false);
    SetCondition(api::kConditionQueued, false, std::string(api::ToString(terminal.phase)), "",
                 false);
    if (terminal.phase == JobPhase::kSucceeded) {
      SetCondition(api::kConditionSucceeded, true, terminal.reason, terminal.message, true);
    } else {
      SetCondition(api::kConditionFailed, true, terminal.reason, terminal.message, true);
    }
    CheckTtl();
    return Assemble();
  }

  // A finished job: only cleanup and the TTL remain; its status is final.
  Plan PlanFinished() {
    membership_ = CommittedMembership();
    std::string reason;
    if (const api::Condition* failed = old_.FindCondition(api::kConditionFailed)) {
      reason = failed->reason;
    }
    DeleteForCleanup(*old_.phase, reason);
    CheckTtl();
    return Assemble();
  }

  // Pods a finished job no longer needs. Unbound pods always go, so a finished
  // job never takes capacity again; a missed deadline also stops everything
  // still running; otherwise cleanPodPolicy decides.
  void DeleteForCleanup(JobPhase phase, const std::string& reason) {
    const bool stop_active = phase == JobPhase::kFailed && reason == api::kReasonDeadlineExceeded;
    for (const auto& [key, pod] : own_) {
      if (pod->terminating) {
        continue;
      }
      bool remove = false;
      if (!IsMember(key.first, key.second) || (!pod->bound() && pod->active())) {
        remove = true;
      } else {
        switch (job_.spec.run_policy.clean_pod_policy) {
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
        deletes_.push_back({pod->name, pod->uid, stop_active ? "deadline" : "cleanup"});
      }
    }
  }

  void CheckTtl() {
    const auto& ttl = job_.spec.run_policy.ttl_seconds_after_finished;
    if (!ttl || !status_.completion_time) {
      return;
    }
    std::optional<api::TimePoint> finished = api::ParseTime(*status_.completion_time);
    if (!finished) {
      return;
    }
    const api::TimePoint expiry = *finished + seconds(*ttl);
    if (now_ >= expiry) {
      delete_job_ = true;
    } else {
      Requeue(expiry - now_);
    }
  }

  // Before placement: one pod per index up to maxReplicas.
  void CreateMissingPods() {
    for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
      for (int32_t i = 0; i < role.EffectiveMaxReplicas(); ++i) {
        CreateIfAbsent(role, i);
      }
    }
  }

  // A pod is created only when no pod of that name exists at all, so a member
  // never has two pods and dead pods never pile up.
  void CreateIfAbsent(const api::ReplicaSpec& role, int32_t index) {
    const std::string name = api::MemberPodName(job_.metadata.name, role.name, index);
    if (taken_names_.count(name) != 0) {
      return;
    }
    const api::HybridJob& job = ShapedJob();
    creates_.push_back(BuildMemberPod(job, *job.spec.FindRole(role.name), index, options_));
  }

  // The job as replacements describe their gang to the scheduler, built once
  // per pass.
  const api::HybridJob& ShapedJob() {
    if (shaped_job_) {
      return *shaped_job_;
    }
    // A replacement tells the scheduler the gang's shape as it now stands.
    // Members that already succeeded are no longer pods it sees, so they
    // count toward the minimum (a gang placed only in part before, by a
    // binding whose answer was lost, say, can have those too); and a job
    // that never grows is complete with its membership, rather than waiting
    // for indices that will never come.
    api::HybridJob& shaped = shaped_job_.emplace(job_);
    int32_t succeeded_members = 0;
    for (api::ReplicaSpec& spec : shaped.spec.replica_specs) {
      const int32_t members =
          membership_ ? membership_->Count(spec.name) : spec.EffectiveMaxReplicas();
      int32_t succeeded = 0;
      for (int32_t i = 0; i < members; ++i) {
        const ObservedPod* pod = Live(spec.name, i);
        succeeded += pod != nullptr && pod->phase == PodPhase::kSucceeded ? 1 : 0;
      }
      // The maximum is pinned first: left unset it would follow the minimum
      // down, and the indices above it would be ignored.
      spec.max_replicas = membership_ && !LearnsMembershipLive(job_.spec.framework)
                              ? members
                              : spec.EffectiveMaxReplicas();
      spec.min_replicas = std::max(0, std::min(spec.min_replicas, *spec.max_replicas) - succeeded);
      succeeded_members += succeeded;
    }
    if (succeeded_members > 0) {
      // Their indices will never have pods again: the scheduler should not
      // wait for the gang to assemble.
      shaped.spec.run_policy.schedule_timeout_seconds = 0;
    }
    return shaped;
  }

  // Names of the pods this pass deletes.
  std::set<std::string> DeletedNames() const {
    std::set<std::string> names;
    for (const DeletePod& removal : deletes_) {
      names.insert(removal.name);
    }
    return names;
  }

  // Members still waiting for the scheduler carry the shape their gang had
  // when they were created; once it changes (a member succeeded) they are
  // told, or the scheduler would wait forever for a minimum that counts pods
  // it no longer sees.
  void RefreshGroupSpecs() {
    const std::set<std::string> deleted = DeletedNames();
    std::string current;
    for (const auto& [key, pod] : own_) {
      if (pod->terminating || pod->bound() || pod->phase != PodPhase::kPending ||
          pod->group_spec.empty() || deleted.count(pod->name) != 0) {
        continue;
      }
      if (current.empty()) {
        current = api::FormatGroupSpec(api::GroupSpecOf(ShapedJob()));
      }
      if (pod->group_spec != current) {
        patches_.push_back({pod->name, pod->uid, current});
      }
    }
  }

  std::optional<std::string> SuccessPolicyMet() const {
    const api::SuccessPolicy policy = api::EffectiveSuccessPolicy(job_.spec);
    int32_t members = 0;
    int32_t succeeded = 0;
    for (const std::string& role : policy.roles) {
      for (int32_t i = 0; i < membership_->Count(role); ++i) {
        ++members;
        const ObservedPod* pod = Live(role, i);
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

  // Members whose pod ended: fail the job, or restart them within the
  // backoff limit.
  std::optional<Terminal> HandleEndedMembers() {
    std::vector<Restart> restarts;
    for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
      for (int32_t i = 0; i < membership_->Count(role.name); ++i) {
        const ObservedPod* pod = Live(role.name, i);
        if (pod == nullptr) {
          continue;
        }
        const api::RestartPolicy policy = role.restart_policy;
        if (pod->phase == PodPhase::kFailed && pod->DisplacedByCluster()) {
          // Not the job's failure: a drain, a node-pressure eviction or a
          // kubelet that refused the pod. Same index, same size, no restart.
          deletes_.push_back({pod->name, pod->uid, "replace"});
          replacements_.push_back({pod, role.name, DescribeDisplacement(*pod)});
          continue;
        }
        if (pod->phase == PodPhase::kFailed) {
          const bool permanent = policy == api::RestartPolicy::kNever ||
                                 (policy == api::RestartPolicy::kExitCode && pod->exit_code &&
                                  *pod->exit_code >= 1 && *pod->exit_code <= 127);
          if (permanent) {
            return Terminal{JobPhase::kFailed, std::string(api::kReasonMemberFailed),
                            "member " + pod->name + " " + DescribeEnd(*pod) + "; role " +
                                role.name + " has restartPolicy " + RestartPolicyText(policy)};
          }
          restarts.push_back({pod, role.name, DescribeEnd(*pod)});
        } else if (pod->phase == PodPhase::kSucceeded && policy == api::RestartPolicy::kAlways) {
          restarts.push_back({pod, role.name, DescribeEnd(*pod)});
        }
      }
    }
    ReplaceGangBelowMinimum();
    if (restarts.empty()) {
      return std::nullopt;
    }
    const int32_t limit = job_.spec.run_policy.backoff_limit;
    const int64_t wanted = int64_t{old_.restart_count} + static_cast<int64_t>(restarts.size());
    if (wanted > limit) {
      const Restart& first = restarts.front();
      return Terminal{JobPhase::kFailed, std::string(api::kReasonBackoffLimitExceeded),
                      "member " + first.pod->name + " " + first.description + " after " +
                          std::to_string(old_.restart_count) + " restarts; backoffLimit is " +
                          std::to_string(limit)};
    }
    for (const Restart& restart : restarts) {
      status_.restart_count += 1;
      restarted_per_role_[restart.role] += 1;
      deletes_.push_back({restart.pod->name, restart.pod->uid, "restart"});
      restarts_.push_back(restart);
    }
    status_.last_restart_time = now_text_;
    return std::nullopt;
  }

  // A gang is never left running in part: when a kubelet refused members
  // and a role is left with fewer working members than its minimum, the
  // others could only wait, holding their nodes, for members that may not fit
  // anywhere soon. The whole gang is re-placed as a unit instead (no restart
  // counted). Members still starting up lose nothing; it is what happens when
  // two schedulers bind onto one node at the moment the gang starts.
  void ReplaceGangBelowMinimum() {
    std::string refused;
    for (const Restart& replacement : replacements_) {
      if (replacement.pod->AdmissionRefused()) {
        refused = replacement.pod->name + " (" + replacement.description + ")";
        break;
      }
    }
    if (refused.empty()) {
      return;
    }
    const std::set<std::string> leaving = DeletedNames();
    std::string short_role;
    for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
      int32_t working = 0;
      for (int32_t i = 0; i < membership_->Count(role.name); ++i) {
        const ObservedPod* pod = Live(role.name, i);
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
    for (const auto& [key, pod] : own_) {
      if (!pod->terminating && IsMember(key.first, key.second) && pod->active() &&
          leaving.count(pod->name) == 0) {
        deletes_.push_back({pod->name, pod->uid, "replace"});
      }
    }
    gang_replaced_ = "re-placing the whole gang: member " + refused + "; " + short_role +
                     " working members; not counted as a restart";
  }

  // After placement the gang scheduler may shrink an elastic role (it evicts
  // members, highest index first, for a waiting group: reclaim, preemption)
  // and grow it again (it binds the pending pods beyond the members). The
  // membership follows: a member the scheduler evicts (its GangEviction
  // condition; any other disruption is replaced instead), or left out when the gang
  // was placed anew, ends its role at its index (never below minReplicas); a
  // bound pod right after the last member joins. Frameworks that read their
  // cluster spec only at start restart every member with the new one.
  void FollowScheduler() {
    Membership next = *membership_;
    std::string changes;
    for (auto& [role_name, count] : next.counts) {
      const api::ReplicaSpec* role = job_.spec.FindRole(role_name);
      if (role == nullptr || role->min_replicas >= role->EffectiveMaxReplicas()) {
        continue;  // a rigid role never changes size
      }
      const int32_t before = count;
      for (int32_t i = role->min_replicas; i < before; ++i) {
        const ObservedPod* pod = Own(role_name, i);
        const bool left_out = pod != nullptr && !pod->terminating && !pod->bound() && pod->surplus;
        // Evicted and already gone: the pod's last state said so.
        const bool evicted_gone = pod == nullptr && evicted_gone_.count({role_name, i}) != 0;
        if ((pod != nullptr && (pod->reclaimed || left_out)) || evicted_gone) {
          count = i;
          break;
        }
      }
      if (count == before) {
        while (count < role->EffectiveMaxReplicas()) {
          const ObservedPod* pod = Live(role_name, count);
          if (pod == nullptr || !pod->bound() || pod->disrupted || pod->reclaimed) {
            break;
          }
          ++count;
        }
      }
      if (count != before) {
        changes += (changes.empty() ? "" : ", ") + role_name + " " + std::to_string(before) +
                   " -> " + std::to_string(count);
      }
    }
    if (changes.empty()) {
      return;
    }
    membership_ = next;
    std::string message = "the gang scheduler changed the membership: " + changes;
    if (!LearnsMembershipLive(job_.spec.framework)) {
      // TF_CONFIG, DMLC_* and MPI hostfiles are read once at start: restart
      // every member; the new pods read the new cluster spec.
      for (const auto& [key, pod] : own_) {
        if (!pod->terminating && IsMember(key.first, key.second) && pod->active()) {
          deletes_.push_back({pod->name, pod->uid, "membership"});
        }
      }
      membership_restart_ = message + "; " + std::string(api::ToString(job_.spec.framework)) +
                            " reads its cluster spec only at start, so every member restarts";
      message = membership_restart_;
    } else {
      message += "; members read the new cluster spec from /etc/hybridjob";
    }
    membership_events_.push_back(message);
  }

  static bool LearnsMembershipLive(api::Framework framework) {
    return framework == api::Framework::kPyTorch || framework == api::Framework::kGeneric;
  }

  // Members without a pod get one back, once the restart backoff has passed.
  void CreateMissingMembers() {
    if (status_.last_restart_time) {
      if (std::optional<api::TimePoint> last = api::ParseTime(*status_.last_restart_time)) {
        const api::TimePoint ready = *last + RestartBackoff(status_.restart_count, options_);
        if (now_ < ready) {
          Requeue(ready - now_);
          return;
        }
      }
    }
    for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
      for (int32_t i = 0; i < membership_->Count(role.name); ++i) {
        CreateIfAbsent(role, i);
      }
    }
    // Elastic roles of frameworks that learn their membership live keep a
    // pending pod for every index up to maxReplicas: the scheduler binds them
    // when capacity is idle, and the job grows. Growing the others would
    // restart every member each time, so they only ever shrink.
    if (!LearnsMembershipLive(job_.spec.framework)) {
      return;
    }
    for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
      for (int32_t i = membership_->Count(role.name); i < role.EffectiveMaxReplicas(); ++i) {
        CreateIfAbsent(role, i);
      }
    }
  }

  // A pod that may still join its role: an elastic role's index below max,
  // in a job that can grow.
  bool MayGrowInto(const std::string& role_name, int32_t index) const {
    const api::ReplicaSpec* role = job_.spec.FindRole(role_name);
    return LearnsMembershipLive(job_.spec.framework) && role != nullptr &&
           role->min_replicas < role->EffectiveMaxReplicas() &&
           index < role->EffectiveMaxReplicas();
  }

  void DeleteSurplus() {
    for (const auto& [key, pod] : own_) {
      // A member being evicted is the Eviction API's to remove (budgets,
      // grace period).
      if (!pod->terminating && !pod->disrupted && !pod->reclaimed &&
          !IsMember(key.first, key.second) && !MayGrowInto(key.first, key.second)) {
        deletes_.push_back({pod->name, pod->uid, "surplus"});
        ++surplus_deleted_;
      }
    }
  }

  void EnsureConfigMap() {
    json desired = BuildClusterConfigMap(job_, *membership_);
    const json* current = FindByName(observed_.config_maps, NameOf(desired));
    if (current == nullptr) {
      config_map_action_ = CreateConfigMap{std::move(desired)};
      return;
    }
    if (!OwnedByJob(*current)) {
      return;  // a previous job's ConfigMap, still being collected
    }
    const json& meta = (*current)["metadata"];
    const std::string members =
        meta.contains("annotations") && meta["annotations"].is_object()
            ? meta["annotations"].value(std::string(api::kMembersAnnotation), std::string())
            : std::string();
    const json data = current->contains("data") ? (*current)["data"] : json::object();
    if (data != desired["data"] || members != FormatMembership(*membership_)) {
      desired["metadata"]["resourceVersion"] = meta.value("resourceVersion", "");
      config_map_action_ = UpdateConfigMap{std::move(desired)};
    }
  }

  void EnsureSupportObjects() {
    const std::string& name = job_.metadata.name;
    for (const api::VolumeSpec& volume : job_.spec.volumes) {
      if (volume.existing_claim) {
        continue;
      }
      if (FindByName(observed_.claims, api::VolumeClaimName(name, volume.name)) == nullptr) {
        support_.emplace_back(CreatePVC{BuildVolumeClaim(job_, volume)});
      }
    }
    if (FindByName(observed_.services, api::HeadlessServiceName(name)) == nullptr) {
      support_.emplace_back(CreateService{BuildHeadlessService(job_)});
    }
    if (job_.spec.tensorboard) {
      const std::string tensorboard = api::TensorboardName(name);
      if (FindByName(observed_.deployments, tensorboard) == nullptr) {
        support_.emplace_back(CreateDeployment{BuildTensorboardDeployment(job_, options_)});
      }
      if (FindByName(observed_.services, tensorboard) == nullptr) {
        support_.emplace_back(CreateService{BuildTensorboardService(job_)});
      }
    }
  }

  // ---- status -------------------------------------------------------------

  // Our pods as they will be once this plan is applied.
  std::vector<ObservedPod> ProjectedPods() const {
    const std::set<std::string> deleted = DeletedNames();
    std::vector<ObservedPod> pods;
    for (const auto& [key, pod] : own_) {
      if (!pod->terminating && deleted.count(pod->name) == 0) {
        pods.push_back(*pod);
      }
    }
    for (const json& created : creates_) {
      ObservedPod pod = ObservePod(created);
      pod.controller_uid = job_.metadata.uid;
      pods.push_back(std::move(pod));
    }
    return pods;
  }

  void ComputeReplicaStatuses(bool ended_counts_before_cleanup) {
    const std::vector<ObservedPod> projected = ProjectedPods();
    std::vector<api::ReplicaStatus> statuses;
    for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
      api::ReplicaStatus replica;
      replica.name = role.name;
      replica.members = membership_ ? membership_->Count(role.name) : 0;
      const api::ReplicaStatus* previous = old_.FindReplicaStatus(role.name);
      replica.restarts =
          (previous != nullptr ? previous->restarts : 0) + restarted_per_role_[role.name];
      for (const ObservedPod& pod : projected) {
        if (pod.role != role.name) {
          continue;
        }
        replica.scheduled += pod.bound() ? 1 : 0;
        replica.active += pod.active() ? 1 : 0;
        if (!ended_counts_before_cleanup) {
          replica.succeeded += pod.phase == PodPhase::kSucceeded ? 1 : 0;
          replica.failed += pod.phase == PodPhase::kFailed ? 1 : 0;
        }
      }
      if (ended_counts_before_cleanup) {
        for (const auto& [key, pod] : own_) {
          if (key.first != role.name || pod->terminating) {
            continue;
          }
          replica.succeeded += pod->phase == PodPhase::kSucceeded ? 1 : 0;
          replica.failed += pod->phase == PodPhase::kFailed ? 1 : 0;
        }
      }
      statuses.push_back(std::move(replica));
    }
    status_.replica_statuses = std::move(statuses);
  }

  void ComputeReadyMembers() {
    int32_t expected = 0;
    if (membership_) {
      expected = membership_->Total();
    } else {
      for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
        expected += role.min_replicas;
      }
    }
    int32_t running = 0;
    for (const ObservedPod& pod : ProjectedPods()) {
      if (pod.phase == PodPhase::kRunning && IsMember(pod.role, pod.index)) {
        ++running;
      }
    }
    status_.ready_members = std::to_string(running) + "/" + std::to_string(expected);
  }

  void ComputeActiveStatus() {
    ComputeReplicaStatuses(/*ended_counts_before_cleanup=*/false);
    ComputeReadyMembers();
    const std::vector<ObservedPod> projected = ProjectedPods();
    std::map<MemberKey, const ObservedPod*> present;
    for (const ObservedPod& pod : projected) {
      present[{pod.role, pod.index}] = &pod;
    }

    int32_t total_pods = 0;
    bool all_created = true;
    for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
      total_pods += role.EffectiveMaxReplicas();
      for (int32_t i = 0; i < role.EffectiveMaxReplicas(); ++i) {
        all_created = all_created && present.count({role.name, i}) != 0;
      }
    }

    JobPhase phase = all_created ? JobPhase::kQueued : JobPhase::kPending;
    if (membership_) {
      bool all_placed = true;
      for (const auto& [role, count] : membership_->counts) {
        for (int32_t i = 0; i < count; ++i) {
          auto it = present.find({role, i});
          all_placed = all_placed && it != present.end() && it->second->bound();
        }
      }
      phase = all_placed ? JobPhase::kRunning : JobPhase::kRestarting;
    }
    status_.phase = phase;

    if (all_created || membership_) {
      std::string message = "created " + std::to_string(total_pods) + " member pods:";
      for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
        message += " " + role.name + " " + std::to_string(role.EffectiveMaxReplicas());
      }
      SetCondition(api::kConditionCreated, true, std::string(api::kConditionCreated), message,
                   false);
    }
    MarkScheduled();
    const std::string phase_text(api::ToString(phase));
    if (phase == JobPhase::kQueued) {
      // Why the gang waits, in the scheduler's words (first member that says).
      std::string reason = std::string(api::kConditionQueued);
      std::string message = "every member pod exists; waiting for the gang scheduler";
      for (const auto& [key, pod] : own_) {
        if (!pod->terminating && !pod->waiting_reason.empty()) {
          reason = pod->waiting_reason;
          message = pod->waiting_message;
          break;
        }
      }
      SetCondition(api::kConditionQueued, true, reason, message, true);
    } else {
      SetCondition(api::kConditionQueued, false, phase_text, "", false);
    }
    SetCondition(api::kConditionRunning, phase == JobPhase::kRunning,
                 phase == JobPhase::kRunning ? std::string(api::kConditionRunning) : phase_text,
                 "the job is running with " +
                     std::to_string(membership_ ? membership_->Total() : 0) + " members",
                 false);
    std::string restart_message;
    for (const Restart& restart : restarts_) {
      restart_message += restart_message.empty() ? "" : "; ";
      restart_message += "member " + restart.pod->name + " " + restart.description;
    }
    if (!restart_message.empty()) {
      restart_message += " (restart " + std::to_string(status_.restart_count) + " of at most " +
                         std::to_string(job_.spec.run_policy.backoff_limit) + ")";
    }
    if (!membership_restart_.empty()) {
      restart_message += (restart_message.empty() ? "" : "; ") + membership_restart_;
    }
    if (!gang_replaced_.empty()) {
      restart_message += (restart_message.empty() ? "" : "; ") + gang_replaced_;
    }
    SetCondition(
        api::kConditionRestarting, phase == JobPhase::kRestarting,
        phase == JobPhase::kRestarting ? std::string(api::kConditionRestarting) : phase_text,
        restart_message.empty() ? "recreating missing members" : restart_message,
        !restart_message.empty());
  }

  // Scheduled=True once there is a membership; with the per-role members in
  // the status, it is what later passes read the membership back from.
  void MarkScheduled() {
    if (!membership_) {
      return;
    }
    std::string message = "gang placed:";
    for (const api::ReplicaSpec& role : job_.spec.replica_specs) {
      message += " " + role.name + " " + std::to_string(membership_->Count(role.name)) + "/" +
                 std::to_string(role.EffectiveMaxReplicas());
    }
    if (surplus_deleted_ > 0) {
      message += "; deleting " + std::to_string(surplus_deleted_) + " surplus pods";
    }
    SetCondition(api::kConditionScheduled, true, std::string(api::kConditionScheduled), message,
                 false);
  }

  // Adds or updates a condition. A condition that never held is not added as
  // False. Times move only when the status (transition) or the reason or
  // message (update) change; an unchanged status and reason keep their message
  // unless `replace_message`, so planning again changes nothing.
  void SetCondition(std::string_view type, bool value, const std::string& reason,
                    const std::string& message, bool replace_message) {
    const std::string state = value ? "True" : "False";
    auto it = std::find_if(status_.conditions.begin(), status_.conditions.end(),
                           [&](const api::Condition& c) { return c.type == type; });
    if (it == status_.conditions.end()) {
      if (value) {
        status_.conditions.push_back(
            {std::string(type), state, reason, message, now_text_, now_text_});
      }
      return;
    }
    if (it->status != state) {
      *it = {std::string(type), state, reason, message, now_text_, now_text_};
    } else if (it->reason != reason || (replace_message && it->message != message)) {
      it->reason = reason;
      it->message = message;
      it->last_update_time = now_text_;
    }
  }

  void Requeue(std::chrono::seconds delay) {
    delay = std::max(delay, seconds(1));
    if (!requeue_ || delay < *requeue_) {
      requeue_ = delay;
    }
  }

  // ---- the plan -----------------------------------------------------------

  std::vector<RecordEvent> TransitionEvents() const {
    std::vector<RecordEvent> events;
    auto became_true = [&](std::string_view type) -> const api::Condition* {
      const api::Condition* now = status_.FindCondition(type);
      if (now == nullptr || now->status != "True") {
        return nullptr;
      }
      const api::Condition* before = old_.FindCondition(type);
      return before == nullptr || before->status != "True" ? now : nullptr;
    };
    for (std::string_view type : {api::kConditionCreated, api::kConditionScheduled,
                                  api::kConditionRunning, api::kConditionSucceeded}) {
      if (const api::Condition* condition = became_true(type)) {
        events.push_back({EventType::kNormal, condition->reason, condition->message});
      }
    }
    for (const std::string& change : membership_events_) {
      events.push_back({EventType::kNormal, std::string(api::kReasonMembershipChanged), change});
    }
    if (!gang_replaced_.empty()) {
      events.push_back(
          {EventType::kWarning, std::string(api::kReasonMemberReplaced), gang_replaced_});
    } else {
      for (const Restart& replacement : replacements_) {
        events.push_back({EventType::kWarning, std::string(api::kReasonMemberReplaced),
                          "replacing member " + replacement.pod->name + " at its index: " +
                              replacement.description + "; not counted as a restart"});
      }
    }
    for (const Restart& restart : restarts_) {
      events.push_back({EventType::kWarning, std::string(api::kConditionRestarting),
                        "restarting member " + restart.pod->name + ": it " + restart.description +
                            " (restart " + std::to_string(status_.restart_count) +
                            ", backoffLimit " + std::to_string(job_.spec.run_policy.backoff_limit) +
                            ")"});
    }
    if (const api::Condition* invalid = became_true(api::kConditionInvalid)) {
      events.push_back({EventType::kWarning, invalid->reason, invalid->message});
    } else if (const api::Condition* failed = became_true(api::kConditionFailed)) {
      events.push_back({EventType::kWarning, failed->reason, failed->message});
    }
    return events;
  }

  Plan Assemble() {
    Plan plan;
    if (status_ != old_) {
      plan.actions.emplace_back(UpdateStatus{status_});
    }
    for (RecordEvent& event : TransitionEvents()) {
      plan.actions.emplace_back(std::move(event));
    }
    for (Action& action : support_) {
      plan.actions.push_back(std::move(action));
    }
    if (config_map_action_) {
      plan.actions.push_back(std::move(*config_map_action_));
    }
    for (DeletePod& removal : deletes_) {
      plan.actions.emplace_back(std::move(removal));
    }
    for (PatchPodGroupSpec& patch : patches_) {
      plan.actions.emplace_back(std::move(patch));
    }
    for (json& pod : creates_) {
      plan.actions.emplace_back(CreatePod{std::move(pod)});
    }
    if (delete_job_) {
      plan.actions.emplace_back(DeleteJob{job_.metadata.uid});
    } else {
      plan.requeue_after = requeue_;
    }
    return plan;
  }

  api::HybridJob job_;
  const Observed& observed_;
  const api::TimePoint now_;
  const std::string now_text_;
  const PlannerOptions& options_;

  api::HybridJobStatus old_;
  api::HybridJobStatus status_;
  std::map<MemberKey, const ObservedPod*> own_;
  std::set<MemberKey> evicted_gone_;  // members deleted while marked for disruption
  std::set<std::string> taken_names_;
  std::optional<Membership> membership_;
  std::optional<Terminal> terminal_;

  std::vector<Action> support_;
  std::optional<Action> config_map_action_;
  std::vector<DeletePod> deletes_;
  std::vector<PatchPodGroupSpec> patches_;
  std::vector<json> creates_;
  std::vector<Restart> restarts_;
  std::vector<Restart> replacements_;  // members the cluster took away, replaced as they were
  std::string gang_replaced_;          // why the whole gang is re-placed, if it is
  std::map<std::string, int32_t> restarted_per_role_;
  int32_t surplus_deleted_ = 0;
  std::vector<std::string> membership_events_;
  std::string membership_restart_;            // why every member restarts, if it does
  std::optional<api::HybridJob> shaped_job_;  // see ShapedJob
  bool delete_job_ = false;
  std::optional<seconds> requeue_;
};

}  // namespace

std::chrono::seconds RestartBackoff(int32_t restart_count, const PlannerOptions& options) {
  if (restart_count <= 0) {
    return seconds(0);
  }
  seconds delay = options.restart_backoff_base;
  for (int32_t i = 1; i < restart_count && delay < options.restart_backoff_cap; ++i) {
    delay *= 2;
  }
  return std::min(delay, options.restart_backoff_cap);
}

Plan PlanJob(const api::HybridJob& job, const Observed& observed, api::TimePoint now,
             const PlannerOptions& options) {
  return Planner(job, observed, now, options).Run();
}

Plan PlanJob(const json& job_object, const Observed& observed, api::TimePoint now,
             const PlannerOptions& options) {
  Result<api::HybridJob> parsed = api::ParseHybridJob(job_object);
  if (parsed.ok()) {
    return PlanJob(*parsed, observed, now, options);
  }
  api::HybridJob job;
  job.metadata = api::ParseObjectMeta(job_object);
  if (job_object.is_object() && job_object.contains("status")) {
    job.status = api::ParseHybridJobStatus(job_object["status"]);
  }
  if (job.metadata.deletion_timestamp) {
    return {};
  }
  return Planner(std::move(job), observed, now, options).PlanInvalid(parsed.status().message());
}

}  // namespace hybridjob::controller
