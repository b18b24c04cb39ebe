// A job trace for replay: when each job arrives, in which queue, the roles it
// runs (members and GPUs per member) and how much work it carries. Two
// on-disk forms, both documented in docs/trace-format.md: CSV with a header,
// and JSON lines. Parsing is pure (text in, jobs or an error naming the line).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/api/types.h>
#include <hybridjob/common/status.h>

namespace hybridjob::sim::trace {

struct TraceRole {
  std::string name;
  int32_t min_replicas = 1;
  int32_t max_replicas = 1;
  int32_t gpus_per_member = 1;

  friend bool operator==(const TraceRole&, const TraceRole&) = default;
};

struct TraceJob {
  std::string id;
  double submit_seconds = 0;  // from the start of the trace
  std::string queue = "default";
  std::vector<TraceRole> roles;
  // GPU-seconds the job needs when it runs at every role's maximum.
  double work_gpu_seconds = 0;
  // The job's spec.topology: every member in one domain of the level
  // (Required) or as few as can be (Preferred).
  std::optional<api::TopologySpec> topology;
  // Only nodes whose GPU-model label has this value (empty: any).
  std::string gpu_model;

  // GPUs the job holds at every role's maximum / minimum.
  int64_t MaxGpus() const;
  int64_t MinGpus() const;
  // Wall-clock seconds at every role's maximum.
  double DurationAtMax() const;

  friend bool operator==(const TraceJob&, const TraceJob&) = default;
};

// Checks one job: non-empty unique-able id, submit >= 0, at least one role,
// roles named and distinct, 0 <= min <= max, max >= 1, gpus >= 0, at least
// one GPU at max, work > 0; a topology level is a label key and its mode
// Required or Preferred; a GPU model is a label value. The message names
// the field.
Status ValidateJob(const TraceJob& job);

// CSV: header `id,submit_s,queue,roles,work_gpu_s,duration_s`, optionally
// followed by `,topology,gpu_model`; roles as `name:min:max:gpus` joined by
// `;`; exactly one of work_gpu_s and duration_s set (duration at max size);
// topology as `<level>` (Required) or `<level>:Required|Preferred`, both it
// and gpu_model may be empty. Blank lines and lines starting with `#` are
// skipped. Errors read "line 7: roles: ...".
Result<std::vector<TraceJob>> ParseTraceCsv(std::string_view text);
// JSON lines: one object per line, e.g.
// {"id":"j1","submit":0,"queue":"a","roles":[{"name":"worker","min":2,"max":8,"gpus":1}],
//  "work":3600} with "duration" instead of "work" allowed, and optionally
// "topology":{"level":"example.com/rack","mode":"Required"} and "gpuModel":"A100".
Result<std::vector<TraceJob>> ParseTraceJsonLines(std::string_view text);
// Picks the form by the first non-blank, non-comment character ('{': JSON
// lines), then sorts by submit time (stable) and refuses duplicate ids.
Result<std::vector<TraceJob>> ParseTrace(std::string_view text);

// The CSV form (with work_gpu_s; the topology and gpu_model columns when a
// job has either), which ParseTraceCsv reads back unchanged up to the
// printed precision.
std::string FormatTraceCsv(const std::vector<TraceJob>& jobs);

}  // namespace hybridjob::sim::trace
