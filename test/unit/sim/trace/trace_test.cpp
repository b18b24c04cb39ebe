#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/sim/trace/trace.h>

namespace hybridjob::sim::trace {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(TraceCsvTest, ReadsJobsWithWorkOrDuration) {
  auto jobs = ParseTraceCsv(
      "# a comment\n"
      "id,submit_s,queue,roles,work_gpu_s,duration_s\n"
      "\n"
      "a,0,team-a,worker:2:8:1,3600,\n"
      "b,12.5,team-b,launcher:1:1:0;worker:4:4:8,,600\r\n");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 2u);
  const TraceJob& a = (*jobs)[0];
  EXPECT_EQ(a.id, "a");
  EXPECT_EQ(a.queue, "team-a");
  EXPECT_EQ(a.roles, (std::vector<TraceRole>{{"worker", 2, 8, 1}}));
  EXPECT_DOUBLE_EQ(a.work_gpu_seconds, 3600);
  EXPECT_DOUBLE_EQ(a.DurationAtMax(), 450);
  const TraceJob& b = (*jobs)[1];
  EXPECT_DOUBLE_EQ(b.submit_seconds, 12.5);
  ASSERT_EQ(b.roles.size(), 2u);
  EXPECT_EQ(b.roles[0], (TraceRole{"launcher", 1, 1, 0}));
  EXPECT_EQ(b.MaxGpus(), 32);
  EXPECT_EQ(b.MinGpus(), 32);
  EXPECT_DOUBLE_EQ(b.work_gpu_seconds, 600 * 32);  // duration at max size
}

TEST(TraceCsvTest, ErrorsNameTheLine) {
  const std::string header = "id,submit_s,queue,roles,work_gpu_s,duration_s\n";
  struct Case {
    std::string text;
    std::string message;
  };
  std::vector<Case> cases = {
      {"id,submit\n", "line 1: expected the header"},
      {header + "a,0,q,worker:1:1:1,10,\nb,x,q,worker:1:1:1,10,\n",
       "line 3: submit_s: \"x\" is not a number"},
      {header + "# c\na,0,q,worker:1:1,10,\n", "line 3: roles: \"worker:1:1\" is not"},
      {header + "a,0,q,worker:3:2:1,10,\n", "line 2: roles: worker: need 0 <= min <= max"},
      {header + "a,0,q,worker:1:1:1,10,20\n", "line 2: exactly one of work and duration"},
      {header + "a,0,q,worker:1:1:1,,\n", "line 2: exactly one of work and duration"},
      {header + "a,0,q,worker:1:1:0,10,\n", "line 2: roles: the job needs at least one GPU"},
      {header + "a,0,q,worker:1:1:1,10\n", "line 2: expected 6 fields, found 5"},
      {header + "a,-1,q,worker:1:1:1,10,\n", "line 2: submit: must be"},
      {header + "a,0,q,w:1:1:1;w:1:1:1,10,\n", "line 2: roles: duplicate role \"w\""},
      {header + "a,0,q,worker:1:1:1,-5,\n", "line 2: work: must be positive"},
      {"", "empty trace"},
  };
  for (const Case& c : cases) {
    auto jobs = ParseTraceCsv(c.text);
    ASSERT_FALSE(jobs.ok()) << c.text;
    EXPECT_THAT(jobs.status().message(), HasSubstr(c.message)) << c.text;
  }
}

TEST(TraceCsvTest, ReadsTopologyAndGpuModelColumns) {
  const std::string header = "id,submit_s,queue,roles,work_gpu_s,duration_s,topology,gpu_model\n";
  auto jobs = ParseTraceCsv(header +
                            "a,0,q,worker:8:8:1,800,,example.com/rack,A100\n"
                            "b,0,q,worker:2:4:1,800,,example.com/rack:Preferred,\n"
                            "c,0,q,worker:1:1:1,800,,,\n");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_TRUE((*jobs)[0].topology.has_value());
  EXPECT_EQ((*jobs)[0].topology->level, "example.com/rack");
  EXPECT_EQ((*jobs)[0].topology->mode, api::TopologyMode::kRequired);
  EXPECT_EQ((*jobs)[0].gpu_model, "A100");
  EXPECT_EQ((*jobs)[1].topology->mode, api::TopologyMode::kPreferred);
  EXPECT_TRUE((*jobs)[1].gpu_model.empty());
  EXPECT_FALSE((*jobs)[2].topology.has_value());
  // The round trip keeps them.
  auto again = ParseTraceCsv(FormatTraceCsv(*jobs));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(*again, *jobs);

  auto error = [&](const std::string& line) {
    auto parsed = ParseTraceCsv(header + line);
    return parsed.ok() ? std::string("accepted") : parsed.status().message();
  };
  EXPECT_EQ(error("a,0,q,worker:1:1:1,10,,example.com/rack:Always,\n"),
            "line 2: topology: mode \"Always\" is not Required or Preferred");
  EXPECT_EQ(error("a,0,q,worker:1:1:1,10,,bad level,\n"),
            "line 2: topology: level \"bad level\" is not a label key");
  EXPECT_EQ(error("a,0,q,worker:1:1:1,10,,,A 100\n"),
            "line 2: gpu_model: \"A 100\" is not a label value");
  EXPECT_EQ(error("a,0,q,worker:1:1:1,10,\n"), "line 2: expected 8 fields, found 6");
}

