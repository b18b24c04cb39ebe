#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <hybridjob/api/json.h>
#include <hybridjob/cli/output.h>
#include <hybridjob/cli/reports.h>

#include "cluster_objects.h"

namespace hybridjob::cli {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using testing::Job;
using testing::Member;
using testing::Node;

scheduler::SchedulerConfig ConfigOf(const std::string& yaml) {
  Result<scheduler::SchedulerConfig> config = scheduler::ParseSchedulerConfig(yaml);
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return config.ok() ? *config : scheduler::SchedulerConfig{};
}

const QueueRow* Row(const QueuesReport& report, const std::string& name) {
  for (const QueueRow& row : report.queues) {
    if (row.name == name) {
      return &row;
    }
  }
  return nullptr;
}

TEST(JobStatusReportTest, RolesMembersAndWhyItWaits) {
  nlohmann::json job = Job("team", "bert", "prod", 2, 3, "Queued", 2, "Fragmented");
  job["status"]["restartCount"] = 1;
  std::vector<nlohmann::json> pods = {Member("team", "bert", "prod", 1, 2),
                                      Member("team", "bert", "prod", 0, 2, "node-1")};
  nlohmann::json other_run = Member("team", "bert", "prod", 2, 2);
  other_run["metadata"]["labels"][std::string(api::kRunLabel)] = "3";
  pods.push_back(other_run);
  pods[0]["status"]["conditions"] = {
      {{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}};

  Result<JobStatusReport> report = BuildJobStatus(job, pods, scheduler::GpuResources(), "");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->phase, "Queued");
  EXPECT_EQ(report->queue, "prod");
  EXPECT_EQ(report->position, 2);
  EXPECT_EQ(report->reason, "Fragmented");
  EXPECT_EQ(report->message, "the numbers");
  EXPECT_EQ(report->restarts, 1);
  EXPECT_EQ(report->milli_gpus, 4000);
  EXPECT_EQ(report->bound_milli_gpus, 2000);
  ASSERT_EQ(report->roles.size(), 1u);
  EXPECT_EQ(report->roles[0].min_replicas, 2);
  EXPECT_EQ(report->roles[0].max_replicas, 3);
  ASSERT_EQ(report->members.size(), 2u) << "the member of another run is left out";
  EXPECT_EQ(report->members[0].name, "bert-worker-0");
  EXPECT_EQ(report->members[0].node, "node-1");
  EXPECT_EQ(report->members[1].waiting, "Unschedulable");

  const std::string table = FormatTable(*report);
  EXPECT_THAT(table, HasSubstr("Queue:       prod (position 2)\n"));
  EXPECT_THAT(table, HasSubstr("Waiting:     Fragmented: the numbers\n"));
  EXPECT_THAT(table, HasSubstr("GPUs:        2 on nodes, of 4 asked\n"));
  EXPECT_THAT(table, HasSubstr("bert-worker-0   worker   0       Running   node-1   2      0"));
  const nlohmann::json data = ToJson(*report);
  EXPECT_EQ(data["queue"],
            nlohmann::json({{"name", "prod"}, {"position", 2}, {"source", "status"}}));
  EXPECT_EQ(data["waiting"]["reason"], "Fragmented");
}

// A member the scheduler left out of its gang's placement waits with reason
// GangSurplus, which the WAITING column shows as it shows any other reason.
TEST(JobStatusReportTest, WaitingShowsEveryPodScheduledReasonGangSurplusIncluded) {
  const nlohmann::json job = Job("team", "bert", "prod", 1, 3, "Running");
  std::vector<nlohmann::json> pods = {Member("team", "bert", "prod", 0, 1, "node-1"),
                                      Member("team", "bert", "prod", 1, 1),
                                      Member("team", "bert", "prod", 2, 1)};
  pods[1]["status"]["conditions"] = {{{"type", "PodScheduled"},
                                      {"status", "False"},
                                      {"reason", "GangSurplus"},
                                      {"message", "gang bert was placed without this member"}}};
  pods[2]["status"]["conditions"] = {
      {{"type", "PodScheduled"}, {"status", "False"}, {"reason", "Unschedulable"}}};
  Result<JobStatusReport> report = BuildJobStatus(job, pods, scheduler::GpuResources(), "");
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  ASSERT_EQ(report->members.size(), 3u);
  EXPECT_EQ(report->members[0].waiting, "");
  EXPECT_EQ(report->members[1].waiting, "GangSurplus");
  EXPECT_EQ(report->members[2].waiting, "Unschedulable");
  EXPECT_THAT(FormatTable(*report),
              ContainsRegex("bert-worker-1 +worker +1 +Pending +- +1 +0 +GangSurplus"));
  EXPECT_EQ(ToJson(*report)["members"][1]["waiting"], "GangSurplus");

  // Once bound, a stale reason is no longer why it waits.
  controller::ObservedPod bound;
  bound.node_name = "node-1";
  bound.surplus = true;
  EXPECT_EQ(MemberWaiting(bound), "");
}

// The queue `status` shows is the one the scheduler uses: where it says the
// job waits, else the one the job names (the run's record once started),
// else the namespace's default queue, else `default`; each says which.
TEST(JobStatusReportTest, QueueIsTheOneTheSchedulerUsesAndSaysWhereItComesFrom) {
  nlohmann::json unnamed = Job("team", "bert", "", 1, 1, "Running");
  unnamed["spec"].erase("queue");
  auto queue_of = [](const nlohmann::json& object, const std::optional<std::string>& ns_default) {
    Result<api::HybridJob> job = api::ParseHybridJob(object);
    EXPECT_TRUE(job.ok()) << job.status().ToString();
    const JobQueue queue = ResolveJobQueue(job.ok() ? *job : api::HybridJob{}, ns_default);
    return queue.name + " " + std::string(QueueOriginName(queue.origin));
  };
  EXPECT_EQ(queue_of(unnamed, ""), "default default");
  EXPECT_EQ(queue_of(unnamed, "research"), "research namespaceDefault");
  EXPECT_EQ(queue_of(unnamed, std::nullopt), "default defaultUnlessNamespace");
  EXPECT_EQ(queue_of(Job("team", "bert", "prod", 1, 1, "Running"), std::nullopt), "prod spec");
  nlohmann::json waiting = Job("team", "bert", "", 1, 1, "Queued", 3, "Fragmented");
  waiting["spec"].erase("queue");
  waiting["status"]["queue"]["name"] = "research";
  EXPECT_EQ(queue_of(waiting, ""), "research status");
  // A started run keeps the queue it started with; an edit waits for the next.
  nlohmann::json edited = Job("team", "bert", "later", 1, 1, "Running");
  edited["status"]["runSpec"] = {
      {"hash", "h"},
      {"revision", "bert-h"},
      {"group",
       {{"roles", {{{"name", "worker"}, {"min", 1}, {"max", 1}, {"priority", 0}}}},
        {"queue", "prod"}}}};
  EXPECT_EQ(queue_of(edited, ""), "prod spec");

  auto line = [&](const std::optional<std::string>& ns_default) {
    Result<JobStatusReport> report =
        BuildJobStatus(unnamed, {}, scheduler::GpuResources(), ns_default);
    EXPECT_TRUE(report.ok());
    return report.ok() ? QueueText(*report) : "";
  };
  EXPECT_EQ(line(""), "default (no spec.queue)");
  EXPECT_EQ(line("research"), "research (no spec.queue: the default queue of namespace team)");
  EXPECT_EQ(line(std::nullopt),
            "default (no spec.queue; unless namespace team names a default queue: it could not "
            "be read)");
  Result<JobStatusReport> report = BuildJobStatus(unnamed, {}, scheduler::GpuResources(), "");
  ASSERT_TRUE(report.ok());
  EXPECT_THAT(FormatTable(*report), HasSubstr("Queue:       default (no spec.queue)\n"));
  EXPECT_EQ(ToJson(*report)["queue"], nlohmann::json({{"name", "default"}, {"source", "default"}}));
}

TEST(JobStatusReportTest, AnInvalidJobStillShowsWhatItHas) {
  nlohmann::json job = Job("team", "broken", "prod", 1, 1, "Failed");
  job["spec"]["replicaSpecs"][0]["minReplicas"] = -1;
  Result<JobStatusReport> report = BuildJobStatus(job, {}, scheduler::GpuResources(), "");
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->name, "broken");
  EXPECT_EQ(report->phase, "Failed");
  EXPECT_FALSE(BuildJobStatus(nlohmann::json(42), {}, scheduler::GpuResources(), "").ok());
}

