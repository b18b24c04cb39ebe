#include <utility>
#include <vector>

#include <gmock/gmock.h>
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
  options.restart_delay_seconds = 0;
  options.checkpoint_interval_seconds = 0;
  return options;
}

using Times = std::vector<std::pair<double, double>>;

// Start and finish of every job, in trace order.
Times StartsAndFinishes(const ReplayResult& result) {
  Times out;
  for (const auto& job : result.jobs) {
    out.emplace_back(job.start, job.finish);
  }
  return out;
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
  EXPECT_EQ(StartsAndFinishes(result), (Times{{0, 100}, {100, 150}, {150, 160}}));
  EXPECT_EQ(result.stuck_jobs, 0);
  EXPECT_DOUBLE_EQ(result.busy_gpu_seconds, 800 + 400 + 10);
  EXPECT_DOUBLE_EQ(result.partial_gpu_seconds, 0);
  EXPECT_GT(result.decisions, 0);
}

TEST(ReplayTest, GangBackfillStartsAtMaxButLetsASmallerJobPass) {
  // One node: a holds half of it; b (8 GPUs at its maximum) waits for all of
  // it; c (1 GPU, later) fits now. Static gangs keep c behind b; gang-backfill
  // lets it by, and starts b at its maximum only.
  std::vector<TraceJob> jobs = {Job("a", 0, "default", 1, 1, 4, 400),
                                Job("b", 10, "default", 1, 2, 4, 800),
                                Job("c", 20, "default", 1, 1, 1, 10)};
  ReplayResult fifo = MustReplay(jobs, Options(Policy::kStaticGang, 8));
  EXPECT_EQ(StartsAndFinishes(fifo), (Times{{0, 100}, {100, 200}, {200, 210}}));
  ReplayResult backfill = MustReplay(jobs, Options(Policy::kGangBackfill, 8));
  EXPECT_EQ(StartsAndFinishes(backfill), (Times{{0, 100}, {100, 200}, {20, 30}}));
  EXPECT_EQ(backfill.jobs[1].min_gpus, 8) << "a gang at its maximum";
  EXPECT_EQ(ParsePolicy("gang-backfill").value(), Policy::kGangBackfill);
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
  options.restart_delay_seconds = 10;
  ReplayResult result = MustReplay(jobs, options);
  const JobRecord& a = result.jobs[0];
  const JobRecord& b = result.jobs[1];
  EXPECT_DOUBLE_EQ(b.start, 130);
  EXPECT_DOUBLE_EQ(b.finish, 230);
  // t=130: 1040 done at 8 GPUs; paused to 140; 4 GPUs to 230 (360 more);
  // grows at 230, paused to 240; 6600 left at 8 GPUs.
  EXPECT_DOUBLE_EQ(a.finish, 240 + 6600.0 / 8);
}

TEST(JobWorkTest, ARestartLosesTheWorkSinceTheLastCheckpoint) {
  // 8 GPUs, a checkpoint every 100 s of work.
  JobWork work(10000, 8, 1.0, 100);
  work.Resize(0, 8, 0);
  work.AdvanceTo(250);  // checkpoints at 100 and 200: 50 s at risk
  EXPECT_DOUBLE_EQ(work.since_checkpoint(), 400);
  EXPECT_DOUBLE_EQ(work.Restart(250, 4, 310), 400);
  EXPECT_DOUBLE_EQ(work.remaining(), 10000 - 1600);
  // Paused to 310; the next checkpoint is 100 s of work after that.
  work.AdvanceTo(400);
  EXPECT_DOUBLE_EQ(work.since_checkpoint(), 360);
  EXPECT_DOUBLE_EQ(work.remaining(), 10000 - 1600 - 360);
  work.AdvanceTo(420);
  EXPECT_DOUBLE_EQ(work.since_checkpoint(), 40) << "checkpointed at 410";
  // Stopped (the gang is lost), then resumed: the stop loses, the start does not.
  EXPECT_DOUBLE_EQ(work.Restart(420, 0, 420), 40);
  work.Resize(500, 8, 560);
  EXPECT_DOUBLE_EQ(work.since_checkpoint(), 0);
  EXPECT_DOUBLE_EQ(work.FinishTime(), 560 + (10000 - 1600 - 400) / 8.0);
  // Without checkpoints configured nothing is lost.
  JobWork never(1000, 8, 1.0);
  never.Resize(0, 8, 0);
  EXPECT_DOUBLE_EQ(never.Restart(50, 4, 50), 0);
  EXPECT_DOUBLE_EQ(never.remaining(), 600);
}

