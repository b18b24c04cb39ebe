// RestClient against the real kube-apiserver of the local cluster.
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/rest_client.h>

#include "test_cluster.h"

namespace hybridjob::k8s {
namespace {

using hybridjob::testing::AdminClient;
using hybridjob::testing::TestNamespace;
using hybridjob::testing::WaitFor;
using nlohmann::json;

json ConfigMap(const std::string& name, const std::string& value) {
  return {{"apiVersion", "v1"},
          {"kind", "ConfigMap"},
          {"metadata", {{"name", name}, {"labels", {{"app", "rest-test"}}}}},
          {"data", {{"key", value}}}};
}

// A small custom resource with a status subresource, to exercise CRD paths.
Resource Widgets() {
  return {"test.hybridjob.io", "v1", "widgets", true};
}

void EnsureWidgetCrd(ApiClient& client) {
  json crd = json::parse(R"({
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.test.hybridjob.io"},
    "spec": {
      "group": "test.hybridjob.io",
      "scope": "Namespaced",
      "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
      "versions": [{
        "name": "v1", "served": true, "storage": true,
        "subresources": {"status": {}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
          "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 0}}},
          "status": {"type": "object", "properties": {"phase": {"type": "string"}}}}}}
      }]
    }
  })");
  auto created = client.Create(resources::CustomResourceDefinitions(), "", crd);
  ASSERT_TRUE(created.ok() || IsAlreadyExists(created.status())) << created.status().ToString();
  ASSERT_TRUE(WaitFor([&] { return client.List(Widgets(), "default", {}).ok(); }))
      << "widget CRD never served";
}

class RestClientTest : public ::testing::Test {
 protected:
  std::unique_ptr<RestClient> client_ = AdminClient();
};

TEST_F(RestClientTest, CreateGetUpdateDeleteConfigMap) {
  TestNamespace ns(*client_);
  auto created = client_->Create(resources::ConfigMaps(), ns.name(), ConfigMap("a", "1"));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_FALSE((*created)["metadata"]["uid"].get<std::string>().empty());

  auto fetched = client_->Get(resources::ConfigMaps(), ns.name(), "a");
  ASSERT_TRUE(fetched.ok()) << fetched.status().ToString();
  EXPECT_EQ((*fetched)["data"]["key"], "1");

  json changed = *fetched;
  changed["data"]["key"] = "2";
  auto updated = client_->Update(resources::ConfigMaps(), changed);
  ASSERT_TRUE(updated.ok()) << updated.status().ToString();
  EXPECT_EQ((*updated)["data"]["key"], "2");

  auto again = client_->Create(resources::ConfigMaps(), ns.name(), ConfigMap("a", "1"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(again.status().http_status(), 409);
  EXPECT_EQ(again.status().reason(), "AlreadyExists");

  ASSERT_TRUE(client_->Delete(resources::ConfigMaps(), ns.name(), "a").ok());
  auto gone = client_->Get(resources::ConfigMaps(), ns.name(), "a");
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(client_->Delete(resources::ConfigMaps(), ns.name(), "a").code(), StatusCode::kNotFound);
}

TEST_F(RestClientTest, StaleUpdateIsConflict) {
  TestNamespace ns(*client_);
  auto created = client_->Create(resources::ConfigMaps(), ns.name(), ConfigMap("c", "1"));
  ASSERT_TRUE(created.ok());
  json first = *created;
  json second = *created;
  first["data"]["key"] = "first";
  ASSERT_TRUE(client_->Update(resources::ConfigMaps(), first).ok());
  second["data"]["key"] = "second";
  auto stale = client_->Update(resources::ConfigMaps(), second);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), StatusCode::kConflict);
  EXPECT_TRUE(stale.status().IsRetriable());
  EXPECT_NE(stale.status().message().find("modified"), std::string::npos)
      << stale.status().message();
}

TEST_F(RestClientTest, DeletePreconditionMismatchIsConflict) {
  TestNamespace ns(*client_);
  ASSERT_TRUE(client_->Create(resources::ConfigMaps(), ns.name(), ConfigMap("p", "1")).ok());
  DeleteOptions options;
  options.precondition_uid = "00000000-0000-0000-0000-000000000000";
  EXPECT_EQ(client_->Delete(resources::ConfigMaps(), ns.name(), "p", options).code(),
            StatusCode::kConflict);
  EXPECT_TRUE(client_->Get(resources::ConfigMaps(), ns.name(), "p").ok());
}