TEST(QueuesReportTest, UsageGuaranteesCeilingsAndTheLineAsTheSchedulerCountsThem) {
  const auto config = ConfigOf(
      "queues:\n"
      "  - name: research\n    weight: 2\n    guaranteed: {nvidia.com/gpu: 8}\n"
      "  - name: prod\n    order: StrictFIFO\n    max: {nvidia.com/gpu: 12}\n");
  ClusterObjects objects;
  objects.nodes = {Node("n0", 8), Node("n1", 8)};
  objects.jobs = {Job("team", "resnet", "research", 2, 2),
                  Job("team", "bert", "prod", 1, 1),
                  Job("team", "late", "prod", 1, 1, "Queued", 2, "InsufficientCapacity"),
                  Job("team", "early", "prod", 1, 1, "Queued", 1, "QueueLimit"),
                  Job("team", "giant", "prod", 1, 1, "Queued", 0, "NeverFits"),
                  Job("other", "lost", "nowhere", 1, 1, "Queued", 0, "UnknownQueue")};
  objects.pods = {Member("team", "resnet", "research", 0, 4, "n0", 2, 2),
                  Member("team", "resnet", "research", 1, 4, "n1", 2, 2),
                  Member("team", "bert", "prod", 0, 3, "n0")};
  // A pod claiming a job it does not belong to is not counted in that job's
  // queue: the scheduler accounts it to `default`.
  nlohmann::json forged = Member("team", "bert", "prod", 1, 1, "n1");
  forged["metadata"]["ownerReferences"][0]["uid"] = "someone-else";
  objects.pods.push_back(forged);

  const QueuesReport report = BuildQueuesReport(objects, config);
  const QueueRow* research = Row(report, "research");
  ASSERT_NE(research, nullptr);
  EXPECT_EQ(research->used.Scalar("nvidia.com/gpu"), 8);
  EXPECT_EQ(research->guaranteed.Scalar("nvidia.com/gpu"), 8);
  EXPECT_DOUBLE_EQ(research->weight, 2.0);
  const QueueRow* prod = Row(report, "prod");
  ASSERT_NE(prod, nullptr);
  EXPECT_EQ(prod->used.Scalar("nvidia.com/gpu"), 3);
  EXPECT_EQ(Row(report, "default")->used.Scalar("nvidia.com/gpu"), 1);
  EXPECT_EQ(prod->order, "StrictFIFO");
  EXPECT_EQ(prod->max.ToString(), "nvidia.com/gpu=12");
  ASSERT_EQ(prod->waiting.size(), 3u);
  EXPECT_EQ(prod->waiting[0].name, "early");
  EXPECT_EQ(prod->waiting[1].name, "late");
  EXPECT_EQ(prod->waiting[2].name, "giant");  // not in line: last
  const QueueRow* nowhere = Row(report, "nowhere");
  ASSERT_NE(nowhere, nullptr);
  EXPECT_FALSE(nowhere->configured);
  EXPECT_EQ(nowhere->waiting.size(), 1u);
  EXPECT_EQ(report.capacity.Scalar("nvidia.com/gpu"), 16);

  const std::string table = FormatTable(report);
  EXPECT_THAT(table, HasSubstr("QUEUE "));
  EXPECT_THAT(table, HasSubstr("nowhere (not configured)"));
  EXPECT_THAT(table, HasSubstr("prod                       -        1        StrictFIFO       -   "
                               "               nvidia.com/gpu=3   3 GPUs       nvidia.com/gpu=12   "
                               "3\n"));
  // Nobody asks for more than it has (no member is pending): each queue's
  // fair share is what it uses.
  EXPECT_EQ(research->fair_milli_gpus, 8000);
  EXPECT_EQ(prod->fair_milli_gpus, 3000);
  EXPECT_THAT(table, HasSubstr("Waiting in prod:\n  POSITION   JOB          REASON\n"
                               "  1          team/early   QueueLimit\n"
                               "  2          team/late    InsufficientCapacity\n"
                               "  -          team/giant   NeverFits\n"));
  const nlohmann::json data = ToJson(report);
  EXPECT_EQ(data["queues"][2]["name"], "prod");
  EXPECT_EQ(data["queues"][2]["max"], nlohmann::json({{"nvidia.com/gpu", "12"}}));
  EXPECT_EQ(data["queues"][2]["waiting"][0], nlohmann::json({{"namespace", "team"},
                                                             {"name", "early"},
                                                             {"reason", "QueueLimit"},
                                                             {"position", 1},
                                                             {"message", "the numbers"}}));
}