TEST(ReplayTest, AShrinkPaysTheGraceTheRestartDelayAndTheLostWork) {
  // a (2..8 GPUs, 8000 GPU-s) is shrunk to 4 for b at t=100: its members
  // leave at t=130 with 1040 done, 240 of it since the checkpoint at t=100
  // (one every 100 s). It restarts from 800 done, paused to 190, works at 4
  // GPUs to b's end at 230 (160 done: 960), grows back to 8 and pays again:
  // the 160 since its restart is lost (its next checkpoint was at 290),
  // paused to 290; 7200 left at 8 GPUs.
  std::vector<TraceJob> jobs = {Job("a", 0, "x", 2, 8, 1, 8000), Job("b", 100, "y", 4, 4, 1, 400)};
  ReplayOptions options = Options(Policy::kElasticReclaim, 8);
  options.eviction_grace_seconds = 30;
  options.restart_delay_seconds = 60;
  options.checkpoint_interval_seconds = 100;
  ReplayResult result = MustReplay(jobs, options);
  const JobRecord& a = result.jobs[0];
  const JobRecord& b = result.jobs[1];
  EXPECT_DOUBLE_EQ(b.start, 130);
  EXPECT_DOUBLE_EQ(b.finish, 230);
  EXPECT_DOUBLE_EQ(a.finish, 290 + 7200.0 / 8);
  EXPECT_EQ(a.preemptions, 1);
  EXPECT_EQ(a.restarts, 2);
  EXPECT_EQ(a.resizes, 2);
  // Rolled back 240 + 160; held 4 GPUs x 60 s and 8 x 60 s through the delays.
  EXPECT_DOUBLE_EQ(a.lost_gpu_seconds, 240 + 160 + 4 * 60 + 8 * 60);
  EXPECT_EQ(b.preemptions, 0);
  EXPECT_EQ(b.restarts, 0);
  EXPECT_DOUBLE_EQ(b.lost_gpu_seconds, 0);
  EXPECT_DOUBLE_EQ(b.not_running_seconds, 30) << "queued until a's members left";
  EXPECT_DOUBLE_EQ(a.alone_jct_seconds, 1000);
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

TEST(LasTest, LevelsGrowTenfoldFromOneGpuHour) {
  ReplayOptions options;
  std::vector<double> thresholds = LasThresholds(options);
  EXPECT_EQ(thresholds, (std::vector<double>{3600, 36000, 360000}));
  EXPECT_EQ(LasLevel(0, thresholds), 0);
  EXPECT_EQ(LasLevel(3599, thresholds), 0);
  EXPECT_EQ(LasLevel(3600, thresholds), 1);
  EXPECT_EQ(LasLevel(3600 - 1e-6, thresholds), 1) << "summed spans are not exact";
  EXPECT_EQ(LasLevel(40000, thresholds), 2);
  EXPECT_EQ(LasLevel(1e9, thresholds), 3) << "the last level has no ceiling";
  options.las_levels = 1;
  EXPECT_TRUE(LasThresholds(options).empty());
  options.las_levels = 0;
  EXPECT_FALSE(ValidateReplayOptions(options).ok());
  options.las_levels = 4;
  options.las_threshold_factor = 1;
  EXPECT_FALSE(ValidateReplayOptions(options).ok());
}

// las with a first threshold of 900 GPU-seconds (0.25 GPU-hours).
ReplayOptions LasOptions(int64_t gpus) {
  ReplayOptions options = Options(Policy::kLas, gpus);
  options.las_levels = 3;
  options.las_first_threshold_gpu_hours = 0.25;
  return options;
}

TEST(LasTest, AShortJobPreemptsALongServedOneAndFinishesFirst) {
  // One node. a (8 GPUs, 1000 s) passes 900 GPU-seconds at t=112.5 and drops
  // to level 1; b (8 GPUs, 100 s) arrives at t=200 at level 0 and evicts a
  // whole. a keeps the 1600 GPU-seconds it did and ends 800 s after b.
  std::vector<TraceJob> jobs = {Job("a", 0, "default", 1, 1, 8, 8000),
                                Job("b", 200, "default", 1, 1, 8, 800)};
  ReplayResult las = MustReplay(jobs, LasOptions(8));
  EXPECT_EQ(StartsAndFinishes(las), (Times{{0, 1100}, {200, 300}}));
  EXPECT_EQ(las.evictions, 1);
  EXPECT_EQ(las.jobs[0].evicted_members, 1);
  EXPECT_DOUBLE_EQ(las.jobs[0].gpu_seconds_held, 8000) << "no work lost or redone";

  // Gang-backfill never preempts: b waits the whole of a.
  ReplayResult backfill = MustReplay(jobs, Options(Policy::kGangBackfill, 8));
  EXPECT_EQ(StartsAndFinishes(backfill), (Times{{0, 1000}, {1000, 1100}}));
}

TEST(LasTest, APreemptedJobWorksThroughTheGraceAndPaysThePauseOnRestart) {
  std::vector<TraceJob> jobs = {Job("a", 0, "default", 1, 1, 8, 8000),
                                Job("b", 200, "default", 1, 1, 8, 800)};
  ReplayOptions options = LasOptions(8);
  options.eviction_grace_seconds = 30;
  options.restart_delay_seconds = 10;
  ReplayResult result = MustReplay(jobs, options);
  // a works until its member leaves at t=230 (1840 done); b runs 230-330; a
  // restarts at 330, paused to 340, and does the other 6160 in 770 s.
  EXPECT_EQ(StartsAndFinishes(result), (Times{{0, 1110}, {230, 330}}));
  EXPECT_EQ(result.jobs[0].resizes, 0) << "a restart is not a resize";
}

TEST(ReplayTest, APreemptedJobCountsItsTimeOffTheClusterAsWaiting) {
  // las, one node: a is preempted whole at t=200 (its member leaves at 230)
  // and starts again when b ends at 330; with checkpoints every 100 s it
  // loses the 30 s done since t=200.
  std::vector<TraceJob> jobs = {Job("a", 0, "default", 1, 1, 8, 8000),
                                Job("b", 200, "default", 1, 1, 8, 800)};
  ReplayOptions options = LasOptions(8);
  options.eviction_grace_seconds = 30;
  options.restart_delay_seconds = 60;
  options.checkpoint_interval_seconds = 100;
  ReplayResult result = MustReplay(jobs, options);
  const JobRecord& a = result.jobs[0];
  EXPECT_DOUBLE_EQ(a.not_running_seconds, 100);
  EXPECT_EQ(a.preemptions, 1);
  EXPECT_EQ(a.restarts, 1);
  EXPECT_DOUBLE_EQ(a.lost_gpu_seconds, 240 + 8 * 60);
  // 1600 kept at t=230; resumes at 330, paused to 390.
  EXPECT_DOUBLE_EQ(a.finish, 390 + 6400.0 / 8);
  EXPECT_DOUBLE_EQ(result.jobs[1].not_running_seconds, 30);
}

TEST(LasTest, JobsOfOneLevelDoNotPreemptEachOther) {
  // Default thresholds (1 GPU-hour first). a (8 GPUs, 400 s) never reaches
  // 3600 GPU-seconds: b, on level 0 like a, waits for it to end.
  std::vector<TraceJob> same = {Job("a", 0, "default", 1, 1, 8, 3200),
                                Job("b", 100, "default", 1, 1, 8, 800)};
  ReplayResult waits = MustReplay(same, Options(Policy::kLas, 8));
  EXPECT_EQ(StartsAndFinishes(waits), (Times{{0, 400}, {400, 500}}));
  EXPECT_EQ(waits.evictions, 0);
}

TEST(LasTest, AJobDemotedAtAThresholdIsPreemptedByAWaitingOne) {
  // a (8 GPUs, 1000 s) reaches 3600 GPU-seconds at t=450. b waits from t=100
  // on a's level; at t=450 a drops to level 1 and b preempts it at once.
  std::vector<TraceJob> jobs = {Job("a", 0, "default", 1, 1, 8, 8000),
                                Job("b", 100, "default", 1, 1, 8, 800)};
  ReplayResult result = MustReplay(jobs, Options(Policy::kLas, 8));
  EXPECT_EQ(StartsAndFinishes(result), (Times{{0, 1100}, {450, 550}}));
  EXPECT_EQ(result.evictions, 1);
}

TEST(LasTest, ALowerLevelWaitingJobGoesFirstWhenCapacityFrees) {
  // One node. a (level 1 after 112.5 s) is preempted by b at t=200; c
  // (level 0) arrives at t=250 while b runs, and goes before a when b ends:
  // a has more attained service, though it arrived first.
  std::vector<TraceJob> jobs = {Job("a", 0, "default", 1, 1, 8, 8000),
                                Job("b", 200, "default", 1, 1, 8, 800),
                                Job("c", 250, "default", 1, 1, 8, 400)};
  ReplayResult result = MustReplay(jobs, LasOptions(8));
  EXPECT_EQ(StartsAndFinishes(result), (Times{{0, 1150}, {200, 300}, {300, 350}}));
  EXPECT_EQ(result.evictions, 1) << "c waits for b, of its own level";
}

TEST(ReplayTest, FragmentationCountsFreeGpusOnPartlyUsedNodesWhileAGangWaits) {
  // Two 4-GPU nodes. x (2 GPUs, 100 s) leaves 2 GPUs free on its node; g (two
  // 4-GPU members) waits for both nodes until x ends: 2 GPUs x 100 s.
  std::vector<TraceJob> jobs = {Job("x", 0, "default", 1, 1, 2, 200),
                                Job("g", 0, "default", 2, 2, 4, 800)};
  ReplayOptions options = Options(Policy::kGangBackfill, 8);
  options.gpus_per_node = 4;
  ReplayResult result = MustReplay(jobs, options);
  EXPECT_EQ(StartsAndFinishes(result), (Times{{0, 100}, {100, 200}}));
  EXPECT_DOUBLE_EQ(result.waiting_seconds, 100);
  EXPECT_DOUBLE_EQ(result.fragmented_gpu_seconds, 2 * 100);

  // Alone, x leaves the same GPUs free, but no gang waits for them.
  ReplayResult alone = MustReplay({jobs[0]}, options);
  EXPECT_DOUBLE_EQ(alone.fragmented_gpu_seconds, 0);

  // Pod-greedy puts one of g's members on the free node, which it holds idle:
  // that node counts as full, x's node still has 2 free GPUs.
  options.policy = Policy::kPodGreedy;
  ReplayResult greedy = MustReplay(jobs, options);
  EXPECT_DOUBLE_EQ(greedy.partial_gpu_seconds, 4 * 100);
  EXPECT_DOUBLE_EQ(greedy.fragmented_gpu_seconds, 2 * 100);
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
  EXPECT_EQ(wide.status().message(),
            "job w: role worker wants 16 GPUs per member, the largest node has 8");
}

TEST(ReplayTest, AnInventoryMakesAHeterogeneousCluster) {
  // One 8-GPU node and two 2-GPU nodes: 12 GPUs, but only one node takes a
  // 4-GPU member.
  ReplayOptions options = Options(Policy::kElasticGang, 0);
  options.inventory = {{"big", 8, 64000, int64_t{1} << 40, {{"example.com/rack", "r0"}}},
                       {"small-0", 2, 16000, int64_t{1} << 38, {}},
                       {"small-1", 2, 16000, int64_t{1} << 38, {}}};
  EXPECT_EQ(ClusterGpus(options), 12);
  std::vector<TraceJob> jobs = {Job("wide", 0, "default", 2, 2, 4, 800),
                                Job("narrow", 0, "default", 2, 2, 2, 400),
                                Job("late", 0, "default", 1, 1, 4, 400)};
  ReplayResult result = MustReplay(jobs, options);
  EXPECT_EQ(result.cluster_gpus, 12);
  // wide takes the 8-GPU node whole; narrow the two small ones; late waits
  // for the big node although 0 GPUs are free anyway, then runs there.
  EXPECT_EQ(StartsAndFinishes(result), (Times{{0, 100}, {0, 100}, {100, 200}}));

  // A member larger than every node is refused, naming the largest node.
  auto huge = Replay({Job("huge", 0, "default", 1, 1, 16, 100)}, options);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().message(),
            "job huge: role worker wants 16 GPUs per member, the largest node has 8");
  options.inventory = {{"cpu-only", 0, 16000, int64_t{1} << 36, {}}};
  EXPECT_EQ(ValidateReplayOptions(options).message(), "inventory: no node has a GPU");
}

