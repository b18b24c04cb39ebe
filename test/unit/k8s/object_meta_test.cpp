#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/k8s/object_meta.h>

namespace hybridjob::k8s {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::Pair;

const json kPod = json::parse(R"({
  "metadata": {
    "name": "train-worker-0", "namespace": "team-a", "uid": "u-1", "resourceVersion": "42",
    "creationTimestamp": "2026-01-01T00:00:00Z", "deletionTimestamp": "2026-01-01T00:01:00Z",
    "labels": {"role": "worker", "bad": 7},
    "annotations": {"note": "x"},
    "ownerReferences": [
      {"kind": "ReplicaSet", "uid": "not-controller"},
      {"kind": "HybridJob", "uid": "job-uid", "controller": true}
    ]
  }
})");

TEST(ObjectMetaTest, ReadsEveryAccessor) {
  EXPECT_EQ(NameOf(kPod), "train-worker-0");
  EXPECT_EQ(NamespaceOf(kPod), "team-a");
  EXPECT_EQ(UidOf(kPod), "u-1");
  EXPECT_EQ(ResourceVersionOf(kPod), "42");
  EXPECT_EQ(CreationTimestampOf(kPod), "2026-01-01T00:00:00Z");
  EXPECT_TRUE(IsTerminating(kPod));
  EXPECT_EQ(LabelOf(kPod, "role"), "worker");
  EXPECT_EQ(AnnotationOf(kPod, "note"), "x");
  EXPECT_THAT(LabelsOf(kPod), ElementsAre(Pair("role", "worker")))
      << "a value that is not a string is left out";
  EXPECT_EQ(ControllerUidOf(kPod), "job-uid");
  EXPECT_EQ(ObjectKeyOf(kPod), "team-a/train-worker-0");
}

TEST(ObjectMetaTest, MalformedOrMissingMetadataReadsAsEmptyAndNeverThrows) {
  for (const char* text :
       {"null", "[]", "7", R"({})", R"({"metadata": null})", R"({"metadata": []})",
        R"({"metadata": {"name": 5, "namespace": [], "uid": {}, "resourceVersion": 1,
                         "labels": [], "annotations": "x", "ownerReferences": {},
                         "deletionTimestamp": null}})",
        R"({"metadata": {"ownerReferences": [7, {"controller": "yes", "uid": "u"},
                                             {"controller": true, "uid": 9}]}})"}) {
    const json object = json::parse(text);
    EXPECT_EQ(NameOf(object), "") << text;
    EXPECT_EQ(NamespaceOf(object), "") << text;
    EXPECT_EQ(UidOf(object), "") << text;
    EXPECT_EQ(ResourceVersionOf(object), "") << text;
    EXPECT_FALSE(IsTerminating(object)) << text;
    EXPECT_EQ(LabelOf(object, "a"), "") << text;
    EXPECT_TRUE(AnnotationsOf(object).empty()) << text;
    EXPECT_EQ(ControllerUidOf(object), "") << text;
    EXPECT_EQ(ObjectKeyOf(object), "") << text;
  }
}

TEST(ObjectMetaTest, ClusterScopedObjectsAreKeyedByNameAlone) {
  EXPECT_EQ(ObjectKeyOf(json{{"metadata", {{"name", "node-1"}}}}), "node-1");
  EXPECT_EQ(ObjectKey("", "node-1"), "node-1");
  EXPECT_EQ(ObjectKey("ns", "p"), "ns/p");
}

}  // namespace
}  // namespace hybridjob::k8s
