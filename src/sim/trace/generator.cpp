#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numbers>

#include <hybridjob/sim/trace/generator.h>

namespace hybridjob::sim::trace {
namespace {

// GPUs a job asks for, with Helios/Philly-like weights: two thirds take one
// GPU, a tail of multi-node gangs up to 64 GPUs.
struct SizeWeight {
  int64_t gpus;
  double weight;
};
constexpr SizeWeight kSizes[] = {{1, 0.65},   {2, 0.08},  {4, 0.08},  {8, 0.10},
                                 {16, 0.045}, {32, 0.03}, {64, 0.015}};

constexpr double kSecondsPerDay = 86400;

int64_t DrawSize(std::mt19937_64& rng, int64_t cluster_gpus) {
  double total = 0;
  for (const SizeWeight& size : kSizes) {
    if (size.gpus <= cluster_gpus) {
      total += size.weight;
    }
  }
  double pick = UniformUnit(rng) * total;
  int64_t chosen = 1;
  for (const SizeWeight& size : kSizes) {
    if (size.gpus > cluster_gpus) {
      continue;
    }
    chosen = size.gpus;
    if (pick < size.weight) {
      break;
    }
    pick -= size.weight;
  }
  return chosen;
}

std::string QueueName(int32_t index) {
  std::string name = "team-";
  if (index < 26) {
    name += static_cast<char>('a' + index);
  } else {
    name += std::to_string(index);
  }
  return name;
}

}  // namespace

double UniformUnit(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;
}

double StandardNormal(std::mt19937_64& rng) {
  double u1 = 1.0 - UniformUnit(rng);  // (0, 1]: log stays finite
  double u2 = UniformUnit(rng);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

double Exponential(std::mt19937_64& rng, double mean) {
  return -mean * std::log(1.0 - UniformUnit(rng));
}

Status ValidateGeneratorOptions(const GeneratorOptions& options) {
  if (options.jobs <= 0) {
    return InvalidArgument("jobs: must be positive");
  }
  if (options.gpus_per_node <= 0 || options.cluster_gpus < options.gpus_per_node) {
    return InvalidArgument("gpus: must be at least one node's GPUs");
  }
  if (!(options.load > 0)) {
    return InvalidArgument("load: must be positive");
  }
  if (!(options.diurnal_amplitude >= 0 && options.diurnal_amplitude < 1)) {
    return InvalidArgument("diurnal amplitude: must be in [0, 1)");
  }
  if (!(options.elastic_fraction >= 0 && options.elastic_fraction <= 1)) {
    return InvalidArgument("elastic fraction: must be in [0, 1]");
  }
  if (options.queues <= 0) {
    return InvalidArgument("queues: must be positive");
  }
  if (!(options.median_duration_seconds > 0) || !(options.duration_sigma >= 0) ||
      !(options.min_duration_seconds > 0) ||
      !(options.max_duration_seconds >= options.min_duration_seconds)) {
    return InvalidArgument("durations: need median > 0, sigma >= 0, 0 < min <= max");
  }
  return Status::Ok();
}

std::vector<TraceJob> GenerateSyntheticTrace(const GeneratorOptions& options) {
  std::mt19937_64 rng(options.seed);
  std::vector<TraceJob> jobs(static_cast<size_t>(options.jobs));
  double queue_total = 0;
  for (int32_t q = 0; q < options.queues; ++q) {
    queue_total += 1.0 / (q + 1);
  }
  double total_work = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    TraceJob& job = jobs[i];
    char id[32];
    std::snprintf(id, sizeof(id), "job-%06zu", i);
    job.id = id;
    int64_t gpus = DrawSize(rng, options.cluster_gpus);
    double pick = UniformUnit(rng) * queue_total;
    int32_t queue = 0;
    while (queue + 1 < options.queues && pick >= 1.0 / (queue + 1)) {
      pick -= 1.0 / (queue + 1);
      ++queue;
    }
    job.queue = QueueName(queue);
    // Shape: a multi-node gang is one 8-GPU (whole node) member per node; a
    // smaller multi-GPU job is either one pod or one pod per GPU.
    bool per_gpu_pods = UniformUnit(rng) < 0.5;
    TraceRole role;
    role.name = "worker";
    if (gpus > options.gpus_per_node) {
      role.gpus_per_member = options.gpus_per_node;
      role.max_replicas =
          static_cast<int32_t>((gpus + options.gpus_per_node - 1) / options.gpus_per_node);
    } else if (gpus > 1 && per_gpu_pods) {
      role.gpus_per_member = 1;
      role.max_replicas = static_cast<int32_t>(gpus);
    } else {
      role.gpus_per_member = static_cast<int32_t>(gpus);
      role.max_replicas = 1;
    }
    bool elastic = UniformUnit(rng) < options.elastic_fraction;
    role.min_replicas =
        elastic && role.max_replicas > 1 ? (role.max_replicas + 3) / 4 : role.max_replicas;
    job.roles = {role};
    double median = options.median_duration_seconds *
                    std::pow(static_cast<double>(job.MaxGpus()), options.duration_size_exponent);
    double duration = median * std::exp(options.duration_sigma * StandardNormal(rng));
    duration = std::clamp(duration, options.min_duration_seconds, options.max_duration_seconds);
    job.work_gpu_seconds = std::round(duration) * static_cast<double>(job.MaxGpus());
    total_work += job.work_gpu_seconds;
  }
  // Arrivals: a Poisson process whose rate follows the day (lowest at
  // midnight, highest at noon), thinned from its peak rate; the mean rate
  // offers `load` of the cluster's GPU-seconds.
  double mean_work = total_work / static_cast<double>(jobs.size());
  double mean_rate = options.load * static_cast<double>(options.cluster_gpus) / mean_work;
  double peak_rate = mean_rate * (1 + options.diurnal_amplitude);
  double time = 0;
  for (TraceJob& job : jobs) {
    while (true) {
      time += Exponential(rng, 1.0 / peak_rate);
      double phase = 2.0 * std::numbers::pi * time / kSecondsPerDay;
      double rate = mean_rate * (1 - options.diurnal_amplitude * std::cos(phase));
      if (UniformUnit(rng) * peak_rate < rate) {
        break;
      }
    }
    job.submit_seconds = std::round(time * 1000) / 1000;
  }
  return jobs;
}

}  // namespace hybridjob::sim::trace