// Two racks of two 4-GPU nodes; rack r1's are H100s.
ReplayOptions TwoRacks(Policy policy) {
  ReplayOptions options = Options(policy, 0);
  const std::string rack = "example.com/rack";
  const std::string model = "nvidia.com/gpu.product";
  options.inventory = {{"a0", 4, 32000, int64_t{1} << 38, {{rack, "r0"}, {model, "A100"}}},
                       {"a1", 4, 32000, int64_t{1} << 38, {{rack, "r0"}, {model, "A100"}}},
                       {"h0", 4, 32000, int64_t{1} << 38, {{rack, "r1"}, {model, "H100"}}},
                       {"h1", 4, 32000, int64_t{1} << 38, {{rack, "r1"}, {model, "H100"}}}};
  options.topology_levels = {rack, "kubernetes.io/hostname"};
  return options;
}

TEST(ReplayTest, ARequiredRackGangWaitsForOneRackAndASpreadGangIsSlowedDown) {
  // A 4-GPU blocker on one node of each rack for 1000 s leaves 4 GPUs free
  // in each rack; then an 8-GPU gang arrives.
  TraceJob in_r0 = Job("in-r0", 0, "default", 1, 1, 4, 4000);
  in_r0.gpu_model = "A100";
  TraceJob in_r1 = Job("in-r1", 0, "default", 1, 1, 4, 4000);
  in_r1.gpu_model = "H100";
  TraceJob gang = Job("gang", 1, "default", 8, 8, 1, 800);  // 100 s on 8 GPUs

  ReplayOptions options = TwoRacks(Policy::kElasticGang);
  options.cross_domain_slowdown = 2;
  // Anywhere: it starts at once over both racks, and runs half as fast.
  ReplayResult result = MustReplay({in_r0, in_r1, gang}, options);
  EXPECT_EQ(StartsAndFinishes(result), (Times{{0, 1000}, {0, 1000}, {1, 201}}));
  EXPECT_EQ(result.jobs[2].start_members, 8);
  EXPECT_EQ(result.jobs[2].start_domains, 2);
  EXPECT_EQ(result.jobs[0].start_domains, 1);

  // Required in one rack: it waits for a rack to empty, then runs at full speed.
  gang.topology = api::TopologySpec{"example.com/rack", api::TopologyMode::kRequired};
  result = MustReplay({in_r0, in_r1, gang}, options);
  EXPECT_EQ(StartsAndFinishes(result), (Times{{0, 1000}, {0, 1000}, {1000, 1100}}));
  EXPECT_EQ(result.jobs[2].start_domains, 1);

  // Without a slowdown the spread gang runs at full speed.
  gang.topology.reset();
  options.cross_domain_slowdown = 1;
  result = MustReplay({in_r0, in_r1, gang}, options);
  EXPECT_EQ(StartsAndFinishes(result), (Times{{0, 1000}, {0, 1000}, {1, 101}}));
}

