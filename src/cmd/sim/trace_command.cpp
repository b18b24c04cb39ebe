// The trace subcommand's shell: flags, reading the trace file, writing the
// reports. The replay itself is hybridjob_trace.
#include "trace_command.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <hybridjob/common/flags.h>
#include <hybridjob/scheduler/shell/config.h>
#include <hybridjob/sim/trace/engine.h>
#include <hybridjob/sim/trace/generator.h>
#include <hybridjob/sim/trace/report.h>
#include <hybridjob/sim/trace/trace.h>

namespace hybridjob::sim {
namespace {

constexpr const char* kProgram = "hybridjob-sim trace";
constexpr const char* kSummary =
    "Replays a job trace in virtual time with the gang scheduler's own planner and policies, and\n"
    "compares policies on it. Writes DIR/summary.csv, DIR/jobs.csv, DIR/queues.csv,\n"
    "DIR/timeline.svg (and DIR/trace.csv, the trace replayed) and prints a table. See\n"
    "docs/trace-format.md.\n"
    "usage: hybridjob-sim trace (--trace FILE | --synthetic --jobs N --seed S)\n"
    "       (--gpus G [--gpus-per-node K] | --inventory FILE) [--scheduler-config FILE]\n"
    "       --policy P|all --out DIR";

int UsageError(const std::string& message) {
  bool points_to_help = message.find("--help") != std::string::npos;
  std::cerr << kProgram << ": " << message << (points_to_help ? "" : " (see --help)") << "\n";
  return 2;
}

int Failure(const std::string& message) {
  std::cerr << kProgram << ": " << message << "\n";
  return 1;
}

// The file at `path` parsed by `parse`; errors name the file.
template <typename Parse>
auto ReadAndParse(const std::string& path, Parse parse) -> decltype(parse(std::string_view{})) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return NotFound("cannot read " + path);
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto parsed = parse(text.str());
  if (!parsed.ok()) {
    return InvalidArgument(path + ": " + parsed.status().message());
  }
  return parsed;
}

Status WriteFile(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    return Internal("cannot write " + path.string());
  }
  return Status::Ok();
}

}  // namespace

