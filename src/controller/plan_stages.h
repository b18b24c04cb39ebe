// The stages of planning one pass. Each reads the pass's PlanView and appends
// to its PlanBuilder; whatever one stage decides that another needs (the
// membership above all) is passed along explicitly. planner.cpp calls them in
// order.
#pragma once

#include <optional>
#include <string>

#include <hybridjob/api/types.h>
#include <hybridjob/controller/actions.h>
#include <hybridjob/controller/cluster_spec.h>

#include "plan_view.h"

namespace hybridjob::controller::plan {

// ---- membership (plan_membership.cpp) -------------------------------------

// The membership recorded by an earlier pass: the ConfigMap's annotation,
// else the status written before it.
std::optional<Membership> CommittedMembership(const PlanView& view);

// While a member that a role's minimum needs is refused, unbound pods above
// their role's minimum hold quota the minimum needs: they are deleted, and
// created again after the minimum members.
void YieldToMinimum(const PlanView& view, PlanBuilder& plan);

// The gang is placed when every member pod up to the maximum (or the
// refusal limit) exists and is either bound or marked surplus. Members of a
// role are its bound indices 0..k-1.
std::optional<Membership> PlacementFromPods(const PlanView& view);

// Before placement: one pod per index up to maxReplicas.
void CreateMissingPods(const PlanView& view, PlanBuilder& plan);

// The membership after the gang scheduler's shrinks and grows since
// `membership` was committed; restarts the members of frameworks that read
// their cluster spec only at start.
Membership FollowScheduler(const PlanView& view, const Membership& membership, PlanBuilder& plan);

// Members without a pod get one back, once the restart backoff has passed.
void CreateMissingMembers(const PlanView& view, const Membership& membership, PlanBuilder& plan);

// Pods that are neither members nor may grow into one.
void DeleteSurplus(const PlanView& view, const Membership& membership, PlanBuilder& plan);

// The cluster ConfigMap, created or brought up to date with `membership`.
void EnsureConfigMap(const PlanView& view, const Membership& membership, PlanBuilder& plan);

// Members waiting unbound learn the gang's shape as it now stands.
void RefreshGroupSpecs(const PlanView& view, const std::optional<Membership>& membership,
                       PlanBuilder& plan);

// PVCs, the headless Service and TensorBoard that do not exist yet.
void EnsureSupportObjects(const PlanView& view, PlanBuilder& plan);

// ---- lifecycle (plan_lifecycle.cpp) ---------------------------------------

// activeDeadlineSeconds counted from `start_time`: the end once it passed,
// else a requeue for the moment it will.
std::optional<Terminal> CheckDeadline(const PlanView& view, const std::string& start_time,
                                      PlanBuilder& plan);

// Why the success policy holds, if it does.
std::optional<std::string> SuccessPolicyMet(const PlanView& view, const Membership& membership);

// Members whose pod ended: fail the job, or restart them within the backoff
// limit. Members the cluster took away are replaced without a restart.
std::optional<Terminal> HandleEndedMembers(const PlanView& view, const Membership& membership,
                                           PlanBuilder& plan);

// spec.suspend: every member pod goes (parameter servers too), and so does
// the cluster ConfigMap, whose cluster spec is the stopped run's: members
// created on resume wait for the one their own placement gets.
void DeleteForSuspend(const PlanView& view, PlanBuilder& plan);

// Member pods of an earlier run go, except the ended ones of the newest
// spec.runHistoryLimit finished runs (their logs stay readable); an uploader
// of another run goes.
void DeleteStaleRuns(const PlanView& view, PlanBuilder& plan);

// A re-run: the finished run's cluster ConfigMap and uploader go, and so do
// its members and earlier runs' but the ended ones of the newest
// spec.runHistoryLimit finished runs, this one included; the claims,
// Service, SSH key and TensorBoard stay for the next run.
void DeleteForRerun(const PlanView& view, PlanBuilder& plan);

// A finished job whose spec asks for a later run (spec.runPolicy.rerun above
// status.run) and whose artifacts upload, if any, has settled.
bool RerunDue(const PlanView& view);

// Pods a finished job (in `phase`, for `reason`) no longer needs.
void DeleteForCleanup(const PlanView& view, const std::optional<Membership>& membership,
                      api::JobPhase phase, const std::string& reason, PlanBuilder& plan);

// spec.artifacts of a job that succeeded: the uploader pod, once, on the node
// its volume's members used, and the ArtifactsUploaded condition that follows
// it. The job's phase never changes for it.
void PlanArtifacts(const PlanView& view, api::JobPhase phase, PlanBuilder& plan);
// Whether an upload is still under way: the TTL waits for it, as the claims
// go with the job.
bool ArtifactsPending(const PlanView& view, const PlanBuilder& plan);

// ttlSecondsAfterFinished counted from `completion_time`: delete the job once
// it passed, else requeue for the moment it will.
void CheckTtl(const PlanView& view, const std::optional<std::string>& completion_time,
              PlanBuilder& plan);

// ---- job status (plan_status.cpp) -----------------------------------------

// Adds or updates a condition (see plan_status.cpp).
void SetCondition(const PlanView& view, PlanBuilder& plan, std::string_view type, bool value,
                  const std::string& reason, const std::string& message,
                  bool replace_message = false, bool add_when_false = false);
void RemoveCondition(PlanBuilder& plan, std::string_view type);

// Which pods the succeeded and failed counts of replica statuses count.
enum class EndedPods {
  kProjected,  // as the plan leaves them
  kObserved,   // as observed: a finished job reports what happened before its cleanup
};

void ComputeReplicaStatuses(const PlanView& view, const std::optional<Membership>& membership,
                            EndedPods ended, PlanBuilder& plan);

// readyMembers: running members over expected ones, once the plan is applied.
void ComputeReadyMembers(const PlanView& view, const std::optional<Membership>& membership,
                         PlanBuilder& plan);

// placement: the kPlacementAnnotation most bound members carry; unchanged when
// none carries one.
void ComputePlacement(const PlanView& view, PlanBuilder& plan);

// status.runSpec: recorded (with its ControllerRevision) when the run starts,
// or again when the run's revision is lost; otherwise its gang follows the
// edits the run takes.
void RecordRunSpec(const PlanView& view, PlanBuilder& plan);

// SpecChangeIgnored names the edits the run does not take, while there are any.
void ReportIgnoredEdits(const PlanView& view, PlanBuilder& plan);

// The status of a job that goes on: phase, replica statuses and conditions.
void ComputeActiveStatus(const PlanView& view, const std::optional<Membership>& membership,
                         PlanBuilder& plan);

// The status of a job that ends in this pass as `terminal`.
void ComputeFinishedStatus(const PlanView& view, const Terminal& terminal,
                           const std::optional<Membership>& membership, PlanBuilder& plan);

// The status of a suspended job: no members, no start time (the deadline
// counts from the next start), the membership given up.
void ComputeSuspendedStatus(const PlanView& view, PlanBuilder& plan);

// The status of a job that runs again: the finished run is recorded in
// previousRuns and everything else starts afresh at the new run.
void ComputeRerunStatus(const PlanView& view, PlanBuilder& plan);

// The status of a job whose spec is invalid.
void ComputeInvalidStatus(const PlanView& view, const std::string& message, PlanBuilder& plan);

// The plan's actions in the order the reconciler applies them, with the
// Events for what changed.
Plan Assemble(const PlanView& view, PlanBuilder plan);

}  // namespace hybridjob::controller::plan