TEST(ReplayTest, AGpuModelKeepsAJobOnItsNodesAndAnUnknownOneIsRefused) {
  TraceJob h100 = Job("h100", 0, "default", 2, 2, 4, 800);
  h100.gpu_model = "H100";
  TraceJob other = Job("other", 0, "default", 2, 2, 4, 800);
  other.gpu_model = "H100";
  ReplayResult result = MustReplay({h100, other}, TwoRacks(Policy::kElasticGang));
  // Both want the two H100 nodes: one after the other, though the A100s idle.
  EXPECT_EQ(StartsAndFinishes(result), (Times{{0, 100}, {100, 200}}));

  TraceJob unknown = Job("b200", 0, "default", 1, 1, 1, 100);
  unknown.gpu_model = "B200";
  auto refused = Replay({unknown}, TwoRacks(Policy::kElasticGang));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "job b200: no node has GPU model B200 (label nvidia.com/gpu.product)");
  TraceJob wide = Job("wide", 0, "default", 10, 10, 1, 100);
  wide.topology = api::TopologySpec{"example.com/rack", api::TopologyMode::kRequired};
  EXPECT_EQ(Replay({wide}, TwoRacks(Policy::kElasticGang)).status().message(),
            "job wide: needs 10 GPUs in one example.com/rack domain to start under elastic-gang, "
            "the largest has 8");
  wide.topology->mode = api::TopologyMode::kPreferred;
  EXPECT_TRUE(Replay({wide}, TwoRacks(Policy::kElasticGang)).ok());
  TraceJob zone = Job("zone", 0, "default", 1, 1, 1, 100);
  zone.topology = api::TopologySpec{"topology.kubernetes.io/zone", api::TopologyMode::kRequired};
  EXPECT_THAT(Replay({zone}, TwoRacks(Policy::kElasticGang)).status().message(),
              ::testing::HasSubstr("topology level topology.kubernetes.io/zone is not one of"));
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
    if (policy == Policy::kElasticReclaim || policy == Policy::kLas ||
        policy == Policy::kAttainedService) {
      EXPECT_GT(result.evictions, 0);
    } else {
      EXPECT_EQ(result.evictions, 0);
    }
    if (policy != Policy::kPodGreedy) {
      EXPECT_EQ(result.partial_gpu_seconds, 0);
    }
  }
}

