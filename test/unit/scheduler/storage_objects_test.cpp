// Claims, persistent volumes and storage classes as the API server writes
// them, parsed into what the planner checks volumes against.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <hybridjob/scheduler/core/volumes.h>

namespace hybridjob::scheduler {
namespace {

using nlohmann::json;

TEST(ParseClaimTest, ReadsWhatVolumeBindingNeeds) {
  const json claim = json::parse(R"({
    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
    "metadata": {"name": "data", "namespace": "team-a", "uid": "u-1",
                 "annotations": {"volume.kubernetes.io/selected-node": "node-2"}},
    "spec": {"storageClassName": "fast", "volumeName": "pv-7",
             "accessModes": ["ReadWriteOnce", "ReadOnlyMany"], "volumeMode": "Block",
             "resources": {"requests": {"storage": "1.5Gi"}},
             "selector": {"matchLabels": {"tier": "ssd"}}},
    "status": {"phase": "Pending"}})");
  Result<ClaimInfo> parsed = ParseClaim(claim);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->Key(), "team-a/data");
  EXPECT_EQ(parsed->uid, "u-1");
  EXPECT_EQ(parsed->storage_class, "fast");
  EXPECT_EQ(parsed->volume_name, "pv-7");
  EXPECT_EQ(parsed->access_modes, kReadWriteOnce | kReadOnlyMany);
  EXPECT_TRUE(parsed->block_mode);
  EXPECT_EQ(parsed->requested_bytes, 1610612736);
  EXPECT_EQ(parsed->selected_node, "node-2");
  EXPECT_FALSE(parsed->deleting);
  EXPECT_FALSE(parsed->bound);
  ASSERT_TRUE(parsed->selector.has_value());
  EXPECT_TRUE(parsed->selector->Matches(LabelMap{{"tier", "ssd"}}));
  EXPECT_FALSE(parsed->selector->Matches(LabelMap{{"tier", "hdd"}}));
}

// The beta annotation predates spec.storageClassName and wins over it, as in
// the PV controller; a claim being deleted is marked so.
TEST(ParseClaimTest, TheLegacyClassAnnotationWinsAndDeletionIsSeen) {
  const json claim = {{"metadata",
                       {{"name", "data"},
                        {"namespace", "team-a"},
                        {"deletionTimestamp", "2026-01-01T00:00:00Z"},
                        {"annotations", {{"volume.beta.kubernetes.io/storage-class", "old"}}}}},
                      {"spec", {{"storageClassName", "new"}}}};
  Result<ClaimInfo> parsed = ParseClaim(claim);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->storage_class, "old");
  EXPECT_TRUE(parsed->deleting);
  EXPECT_FALSE(parsed->bound) << "no status: not bound";
  json bound = claim;
  bound["status"] = {{"phase", "Bound"}};
  EXPECT_TRUE(ParseClaim(bound)->bound);
  EXPECT_FALSE(parsed->block_mode);
  EXPECT_FALSE(parsed->selector.has_value());
}

TEST(ParseClaimTest, MalformedFieldsAreNamed) {
  json claim = {{"metadata", {{"name", "data"}, {"namespace", "team-a"}}},
                {"spec", {{"accessModes", json::array({"ReadWriteOnce", "Sometimes"})}}}};
  Result<ClaimInfo> parsed = ParseClaim(claim);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("spec.accessModes[1]"), std::string::npos)
      << parsed.status().message();

  claim["spec"] = {{"resources", {{"requests", {{"storage", "lots"}}}}}};
  parsed = ParseClaim(claim);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("spec.resources.requests.storage"), std::string::npos)
      << parsed.status().message();

  claim["spec"] = {{"selector", {{"matchExpressions", json::array({{{"key", "tier"}}})}}}};
  parsed = ParseClaim(claim);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("spec.selector"), std::string::npos)
      << parsed.status().message();

  EXPECT_FALSE(ParseClaim({{"metadata", {{"name", "data"}}}}).ok());  // no namespace
  EXPECT_FALSE(ParseClaim(json::array()).ok());
}

