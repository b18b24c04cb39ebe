#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/sim/trace/report.h>

namespace hybridjob::sim::trace {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

JobRecord Record(std::string id, double submit, double start, double finish) {
  JobRecord record;
  record.id = std::move(id);
  record.queue = "q";
  record.min_gpus = 1;
  record.max_gpus = 2;
  record.submit = submit;
  record.start = start;
  record.finish = finish;
  record.not_running_seconds = start >= 0 ? start - submit : 214;
  record.alone_jct_seconds = finish >= 0 ? (finish - submit) / 2 : 0;
  return record;
}

ReplayResult Result() {
  ReplayResult result;
  result.policy = Policy::kElasticGang;
  result.cluster_gpus = 8;
  for (int i = 0; i < 20; ++i) {
    // JCTs 10, 20, ..., 200; waits 1, 2, ..., 20.
    double submit = i;
    result.jobs.push_back(
        Record("j" + std::to_string(i), submit, submit + (i + 1), submit + 10.0 * (i + 1)));
  }
  result.jobs.push_back(Record("never", 5, -1, -1));
  // j3 was off the cluster for 21 s after losing its gang, and lost work.
  result.jobs[3].not_running_seconds += 21;
  result.jobs[3].preemptions = 1;
  result.jobs[3].restarts = 1;
  result.jobs[3].lost_gpu_seconds = 1800;
  result.busy_gpu_seconds = 8 * 219.0 * 0.5;  // half the cluster over the makespan
  result.partial_gpu_seconds = 7200;
  result.waiting_seconds = 100;
  result.busy_gpu_seconds_while_waiting = 8 * 100 * 0.75;
  result.decisions = 500;
  result.planning_wall_seconds = 0.25;
  result.end_time = 219;
  result.timeline = {TimelinePoint{0, 4, 0, 3, 1}, TimelinePoint{100, 8, 0, 0, 2}};
  return result;
}

TEST(ReportTest, SummarizesAReplay) {
  PolicySummary summary = Summarize(Result());
  EXPECT_EQ(summary.policy, "elastic-gang");
  EXPECT_EQ(summary.jobs, 21);
  EXPECT_EQ(summary.finished, 20);
  EXPECT_DOUBLE_EQ(summary.avg_jct_seconds, 105);
  EXPECT_DOUBLE_EQ(summary.p95_jct_seconds, 190);  // nearest rank: the 19th of 20
  // All the time not running, over every job: (210 + 21 + 214) / 21.
  EXPECT_DOUBLE_EQ(summary.avg_wait_seconds, (210.0 + 21 + 214) / 21);
  EXPECT_DOUBLE_EQ(summary.avg_first_wait_seconds, 10.5);
  EXPECT_DOUBLE_EQ(summary.lost_gpu_hours, 0.5);
  EXPECT_DOUBLE_EQ(summary.bound_avg_jct_seconds, 52.5);
  EXPECT_DOUBLE_EQ(summary.makespan_seconds, 219);  // j19: submit 19, finish 219
  EXPECT_DOUBLE_EQ(summary.gpu_util, 0.5);
  EXPECT_DOUBLE_EQ(summary.gpu_util_while_waiting, 0.75);
  EXPECT_DOUBLE_EQ(summary.idle_gpu_hours_while_waiting, 8 * 100 * 0.25 / 3600);
  EXPECT_DOUBLE_EQ(summary.partial_gang_gpu_hours, 2);
  EXPECT_DOUBLE_EQ(summary.decisions_per_second, 2000);
}

TEST(ReportTest, SummaryCsvHasTheContractHeader) {
  std::string csv = SummaryCsv({Summarize(Result())});
  EXPECT_THAT(csv, StartsWith("policy,jobs,finished,avg_jct_s,p95_jct_s,avg_wait_s,makespan_s,"
                              "gpu_util,partial_gang_gpu_hours,decisions_per_s,one_domain_share,"
                              "fragmented_gpu_hours,fragmentation,share_distance_gpus,"
                              "avg_first_wait_s,lost_gpu_hours,bound_avg_jct_s\n"
                              "elastic-gang,21,20,105.0,190.0,21.2,219.0,0.5000,2.00,2000,,"
                              "0.00,0.0000,0.00,10.5,0.50,52.5\n"));
  EXPECT_THAT(SummaryTable({Summarize(Result())}),
              HasSubstr("bound: avg JCT 0.01 h with every job alone at its maximum"));
}

TEST(ReportTest, FragmentationIsAShareOfTheClusterWhileJobsWait) {
  ReplayResult result = Result();
  // 100 s of waiting on 8 GPUs; 2 GPUs free on partly used nodes for 90 s.
  result.fragmented_gpu_seconds = 2 * 90;
  PolicySummary summary = Summarize(result);
  EXPECT_DOUBLE_EQ(summary.fragmented_gpu_hours, 180.0 / 3600);
  EXPECT_DOUBLE_EQ(summary.fragmentation, 180.0 / 800);
  EXPECT_THAT(SummaryCsv({summary}), HasSubstr(",2000,,0.05,0.2250,"));
  EXPECT_THAT(SummaryTable({summary}), HasSubstr("frag_gh"));

  result.waiting_seconds = 0;  // nothing waited: no share to take
  result.fragmented_gpu_seconds = 0;
  EXPECT_DOUBLE_EQ(Summarize(result).fragmentation, 0);
}

TEST(ReportTest, OneDomainShareCountsStartedGangsOfTwoOrMore) {
  ReplayResult result = Result();
  for (JobRecord& job : result.jobs) {
    job.start_members = 0;
  }
  result.jobs[0].start_members = 4;  // a gang in one domain
  result.jobs[0].start_domains = 1;
  result.jobs[1].start_members = 8;  // a gang over two
  result.jobs[1].start_domains = 2;
  result.jobs[2].start_members = 1;  // one member: not a gang
  result.jobs[2].start_domains = 1;
  ASSERT_GE(result.jobs[0].start, 0);
  ASSERT_GE(result.jobs[1].start, 0);
  PolicySummary summary = Summarize(result);
  EXPECT_DOUBLE_EQ(summary.one_domain_share, 0.5);
  EXPECT_THAT(SummaryCsv({summary}), ::testing::HasSubstr(",2000,0.5000,"));
  EXPECT_DOUBLE_EQ(Summarize(Result()).one_domain_share, -1) << "not measured";
}

TEST(ReportTest, JobsCsvLeavesWhatNeverHappenedEmpty) {
  std::string csv = JobsCsv({Result()});
  EXPECT_THAT(csv, StartsWith("policy,job,queue,min_gpus,max_gpus,submit_s,start_s,finish_s,"
                              "wait_s,jct_s,mean_gpus,resizes,evicted_members,partial_gpu_s,"
                              "first_wait_s,preemptions,restarts,lost_gpu_s\n"));
  EXPECT_THAT(csv, HasSubstr("elastic-gang,j0,q,1,2,0.000,1.000,10.000,1.000,10.000,0.00,0,0,0.0,"
                             "1.000,0,0,0.0\n"));
  EXPECT_THAT(csv, HasSubstr("elastic-gang,j3,q,1,2,3.000,7.000,43.000,25.000,40.000,0.00,0,0,"
                             "0.0,4.000,1,1,1800.0\n"));
  EXPECT_THAT(csv, HasSubstr("elastic-gang,never,q,1,2,5.000,,,214.000,,0.00,0,0,0.0,,0,0,0.0\n"));
}

QueueRecord Queue(std::string name, std::string parent, bool leaf) {
  QueueRecord queue;
  queue.name = std::move(name);
  queue.parent = std::move(parent);
  queue.leaf = leaf;
  queue.depth = queue.parent.empty() ? 0 : 1;
  return queue;
}

TEST(ReportTest, QueuesCsvHasOneRowPerQueueAndPolicyAlongTheTree) {
  ReplayResult result;
  result.policy = Policy::kElasticReclaim;
  QueueRecord org = Queue("org", "", false);
  org.jobs = 3;
  org.started = 3;
  org.finished = 2;
  org.wait_seconds = 30;
  org.first_wait_seconds = 30;
  org.lost_gpu_seconds = 3600;
  org.jct_seconds = 500;
  org.gpu_seconds_held = 7200 + 1800;
  org.partial_gpu_seconds = 360;
  org.evicted_members = 4;
  QueueRecord team_a = Queue("team-a", "org", true);
  team_a.jobs = 2;
  team_a.started = 2;
  team_a.finished = 2;
  team_a.wait_seconds = 30;
  team_a.first_wait_seconds = 20;
  team_a.lost_gpu_seconds = 3600;
  team_a.jct_seconds = 500;
  team_a.gpu_seconds_held = 7200;
  team_a.evicted_members = 4;
  team_a.seconds_with_work_waiting = 100;
  team_a.share_distance_gpu_seconds = 250;  // 2.5 GPUs off its share on average
  QueueRecord team_b = Queue("team-b", "org", true);
  team_b.jobs = 1;
  team_b.started = 1;
  team_b.gpu_seconds_held = 1800;
  team_b.partial_gpu_seconds = 360;
  QueueRecord team_c = Queue("team-c", "", true);  // no job: averages left empty
  result.queues = {org, team_a, team_b, team_c};
  ReplayResult other = result;
  other.policy = Policy::kElasticGang;
  other.queues = {team_c};

  EXPECT_EQ(QueuesCsv({result, other}),
            "policy,queue,parent,leaf,jobs,started,finished,avg_wait_s,avg_jct_s,gpu_hours,"
            "partial_gpu_hours,evicted_members,share_distance_gpus,avg_first_wait_s,"
            "lost_gpu_hours\n"
            "elastic-reclaim,org,,false,3,3,2,10.000,250.000,2.500,0.100,4,,10.000,1.000\n"
            "elastic-reclaim,team-a,org,true,2,2,2,15.000,250.000,2.000,0.000,4,2.500,10.000,"
            "1.000\n"
            "elastic-reclaim,team-b,org,true,1,1,0,0.000,,0.500,0.100,0,,0.000,0.000\n"
            "elastic-reclaim,team-c,,true,0,0,0,,,0.000,0.000,0,,,0.000\n"
            "elastic-gang,team-c,,true,0,0,0,,,0.000,0.000,0,,,0.000\n");
  EXPECT_EQ(QueuesCsv({}),
            "policy,queue,parent,leaf,jobs,started,finished,avg_wait_s,avg_jct_s,gpu_hours,"
            "partial_gpu_hours,evicted_members,share_distance_gpus,avg_first_wait_s,"
            "lost_gpu_hours\n");
}

TEST(ReportTest, TimelineSvgHasOneLinePerPolicyAndChart) {
  ReplayResult other = Result();
  other.policy = Policy::kStaticGang;
  std::string svg = TimelineSvg({Result(), other});
  EXPECT_THAT(svg, StartsWith("<svg xmlns=\"http://www.w3.org/2000/svg\""));
  EXPECT_THAT(svg, HasSubstr("</svg>"));
  size_t lines = 0;
  for (size_t at = svg.find("<polyline"); at != std::string::npos;
       at = svg.find("<polyline", at + 1)) {
    ++lines;
  }
  EXPECT_EQ(lines, 4u);
  EXPECT_THAT(svg, HasSubstr(">static-gang</text>"));
  EXPECT_THAT(svg, HasSubstr(">elastic-gang</text>"));
}

}  // namespace
}  // namespace hybridjob::sim::trace