// The tree of docs/scheduler-policies.md, without guarantees: org (at most 12
// GPUs) holds team-a and team-b; team-c is a top-level queue. team-a is bound
// to a namespace, which a trace does not have: the restriction is left out.
std::vector<scheduler::QueueSpec> OrgTree() {
  scheduler::QueueSpec org;
  org.name = "org";
  org.max.Set("nvidia.com/gpu", 12);
  scheduler::QueueSpec team_a;
  team_a.name = "team-a";
  team_a.parent = "org";
  team_a.namespaces = {"team-a"};
  scheduler::QueueSpec team_b;
  team_b.name = "team-b";
  team_b.parent = "org";
  scheduler::QueueSpec team_c;
  team_c.name = "team-c";
  return {org, team_a, team_b, team_c};
}

// On 16 GPUs: a1 (8) and b1 (4) run at once; b2 (4) would fit, but would take
// org to 16 GPUs, so it waits for org's max until a1 and b1 end at t=100.
// c1 (team-c, outside org) arrives at t=50 and takes the 4 GPUs org may not.
std::vector<TraceJob> OrgTreeJobs() {
  return {Job("a1", 0, "team-a", 8, 8, 1, 800), Job("b1", 0, "team-b", 4, 4, 1, 400),
          Job("b2", 0, "team-b", 4, 4, 1, 400), Job("c1", 50, "team-c", 4, 4, 1, 400)};
}

