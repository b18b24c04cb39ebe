#include <gtest/gtest.h>

#include <hybridjob/sim/trace/engine.h>
#include <hybridjob/sim/trace/generator.h>

namespace hybridjob::sim::trace {
namespace {

TraceJob Job(std::string id, double submit, std::string queue, int32_t min, int32_t max,
             int32_t gpus_per_member, double work) {
  TraceJob job;
  job.id = std::move(id);
  job.submit_seconds = submit;
  job.queue = std::move(queue);
  job.roles = {TraceRole{"worker", min, max, gpus_per_member}};
  job.work_gpu_seconds = work;
  return job;
}

ReplayOptions Options(Policy policy, int64_t gpus) {
  ReplayOptions options;
  options.policy = policy;
  options.gpus = gpus;
  options.gpus_per_node = 8;
  options.eviction_grace_seconds = 0;
  options.resize_pause_seconds = 0;
  return options;
}

ReplayResult MustReplay(const std::vector<TraceJob>& jobs, const ReplayOptions& options) {
  auto result = Replay(jobs, options);
  EXPECT_TRUE(result.ok()) << result.status().message();
  return result.ok() ? std::move(*result) : ReplayResult{};
}

TEST(DrainRateTest, LinearAndSubLinear) {
  EXPECT_DOUBLE_EQ(DrainRate(4, 8, 1.0), 4.0);
  EXPECT_DOUBLE_EQ(DrainRate(8, 8, 0.5), 8.0);  // full size is the same under any exponent
  EXPECT_DOUBLE_EQ(DrainRate(2, 8, 0.5), 4.0);  // 8 * sqrt(1/4)
  EXPECT_DOUBLE_EQ(DrainRate(0, 8, 1.0), 0.0);
}

TEST(JobWorkTest, DrainsAtTheRateOfItsGpus) {
  JobWork work(800, 8, 1.0);
  EXPECT_EQ(work.FinishTime(), std::numeric_limits<double>::infinity());
  work.Resize(0, 8, 0);
  EXPECT_DOUBLE_EQ(work.FinishTime(), 100);
  work.AdvanceTo(50);
  EXPECT_DOUBLE_EQ(work.remaining(), 400);
  // Shrinking halves the rate: the other half takes twice as long.
  work.Resize(50, 4, 50);
  EXPECT_DOUBLE_EQ(work.rate(), 4);
  EXPECT_DOUBLE_EQ(work.FinishTime(), 150);
  // Growing back speeds it up again.
  work.Resize(100, 8, 100);
  EXPECT_DOUBLE_EQ(work.remaining(), 200);
  EXPECT_DOUBLE_EQ(work.FinishTime(), 125);
}

TEST(JobWorkTest, NothingDrainsDuringAResizePause) {
  JobWork work(800, 8, 1.0);
  work.Resize(0, 8, 0);
  work.Resize(10, 4, 40);  // restart takes 30 s
  EXPECT_DOUBLE_EQ(work.remaining(), 720);
  work.AdvanceTo(30);
  EXPECT_DOUBLE_EQ(work.remaining(), 720);
  EXPECT_DOUBLE_EQ(work.FinishTime(), 40 + 720.0 / 4);
}

TEST(ReplayTest, FifoGangsCompleteInOrderWithExactTimes) {
  // One node: the second gang waits for the first, the third (small, later)
  // must not overtake the second under strict FIFO.
  std::vector<TraceJob> jobs = {Job("a", 0, "default", 1, 1, 8, 800),
                                Job("b", 10, "default", 2, 2, 4, 400),
                                Job("c", 20, "default", 1, 1, 1, 10)};
  ReplayResult result = MustReplay(jobs, Options(Policy::kStaticGang, 8));
  ASSERT_EQ(result.jobs.size(), 3u);
  EXPECT_DOUBLE_EQ(result.jobs[0].start, 0);
  EXPECT_DOUBLE_EQ(result.jobs[0].finish, 100);
  EXPECT_DOUBLE_EQ(result.jobs[1].start, 100);
  EXPECT_DOUBLE_EQ(result.jobs[1].finish, 150);
  EXPECT_DOUBLE_EQ(result.jobs[2].start, 150);
  EXPECT_DOUBLE_EQ(result.jobs[2].finish, 160);
  EXPECT_EQ(result.stuck_jobs, 0);
  EXPECT_DOUBLE_EQ(result.busy_gpu_seconds, 800 + 400 + 10);
  EXPECT_DOUBLE_EQ(result.partial_gpu_seconds, 0);
  EXPECT_GT(result.decisions, 0);
}

TEST(ReplayTest, BackfillingPoliciesLetASmallJobOvertake) {
  std::vector<TraceJob> jobs = {Job("a", 0, "default", 1, 1, 4, 400),
                                Job("b", 10, "default", 1, 1, 8, 800),
                                Job("c", 20, "default", 1, 1, 1, 10)};
  ReplayResult result = MustReplay(jobs, Options(Policy::kElasticGang, 8));
  // c fits next to a while b waits for the whole node.
  EXPECT_DOUBLE_EQ(result.jobs[2].start, 20);
  EXPECT_DOUBLE_EQ(result.jobs[2].finish, 30);
  EXPECT_DOUBLE_EQ(result.jobs[0].finish, 100);
  EXPECT_DOUBLE_EQ(result.jobs[1].start, 100);
  EXPECT_DOUBLE_EQ(result.jobs[1].finish, 200);
}

TEST(ReplayTest, ElasticJobGrowsToItsMaximumWhenIdle) {
  std::vector<TraceJob> jobs = {Job("a", 0, "default", 2, 8, 1, 800)};
  ReplayResult result = MustReplay(jobs, Options(Policy::kElasticGang, 8));
  EXPECT_DOUBLE_EQ(result.jobs[0].finish, 100);
  EXPECT_DOUBLE_EQ(result.jobs[0].mean_gpus_running, 8);
}

TEST(ReplayTest, ElasticJobRunsAtItsMinimumWhenOnlyThatFits) {
  // b holds 6 of 8 GPUs; a starts at its minimum 2 and grows when b ends.
  std::vector<TraceJob> jobs = {Job("b", 0, "default", 1, 1, 6, 600),
                                Job("a", 0, "default", 2, 8, 1, 800)};
  ReplayResult result = MustReplay(jobs, Options(Policy::kElasticGang, 8));
  EXPECT_DOUBLE_EQ(result.jobs[0].finish, 100);
  EXPECT_DOUBLE_EQ(result.jobs[1].start, 0);
  // 200 GPU-seconds at 2 GPUs by t=100, the remaining 600 at 8 GPUs.
  EXPECT_DOUBLE_EQ(result.jobs[1].finish, 175);
  EXPECT_EQ(result.jobs[1].resizes, 1);
}

TEST(ReplayTest, ReclaimShrinksARunningJobAndSlowsIt) {
  // a (queue x) takes the whole node; b (queue y) arrives and reclaims 4 of
  // a's elastic members; a runs at half speed until b ends, then grows back.
  std::vector<TraceJob> jobs = {Job("a", 0, "x", 2, 8, 1, 8000), Job("b", 100, "y", 4, 4, 1, 400)};
  ReplayResult result = MustReplay(jobs, Options(Policy::kElasticReclaim, 8));
  const JobRecord& a = result.jobs[0];
  const JobRecord& b = result.jobs[1];
  EXPECT_EQ(result.evictions, 4);
  EXPECT_EQ(a.evicted_members, 4);
  EXPECT_DOUBLE_EQ(b.start, 100);
  EXPECT_DOUBLE_EQ(b.finish, 200);
  // 800 done by t=100 at 8 GPUs, 400 more by t=200 at 4, 6800 left at 8.
  EXPECT_DOUBLE_EQ(a.finish, 200 + 6800.0 / 8);
  EXPECT_EQ(a.resizes, 2);

  // Without reclaim, b waits for a to end.
  ReplayResult plain = MustReplay(jobs, Options(Policy::kElasticGang, 8));
  EXPECT_DOUBLE_EQ(plain.jobs[0].finish, 1000);
  EXPECT_DOUBLE_EQ(plain.jobs[1].start, 1000);
  EXPECT_EQ(plain.evictions, 0);
}

TEST(ReplayTest, EvictionGraceAndResizePauseDelayTheShrink) {
  std::vector<TraceJob> jobs = {Job("a", 0, "x", 2, 8, 1, 8000), Job("b", 100, "y", 4, 4, 1, 400)};
  ReplayOptions options = Options(Policy::kElasticReclaim, 8);
  options.eviction_grace_seconds = 30;
  options.resize_pause_seconds = 10;
  ReplayResult result = MustReplay(jobs, options);
  const JobRecord& a = result.jobs[0];
  const JobRecord& b = result.jobs[1];
  EXPECT_DOUBLE_EQ(b.start, 130);
  EXPECT_DOUBLE_EQ(b.finish, 230);
  // t=130: 1040 done at 8 GPUs; paused to 140; 4 GPUs to 230 (360 more);
  // grows at 230, paused to 240; 6600 left at 8 GPUs.
  EXPECT_DOUBLE_EQ(a.finish, 240 + 6600.0 / 8);
}

TEST(ReplayTest, PodGreedyPartialGangHoldsGpusWithoutRunning) {
  // x takes node 0 until t=100; g (two 8-GPU members) gets one member on node
  // 1 at t=1 and holds it idle until x ends.
  std::vector<TraceJob> jobs = {Job("x", 0, "default", 1, 1, 8, 800),
                                Job("g", 1, "default", 2, 2, 8, 1600)};
  ReplayResult greedy = MustReplay(jobs, Options(Policy::kPodGreedy, 16));
  EXPECT_DOUBLE_EQ(greedy.jobs[1].start, 100);
  EXPECT_DOUBLE_EQ(greedy.jobs[1].finish, 200);
  EXPECT_DOUBLE_EQ(greedy.jobs[1].partial_gpu_seconds, 8 * 99);
  EXPECT_DOUBLE_EQ(greedy.partial_gpu_seconds, 8 * 99);

  ReplayResult gang = MustReplay(jobs, Options(Policy::kStaticGang, 16));
  EXPECT_DOUBLE_EQ(gang.jobs[1].start, 100);
  EXPECT_DOUBLE_EQ(gang.partial_gpu_seconds, 0);
}

TEST(ReplayTest, RefusesJobsThatCanNeverStart) {
  auto too_big =
      Replay({Job("big", 0, "default", 3, 3, 8, 100)}, Options(Policy::kElasticGang, 16));
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.status().message(),
            "job big: needs 24 GPUs to start under elastic-gang, the cluster has 16");
  // Elastic: its minimum fits, so it runs at its minimum...
  std::vector<TraceJob> elastic = {Job("e", 0, "default", 2, 3, 8, 1600)};
  EXPECT_TRUE(Replay(elastic, Options(Policy::kElasticGang, 16)).ok());
  // ...but static gangs start only at their maximum.
  EXPECT_FALSE(Replay(elastic, Options(Policy::kStaticGang, 16)).ok());
  auto wide = Replay({Job("w", 0, "default", 1, 1, 16, 100)}, Options(Policy::kElasticGang, 32));
  ASSERT_FALSE(wide.ok());
  EXPECT_EQ(wide.status().message(), "job w: role worker wants 16 GPUs per member, a node has 8");
}

TEST(ReplayTest, RefusesBadOptionsAndUnsortedJobs) {
  std::vector<TraceJob> jobs = {Job("a", 10, "default", 1, 1, 1, 10),
                                Job("b", 0, "default", 1, 1, 1, 10)};
  EXPECT_FALSE(Replay(jobs, Options(Policy::kElasticGang, 8)).ok());
  ReplayOptions options = Options(Policy::kElasticGang, 4);
  EXPECT_FALSE(Replay({}, options).ok());
  options = Options(Policy::kElasticGang, 8);
  options.speedup_exponent = 1.5;
  EXPECT_FALSE(Replay({}, options).ok());
}

TEST(ReplayTest, EveryPolicyConservesWorkOnASyntheticTrace) {
  // With linear speed-up and no resize pauses, the GPU-seconds held by running
  // jobs are exactly the work of the trace, whatever the policy did.
  GeneratorOptions generator;
  generator.jobs = 300;
  generator.seed = 11;
  generator.cluster_gpus = 64;
  generator.load = 1.2;
  std::vector<TraceJob> jobs = GenerateSyntheticTrace(generator);
  double total_work = 0;
  for (const TraceJob& job : jobs) {
    total_work += job.work_gpu_seconds;
  }
  for (Policy policy : AllPolicies()) {
    SCOPED_TRACE(std::string(PolicyName(policy)));
    ReplayResult result = MustReplay(jobs, Options(policy, 64));
    EXPECT_EQ(result.stuck_jobs, 0);
    EXPECT_NEAR(result.busy_gpu_seconds, total_work, 1e-6 * total_work);
    for (size_t i = 0; i < jobs.size(); ++i) {
      const JobRecord& record = result.jobs[i];
      ASSERT_TRUE(record.finished()) << record.id;
      EXPECT_GE(record.start, record.submit);
      // No job finishes faster than at its maximum size from its start.
      EXPECT_GE(record.finish - record.start, jobs[i].DurationAtMax() * (1 - 1e-9));
      EXPECT_LE(record.mean_gpus_running, static_cast<double>(record.max_gpus) + 1e-9);
    }
    if (policy == Policy::kElasticReclaim) {
      EXPECT_GT(result.evictions, 0);
    } else {
      EXPECT_EQ(result.evictions, 0);
    }
    if (policy != Policy::kPodGreedy) {
      EXPECT_EQ(result.partial_gpu_seconds, 0);
    }
  }
}

TEST(PolicyTest, NamesRoundTrip) {
  for (Policy policy : AllPolicies()) {
    auto parsed = ParsePolicy(PolicyName(policy));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, policy);
  }
  EXPECT_FALSE(ParsePolicy("fifo").ok());
}

}  // namespace
}  // namespace hybridjob::sim::trace
