// What one caller of the dashboard sees: its namespaces' jobs, the GPU map
// and every queue only with `list nodes`.
#include <gtest/gtest.h>

#include <hybridjob/scheduler/shell/dashboard.h>

namespace hybridjob::scheduler {
namespace {

DashboardState TwoTeams() {
  DashboardState state;
  state.at = "2026-01-01T00:00:00Z";
  state.leading = true;
  QueueView org;
  org.name = "org";
  org.leaf = false;
  QueueView team_a;
  team_a.name = "team-a";
  team_a.parent = "org";
  team_a.waiting = {{"a", "wait-a", 1, "InsufficientCapacity", ""},
                    {"b", "wait-b-in-a", 2, "InsufficientCapacity", ""}};
  QueueView team_b;
  team_b.name = "team-b";
  team_b.parent = "org";
  team_b.served = {{"b", "served-b", 3600, 1}};
  QueueView other;
  other.name = "other";
  state.queues = {org, team_a, team_b, other};
  state.running = {{"a", "run-a", "team-a", 2, 2000}, {"b", "run-b", "team-b", 4, 4000}};
  NodeView node;
  node.name = "node-1";
  node.milli_gpus = 8000;
  node.used_milli_gpus = 6000;
  node.holders = {{"b/run-b", 4000}, {"a/run-a", 2000}};
  state.map.nodes = {node};
  state.map.milli_gpus = 8000;
  state.map.used_milli_gpus = 6000;
  return state;
}

std::vector<std::string> Names(const std::vector<QueueView>& queues) {
  std::vector<std::string> out;
  for (const QueueView& queue : queues) {
    out.push_back(queue.name);
  }
  return out;
}

TEST(DashboardScopeTest, NamespacesOfEveryJobAndHolder) {
  EXPECT_EQ(NamespacesOf(TwoTeams()), (std::set<std::string>{"a", "b"}));
}

TEST(DashboardScopeTest, ANamespaceReaderSeesItsJobsAndTheirQueuesButNoMap) {
  DashboardScope scope;
  scope.namespaces = {"a"};
  const DashboardState seen = VisibleState(TwoTeams(), scope);
  ASSERT_EQ(seen.running.size(), 1u);
  EXPECT_EQ(seen.running[0].name, "run-a");
  EXPECT_EQ(Names(seen.queues), (std::vector<std::string>{"org", "team-a"}))
      << "its queue and the parent it hangs in, not team-b's or the unrelated one";
  ASSERT_EQ(seen.queues[1].waiting.size(), 1u);
  EXPECT_EQ(seen.queues[1].waiting[0].name, "wait-a");
  EXPECT_FALSE(seen.map_visible);
  const nlohmann::json json = ToJson(seen);
  EXPECT_TRUE(json["gpuMap"].is_null());
  EXPECT_EQ(json.dump().find("run-b"), std::string::npos);
  EXPECT_EQ(json.dump().find("served-b"), std::string::npos);
  EXPECT_EQ(json.dump().find("wait-b-in-a"), std::string::npos);
}

TEST(DashboardScopeTest, ANodeReaderSeesTheMapWithOtherNamespacesHoldersHidden) {
  DashboardScope scope;
  scope.namespaces = {"a"};
  scope.cluster = true;
  const DashboardState seen = VisibleState(TwoTeams(), scope);
  EXPECT_EQ(Names(seen.queues), (std::vector<std::string>{"org", "team-a", "team-b", "other"}));
  EXPECT_TRUE(seen.queues[2].served.empty()) << "b's job is still not a's to see";
  ASSERT_TRUE(seen.map_visible);
  ASSERT_EQ(seen.map.nodes.size(), 1u);
  const auto& holders = seen.map.nodes[0].holders;
  ASSERT_EQ(holders.size(), 2u);
  EXPECT_EQ(holders[0].job, "a/run-a");
  EXPECT_EQ(holders[1].job, std::string(kHiddenHolder));
  EXPECT_EQ(holders[1].milli_gpus, 4000);
  EXPECT_EQ(ToJson(seen).dump().find("b/run-b"), std::string::npos);
}

TEST(DashboardScopeTest, EveryNamespaceAndNodesIsTheWholeState) {
  DashboardScope scope;
  scope.all_namespaces = true;
  scope.cluster = true;
  EXPECT_EQ(ToJson(VisibleState(TwoTeams(), scope)), ToJson(TwoTeams()));
}

}  // namespace
}  // namespace hybridjob::scheduler
