// Which edits of a job's spec take effect while a run goes on.
//
// A run goes on with the spec it started (or was last resumed) with. The
// controller keeps that spec whole in a ControllerRevision the job owns, and
// in status.runSpec only a record (RunSpecRecord): a hash of the fields the
// run takes no edits of, the revision's name, and the gang as the run
// schedules it. While the hash matches job.spec, job.spec is the run's spec
// and nothing more is read; only an edit the run does not take (or an
// allowed edit that is invalid) needs the revision. Of later edits a run
// takes only those that mean something to a running gang:
//  - spec.suspend;
//  - spec.runPolicy (restarts, deadlines, TTL, cleanup, re-run);
//  - a role's maxReplicas (not below its minReplicas) and priority;
//  - spec.artifacts (read only once the job has succeeded).
// Any other change (framework, roles added or removed, a role's minReplicas,
// restartPolicy, port, topology or template, volumes, code, TensorBoard,
// queue, topology, schedulerName, successPolicy) is ignored and named until
// the job is suspended and resumed, re-run, or created again; so is an
// allowed edit that would make the spec invalid. Nothing is half-applied:
// the controller and the gang scheduler both plan with EffectiveSpec.
#pragma once

#include <string>
#include <vector>

#include <hybridjob/api/types.h>

namespace hybridjob::api {

struct RunningSpec {
  HybridJobSpec spec;  // what the run goes on with, defaults applied
  // The edits it does not take, as field paths
  // ("spec.replicaSpecs[worker].template"), some with why
  // ("spec.replicaSpecs[worker].maxReplicas: must be greater than or equal
  // to minReplicas (2)").
  std::vector<std::string> ignored;
};

// `run_spec` with the edits of job.spec a run takes, defaults applied to both.
RunningSpec ApplyRunningEdits(const HybridJob& job, const HybridJobSpec& run_spec);

// The hash of `spec`'s fields a running job takes no edits of (everything but
// suspend, runPolicy, artifacts and the roles' maxReplicas and priority),
// defaults applied: 16 hex digits.
std::string RunFixedHash(const HybridJobSpec& spec);

// The ControllerRevision holding the spec a run of job `job_name` started
// with: the name and a hash of the whole (defaulted) spec, so that a run that
// starts again with the same spec finds its revision made.
std::string RunRevisionName(std::string_view job_name, const HybridJobSpec& spec);

// Whether the run's spec must be read from its revision to plan the job: it
// has a record, and job.spec differs from it in a field the run takes no
// edits of, or is invalid.
bool NeedsStartedSpec(const HybridJob& job);

// The spec a job is planned with: the spec its run started with (`started`,
// from the revision) with the edits a run takes; without a record (not
// started yet, suspended), job.spec itself with defaults applied. Without
// `started` (not needed, or lost), job.spec with defaults applied.
RunningSpec EffectiveSpec(const HybridJob& job, const HybridJobSpec* started = nullptr);

}  // namespace hybridjob::api
