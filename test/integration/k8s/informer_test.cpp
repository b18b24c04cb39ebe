// Watch and informer behaviour against the real kube-apiserver: events, 410
// Gone, API server restarts, and the cache matching a fresh list afterwards.
#include <atomic>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/informer.h>
#include <hybridjob/k8s/rest_client.h>

#include "test_cluster.h"

namespace hybridjob::k8s {
namespace {

using hybridjob::testing::AdminClient;
using hybridjob::testing::PrivateCluster;
using hybridjob::testing::TestNamespace;
using hybridjob::testing::WaitFor;
using nlohmann::json;
using namespace std::chrono_literals;

json ConfigMap(const std::string& name, const std::string& value, const std::string& group = "a") {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", {{"group", group}}}}},
          {"data", {{"key", value}}}};
}

// name -> data.key of every ConfigMap in the namespace, by a fresh list.
std::map<std::string, std::string> FreshList(ApiClient& client, const std::string& ns) {
  std::map<std::string, std::string> out;
  auto list = ListAll(client, resources::ConfigMaps(), ns, {});
  EXPECT_TRUE(list.ok()) << list.status().ToString();
  if (list) {
    for (const auto& item : list->items) {
      if (item.contains("data")) {
        out[item["metadata"]["name"]] = item["data"].value("key", "");
      }
    }
  }
  return out;
}

std::map<std::string, std::string> CacheContents(const Informer<json>& informer) {
  std::map<std::string, std::string> out;
  for (const auto& item : informer.store().List()) {
    if (item->contains("data")) {
      out[(*item)["metadata"]["name"]] = (*item)["data"].value("key", "");
    }
  }
  return out;
}

InformerOptions<json> ConfigMapInformerOptions(const std::string& ns) {
  InformerOptions<json> options;
  options.reflector.resource = resources::ConfigMaps();
  options.reflector.namespace_name = ns;
  options.reflector.initial_backoff = 100ms;
  options.reflector.max_backoff = 1s;
  return options;
}

struct Recorded {
  std::mutex mu;
  std::vector<std::string> events;  // "ADD name", "UPDATE name", "DELETE name [tombstone]"
  void Push(std::string event) {
    std::lock_guard lock(mu);
    events.push_back(std::move(event));
  }
  bool Contains(const std::string& event) {
    std::lock_guard lock(mu);
    return std::find(events.begin(), events.end(), event) != events.end();
  }
};

EventHandler<json> Recorder(Recorded& recorded) {
  EventHandler<json> handler;
  handler.on_add = [&](const auto& obj) {
    recorded.Push("ADD " + (*obj)["metadata"]["name"].template get<std::string>());
  };
  handler.on_update = [&](const auto&, const auto& obj) {
    recorded.Push("UPDATE " + (*obj)["metadata"]["name"].template get<std::string>());
  };
  handler.on_delete = [&](const auto& obj, bool unknown) {
    recorded.Push("DELETE " + (*obj)["metadata"]["name"].template get<std::string>() +
                  (unknown ? " tombstone" : ""));
  };
  return handler;
}

TEST(InformerTest, SyncsThenDeliversAddUpdateDeleteAndIndexes) {
  auto client = AdminClient();
  TestNamespace ns(*client);
  ASSERT_TRUE(client->Create(resources::ConfigMaps(), ns.name(), ConfigMap("before", "1")).ok());

  Informer<json> informer(*client, ConfigMapInformerOptions(ns.name()));
  Recorded recorded;
  informer.AddEventHandler(Recorder(recorded));
  informer.AddIndexer("group", indexers::ByLabel("group"));
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(30s));
  EXPECT_TRUE(recorded.Contains("ADD before"));

  ASSERT_TRUE(client->Create(resources::ConfigMaps(), ns.name(), ConfigMap("x", "1", "b")).ok());
  ASSERT_TRUE(client
                  ->Patch(resources::ConfigMaps(), ns.name(), "x", PatchType::kMerge,
                          R"({"data":{"key":"2"}})")
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return recorded.Contains("UPDATE x"); }));
  EXPECT_TRUE(recorded.Contains("ADD x"));
  ASSERT_TRUE(WaitFor([&] {
    auto x = informer.store().Get(ns.name() + "/x");
    return x && (*x)["data"]["key"] == "2";
  }));
  EXPECT_EQ(informer.store().ByIndex("group", "b").size(), 1u);
  EXPECT_EQ(informer.store().ByIndex("group", "a").size(), 1u);
  EXPECT_FALSE(informer.store().Get(ns.name() + "/x")->at("metadata").contains("managedFields"));

  ASSERT_TRUE(client->Delete(resources::ConfigMaps(), ns.name(), "x").ok());
  ASSERT_TRUE(WaitFor([&] { return recorded.Contains("DELETE x"); }));
  EXPECT_EQ(informer.store().Get(ns.name() + "/x"), nullptr);
  EXPECT_TRUE(informer.store().ByIndex("group", "b").empty());
  informer.Stop();
}

