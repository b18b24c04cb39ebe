#include <cmath>
#include <set>

#include <gtest/gtest.h>

#include <hybridjob/sim/trace/generator.h>

namespace hybridjob::sim::trace {
namespace {

GeneratorOptions Options(int64_t jobs, uint64_t seed) {
  GeneratorOptions options;
  options.jobs = jobs;
  options.seed = seed;
  options.cluster_gpus = 1000;
  options.gpus_per_node = 8;
  return options;
}

TEST(GeneratorTest, SameSeedSameTraceOtherSeedOtherTrace) {
  std::vector<TraceJob> first = GenerateSyntheticTrace(Options(500, 42));
  std::vector<TraceJob> again = GenerateSyntheticTrace(Options(500, 42));
  std::vector<TraceJob> other = GenerateSyntheticTrace(Options(500, 43));
  EXPECT_EQ(first, again);
  EXPECT_NE(first, other);
  // A longer trace starts with the same jobs' shapes and work.
  std::vector<TraceJob> longer = GenerateSyntheticTrace(Options(600, 42));
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].roles, longer[i].roles);
    EXPECT_EQ(first[i].work_gpu_seconds, longer[i].work_gpu_seconds);
  }
}

TEST(GeneratorTest, UniformDrawsComeFromTheTopBitsOfTheEngine) {
  // std::mt19937_64 is fully specified by the standard: its 10000th output for
  // the default seed is 9981545732273789042. The traces rest on it alone.
  std::mt19937_64 rng;
  rng.discard(9999);
  double expected = static_cast<double>(9981545732273789042ULL >> 11) * 0x1.0p-53;
  EXPECT_EQ(UniformUnit(rng), expected);
}

TEST(GeneratorTest, NormalAndExponentialHaveTheirMoments) {
  std::mt19937_64 rng(7);
  constexpr int kDraws = 200000;
  double sum = 0;
  double squares = 0;
  double exponential = 0;
  for (int i = 0; i < kDraws; ++i) {
    double x = StandardNormal(rng);
    sum += x;
    squares += x * x;
    exponential += Exponential(rng, 3.0);
  }
  EXPECT_NEAR(sum / kDraws, 0.0, 0.01);
  EXPECT_NEAR(squares / kDraws, 1.0, 0.02);
  EXPECT_NEAR(exponential / kDraws, 3.0, 0.05);
}

TEST(GeneratorTest, ShapeIsLikePublicGpuClusterTraces) {
  GeneratorOptions options = Options(20000, 1);
  std::vector<TraceJob> jobs = GenerateSyntheticTrace(options);
  ASSERT_EQ(jobs.size(), 20000u);
  const std::set<int64_t> sizes = {1, 2, 4, 8, 16, 32, 64};
  int64_t single_gpu = 0;
  int64_t big_gangs = 0;
  int64_t multi_member = 0;
  int64_t elastic = 0;
  double total_work = 0;
  int64_t daytime = 0;
  std::set<std::string> queues;
  std::vector<double> durations;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const TraceJob& job = jobs[i];
    ASSERT_TRUE(ValidateJob(job).ok()) << ValidateJob(job).message();
    ASSERT_EQ(job.roles.size(), 1u);
    const TraceRole& role = job.roles[0];
    EXPECT_TRUE(sizes.contains(job.MaxGpus())) << job.MaxGpus();
    if (job.MaxGpus() > 8) {
      EXPECT_EQ(role.gpus_per_member, 8);  // multi-node gangs take whole nodes
      ++big_gangs;
    }
    if (job.MaxGpus() == 1) {
      ++single_gpu;
    }
    if (role.max_replicas > 1) {
      ++multi_member;
      if (role.min_replicas < role.max_replicas) {
        ++elastic;
        EXPECT_EQ(role.min_replicas, (role.max_replicas + 3) / 4);
      }
    } else {
      EXPECT_EQ(role.min_replicas, 1);
    }
    if (i > 0) {
      EXPECT_GE(job.submit_seconds, jobs[i - 1].submit_seconds);
    }
    double duration = job.DurationAtMax();
    EXPECT_GE(duration, options.min_duration_seconds);
    EXPECT_LE(duration, options.max_duration_seconds);
    durations.push_back(duration);
    total_work += job.work_gpu_seconds;
    double hour = std::fmod(job.submit_seconds, 86400) / 3600;
    if (hour >= 6 && hour < 18) {
      ++daytime;
    }
    queues.insert(job.queue);
  }
  double n = static_cast<double>(jobs.size());
  EXPECT_NEAR(single_gpu / n, 0.65, 0.02);
  EXPECT_NEAR(big_gangs / n, 0.09, 0.015);
  EXPECT_NEAR(static_cast<double>(elastic) / static_cast<double>(multi_member),
              options.elastic_fraction, 0.03);
  EXPECT_EQ(queues.size(), 4u);
  // Heavy tail: the mean duration is well above the median.
  std::sort(durations.begin(), durations.end());
  double median = durations[durations.size() / 2];
  double mean = 0;
  for (double d : durations) {
    mean += d;
  }
  mean /= n;
  EXPECT_GT(mean, 2 * median);
  // Diurnal: more arrivals in the day half than in the night half
  // (1 + 2A/pi : 1 - 2A/pi, about 1.9 : 1 for A = 0.5).
  EXPECT_GT(static_cast<double>(daytime) / (n - static_cast<double>(daytime)), 1.5);
  // The offered load averages `load` of the cluster.
  double span = jobs.back().submit_seconds;
  double offered = total_work / (static_cast<double>(options.cluster_gpus) * span);
  EXPECT_NEAR(offered, options.load, 0.15);
}

TEST(GeneratorTest, SizesAreCappedAtTheCluster) {
  GeneratorOptions options = Options(2000, 3);
  options.cluster_gpus = 16;
  for (const TraceJob& job : GenerateSyntheticTrace(options)) {
    EXPECT_LE(job.MaxGpus(), 16);
  }
}

TEST(GeneratorTest, RefusesBadOptions) {
  GeneratorOptions options = Options(10, 1);
  EXPECT_TRUE(ValidateGeneratorOptions(options).ok());
  options.jobs = 0;
  EXPECT_FALSE(ValidateGeneratorOptions(options).ok());
  options = Options(10, 1);
  options.diurnal_amplitude = 1.0;
  EXPECT_FALSE(ValidateGeneratorOptions(options).ok());
  options = Options(10, 1);
  options.cluster_gpus = 4;
  EXPECT_FALSE(ValidateGeneratorOptions(options).ok());
}

}  // namespace
}  // namespace hybridjob::sim::trace
