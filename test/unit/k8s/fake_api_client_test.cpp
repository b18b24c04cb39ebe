// The fake API server keeps the rules the shells' unit tests rely on.
#include <k8s/eventually.h>
#include <k8s/fake_api_client.h>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <hybridjob/k8s/api_status.h>

namespace hybridjob::k8s::testing {
namespace {

using nlohmann::json;

json Pod(const std::string& name, const json& labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"namespace", "team-a"}, {"labels", labels}}},
          {"spec", {{"containers", json::array({{{"name", "main"}}})}}},
          {"status", {{"phase", "Pending"}}}};
}

TEST(FakeApiClientTest, CreateFillsMetadataAndRefusesADuplicate) {
  FakeApiClient api;
  auto created = api.Create(resources::Pods(), "team-a", Pod("p"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_FALSE((*created)["metadata"].value("uid", "").empty());
  EXPECT_FALSE((*created)["metadata"].value("resourceVersion", "").empty());
  auto again = api.Create(resources::Pods(), "team-a", Pod("p"));
  EXPECT_TRUE(IsAlreadyExists(again.status())) << again.status().ToString();
}

TEST(FakeApiClientTest, AStaleUpdateConflictsAndTheStatusNeedsItsSubresource) {
  FakeApiClient api;
  json pod = *api.Create(resources::Pods(), "team-a", Pod("p"));
  json newer = pod;
  newer["metadata"]["labels"]["a"] = "1";
  ASSERT_TRUE(api.Update(resources::Pods(), newer).ok());
  pod["metadata"]["labels"]["a"] = "2";
  EXPECT_TRUE(IsConflict(api.Update(resources::Pods(), pod).status()));

  json current = *api.Get(resources::Pods(), "team-a", "p");
  current["status"]["phase"] = "Running";
  ASSERT_TRUE(api.Update(resources::Pods(), current).ok());
  EXPECT_EQ((*api.Get(resources::Pods(), "team-a", "p"))["status"]["phase"], "Pending");
  current = *api.Get(resources::Pods(), "team-a", "p");
  current["status"]["phase"] = "Running";
  ASSERT_TRUE(api.Update(resources::Pods(), current, "status").ok());
  EXPECT_EQ((*api.Get(resources::Pods(), "team-a", "p"))["status"]["phase"], "Running");
}

TEST(FakeApiClientTest, StrategicMergeOfConditionsMergesByType) {
  FakeApiClient api;
  api.Seed(resources::Pods(), Pod("p"));
  PatchOptions status;
  status.subresource = "status";
  auto patch = [&](const std::string& type, const std::string& reason) {
    json body = {{"status", {{"conditions", json::array({{{"type", type}, {"reason", reason}}})}}}};
    return api.Patch(resources::Pods(), "team-a", "p", PatchType::kStrategicMerge, body.dump(),
                     status);
  };
  ASSERT_TRUE(patch("PodScheduled", "Unschedulable").ok());
  ASSERT_TRUE(patch("GangEviction", "Reclaimed").ok());
  ASSERT_TRUE(patch("PodScheduled", "GangSurplus").ok());
  const json conditions = (*api.Object(resources::Pods(), "team-a", "p"))["status"]["conditions"];
  ASSERT_EQ(conditions.size(), 2u) << conditions.dump();
  EXPECT_EQ(conditions[0]["reason"], "GangSurplus");
  EXPECT_EQ(conditions[1]["reason"], "Reclaimed");
}

TEST(FakeApiClientTest, ABindingTakesOnlyAnUnboundUngatedPodOfTheSameUid) {
  FakeApiClient api;
  json pod = api.Seed(resources::Pods(), Pod("p"));
  const std::string uid = pod["metadata"]["uid"];
  EXPECT_TRUE(IsConflict(BindPod(api, "team-a", "p", "another-uid", "node-1")));
  ASSERT_TRUE(BindPod(api, "team-a", "p", uid, "node-1", {{"example.com/placement", "r1"}}).ok());
  EXPECT_EQ((*api.Object(resources::Pods(), "team-a", "p"))["spec"]["nodeName"], "node-1");
  EXPECT_EQ((*api.Object(resources::Pods(), "team-a",
                         "p"))["metadata"]["annotations"]["example.com/placement"],
            "r1");
  Status twice = BindPod(api, "team-a", "p", uid, "node-2");
  EXPECT_TRUE(IsConflict(twice));
  EXPECT_NE(twice.message().find("already assigned"), std::string::npos) << twice.message();

  json gated = Pod("g");
  gated["spec"]["schedulingGates"] = json::array({{{"name", "wait"}}});
  api.Seed(resources::Pods(), gated);
  EXPECT_TRUE(IsConflict(BindPod(api, "team-a", "g", "", "node-1")));
  EXPECT_TRUE(IsNotFound(BindPod(api, "team-a", "missing", "", "node-1")));
}

TEST(FakeApiClientTest, AnEvictionDeletesThePodItNames) {
  FakeApiClient api;
  json pod = api.Seed(resources::Pods(), Pod("p"));
  EXPECT_TRUE(IsConflict(EvictPod(api, "team-a", "p", "another-uid", "policy/v1")));
  ASSERT_TRUE(
      EvictPod(api, "team-a", "p", pod["metadata"]["uid"].get<std::string>(), "policy/v1").ok());
  EXPECT_FALSE(api.Object(resources::Pods(), "team-a", "p").has_value());
  auto version = DiscoverEvictionApiVersion(api);
  ASSERT_TRUE(version.ok());
  EXPECT_EQ(*version, "policy/v1");
}

TEST(FakeApiClientTest, SelectorsAndPagesFilterLists) {
  FakeApiClient api;
  api.Seed(resources::Pods(), Pod("a", {{"team", "x"}}));
  api.Seed(resources::Pods(), Pod("b", {{"team", "y"}}));
  json done = Pod("c", {{"team", "x"}});
  done["status"]["phase"] = "Succeeded";
  api.Seed(resources::Pods(), done);
  ListOptions options;
  options.label_selector = "team=x";
  options.field_selector = "status.phase!=Succeeded";
  auto list = api.List(resources::Pods(), "team-a", options);
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(list->items[0]["metadata"]["name"], "a");

  ListOptions paged;
  paged.limit = 2;
  auto first = api.List(resources::Pods(), "", paged);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->items.size(), 2u);
  ASSERT_FALSE(first->continue_token.empty());
  paged.continue_token = first->continue_token;
  auto second = api.List(resources::Pods(), "", paged);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->items.size(), 1u);
  EXPECT_TRUE(second->continue_token.empty());
}