const QueueRecord& QueueNamed(const ReplayResult& result, const std::string& name) {
  for (const QueueRecord& queue : result.queues) {
    if (queue.name == name) {
      return queue;
    }
  }
  ADD_FAILURE() << "no queue " << name;
  static const QueueRecord kNone;
  return kNone;
}

TEST(ReplayQueueTreeTest, ParentMaxCapsItsChildrenTogether) {
  ReplayOptions options = Options(Policy::kElasticReclaim, 16);
  options.queues = OrgTree();
  ReplayResult result = MustReplay(OrgTreeJobs(), options);
  ASSERT_EQ(result.jobs.size(), 4u);
  EXPECT_EQ(StartsAndFinishes(result), (Times{{0, 100}, {0, 100}, {100, 200}, {50, 150}}));
  // Until c1 arrives, 4 of the 16 GPUs stay free while b2 waits.
  ASSERT_FALSE(result.timeline.empty());
  EXPECT_DOUBLE_EQ(result.timeline[0].time, 0);
  EXPECT_EQ(result.timeline[0].busy_gpus, 12);
  EXPECT_EQ(result.timeline[0].waiting_jobs, 1);
  EXPECT_EQ(result.stuck_jobs, 0);

  // Without the tree, b2 starts at once and c1 waits for capacity instead.
  ReplayResult flat = MustReplay(OrgTreeJobs(), Options(Policy::kElasticReclaim, 16));
  EXPECT_DOUBLE_EQ(flat.jobs[2].start, 0);
  EXPECT_DOUBLE_EQ(flat.jobs[3].start, 100);
}