TEST(ParseVolumeTest, ReadsClaimRefNodeAffinityAndPhase) {
  const json volume = json::parse(R"({
    "apiVersion": "v1", "kind": "PersistentVolume",
    "metadata": {"name": "pv-1", "labels": {"tier": "ssd"}},
    "spec": {"storageClassName": "local", "capacity": {"storage": "100Gi"},
             "accessModes": ["ReadWriteOnce"],
             "claimRef": {"namespace": "team-a", "name": "data", "uid": "u-1"},
             "local": {"path": "/mnt/disks/1"},
             "nodeAffinity": {"required": {"nodeSelectorTerms": [
               {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In",
                                      "values": ["node-1"]}]}]}}},
    "status": {"phase": "Bound"}})");
  Result<VolumeInfo> parsed = ParseVolume(volume);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->name, "pv-1");
  EXPECT_EQ(*parsed->labels.Find("tier"), "ssd");
  EXPECT_EQ(parsed->storage_class, "local");
  EXPECT_EQ(parsed->capacity_bytes, 100LL << 30);
  EXPECT_EQ(parsed->access_modes, kReadWriteOnce);
  EXPECT_EQ(parsed->phase, "Bound");
  EXPECT_TRUE(parsed->HasClaimRef());
  EXPECT_EQ(parsed->claim_namespace, "team-a");
  EXPECT_EQ(parsed->claim_name, "data");
  EXPECT_EQ(parsed->claim_uid, "u-1");
  ASSERT_TRUE(parsed->node_affinity.has_value());
  ASSERT_EQ(parsed->node_affinity->size(), 1u);
  EXPECT_EQ(parsed->node_affinity->at(0).match_expressions.at(0).key, "kubernetes.io/hostname");
}

// A volume the PV controller has not looked at has no phase yet: it is not
// Available, so no claim is matched to it; without nodeAffinity it fits
// every node.
TEST(ParseVolumeTest, NoStatusIsPendingAndNoAffinityIsAnyNode) {
  Result<VolumeInfo> parsed = ParseVolume(
      {{"metadata", {{"name", "pv-2"}}}, {"spec", {{"capacity", {{"storage", "1Gi"}}}}}});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->phase, "Pending");
  EXPECT_FALSE(parsed->node_affinity.has_value());
  EXPECT_FALSE(parsed->HasClaimRef());
}

TEST(ParseVolumeTest, MalformedAffinityIsNamed) {
  const json volume = {
      {"metadata", {{"name", "pv-3"}}},
      {"spec",
       {{"nodeAffinity",
         {{"required",
           {{"nodeSelectorTerms",
             json::array({{{"matchExpressions",
                            json::array({{{"key", "zone"}, {"operator", "Near"}}})}}})}}}}}}}};
  Result<VolumeInfo> parsed = ParseVolume(volume);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("spec.nodeAffinity.required.nodeSelectorTerms[0]"),
            std::string::npos)
      << parsed.status().message();
}

TEST(ParseStorageClassTest, ReadsBindingModeAndAllowedTopologies) {
  const json storage_class = json::parse(R"({
    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
    "metadata": {"name": "zonal"}, "provisioner": "ebs.csi.aws.com",
    "volumeBindingMode": "WaitForFirstConsumer",
    "allowedTopologies": [{"matchLabelExpressions": [
      {"key": "topology.kubernetes.io/zone", "values": ["us-east-1a", "us-east-1b"]}]}]})");
  Result<StorageClassInfo> parsed = ParseStorageClass(storage_class);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->name, "zonal");
  EXPECT_EQ(parsed->provisioner, "ebs.csi.aws.com");
  EXPECT_TRUE(parsed->wait_for_first_consumer);
  ASSERT_EQ(parsed->allowed_topologies.size(), 1u);
  const SelectorRequirement& zone = parsed->allowed_topologies[0].match_expressions.at(0);
  EXPECT_EQ(zone.op, SelectorOperator::kIn);
  EXPECT_TRUE(zone.Matches(LabelMap{{"topology.kubernetes.io/zone", "us-east-1b"}}));
  EXPECT_FALSE(zone.Matches(LabelMap{{"topology.kubernetes.io/zone", "us-west-2a"}}));
}

TEST(ParseStorageClassTest, ImmediateByDefaultAndUnknownModesRefused) {
  Result<StorageClassInfo> parsed =
      ParseStorageClass({{"metadata", {{"name", "standard"}}}, {"provisioner", "x"}});
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_FALSE(parsed->wait_for_first_consumer);
  EXPECT_TRUE(parsed->allowed_topologies.empty());

  parsed = ParseStorageClass({{"metadata", {{"name", "standard"}}}, {"volumeBindingMode", "Lazy"}});
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("volumeBindingMode"), std::string::npos);
}

}  // namespace
}  // namespace hybridjob::scheduler