TEST_F(RestClientTest, PatchesMergeJsonStrategicAndApply) {
  TestNamespace ns(*client_);
  ASSERT_TRUE(client_->Create(resources::ConfigMaps(), ns.name(), ConfigMap("m", "1")).ok());

  auto merged = client_->Patch(resources::ConfigMaps(), ns.name(), "m", PatchType::kMerge,
                               R"({"data":{"merged":"yes"}})");
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  EXPECT_EQ((*merged)["data"]["merged"], "yes");
  EXPECT_EQ((*merged)["data"]["key"], "1");

  auto json_patched = client_->Patch(resources::ConfigMaps(), ns.name(), "m", PatchType::kJson,
                                     R"([{"op":"replace","path":"/data/key","value":"2"}])");
  ASSERT_TRUE(json_patched.ok()) << json_patched.status().ToString();
  EXPECT_EQ((*json_patched)["data"]["key"], "2");

  auto failed_test = client_->Patch(resources::ConfigMaps(), ns.name(), "m", PatchType::kJson,
                                    R"([{"op":"test","path":"/data/key","value":"nope"}])");
  EXPECT_FALSE(failed_test.ok());

  auto strategic =
      client_->Patch(resources::ConfigMaps(), ns.name(), "m", PatchType::kStrategicMerge,
                     R"({"metadata":{"labels":{"strategic":"yes"}}})");
  ASSERT_TRUE(strategic.ok()) << strategic.status().ToString();
  EXPECT_EQ((*strategic)["metadata"]["labels"]["strategic"], "yes");

  PatchOptions apply;
  apply.field_manager = "rest-test";
  const std::string applied_cm =
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  owner: rest-test\n";
  auto applied = client_->Patch(resources::ConfigMaps(), ns.name(), "applied", PatchType::kApply,
                                applied_cm, apply);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ((*applied)["data"]["owner"], "rest-test");

  // Another manager changing the same field conflicts unless it forces.
  PatchOptions other;
  other.field_manager = "someone-else";
  const std::string takeover =
      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  owner: other\n";
  auto conflict = client_->Patch(resources::ConfigMaps(), ns.name(), "applied", PatchType::kApply,
                                 takeover, other);
  ASSERT_FALSE(conflict.ok());
  EXPECT_EQ(conflict.status().code(), StatusCode::kConflict);
  other.force = true;
  auto forced = client_->Patch(resources::ConfigMaps(), ns.name(), "applied", PatchType::kApply,
                               takeover, other);
  ASSERT_TRUE(forced.ok()) << forced.status().ToString();
  EXPECT_EQ((*forced)["data"]["owner"], "other");

  PatchOptions no_manager;
  EXPECT_EQ(client_
                ->Patch(resources::ConfigMaps(), ns.name(), "applied", PatchType::kApply, takeover,
                        no_manager)
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

TEST_F(RestClientTest, CustomResourceCrudAndStatusSubresource) {
  EnsureWidgetCrd(*client_);
  TestNamespace ns(*client_);
  json widget = {{"apiVersion", "test.hybridjob.io/v1"},
                 {"kind", "Widget"},
                 {"metadata", {{"name", "w"}}},
                 {"spec", {{"size", 3}}},
                 {"status", {{"phase", "ignored-on-create"}}}};
  auto created = client_->Create(Widgets(), ns.name(), widget);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  // With a status subresource the main endpoint ignores status.
  EXPECT_FALSE(created->contains("status") && (*created)["status"].contains("phase"));

  json with_status = *created;
  with_status["status"] = {{"phase", "Ready"}};
  auto status_written = client_->Update(Widgets(), with_status, "status");
  ASSERT_TRUE(status_written.ok()) << status_written.status().ToString();
  EXPECT_EQ((*status_written)["status"]["phase"], "Ready");

  PatchOptions status_patch;
  status_patch.subresource = "status";
  auto patched = client_->Patch(Widgets(), ns.name(), "w", PatchType::kMerge,
                                R"({"status":{"phase":"Done"}})", status_patch);
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ((*patched)["status"]["phase"], "Done");

  json bad = widget;
  bad["metadata"]["name"] = "bad";
  bad["spec"]["size"] = -1;
  auto refused = client_->Create(Widgets(), ns.name(), bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalid);
  EXPECT_NE(refused.status().message().find("spec.size"), std::string::npos)
      << refused.status().message();

  ASSERT_TRUE(client_->Delete(Widgets(), ns.name(), "w").ok());
}

// The API server's deprecation warnings reach the client once per text:
// v1.20 warns on apiextensions.k8s.io/v1beta1 (removed in 1.22).
TEST_F(RestClientTest, DeprecationWarningsAreHeardOncePerText) {
  std::mutex mu;
  std::vector<std::string> heard;
  client_->SetWarningHandler([&](std::string_view text) {
    std::lock_guard lock(mu);
    heard.emplace_back(text);
  });
  const Resource v1beta1_crds{"apiextensions.k8s.io", "v1beta1", "customresourcedefinitions",
                              false};
  for (int i = 0; i < 3; ++i) {
    auto list = client_->List(v1beta1_crds, "", {});
    ASSERT_TRUE(list.ok()) << list.status().ToString();
  }
  // A current version says nothing.
  ASSERT_TRUE(client_->List(resources::CustomResourceDefinitions(), "", {}).ok());
  std::lock_guard lock(mu);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_NE(heard[0].find("apiextensions.k8s.io/v1beta1 CustomResourceDefinition is deprecated"),
            std::string::npos)
      << heard[0];
}

// Discovery picks the Eviction body the server serves: v1.20 knows only
// policy/v1beta1, and an eviction with that body is accepted.
TEST_F(RestClientTest, EvictionVersionComesFromDiscovery) {
  auto version = DiscoverEvictionApiVersion(*client_);
  ASSERT_TRUE(version.ok()) << version.status().ToString();
  EXPECT_EQ(*version, "policy/v1beta1");
  TestNamespace ns(*client_, "evict");
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "victim"}}},
              {"spec",
               {{"schedulerName", "nobody"},
                {"containers", json::array({{{"name", "main"}, {"image", "x"}}})}}}};
  auto created = client_->Create(resources::Pods(), ns.name(), pod);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const std::string uid = (*created)["metadata"].value("uid", "");
  // A version the server does not serve is refused, and the pod stays.
  const Status refused = EvictPod(*client_, ns.name(), "victim", uid, "policy/v1");
  EXPECT_FALSE(refused.ok());
  EXPECT_FALSE(IsNotFound(refused)) << refused.ToString();
  ASSERT_TRUE(client_->Get(resources::Pods(), ns.name(), "victim").ok());
  const Status evicted = EvictPod(*client_, ns.name(), "victim", uid, *version);
  EXPECT_TRUE(evicted.ok()) << evicted.ToString();
}