TEST(AttainedServiceReportTest, StatusAndQueuesShowWhatTheSchedulerPersisted) {
  const auto config = ConfigOf("queues:\n  - name: research\n    order: AttainedService\n");
  nlohmann::json long_job = Job("team", "long", "research", 1, 1, "Running");
  long_job["status"]["attainedService"] = {{"gpuSeconds", 5 * 3600 + 360}, {"level", 1},
                                          {"queue", "research"}};
  nlohmann::json short_job = Job("team", "short", "research", 1, 1, "Running");
  short_job["status"]["attainedService"] = {{"gpuSeconds", 600}, {"level", 0},
                                           {"queue", "research"}};
  nlohmann::json done = Job("team", "done", "research", 1, 1, "Succeeded");
  done["status"]["attainedService"] = {{"gpuSeconds", 60}, {"level", 0}, {"queue", "research"}};

  Result<JobStatusReport> status = BuildJobStatus(long_job, {}, scheduler::GpuResources(), "");
  ASSERT_TRUE(status.ok());
  EXPECT_THAT(FormatTable(*status),
              HasSubstr("Attained:    5.1 GPU-h (level 1 of queue research)\n"));
  EXPECT_EQ(ToJson(*status)["attainedService"]["gpuSeconds"], 5 * 3600 + 360);

  ClusterObjects objects;
  objects.nodes = {Node("n0", 8)};
  objects.jobs = {long_job, short_job, done};
  const QueuesReport report = BuildQueuesReport(objects, config);
  const QueueRow* research = Row(report, "research");
  ASSERT_NE(research, nullptr);
  EXPECT_EQ(research->order, "AttainedService");
  ASSERT_EQ(research->served.size(), 2u) << "a finished job is not listed";
  EXPECT_EQ(research->served[0].name, "short");
  EXPECT_THAT(FormatTable(report),
              HasSubstr("Attained service in research (least served first):\n"
                        "  LEVEL   JOB          ATTAINED SERVICE\n"
                        "  0       team/short   10 GPU-min\n"
                        "  1       team/long    5.1 GPU-h\n"));
  EXPECT_EQ(ToJson(report)["queues"][1]["attainedService"][1],
            nlohmann::json({{"namespace", "team"}, {"name", "long"}, {"gpuSeconds", 18360},
                            {"level", 1}}));
}

