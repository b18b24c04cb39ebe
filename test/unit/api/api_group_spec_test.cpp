#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/group_spec.h>
#include <hybridjob/api/json.h>

#include "job_fixtures.h"

namespace hybridjob::api {
namespace {

using ::testing::HasSubstr;

TEST(GroupSpecTest, DefaultsOfAnAnnotationThatSaysLittle) {
  Result<GroupSpec> parsed = ParseGroupSpec(R"({"roles":[{"name":"launcher"},
                                                          {"name":"worker","min":0,"max":4}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->roles[0], (GroupRole{"launcher", 1, 1, 0}));
  EXPECT_EQ(parsed->roles[1], (GroupRole{"worker", 0, 4, 0}));
  EXPECT_EQ(parsed->queue, "") << "no queue named: the namespace's default applies";
  EXPECT_FALSE(parsed->schedule_timeout_seconds.has_value());
  EXPECT_EQ(parsed->ScheduleTimeoutSeconds(), kDefaultScheduleTimeoutSeconds);
  EXPECT_NE(parsed->FindRole("worker"), nullptr);
  EXPECT_EQ(parsed->FindRole("ps"), nullptr);
  EXPECT_EQ(parsed->roles[0].max_replicas, 1) << "max defaults to min, at least 1";
}

TEST(GroupSpecTest, FormatThenParseGivesTheSameSpec) {
  const GroupSpec specs[] = {
      {{{"ps", 1, 1, 0}, {"worker", 2, 8, 5}}, "research", 120},
      {{{"worker", 0, 4, 0}}, "", std::nullopt},
      {{{"a", 0, 0, 0}, {"b", 3, 3, -2}}, "q", 0},
      {{{"ps", 1, 1, 0, TopologySpec{"", TopologyMode::kNone}},
        {"chief", 1, 1, 0, TopologySpec{"example.com/zone", TopologyMode::kPreferred}},
        {"worker", 2, 8, 0}},
       "",
       std::nullopt,
       TopologySpec{"example.com/rack", TopologyMode::kRequired}},
      {{{"ps", 0, 1, 0, std::nullopt, {0}}, {"worker", 1, 8, 0, std::nullopt, {0, 3, 7}}},
       "",
       0},
  };
  for (const GroupSpec& spec : specs) {
    const std::string text = FormatGroupSpec(spec);
    Result<GroupSpec> again = ParseGroupSpec(text);
    ASSERT_TRUE(again.ok()) << text << ": " << again.status().ToString();
    EXPECT_EQ(*again, spec) << text;
  }
}

TEST(GroupSpecTest, FormatWritesOnlyWhatIsSetInAFixedKeyOrder) {
  EXPECT_EQ(FormatGroupSpec({{{"ps", 1, 1, 0}, {"worker", 2, 4, 5}}, "research", 120}),
            R"({"roles":[{"name":"ps","min":1,"max":1,"priority":0},)"
            R"({"name":"worker","min":2,"max":4,"priority":5}],)"
            R"("queue":"research","scheduleTimeoutSeconds":120})");
  EXPECT_EQ(FormatGroupSpec({{{"w", 1, 2, 0}}, "", std::nullopt}),
            R"({"roles":[{"name":"w","min":1,"max":2,"priority":0}]})");
  EXPECT_EQ(FormatGroupSpec({{{"w", 0, 2, 0, std::nullopt, {0, 1}}}, "", 0}),
            R"({"roles":[{"name":"w","min":0,"max":2,"priority":0,"completed":[0,1]}],)"
            R"("scheduleTimeoutSeconds":0})");
  EXPECT_EQ(
      FormatGroupSpec({{{"ps", 1, 1, 0, TopologySpec{"", TopologyMode::kNone}}, {"w", 1, 2, 0}},
                       "",
                       std::nullopt,
                       TopologySpec{"example.com/rack", TopologyMode::kPreferred}}),
      R"({"roles":[{"name":"ps","min":1,"max":1,"priority":0,"topology":{"mode":"None"}},)"
      R"({"name":"w","min":1,"max":2,"priority":0}],)"
      R"("topology":{"level":"example.com/rack","mode":"Preferred"}})");
}

TEST(GroupSpecTest, RefusesBadSpecsNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "not valid JSON"},
      {"nope", "not valid JSON"},
      {"[]", "must be an object"},
      {R"({})", "roles: at least one role"},
      {R"({"roles":[]})", "roles: at least one role"},
      {R"({"roles":"a"})", "roles: must be a list"},
      {R"({"roles":[{"min":1}]})", "roles[0].name: required"},
      {R"({"roles":[{"name":"a"},{"name":"a"}]})", "roles[1].name: duplicate role \"a\""},
      {R"({"roles":[{"name":"a","min":3,"max":2}]})", "roles[0]: need 0 <= min <= max"},
      {R"({"roles":[{"name":"a","min":-1,"max":2}]})", "roles[0]: need 0 <= min <= max"},
      {R"({"roles":[{"name":"a","min":0,"max":0}]})", "roles: every role has max 0"},
      {R"({"roles":[{"name":"a","max":2,"completed":[2]}]})",
       "roles[0].completed[0]: index 2 is outside [0, max 2)"},
      {R"({"roles":[{"name":"a","max":2,"completed":[-1]}]})", "roles[0].completed[0]: index -1"},
      {R"({"roles":[{"name":"a","max":4,"completed":[1,1]}]})",
       "roles[0].completed[1]: indices must ascend without repeats"},
      {R"({"roles":[{"name":"a","max":4,"completed":[2,0]}]})",
       "roles[0].completed[1]: indices must ascend"},
      {R"({"roles":[{"name":"a","max":4,"completed":["0"]}]})",
       "roles[0].completed[0]: must be an integer"},
      {R"({"roles":[{"name":"a","max":4,"completed":3}]})", "roles[0].completed: must be a list"},
      {R"({"roles":[{"name":"a","max":1000000}]})", "roles[0].max: more than 100000"},
      {R"({"roles":[{"name":"a","min":"1"}]})", "roles[0].min: must be an integer"},
      {R"({"roles":[{"name":"a","priority":4294967296}]})",
       "roles[0].priority: must be a 32-bit integer"},
      {R"({"roles":[{"name":"a"}],"scheduleTimeoutSeconds":-5})",
       "scheduleTimeoutSeconds: must not be negative"},
      {R"({"roles":[{"name":"a"}],"queue":7})", "queue: must be a string"},
      {R"({"roles":[{"name":"a"}],"topology":{"mode":"Required"}})",
       "topology.level: required unless the mode is None"},
      {R"({"roles":[{"name":"a"}],"topology":{"mode":"None"}})", "topology.mode: None is only"},
      {R"({"roles":[{"name":"a"}],"topology":{"level":"r","mode":"required"}})",
       "topology.mode: unsupported value \"required\": must be one of Required, Preferred, None"},
      {R"({"roles":[{"name":"a","topology":{"level":"r","mode":"None"}}]})",
       "roles[0].topology.level: required unless the mode is None, and only then"},
  };
  for (const auto& [text, error] : cases) {
    Result<GroupSpec> parsed = ParseGroupSpec(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(parsed.status().message(), HasSubstr(error)) << text;
    EXPECT_THAT(parsed.status().message(), ::testing::StartsWith("group spec: ")) << text;
  }
}

TEST(GroupSpecTest, OfAJobTakesEveryRoleWithItsEffectiveMaximum) {
  Result<HybridJob> job = ParseHybridJob(testing::TfJobJson());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  ApplyDefaults(*job);
  job->spec.queue = "research";
  job->spec.run_policy.schedule_timeout_seconds = 60;
  const GroupSpec spec = GroupSpecOf(*job);
  ASSERT_EQ(spec.roles.size(), job->spec.replica_specs.size());
  for (size_t i = 0; i < spec.roles.size(); ++i) {
    const ReplicaSpec& role = job->spec.replica_specs[i];
    EXPECT_EQ(spec.roles[i], (GroupRole{role.name, role.min_replicas, role.EffectiveMaxReplicas(),
                                        role.priority}));
  }
  EXPECT_FALSE(spec.topology.has_value());

  job->spec.topology = TopologySpec{"example.com/rack", TopologyMode::kRequired};
  job->spec.replica_specs[0].topology = TopologySpec{"", TopologyMode::kNone};
  EXPECT_EQ(GroupSpecOf(*job).topology, job->spec.topology);
  EXPECT_EQ(GroupSpecOf(*job).roles[0].topology, job->spec.replica_specs[0].topology);
  EXPECT_FALSE(GroupSpecOf(*job).roles[1].topology.has_value());
  EXPECT_EQ(spec.queue, "research");
  EXPECT_EQ(spec.schedule_timeout_seconds, 60);

  job->spec.queue.reset();
  job->spec.run_policy.schedule_timeout_seconds.reset();
  EXPECT_EQ(GroupSpecOf(*job).queue, "");
  EXPECT_FALSE(GroupSpecOf(*job).schedule_timeout_seconds.has_value());
}

}  // namespace
}  // namespace hybridjob::api