TEST(InformerTest, StopReturnsPromptlyDuringAnIdleWatch) {
  auto client = AdminClient();
  TestNamespace ns(*client);
  auto informer = std::make_unique<Informer<json>>(*client, ConfigMapInformerOptions(ns.name()));
  informer->Start();
  ASSERT_TRUE(informer->WaitForSync(30s));
  std::this_thread::sleep_for(300ms);  // the watch is open and idle now
  const auto start = std::chrono::steady_clock::now();
  informer->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
}

TEST(WatchTest, StreamsEventsAsTheyHappen) {
  auto client = AdminClient();
  TestNamespace ns(*client);
  auto list = client->List(resources::ConfigMaps(), ns.name(), {});
  ASSERT_TRUE(list.ok());
  WatchOptions options;
  options.resource_version = list->resource_version;
  options.timeout = 30s;
  auto watch = client->Watch(resources::ConfigMaps(), ns.name(), options);
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  std::thread writer([&] {
    std::this_thread::sleep_for(200ms);
    (void)client->Create(resources::ConfigMaps(), ns.name(), ConfigMap("s", "1"));
  });
  auto event = (*watch)->Next();
  writer.join();
  ASSERT_TRUE(event.ok()) << event.status().ToString();
  ASSERT_TRUE(event->has_value());
  EXPECT_EQ((*event)->type, WatchEventType::kAdded);
  EXPECT_EQ((*event)->object["metadata"]["name"], "s");
}

// The informer survives a crash of kube-apiserver; writes of another resource
// move etcd's revision on, so its resume point is too old after the restart
// (410 Gone) and it must relist. Changes made while it was disconnected —
// including a delete — must all reach the cache.
TEST(InformerRestartTest, CacheMatchesFreshListAcrossApiServerRestartAndGone) {
  PrivateCluster cluster;
  ASSERT_TRUE(cluster.ok());
  auto client = cluster.AdminClient();
  ASSERT_NE(client, nullptr);
  const std::string ns = "default";
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(
        client->Create(resources::ConfigMaps(), ns, ConfigMap("cm-" + std::to_string(i), "0"))
            .ok());
  }

  auto options = ConfigMapInformerOptions(ns);
  options.reflector.initial_backoff = 1s;
  options.reflector.max_backoff = 2s;
  Informer<json> informer(*client, options);
  Recorded recorded;
  informer.AddEventHandler(Recorder(recorded));
  informer.Start();
  ASSERT_TRUE(informer.WaitForSync(30s));

  // Seen live.
  ASSERT_TRUE(client
                  ->Patch(resources::ConfigMaps(), ns, "cm-0", PatchType::kMerge,
                          R"({"data":{"key":"live"}})")
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return CacheContents(informer) == FreshList(*client, ns); }));

  // Revisions the ConfigMap watch never sees.
  for (int i = 0; i < 20; ++i) {
    json secret = {{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata", {{"name", "s-" + std::to_string(i)}}},
                   {"stringData", {{"k", "v"}}}};
    ASSERT_TRUE(client->Create(resources::Secrets(), ns, secret).ok());
  }

  const std::string before_restart = informer.LastResourceVersion();
  ASSERT_TRUE(cluster.Restart("apiserver"));

  // The API server's watch cache now starts past the old resourceVersion.
  {
    WatchOptions stale;
    stale.resource_version = before_restart;
    stale.timeout = 10s;
    auto watch = client->Watch(resources::ConfigMaps(), ns, stale);
    if (watch.ok()) {
      auto event = (*watch)->Next();
      ASSERT_TRUE(event.ok()) << event.status().ToString();
      ASSERT_TRUE(event->has_value());
      EXPECT_EQ((*event)->type, WatchEventType::kError);
      EXPECT_TRUE(IsGone((*event)->error)) << (*event)->error.ToString();
    } else {
      EXPECT_TRUE(IsGone(watch.status())) << watch.status().ToString();
    }
  }

  // Changes while the informer is still reconnecting.
  ASSERT_TRUE(client
                  ->Patch(resources::ConfigMaps(), ns, "cm-1", PatchType::kMerge,
                          R"({"data":{"key":"while-down"}})")
                  .ok());
  ASSERT_TRUE(client->Delete(resources::ConfigMaps(), ns, "cm-2").ok());
  ASSERT_TRUE(client->Create(resources::ConfigMaps(), ns, ConfigMap("new", "1")).ok());

  ASSERT_TRUE(WaitFor([&] { return CacheContents(informer) == FreshList(*client, ns); }, 60s))
      << "cache never converged to a fresh list";
  EXPECT_GE(informer.stats().relists_after_gone.load(), 1u)
      << "expected the resume after restart to be too old (410) and to relist";
  EXPECT_TRUE(recorded.Contains("DELETE cm-2") || recorded.Contains("DELETE cm-2 tombstone"));
  EXPECT_TRUE(recorded.Contains("ADD new"));

  // And it keeps watching after the relist.
  ASSERT_TRUE(client->Create(resources::ConfigMaps(), ns, ConfigMap("after", "1")).ok());
  ASSERT_TRUE(WaitFor([&] { return informer.store().Get(ns + "/after") != nullptr; }));
  informer.Stop();
}

}  // namespace
}  // namespace hybridjob::k8s
