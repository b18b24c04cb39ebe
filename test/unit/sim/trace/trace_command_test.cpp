// `hybridjob-sim trace`, run in-process: the reports it writes and how it
// fails on a bad --scheduler-config file.
#include "trace_command.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace hybridjob::sim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// The tree of docs/scheduler-policies.md without guarantees; team-a is bound
// to a namespace, which does not apply to a trace.
constexpr const char* kTreeConfig = R"(queues:
  - name: org
    max: {nvidia.com/gpu: 12}
  - name: team-a
    parent: org
    namespaces: [team-a]
  - name: team-b
    parent: org
  - name: team-c
)";

// On 16 GPUs under elastic-reclaim: b2 waits for org's max until t=100; c1
// (outside org) starts when it arrives.
constexpr const char* kTreeTrace = R"(id,submit_s,queue,roles,work_gpu_s,duration_s
a1,0,team-a,worker:8:8:1,800,
b1,0,team-b,worker:4:4:1,400,
b2,0,team-b,worker:4:4:1,400,
c1,50,team-c,worker:4:4:1,400,
)";

constexpr const char* kQueuesHeader =
    "policy,queue,parent,leaf,jobs,started,finished,avg_wait_s,avg_jct_s,gpu_hours,"
    "partial_gpu_hours,evicted_members,share_distance_gpus,avg_first_wait_s,lost_gpu_hours\n";

class TraceCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / ("trace-command-" + std::string(test->name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) const {
    std::string path = (dir_ / name).string();
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
    return path;
  }

  static std::string Read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // Runs `hybridjob-sim trace ARGS...`; keeps what it printed.
  int Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"hybridjob-sim", "trace"});
    std::vector<char*> argv;
    for (std::string& arg : args) {
      argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    ::testing::internal::CaptureStdout();
    ::testing::internal::CaptureStderr();
    int code = RunTraceCommand(static_cast<int>(args.size()), argv.data());
    stderr_ = ::testing::internal::GetCapturedStderr();
    stdout_ = ::testing::internal::GetCapturedStdout();
    return code;
  }

  fs::path dir_;
  std::string stdout_;
  std::string stderr_;
};

TEST_F(TraceCommandTest, SchedulerConfigQueuesAreReplayedAndReportedInQueuesCsv) {
  std::string config = Write("scheduler.yaml", kTreeConfig);
  std::string trace = Write("trace.csv", kTreeTrace);
  fs::path out = dir_ / "out";
  ASSERT_EQ(Run({"--trace", trace, "--gpus", "16", "--policy", "elastic-reclaim",
                 "--scheduler-config", config, "--out", out.string()}),
            0)
      << stderr_;
  for (const char* name : {"summary.csv", "jobs.csv", "queues.csv", "timeline.svg", "trace.csv"}) {
    EXPECT_TRUE(fs::exists(out / name)) << name;
  }
  EXPECT_THAT(stdout_, HasSubstr((out / "queues.csv").string()));
  // org: waits 0, 0, 100; completion times 100, 100, 200; 1600 GPU-seconds.
  // Until t=100 b2 waits: org is held at its max (12, its share), and within
  // it team-b's share is 6 (org's 12 halved; team-a asks for its 8), so
  // team-b, holding 4, is 2 GPUs off. team-a and team-c never have work
  // waiting.
  EXPECT_EQ(Read(out / "queues.csv"),
            std::string(kQueuesHeader) +
                "elastic-reclaim,org,,false,3,3,3,33.333,133.333,0.444,0.000,0,0.000,33.333,"
                "0.000\n"
                "elastic-reclaim,team-a,org,true,1,1,1,0.000,100.000,0.222,0.000,0,,0.000,0.000\n"
                "elastic-reclaim,team-b,org,true,2,2,2,50.000,150.000,0.222,0.000,0,2.000,50.000,"
                "0.000\n"
                "elastic-reclaim,team-c,,true,1,1,1,0.000,100.000,0.111,0.000,0,,0.000,0.000\n");
  EXPECT_THAT(Read(out / "jobs.csv"), HasSubstr("\nelastic-reclaim,b2,team-b,4,4,0.000,100.000,"));
}

