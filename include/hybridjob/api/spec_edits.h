// Which edits of a job's spec take effect while a run goes on.
//
// A run goes on with the spec it started (or was last resumed) with, kept in
// status.runSpec. Of later edits it takes only those that mean something to
// a running gang:
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

// The spec a job is planned and scheduled with: status.runSpec with the edits
// a run takes, or, without a run spec (not started yet, suspended, or never
// recorded), job.spec itself with defaults applied.
RunningSpec EffectiveSpec(const HybridJob& job);

}  // namespace hybridjob::api