TEST_F(RestClientTest, BindingSubresourceSetsNodeName) {
  TestNamespace ns(*client_);
  const std::string node_name = "bind-node-" + ns.name();
  json node = {{"apiVersion", "v1"}, {"kind", "Node"}, {"metadata", {{"name", node_name}}}};
  ASSERT_TRUE(client_->Create(resources::Nodes(), "", node).ok());
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "p"}}},
              {"spec",
               {{"schedulerName", "nobody"},
                {"containers", json::array({{{"name", "c"}, {"image", "busybox"}}})}}}};
  auto created = client_->Create(resources::Pods(), ns.name(), pod);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const std::string uid = (*created)["metadata"]["uid"];

  ASSERT_TRUE(
      BindPod(*client_, ns.name(), "p", uid, node_name, {{"example.com/placement", "rack=r1"}})
          .ok());
  auto bound = client_->Get(resources::Pods(), ns.name(), "p");
  ASSERT_TRUE(bound.ok());
  EXPECT_EQ((*bound)["spec"]["nodeName"], node_name);
  EXPECT_EQ((*bound)["metadata"]["annotations"]["example.com/placement"], "rack=r1")
      << "the API server copies a binding's annotations onto the pod";

  // A pod binds once; a second binding is a Conflict.
  EXPECT_EQ(BindPod(*client_, ns.name(), "p", uid, node_name).code(), StatusCode::kConflict);
  // A stale uid (the pod was recreated) must not bind the new pod.
  EXPECT_FALSE(BindPod(*client_, ns.name(), "missing", "", node_name).ok());
  EXPECT_TRUE(client_->Delete(resources::Nodes(), "", node_name).ok());
}

TEST_F(RestClientTest, PagingThroughTwoThousandObjects) {
  TestNamespace ns(*client_);
  constexpr int kCount = 2000;
  std::vector<std::thread> writers;
  std::atomic<int> failures{0};
  for (int w = 0; w < 8; ++w) {
    writers.emplace_back([&, w] {
      for (int i = w; i < kCount; i += 8) {
        if (!client_
                 ->Create(resources::ConfigMaps(), ns.name(),
                          ConfigMap("cm-" + std::to_string(i), std::to_string(i)))
                 .ok()) {
          ++failures;
        }
      }
    });
  }
  for (auto& t : writers) {
    t.join();
  }
  ASSERT_EQ(failures.load(), 0);

  ListOptions first_page;
  first_page.limit = 300;
  first_page.label_selector = "app=rest-test";
  auto page = client_->List(resources::ConfigMaps(), ns.name(), first_page);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->items.size(), 300u);
  EXPECT_FALSE(page->continue_token.empty());
  EXPECT_EQ(page->items[0]["kind"], "ConfigMap");

  ListOptions all_options;
  all_options.label_selector = "app=rest-test";
  auto all = ListAll(*client_, resources::ConfigMaps(), ns.name(), all_options, 300);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->items.size(), static_cast<size_t>(kCount));
  std::set<std::string> names;
  for (const auto& item : all->items) {
    names.insert(item["metadata"]["name"].get<std::string>());
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(kCount));
  EXPECT_FALSE(all->resource_version.empty());

  ListOptions by_field;
  by_field.field_selector = "metadata.name=cm-7";
  auto one = client_->List(resources::ConfigMaps(), ns.name(), by_field);
  ASSERT_TRUE(one.ok());
  ASSERT_EQ(one->items.size(), 1u);
  EXPECT_EQ(one->items[0]["data"]["key"], "7");
}

}  // namespace
}  // namespace hybridjob::k8s
