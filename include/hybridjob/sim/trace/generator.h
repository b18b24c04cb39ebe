// Synthetic traces shaped like public GPU-cluster traces (Microsoft Philly,
// SenseTime Helios): most jobs take one GPU, a heavy tail of 8-64 GPU gangs,
// log-normal (heavy-tailed) durations, arrivals that follow a daily cycle.
// Deterministic for a seed: std::mt19937_64 feeds distribution code of our
// own, so traces do not depend on the standard library's distributions.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include <hybridjob/common/status.h>
#include <hybridjob/sim/trace/trace.h>

namespace hybridjob::sim::trace {

struct GeneratorOptions {
  int64_t jobs = 1000;
  uint64_t seed = 1;
  // The cluster the trace is meant for: job sizes are capped at it, and the
  // arrival rate is set so that the offered work averages `load` of it.
  int64_t cluster_gpus = 64;
  int32_t gpus_per_node = 8;
  double load = 0.9;
  // Relative amplitude of the daily cycle of arrivals (0: flat).
  double diurnal_amplitude = 0.5;
  // Share of multi-member jobs that are elastic (min below max).
  double elastic_fraction = 0.6;
  // Queues the jobs are spread over, with skewed popularity (queue i gets a
  // share proportional to 1/(i+1)).
  int32_t queues = 4;
  // Log-normal duration at max size: median seconds of a 1-GPU job, sigma of
  // the underlying normal; larger jobs run longer (median grows with
  // gpus^duration_size_exponent). Clamped to [min, max] seconds.
  double median_duration_seconds = 1200;
  double duration_sigma = 1.6;
  double duration_size_exponent = 0.3;
  double min_duration_seconds = 60;
  double max_duration_seconds = 3 * 86400;
};

Status ValidateGeneratorOptions(const GeneratorOptions& options);

// Jobs named job-000000, job-000001, ... in submit order.
std::vector<TraceJob> GenerateSyntheticTrace(const GeneratorOptions& options);

// The distribution code, exposed for tests. Uniform in [0, 1) from the top 53
// bits of one draw.
double UniformUnit(std::mt19937_64& rng);
// Standard normal (Box-Muller, two draws).
double StandardNormal(std::mt19937_64& rng);
// Exponential with the given mean.
double Exponential(std::mt19937_64& rng, double mean);

}  // namespace hybridjob::sim::trace
