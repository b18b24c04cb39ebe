// What a replay measured, per policy: the summary numbers, and the texts the
// trace command writes (summary CSV, per-job CSV, a table, an SVG plot).
// Pure: strings in and out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <hybridjob/sim/trace/engine.h>

namespace hybridjob::sim::trace {

struct PolicySummary {
  std::string policy;
  int64_t jobs = 0;
  int64_t finished = 0;
  double avg_jct_seconds = 0;         // finished jobs: finish - submit
  double p95_jct_seconds = 0;         // nearest rank
  // Over all jobs: the time submitted and not running (queued, or off the
  // cluster after losing its gang); over started jobs: start - submit.
  double avg_wait_seconds = 0;
  double avg_first_wait_seconds = 0;
  // Work rolled back to checkpoints and GPUs held through restart delays.
  double lost_gpu_hours = 0;
  // The average JCT if every job ran alone at its maximum from its submit:
  // a bound no policy beats (JobRecord::alone_jct_seconds, finished jobs).
  double bound_avg_jct_seconds = 0;
  double makespan_seconds = 0;        // first submit to last finish
  double gpu_util = 0;                // busy GPU-seconds / (cluster GPUs * makespan)
  double gpu_util_while_waiting = 0;  // the same over the time some job waits
  // GPU-hours idle (not held by a running job) while some job waits.
  double idle_gpu_hours_while_waiting = 0;
  double partial_gang_gpu_hours = 0;
  // Of the gangs that started with two members or more, the share whose
  // members were in one domain of the domain level; -1 without a level or
  // such a gang.
  double one_domain_share = -1;
  // GPU-hours free on nodes where some GPU is held, while some job waits
  // (ReplayResult::fragmented_gpu_seconds); and their share of the cluster's
  // GPU-hours over the time some job waits (0 when none waits).
  double fragmented_gpu_hours = 0;
  double fragmentation = 0;
  // The leaf queues' time-averaged distance between GPUs held and fair share
  // while they have work waiting (QueueRecord::ShareDistanceGpus), averaged
  // over the leaves that ever had work waiting.
  double share_distance_gpus = 0;
  double decisions_per_second = 0;  // group decisions / planning wall-clock seconds
  int64_t cycles = 0;
  int64_t evictions = 0;
  int64_t stuck_jobs = 0;
  double planning_wall_seconds = 0;
  // Wall clock of the whole replay; set by the caller that timed it.
  double replay_wall_seconds = 0;
};

PolicySummary Summarize(const ReplayResult& result);

// Header `policy,jobs,finished,avg_jct_s,p95_jct_s,avg_wait_s,makespan_s,gpu_util,
// partial_gang_gpu_hours,decisions_per_s,one_domain_share,fragmented_gpu_hours,
// fragmentation,share_distance_gpus,avg_first_wait_s,lost_gpu_hours,
// bound_avg_jct_s` (one_domain_share empty when not measured), one row per
// summary.
std::string SummaryCsv(const std::vector<PolicySummary>& summaries);
// Aligned columns for a terminal, with the extra numbers the CSV leaves out.
std::string SummaryTable(const std::vector<PolicySummary>& summaries);
// One row per job and policy: policy,job,queue,min_gpus,max_gpus,submit_s,
// start_s,finish_s,wait_s,jct_s,mean_gpus,resizes,evicted_members,
// partial_gpu_s,first_wait_s,preemptions,restarts,lost_gpu_s (wait_s: all
// the time not running; start/finish/first_wait/jct empty when it never
// happened).
std::string JobsCsv(const std::vector<ReplayResult>& results);
// One row per queue and policy, along the queue tree (each parent before its
// children, with its whole subtree's jobs): policy,queue,parent,leaf,jobs,
// started,finished,avg_wait_s,avg_jct_s,gpu_hours,partial_gpu_hours,
// evicted_members,share_distance_gpus,avg_first_wait_s,lost_gpu_hours
// (averages empty without a job to average; the distance empty when no work
// ever waited in the queue).
std::string QueuesCsv(const std::vector<ReplayResult>& results);
// Two stacked charts over virtual time, one line per policy: GPU utilisation
// (busy GPUs / cluster GPUs) and queue length (waiting jobs).
std::string TimelineSvg(const std::vector<ReplayResult>& results);

}  // namespace hybridjob::sim::trace