TEST(TraceJsonLinesTest, ReadsTopologyAndGpuModel) {
  auto jobs = ParseTraceJsonLines(
      R"({"id":"a","submit":0,"roles":[{"name":"w","min":1,"max":1,"gpus":1}],"work":10,)"
      R"("topology":{"level":"example.com/rack","mode":"Preferred"},"gpuModel":"H100"})"
      "\n");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  EXPECT_EQ((*jobs)[0].topology->mode, api::TopologyMode::kPreferred);
  EXPECT_EQ((*jobs)[0].gpu_model, "H100");
  auto bad = ParseTraceJsonLines(
      R"({"id":"a","submit":0,"roles":[{"name":"w","min":1,"max":1,"gpus":1}],"work":10,)"
      R"("topology":{"level":"example.com/rack","modes":"x"}})");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("line 1: topology: must be {"));
}

TEST(TraceJsonLinesTest, ReadsJobs) {
  auto jobs = ParseTraceJsonLines(
      "{\"id\":\"a\",\"submit\":5,\"queue\":\"q\",\"roles\":[{\"name\":\"worker\",\"min\":1,"
      "\"max\":4,\"gpus\":2}],\"work\":800}\n"
      "\n"
      "{\"id\":\"b\",\"submit\":6,\"roles\":[{\"name\":\"worker\",\"min\":1,\"max\":1,"
      "\"gpus\":1}],\"duration\":30}\n");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 2u);
  EXPECT_EQ((*jobs)[0].roles, (std::vector<TraceRole>{{"worker", 1, 4, 2}}));
  EXPECT_DOUBLE_EQ((*jobs)[0].work_gpu_seconds, 800);
  EXPECT_EQ((*jobs)[1].queue, "default");
  EXPECT_DOUBLE_EQ((*jobs)[1].work_gpu_seconds, 30);
}

TEST(TraceJsonLinesTest, ErrorsNameTheLine) {
  const std::string good =
      "{\"id\":\"a\",\"submit\":0,\"roles\":[{\"name\":\"w\",\"min\":1,\"max\":1,\"gpus\":1}],"
      "\"work\":1}\n";
  auto broken = ParseTraceJsonLines(good + "{\"id\":\n");
  ASSERT_FALSE(broken.ok());
  EXPECT_THAT(broken.status().message(), StartsWith("line 2: not a JSON object"));
  auto unknown = ParseTraceJsonLines(good + good + "{\"id\":\"c\",\"gpus\":1}\n");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), StartsWith("line 3: unknown field \"gpus\""));
  auto bad_role = ParseTraceJsonLines(
      "{\"id\":\"a\",\"submit\":0,\"roles\":[{\"name\":\"w\",\"min\":\"1\"}],\"work\":1}\n");
  ASSERT_FALSE(bad_role.ok());
  EXPECT_THAT(bad_role.status().message(), StartsWith("line 1: roles: unknown field or bad"));
}

TEST(TraceTest, DetectsTheFormatSortsAndRefusesDuplicates) {
  auto csv = ParseTrace(
      "id,submit_s,queue,roles,work_gpu_s,duration_s\n"
      "late,50,q,worker:1:1:1,10,\n"
      "early,5,q,worker:1:1:1,10,\n");
  ASSERT_TRUE(csv.ok()) << csv.status().message();
  EXPECT_EQ((*csv)[0].id, "early");
  auto json = ParseTrace(
      "# comment\n{\"id\":\"a\",\"submit\":0,\"roles\":[{\"name\":\"w\",\"min\":1,\"max\":1,"
      "\"gpus\":1}],\"work\":1}\n");
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(json->size(), 1u);
  auto duplicate = ParseTrace(
      "id,submit_s,queue,roles,work_gpu_s,duration_s\n"
      "a,0,q,worker:1:1:1,10,\n"
      "a,1,q,worker:1:1:1,10,\n");
  ASSERT_FALSE(duplicate.ok());
  EXPECT_THAT(duplicate.status().message(), HasSubstr("duplicate job id \"a\""));
}

TEST(TraceTest, CsvRoundTrips) {
  TraceJob job;
  job.id = "j";
  job.submit_seconds = 1.25;
  job.queue = "team-a";
  job.roles = {TraceRole{"ps", 1, 1, 0}, TraceRole{"worker", 2, 8, 8}};
  job.work_gpu_seconds = 12345.5;
  auto parsed = ParseTraceCsv(FormatTraceCsv({job}));
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ(parsed->size(), 1u);
  EXPECT_EQ((*parsed)[0], job);
}

}  // namespace
}  // namespace hybridjob::sim::trace