int RunTraceCommand(int argc, char** argv) {
  std::string trace_path;
  bool synthetic = false;
  int64_t jobs = 1000;
  int64_t seed = 1;
  int64_t gpus = 0;
  int64_t gpus_per_node = 8;
  std::string policy_name;
  std::string out_dir;
  std::string scheduler_config_path;
  std::string inventory_path;
  trace::ReplayOptions replay;
  trace::GeneratorOptions generator;
  int64_t queues = generator.queues;
  int64_t las_levels = replay.las_levels;
  FlagSet flags(kProgram, kSummary);
  flags.String("trace", &trace_path, "trace file, CSV or JSON lines (docs/trace-format.md)");
  flags.Bool("synthetic", &synthetic, "generate a Philly/Helios-shaped trace instead");
  flags.Int("jobs", &jobs, "synthetic: number of jobs");
  flags.Int("seed", &seed, "synthetic: random seed");
  flags.Int("gpus", &gpus, "GPUs in the simulated cluster (required)");
  flags.Int("gpus-per-node", &gpus_per_node, "GPUs per simulated node");
  flags.Double("cross-domain-slowdown", &replay.cross_domain_slowdown,
               "a gang spread over domains of the domain level drains this many times slower");
  flags.String("domain-level", &replay.domain_level,
               "node label whose domains gangs' spread is measured in (default: the innermost "
               "topology level of --scheduler-config but kubernetes.io/hostname)");
  flags.String("inventory", &inventory_path,
               "node inventory CSV (name,gpus,cpu,memory,labels) instead of --gpus");
  flags.String("policy", &policy_name,
               "pod-greedy, static-gang, gang-backfill, elastic-gang, elastic-reclaim, las, attained-service or all "
               "(required)");
  flags.String("out", &out_dir, "directory for the reports (required; created if missing)");
  flags.Double("speedup-exponent", &replay.speedup_exponent,
               "work drains at max_gpus*(gpus/max_gpus)^e GPU-seconds per second; 1 is linear");
  flags.Double("eviction-grace", &replay.eviction_grace_seconds,
               "virtual seconds an evicted member keeps its GPUs");
  flags.Double("restart-delay", &replay.restart_delay_seconds,
               "virtual seconds a job makes no progress when its workers restart (a resize, or a "
               "start after losing its gang)");
  flags.Double("checkpoint-interval", &replay.checkpoint_interval_seconds,
               "virtual seconds of work between a job's checkpoints: a restart loses the work "
               "since the last one (0: none is lost)");
  flags.Int("starvation-seconds", &replay.starvation_seconds,
            "elastic-reclaim: wait before a starved group gets nodes reserved (0: off); "
            "overrides starvation.maxWaitSeconds of --scheduler-config");
  flags.Int("las-levels", &las_levels,
            "las: priority levels by attained service (GPU-seconds held while running)");
  flags.Double("las-first-threshold", &replay.las_first_threshold_gpu_hours,
               "las: GPU-hours of attained service that end the first level");
  flags.Double("las-threshold-factor", &replay.las_threshold_factor,
               "las: each level's threshold is this many times the one before");
  flags.String("scheduler-config", &scheduler_config_path,
               "the gang scheduler's configuration file (YAML): its queues, parents included, "
               "and starvation.maxWaitSeconds are replayed");
  flags.Double("load", &generator.load,
               "synthetic: offered GPU-seconds as a share of the cluster's, on average");
  flags.Double("diurnal-amplitude", &generator.diurnal_amplitude,
               "synthetic: relative amplitude of the daily arrival cycle, in [0, 1)");
  flags.Double("elastic-fraction", &generator.elastic_fraction,
               "synthetic: share of multi-member jobs that are elastic (min = max/4)");
  flags.Int("queues", &queues, "synthetic: number of queues (skewed popularity)");
  flags.Double("median-duration", &generator.median_duration_seconds,
               "synthetic: median seconds of a 1-GPU job at its maximum (log-normal)");
  flags.Double("min-duration", &generator.min_duration_seconds,
               "synthetic: shortest job, in seconds at its maximum");
  flags.Double("max-duration", &generator.max_duration_seconds,
               "synthetic: longest job, in seconds at its maximum");
  if (Status status = flags.Parse(argc, argv, 2); !status.ok()) {
    return UsageError(status.message());
  }
  if (flags.help_requested()) {
    std::cout << flags.Usage();
    return 0;
  }
  if (!flags.positional().empty()) {
    return UsageError("unexpected argument \"" + flags.positional().front() + "\"");
  }
  if (synthetic == !trace_path.empty()) {
    return UsageError("give exactly one of --trace FILE and --synthetic");
  }
  if (!synthetic && (flags.WasSet("jobs") || flags.WasSet("seed"))) {
    return UsageError("--jobs and --seed go with --synthetic");
  }
  if (flags.WasSet("inventory") == flags.WasSet("gpus")) {
    return UsageError("give exactly one of --gpus G and --inventory FILE");
  }
  if (flags.WasSet("inventory") && flags.WasSet("gpus-per-node")) {
    return UsageError("--gpus-per-node goes with --gpus; an inventory lists each node's GPUs");
  }
  if (policy_name.empty()) {
    return UsageError("--policy is required (a policy name or all)");
  }
  if (out_dir.empty()) {
    return UsageError("--out is required");
  }
  if (flags.WasSet("inventory")) {
    auto inventory = ReadAndParse(inventory_path, trace::ParseInventoryCsv);
    if (!inventory.ok()) {
      return Failure(inventory.status().message());
    }
    replay.inventory = std::move(*inventory);
    gpus = trace::TotalGpus(replay.inventory);
    gpus_per_node = trace::LargestNodeGpus(replay.inventory);
  } else if (gpus_per_node <= 0 || gpus_per_node > 1024) {
    return UsageError("--gpus-per-node: must be in 1..1024");
  } else if (gpus < gpus_per_node || gpus % gpus_per_node != 0) {
    return UsageError("--gpus: must be a positive multiple of --gpus-per-node (" +
                      std::to_string(gpus_per_node) + ")");
  }
  std::vector<trace::Policy> policies;
  if (policy_name == "all") {
    policies = trace::AllPolicies();
  } else {
    auto policy = trace::ParsePolicy(policy_name);
    if (!policy.ok()) {
      return UsageError("--policy: " + policy.status().message());
    }
    policies.push_back(*policy);
  }
  if (flags.WasSet("scheduler-config")) {
    auto config = scheduler::LoadSchedulerConfigFile(scheduler_config_path);
    if (!config.ok()) {
      return Failure(config.status().message());
    }
    scheduler::PolicyConfig policy_config = scheduler::PolicyConfigFrom(*config);
    replay.queues = std::move(policy_config.queues);
    replay.topology_levels = config->topology.levels;
    if (!config->gpu_model_label.empty()) {
      replay.gpu_model_label = config->gpu_model_label;
    }
    if (!flags.WasSet("starvation-seconds")) {
      replay.starvation_seconds = policy_config.starvation.max_wait_seconds;
    }
    replay.rebalance = policy_config.reclaim.rebalance;
    replay.share_tolerance = policy_config.reclaim.share_tolerance;
    replay.min_resize_interval_seconds = policy_config.reclaim.min_resize_interval_seconds;
    replay.attained_service = policy_config.attained_service;
  }
  replay.gpus = gpus;
  replay.gpus_per_node = static_cast<int32_t>(gpus_per_node);
  if (las_levels < 1 || las_levels > 16) {
    return UsageError("--las-levels: must be 1 to 16");
  }
  replay.las_levels = static_cast<int32_t>(las_levels);
  if (Status status = trace::ValidateReplayOptions(replay); !status.ok()) {
    return UsageError(status.message());
  }

  std::vector<trace::TraceJob> trace_jobs;
  if (synthetic) {
    generator.jobs = jobs;
    generator.seed = static_cast<uint64_t>(seed);
    generator.cluster_gpus = gpus;
    generator.gpus_per_node = static_cast<int32_t>(gpus_per_node);
    generator.queues = static_cast<int32_t>(queues);
    if (Status status = trace::ValidateGeneratorOptions(generator); !status.ok()) {
      return UsageError(status.message());
    }
    trace_jobs = trace::GenerateSyntheticTrace(generator);
  } else {
    auto parsed = ReadAndParse(trace_path, trace::ParseTrace);
    if (!parsed.ok()) {
      return Failure(parsed.status().message());
    }
    trace_jobs = std::move(*parsed);
  }
  if (trace_jobs.empty()) {
    return Failure("the trace has no jobs");
  }

  std::error_code error;
  std::filesystem::create_directories(out_dir, error);
  if (error) {
    return Failure("cannot create " + out_dir + ": " + error.message());
  }
  std::filesystem::path dir(out_dir);
  std::vector<trace::ReplayResult> results;
  std::vector<trace::PolicySummary> summaries;
  for (trace::Policy policy : policies) {
    replay.policy = policy;
    auto started = std::chrono::steady_clock::now();
    auto result = trace::Replay(trace_jobs, replay);
    if (!result.ok()) {
      return Failure(std::string(trace::PolicyName(policy)) + ": " + result.status().message());
    }
    summaries.push_back(trace::Summarize(*result));
    summaries.back().replay_wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (result->stuck_jobs > 0) {
      std::cerr << kProgram << ": " << trace::PolicyName(policy) << ": " << result->stuck_jobs
                << " jobs never finished (no event left that could start them)\n";
    }
    results.push_back(std::move(*result));
  }
  for (const auto& [name, text] :
       {std::pair<std::string, std::string>{"trace.csv", trace::FormatTraceCsv(trace_jobs)},
        {"summary.csv", trace::SummaryCsv(summaries)},
        {"jobs.csv", trace::JobsCsv(results)},
        {"queues.csv", trace::QueuesCsv(results)},
        {"timeline.svg", trace::TimelineSvg(results)}}) {
    if (Status status = WriteFile(dir / name, text); !status.ok()) {
      return Failure(status.message());
    }
  }
  std::cout << trace_jobs.size() << " jobs on " << gpus << " GPUs ("
            << (replay.inventory.empty()
                    ? std::to_string(gpus / gpus_per_node) + " nodes of " +
                          std::to_string(gpus_per_node)
                    : std::to_string(replay.inventory.size()) + " nodes from " + inventory_path)
            << ")\n"
            << trace::SummaryTable(summaries) << "wrote " << (dir / "summary.csv").string() << ", "
            << (dir / "jobs.csv").string() << ", " << (dir / "queues.csv").string() << ", "
            << (dir / "timeline.svg").string() << "\n";
  return 0;
}

}  // namespace hybridjob::sim