TEST(ReplayQueueTreeTest, ParentRowAddsUpItsChildren) {
  ReplayOptions options = Options(Policy::kElasticReclaim, 16);
  options.queues = OrgTree();
  ReplayResult result = MustReplay(OrgTreeJobs(), options);
  // Each parent before its children, siblings by name; no `default` row, as
  // no job names it.
  std::vector<std::string> names;
  for (const QueueRecord& queue : result.queues) {
    names.push_back(queue.name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"org", "team-a", "team-b", "team-c"}));

  const QueueRecord& org = QueueNamed(result, "org");
  const QueueRecord& a = QueueNamed(result, "team-a");
  const QueueRecord& b = QueueNamed(result, "team-b");
  const QueueRecord& c = QueueNamed(result, "team-c");
  EXPECT_EQ(org.parent, "");
  EXPECT_FALSE(org.leaf);
  EXPECT_EQ(org.depth, 0);
  EXPECT_EQ(a.parent, "org");
  EXPECT_TRUE(a.leaf);
  EXPECT_EQ(a.depth, 1);
  EXPECT_EQ(b.parent, "org");
  EXPECT_EQ(c.parent, "");
  EXPECT_TRUE(c.leaf);
  EXPECT_EQ(c.depth, 0);

  EXPECT_EQ(a.jobs, 1);
  EXPECT_DOUBLE_EQ(a.wait_seconds, 0);
  EXPECT_DOUBLE_EQ(a.jct_seconds, 100);
  EXPECT_DOUBLE_EQ(a.gpu_seconds_held, 800);
  EXPECT_EQ(b.jobs, 2);
  EXPECT_DOUBLE_EQ(b.wait_seconds, 100);  // b2
  EXPECT_DOUBLE_EQ(b.jct_seconds, 300);   // 100 + 200
  EXPECT_DOUBLE_EQ(b.gpu_seconds_held, 800);
  EXPECT_EQ(c.jobs, 1);
  EXPECT_DOUBLE_EQ(c.jct_seconds, 100);
  EXPECT_DOUBLE_EQ(c.gpu_seconds_held, 400);

  EXPECT_EQ(org.jobs, 3);
  EXPECT_EQ(org.started, 3);
  EXPECT_EQ(org.finished, 3);
  EXPECT_DOUBLE_EQ(org.wait_seconds, 100);
  EXPECT_DOUBLE_EQ(org.jct_seconds, 400);
  EXPECT_DOUBLE_EQ(org.gpu_seconds_held, 1600);
  EXPECT_EQ(org.jobs, a.jobs + b.jobs);
  EXPECT_EQ(org.started, a.started + b.started);
  EXPECT_EQ(org.finished, a.finished + b.finished);
  EXPECT_DOUBLE_EQ(org.wait_seconds, a.wait_seconds + b.wait_seconds);
  EXPECT_DOUBLE_EQ(org.jct_seconds, a.jct_seconds + b.jct_seconds);
  EXPECT_DOUBLE_EQ(org.gpu_seconds_held, a.gpu_seconds_held + b.gpu_seconds_held);
  EXPECT_DOUBLE_EQ(org.partial_gpu_seconds, a.partial_gpu_seconds + b.partial_gpu_seconds);
  EXPECT_EQ(org.evicted_members, a.evicted_members + b.evicted_members);
  // Everything held is held by some top-level queue.
  EXPECT_DOUBLE_EQ(org.gpu_seconds_held + c.gpu_seconds_held, result.busy_gpu_seconds);
}