TEST_F(TraceCommandTest, WithoutSchedulerConfigEveryTraceQueueIsTopLevel) {
  std::string trace = Write("trace.csv", kTreeTrace);
  fs::path out = dir_ / "out";
  ASSERT_EQ(Run({"--trace", trace, "--gpus", "16", "--policy", "all", "--out", out.string()}), 0)
      << stderr_;
  std::string csv = Read(out / "queues.csv");
  EXPECT_THAT(csv, StartsWith(kQueuesHeader));
  EXPECT_THAT(csv, HasSubstr("\nelastic-reclaim,team-a,,true,1,1,1,"));
  EXPECT_THAT(csv, HasSubstr("\npod-greedy,team-b,,true,2,2,2,"));
  EXPECT_THAT(csv, Not(HasSubstr(",org,")));
}

TEST_F(TraceCommandTest, BadSchedulerConfigFailsNamingTheFileAndField) {
  std::string config = Write("bad.yaml",
                             "queues:\n  - name: org\n  - name: team-a\n"
                             "    parent: orgs\n");
  std::string trace = Write("trace.csv", kTreeTrace);
  fs::path out = dir_ / "out";
  EXPECT_EQ(Run({"--trace", trace, "--gpus", "16", "--policy", "all", "--scheduler-config", config,
                 "--out", out.string()}),
            1);
  EXPECT_EQ(stderr_,
            "hybridjob-sim trace: " + config + ": queues[1].parent: no queue named \"orgs\"\n");
  EXPECT_FALSE(fs::exists(out));

  EXPECT_EQ(Run({"--trace", trace, "--gpus", "16", "--policy", "all", "--scheduler-config",
                 (dir_ / "missing.yaml").string(), "--out", out.string()}),
            1);
  EXPECT_THAT(stderr_, HasSubstr("cannot read " + (dir_ / "missing.yaml").string()));
}

TEST_F(TraceCommandTest, JobInAParentQueueIsRefused) {
  std::string config = Write("scheduler.yaml", kTreeConfig);
  std::string trace = Write("trace.csv",
                            "id,submit_s,queue,roles,work_gpu_s,duration_s\n"
                            "p1,0,org,worker:1:1:1,100,\n");
  EXPECT_EQ(Run({"--trace", trace, "--gpus", "16", "--policy", "elastic-reclaim",
                 "--scheduler-config", config, "--out", (dir_ / "out").string()}),
            1);
  EXPECT_EQ(stderr_,
            "hybridjob-sim trace: elastic-reclaim: job p1: queue \"org\" has child queues; jobs "
            "run in a leaf queue\n");
}

TEST_F(TraceCommandTest, AnInventoryFileIsTheClusterInsteadOfGpus) {
  std::string trace = Write("trace.csv", kTreeTrace);
  std::string inventory = Write("nodes.csv",
                                "name,gpus,cpu,memory,labels\n"
                                "a0,8,64,512Gi,example.com/rack=r0\n"
                                "b0,4,32,256Gi,example.com/rack=r1\n"
                                "b1,4,32,256Gi,example.com/rack=r1\n");
  fs::path out = dir_ / "out";
  ASSERT_EQ(Run({"--trace", trace, "--inventory", inventory, "--policy", "elastic-gang", "--out",
                 out.string()}),
            0)
      << stderr_;
  EXPECT_THAT(stdout_, HasSubstr("4 jobs on 16 GPUs (3 nodes from " + inventory + ")"));
  EXPECT_THAT(Read(out / "summary.csv"), HasSubstr("elastic-gang,4,4,"));

  EXPECT_EQ(Run({"--trace", trace, "--inventory", inventory, "--gpus", "16", "--policy", "all",
                 "--out", out.string()}),
            2);
  EXPECT_THAT(stderr_, HasSubstr("give exactly one of --gpus G and --inventory FILE"));
  EXPECT_EQ(Run({"--trace", trace, "--inventory", inventory, "--gpus-per-node", "4", "--policy",
                 "all", "--out", out.string()}),
            2);
  std::string broken = Write("broken.csv", "name,gpus,cpu,memory,labels\nx,8,64,1Gi,rack\n");
  EXPECT_EQ(
      Run({"--trace", trace, "--inventory", broken, "--policy", "all", "--out", out.string()}), 1);
  EXPECT_THAT(stderr_, HasSubstr(broken + ": line 2: labels: \"rack\" is not key=value"));
}