// A watch from a list's version replays what changed since; a pod leaving
// the field selector is a DELETED to that watch; a compacted version is 410.
TEST(FakeApiClientTest, WatchesReplayChangesAndExpire) {
  FakeApiClient api;
  api.Seed(resources::Pods(), Pod("a"));
  auto list = api.List(resources::Pods(), "", {});
  ASSERT_TRUE(list.ok());
  json b = api.Seed(resources::Pods(), Pod("b"));
  b["status"]["phase"] = "Succeeded";
  api.Seed(resources::Pods(), b);

  WatchOptions options;
  options.resource_version = list->resource_version;
  options.field_selector = "status.phase!=Succeeded";
  auto watch = api.Watch(resources::Pods(), "", options);
  ASSERT_TRUE(watch.ok());
  auto added = (*watch)->Next();
  ASSERT_TRUE(added.ok() && added->has_value());
  EXPECT_EQ((*added)->type, WatchEventType::kAdded);
  EXPECT_EQ((*added)->object["metadata"]["name"], "b");
  auto left = (*watch)->Next();
  ASSERT_TRUE(left.ok() && left->has_value());
  EXPECT_EQ((*left)->type, WatchEventType::kDeleted);

  ASSERT_TRUE(api.Delete(resources::Pods(), "team-a", "a").ok());
  auto deleted = (*watch)->Next();
  ASSERT_TRUE(deleted.ok() && deleted->has_value());
  EXPECT_EQ((*deleted)->type, WatchEventType::kDeleted);
  EXPECT_EQ((*deleted)->object["metadata"]["name"], "a");

  api.CloseWatches();
  auto closed = (*watch)->Next();
  ASSERT_TRUE(closed.ok());
  EXPECT_FALSE(closed->has_value());

  api.Compact();
  auto expired = api.Watch(resources::Pods(), "", options);
  ASSERT_TRUE(expired.ok());
  auto gone = (*expired)->Next();
  ASSERT_TRUE(gone.ok() && gone->has_value());
  EXPECT_EQ((*gone)->type, WatchEventType::kError);
  EXPECT_TRUE(IsGone((*gone)->error));
}

// WatchesIdle: true only while every open watch waits in Next() with nothing
// left to hand out, so a test can know its watchers have seen every change.
TEST(FakeApiClientTest, WatchesAreIdleOnlyOnceTheirReadersWaitWithNothingLeft) {
  FakeApiClient api;
  EXPECT_TRUE(api.WatchesIdle()) << "no watch open";
  auto watch = api.Watch(resources::Pods(), "", {});
  ASSERT_TRUE(watch.ok());
  EXPECT_FALSE(api.WatchesIdle()) << "nobody reads the watch yet";

  std::mutex mu;
  std::vector<std::string> seen;
  std::thread reader([&] {
    while (true) {
      auto event = (*watch)->Next();
      if (!event.ok() || !event->has_value()) {
        return;
      }
      std::lock_guard lock(mu);
      seen.push_back((**event).object["metadata"]["name"]);
    }
  });
  auto idle = [&] { return api.WatchesIdle(); };
  EXPECT_TRUE(Eventually(idle));
  api.Seed(resources::Pods(), Pod("a"));
  api.Seed(resources::Pods(), Pod("b"));
  ASSERT_TRUE(Eventually(idle));
  {
    std::lock_guard lock(mu);
    EXPECT_EQ(seen, (std::vector<std::string>{"a", "b"})) << "idle only after both were read";
  }
  api.CloseWatches();
  reader.join();
  EXPECT_TRUE(api.WatchesIdle()) << "a closed watch waits for nothing";
}

TEST(FakeApiClientTest, AFaultAnswersInsteadOfTheServerAndChangesNothing) {
  FakeApiClient api;
  api.SetFault([](const FakeApiClient::Request& request) -> std::optional<Status> {
    if (request.verb == "create" && request.subresource.empty()) {
      return Status(StatusCode::kTooManyRequests, "slow down").WithHttp(429, "TooManyRequests");
    }
    return std::nullopt;
  });
  auto created = api.Create(resources::Pods(), "team-a", Pod("p"));
  EXPECT_EQ(created.status().http_status(), 429);
  EXPECT_FALSE(api.Object(resources::Pods(), "team-a", "p").has_value());
  EXPECT_EQ(api.CountRequests("create"), 1u);
}

}  // namespace
}  // namespace hybridjob::k8s::testing
