// PlanJob: the stages of plan_stages.h in the order one pass runs them.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <hybridjob/api/json.h>
#include <hybridjob/api/validation.h>
#include <hybridjob/controller/planner.h>
#include <hybridjob/k8s/object_meta.h>

#include "plan_stages.h"
#include "plan_view.h"

namespace hybridjob::controller::plan {
namespace {

using api::JobPhase;

// How often a job whose members need a missing ConfigMap looks again.
constexpr std::chrono::seconds kMissingObjectRecheck{5};

// The job ends in this pass: what it was doing stops, its pods are cleaned up
// and its status says how it ended.
Plan Finish(const PlanView& view, const Terminal& terminal, std::optional<Membership> membership,
            PlanBuilder plan) {
  if (!membership) {
    membership = CommittedMembership(view);
  }
  plan.DropActiveWork();
  DeleteForCleanup(view, membership, terminal.phase, terminal.reason, plan);
  ComputeFinishedStatus(view, terminal, membership, plan);
  // While the members still show where the job's volume is.
  PlanArtifacts(view, terminal.phase, plan);
  CheckTtl(view, plan.status.completion_time, plan);
  return Assemble(view, std::move(plan));
}

// A finished job: only cleanup and the TTL remain; its status is final.
Plan PlanFinished(const PlanView& view, PlanBuilder plan) {
  std::string reason;
  if (const api::Condition* failed = view.old_status.FindCondition(api::kConditionFailed)) {
    reason = failed->reason;
  }
  DeleteStaleRuns(view, plan);
  DeleteForCleanup(view, CommittedMembership(view), *view.old_status.phase, reason, plan);
  PlanArtifacts(view, *view.old_status.phase, plan);
  CheckTtl(view, plan.status.completion_time, plan);
  return Assemble(view, std::move(plan));
}

// A finished job asked to run again: the finished run is recorded and its
// pods go; the next pass starts the new run as a new job starts.
Plan PlanRerun(const PlanView& view, PlanBuilder plan) {
  DeleteForRerun(view, plan);
  ComputeRerunStatus(view, plan);
  return Assemble(view, std::move(plan));
}

// spec.suspend: the members and the run's cluster spec go; the job waits,
// holding nothing the scheduler places, until the flag is cleared.
Plan PlanSuspended(const PlanView& view, PlanBuilder plan) {
  DeleteForSuspend(view, plan);
  DeleteStaleRuns(view, plan);
  ComputeSuspendedStatus(view, plan);
  return Assemble(view, std::move(plan));
}

// A job that is not valid: say so once, create nothing.
Plan PlanInvalid(const PlanView& view, const std::string& message, PlanBuilder plan) {
  if (view.old_status.phase && api::IsTerminal(*view.old_status.phase)) {
    return {};
  }
  ComputeInvalidStatus(view, message, plan);
  return Assemble(view, std::move(plan));
}

Plan PlanActive(const PlanView& view, PlanBuilder plan) {
  plan.status.start_time = plan.status.start_time.value_or(view.now_text);
  // From here on, edits reach the run only as api/spec_edits.h allows.
  RecordRunSpec(view, plan);
  ReportIgnoredEdits(view, plan);
  DeleteStaleRuns(view, plan);
  if (std::optional<Terminal> overdue = CheckDeadline(view, *plan.status.start_time, plan)) {
    return Finish(view, *overdue, std::nullopt, std::move(plan));
  }

  // Until a membership is committed every pod is created; once they all
  // exist, the scheduler's placement is the membership.
  // A job whose other pods the API server refuses goes on with the members
  // it has, if they reach every minimum.
  std::optional<Membership> membership = CommittedMembership(view);
  if (!membership) {
    membership = PlacementFromPods(view);
    if (!membership) {
      YieldToMinimum(view, plan);
      if (view.observed.missing.empty()) {
        CreateMissingPods(view, plan);
      } else {
        // Members would hold their nodes while they wait for these.
        plan.Requeue(kMissingObjectRecheck);
      }
    }
  }
  if (membership) {
    membership = FollowScheduler(view, *membership, plan);
    if (std::optional<std::string> success = SuccessPolicyMet(view, *membership)) {
      return Finish(view, {JobPhase::kSucceeded, std::string(api::kConditionSucceeded), *success},
                    membership, std::move(plan));
    }
    if (std::optional<Terminal> failure = HandleEndedMembers(view, *membership, plan)) {
      return Finish(view, *failure, membership, std::move(plan));
    }
    CreateMissingMembers(view, *membership, plan);
    DeleteSurplus(view, *membership, plan);
    EnsureConfigMap(view, *membership, plan);
  }
  RefreshGroupSpecs(view, membership, plan);
  EnsureSupportObjects(view, plan);
  ComputeActiveStatus(view, membership, plan);
  return Assemble(view, std::move(plan));
}

Plan PlanParsed(api::HybridJob job, const Observed& observed, api::TimePoint now,
                const PlannerOptions& options) {
  if (job.metadata.deletion_timestamp) {
    return {};  // the garbage collector takes the children
  }
  const PlanView view = MakePlanView(std::move(job), observed, now, options);
  PlanBuilder plan = StartPlan(view);
  if (RerunDue(view)) {
    return PlanRerun(view, std::move(plan));
  }
  if (view.old_status.phase && api::IsTerminal(*view.old_status.phase)) {
    return PlanFinished(view, std::move(plan));
  }
  std::vector<api::FieldError> errors = api::Validate(view.job);
  if (!errors.empty()) {
    return PlanInvalid(view, api::JoinErrors(errors), std::move(plan));
  }
  // Before the first start only: a narrower list later does not fail jobs
  // that already run.
  if (!view.old_status.start_time) {
    if (std::string refusal = SchedulerNameRefusal(view.job.spec.scheduler_name,
                                                   view.options.allowed_scheduler_names);
        !refusal.empty()) {
      return PlanInvalid(view, refusal, std::move(plan));
    }
  }
  if (view.job.spec.suspend) {
    return PlanSuspended(view, std::move(plan));
  }
  return PlanActive(view, std::move(plan));
}

// A job that does not parse: only its metadata and status are known.
Plan PlanUnparsed(api::HybridJob job, const std::string& error, const Observed& observed,
                  api::TimePoint now, const PlannerOptions& options) {
  if (job.metadata.deletion_timestamp) {
    return {};
  }
  const PlanView view = MakePlanView(std::move(job), observed, now, options);
  return PlanInvalid(view, error, StartPlan(view));
}

}  // namespace
}  // namespace hybridjob::controller::plan

namespace hybridjob::controller {

std::chrono::seconds RestartBackoff(int32_t restart_count, const PlannerOptions& options) {
  using std::chrono::seconds;
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
  return plan::PlanParsed(job, observed, now, options);
}

Plan PlanJob(const nlohmann::json& job_object, const Observed& observed, api::TimePoint now,
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
  return plan::PlanUnparsed(std::move(job), parsed.status().message(), observed, now, options);
}

}  // namespace hybridjob::controller