TEST(NodesReportTest, TheGpuMapByDomainWithItsHoldersAndFragments) {
  const auto config = ConfigOf("topology:\n  levels: [example.com/rack]\n");
  ClusterObjects objects;
  objects.nodes = {Node("n1", 8, "r1"), Node("n0", 8, "r0"), Node("n2", 8, "r1"),
                   Node("down", 8, "r1", /*ready=*/false)};
  objects.jobs = {Job("team", "a", "default", 2, 2), Job("team", "b", "default", 1, 1)};
  objects.pods = {Member("team", "a", "default", 0, 6, "n0", 2, 2),
                  Member("team", "a", "default", 1, 2, "n1", 2, 2),
                  Member("team", "b", "default", 0, 4, "n1")};

  const NodesReport report = BuildNodesReport(objects, config);
  ASSERT_EQ(report.nodes.size(), 4u);
  EXPECT_EQ(report.nodes[0].name, "n0");  // rack r0 first
  EXPECT_EQ(report.nodes[1].name, "down");
  EXPECT_EQ(report.nodes[2].name, "n1");
  EXPECT_EQ(report.nodes[2].used_milli_gpus, 6000);
  ASSERT_EQ(report.nodes[2].holders.size(), 2u);
  EXPECT_EQ(report.nodes[2].holders[0].job, "team/b");  // most GPUs first
  EXPECT_EQ(report.milli_gpus, 32000);
  EXPECT_EQ(report.used_milli_gpus, 12000);
  // Free: 2 on n0 and 2 on n1 (in pieces), 8 on idle n2; none on the NotReady node.
  EXPECT_EQ(report.fragmented_free, 4000);
  EXPECT_EQ(report.largest_free, 8000);
  ASSERT_EQ(report.domains.size(), 2u);
  EXPECT_EQ(report.domains[1].value, "r1");
  EXPECT_EQ(report.domains[1].nodes, 3);
  EXPECT_EQ(report.domains[1].largest_free, 8000);

  const std::string table = FormatTable(report);
  EXPECT_THAT(table, HasSubstr("NODE   RACK   GPUS   USED   FREE   STATUS"));
  EXPECT_THAT(table, HasSubstr("n1     r1     8      6      2      Ready      team/b:4,team/a:2"));
  EXPECT_THAT(table, HasSubstr("down   r1     8      0      8      NotReady   -"));
  EXPECT_THAT(table, HasSubstr("GPUs: 32, 12 used, 20 free (4 of them on nodes in use"));
}

TEST(OutputTest, YamlSaysWhatJsonSays) {
  const nlohmann::json data = {{"name", "a"},
                               {"count", 3},
                               {"ok", true},
                               {"list", {"x", "007"}},
                               {"nested", {{"empty", nlohmann::json::object()}}}};
  const YAML::Node yaml = YAML::Load(FormatData(data, OutputFormat::kYaml));
  EXPECT_EQ(yaml["name"].as<std::string>(), "a");
  EXPECT_EQ(yaml["count"].as<int>(), 3);
  EXPECT_TRUE(yaml["ok"].as<bool>());
  EXPECT_EQ(yaml["list"][1].as<std::string>(), "007") << "strings stay strings";
  EXPECT_TRUE(yaml["nested"]["empty"].IsMap());
  EXPECT_EQ(nlohmann::json::parse(FormatData(data, OutputFormat::kJson)), data);
  EXPECT_EQ(*ParseOutputFormat("yaml"), OutputFormat::kYaml);
  EXPECT_EQ(*ParseOutputFormat(""), OutputFormat::kTable);
  EXPECT_THAT(ParseOutputFormat("wide").status().message(), HasSubstr("use json or yaml"));
}

}  // namespace
}  // namespace hybridjob::cli