TEST_F(TraceCommandTest, LasThresholdFlagsDecideWhetherAShortJobPreempts) {
  // a holds the 8 GPUs for 1000 s; b (100 s) arrives at t=200, when a has
  // held 1600 GPU-seconds.
  std::string trace = Write("trace.csv",
                            "id,submit_s,queue,roles,work_gpu_s,duration_s\n"
                            "a,0,default,worker:1:1:8,8000,\n"
                            "b,200,default,worker:1:1:8,800,\n");
  fs::path out = dir_ / "out";
  std::vector<std::string> args = {
      "--trace",          trace, "--gpus",         "8", "--policy", "las",
      "--eviction-grace", "0",   "--restart-delay", "0", "--checkpoint-interval", "0",
      "--out",            out.string()};
  // First threshold 1 GPU-hour: b waits until a reaches it at t=450, then
  // preempts it; a ends 100 s late.
  ASSERT_EQ(Run(args), 0) << stderr_;
  std::string jobs = Read(out / "jobs.csv");
  EXPECT_THAT(jobs, HasSubstr("\nlas,b,default,8,8,200.000,450.000,550.000,"));
  EXPECT_THAT(jobs, HasSubstr("\nlas,a,default,8,8,0.000,0.000,1100.000,"));
  // 0.25 GPU-hours: a is on level 1 before b arrives, and b preempts at once.
  std::vector<std::string> low = args;
  low.insert(low.end(), {"--las-first-threshold", "0.25"});
  ASSERT_EQ(Run(low), 0) << stderr_;
  EXPECT_THAT(Read(out / "jobs.csv"), HasSubstr("\nlas,b,default,8,8,200.000,200.000,300.000,"));
  // One level: nobody preempts, b waits for a.
  std::vector<std::string> one = args;
  one.insert(one.end(), {"--las-levels", "1"});
  ASSERT_EQ(Run(one), 0) << stderr_;
  EXPECT_THAT(Read(out / "jobs.csv"), HasSubstr("\nlas,b,default,8,8,200.000,1000.000,1100.000,"));
  // The default costs: b preempts a at t=450; a works through the 30 s grace
  // and, having run less than the 30 min between checkpoints, loses all
  // 3840 GPU-seconds; it is back at t=580 and restarts 60 s later.
  std::vector<std::string> costs = {"--trace", trace, "--gpus", "8", "--policy", "las", "--out",
                                    out.string()};
  ASSERT_EQ(Run(costs), 0) << stderr_;
  EXPECT_THAT(Read(out / "jobs.csv"),
              HasSubstr("\nlas,a,default,8,8,0.000,0.000,1640.000,100.000,1640.000,7.51,0,1,"
                        "0.0,0.000,1,1,4320.0\n"));

  std::vector<std::string> bad_levels = args;
  bad_levels.insert(bad_levels.end(), {"--las-levels", "0"});
  EXPECT_EQ(Run(bad_levels), 2);
  EXPECT_THAT(stderr_, HasSubstr("--las-levels: must be 1 to 16"));
  std::vector<std::string> bad_factor = args;
  bad_factor.insert(bad_factor.end(), {"--las-threshold-factor", "1"});
  EXPECT_EQ(Run(bad_factor), 2);
  EXPECT_THAT(stderr_, HasSubstr("las thresholds"));
}

}  // namespace
}  // namespace hybridjob::sim
