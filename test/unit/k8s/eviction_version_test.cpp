// The Eviction version chosen from the core/v1 discovery document, as kubectl
// drain chooses it.
#include <gtest/gtest.h>

#include <hybridjob/k8s/api_client.h>

namespace hybridjob::k8s {
namespace {

// GET /api/v1 of kube-apiserver v1.20.2, cut to the pod entries.
constexpr const char* kCoreV1Of120 = R"({
  "kind": "APIResourceList", "groupVersion": "v1",
  "resources": [
    {"name": "pods", "singularName": "", "namespaced": true, "kind": "Pod",
     "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
     "shortNames": ["po"], "categories": ["all"], "storageVersionHash": "xPOwRZ+Yhw8="},
    {"name": "pods/binding", "singularName": "", "namespaced": true, "kind": "Binding",
     "verbs": ["create"]},
    {"name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy",
     "version": "v1beta1", "kind": "Eviction", "verbs": ["create"]},
    {"name": "pods/status", "singularName": "", "namespaced": true, "kind": "Pod",
     "verbs": ["get", "patch", "update"]}
  ]
})";

// The same of v1.30.
constexpr const char* kCoreV1Of130 = R"({
  "kind": "APIResourceList", "groupVersion": "v1",
  "resources": [
    {"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod",
     "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
     "shortNames": ["po"], "categories": ["all"], "storageVersionHash": "xPOwRZ+Yhw8="},
    {"name": "pods/ephemeralcontainers", "singularName": "", "namespaced": true, "kind": "Pod",
     "verbs": ["get", "patch", "update"]},
    {"name": "pods/eviction", "singularName": "", "namespaced": true, "group": "policy",
     "version": "v1", "kind": "Eviction", "verbs": ["create"]},
    {"name": "pods/resize", "singularName": "", "namespaced": true, "kind": "Pod",
     "verbs": ["get", "patch", "update"]}
  ]
})";

TEST(EvictionVersionTest, PolicyV1beta1On120) {
  EXPECT_EQ(EvictionApiVersion(nlohmann::json::parse(kCoreV1Of120)), "policy/v1beta1");
}

TEST(EvictionVersionTest, PolicyV1On130) {
  EXPECT_EQ(EvictionApiVersion(nlohmann::json::parse(kCoreV1Of130)), "policy/v1");
}

TEST(EvictionVersionTest, ADocumentThatDoesNotSayFallsBackToV1beta1) {
  // Before 1.8 the subresource carried no group and version.
  nlohmann::json old = nlohmann::json::parse(kCoreV1Of130);
  old["resources"][2].erase("group");
  old["resources"][2].erase("version");
  EXPECT_EQ(EvictionApiVersion(old), "policy/v1beta1");
  EXPECT_EQ(EvictionApiVersion(nlohmann::json::object()), "policy/v1beta1");
  EXPECT_EQ(EvictionApiVersion(nlohmann::json::parse(R"({"resources": "no"})")), "policy/v1beta1");
  EXPECT_EQ(EvictionApiVersion(nlohmann::json::parse(R"({"resources": [1, null, {"name": 3}]})")),
            "policy/v1beta1");
}

}  // namespace
}  // namespace hybridjob::k8s