TEST(ReplayQueueTreeTest, OtherPoliciesReportAlongTheTreeWithoutItsBounds) {
  ReplayOptions options = Options(Policy::kElasticGang, 16);
  options.queues = OrgTree();
  ReplayResult result = MustReplay(OrgTreeJobs(), options);
  // One queue for every job: org's max does not hold b2 back.
  EXPECT_DOUBLE_EQ(result.jobs[2].start, 0);
  EXPECT_DOUBLE_EQ(result.jobs[3].start, 100);
  ASSERT_EQ(result.queues.size(), 4u);
  EXPECT_EQ(result.queues[0].name, "org");
  EXPECT_EQ(result.queues[0].jobs, 3);
  EXPECT_DOUBLE_EQ(result.queues[0].gpu_seconds_held, 1600);
  EXPECT_DOUBLE_EQ(result.queues[0].wait_seconds, 0);
}

TEST(ReplayQueueTreeTest, RefusesJobsOutsideTheLeavesAndBadTrees) {
  ReplayOptions options = Options(Policy::kElasticReclaim, 16);
  options.queues = OrgTree();
  auto parent = Replay({Job("p", 0, "org", 1, 1, 1, 10)}, options);
  ASSERT_FALSE(parent.ok());
  EXPECT_EQ(parent.status().message(),
            "job p: queue \"org\" has child queues; jobs run in a leaf queue");
  auto unknown = Replay({Job("u", 0, "team-z", 1, 1, 1, 10)}, options);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().message(),
            "job u: queue \"team-z\" is not configured; configured queues: default, org, "
            "team-a, team-b, team-c");
  // Under every policy: the queues are checked before the replay.
  options.policy = Policy::kStaticGang;
  EXPECT_FALSE(Replay({Job("p", 0, "org", 1, 1, 1, 10)}, options).ok());
  // `default` is a top-level leaf even when not configured.
  EXPECT_TRUE(Replay({Job("d", 0, "default", 1, 1, 1, 10)}, options).ok());

  options.queues[1].parent = "orgs";
  Status bad_tree = ValidateReplayOptions(options);
  ASSERT_FALSE(bad_tree.ok());
  EXPECT_EQ(bad_tree.message(), "queues[1].parent: no queue named \"orgs\"");
}

TEST(PolicyTest, NamesRoundTrip) {
  for (Policy policy : AllPolicies()) {
    auto parsed = ParsePolicy(PolicyName(policy));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, policy);
  }
  EXPECT_FALSE(ParsePolicy("fifo").ok());
  EXPECT_EQ(ParsePolicy("las").value(), Policy::kLas);
  EXPECT_EQ(ParsePolicy("attained-service").value(), Policy::kAttainedService);
  EXPECT_EQ(AllPolicies().back(), Policy::kAttainedService) << "--policy all runs it";
}

}  // namespace
}  // namespace hybridjob::sim::trace
