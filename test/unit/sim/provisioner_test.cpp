// hybridjob-sim's provisioner decisions: which claims get a volume, and what
// volume; which volumes it deletes.
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <hybridjob/sim/provisioner.h>

namespace hybridjob::sim {
namespace {

using nlohmann::json;

json Claim(const std::string& selected_node) {
  json claim = {{"apiVersion", "v1"},
                {"kind", "PersistentVolumeClaim"},
                {"metadata", {{"name", "data"}, {"namespace", "team-a"}, {"uid", "c-1"}}},
                {"spec",
                 {{"storageClassName", "standard"},
                  {"accessModes", json::array({"ReadWriteOnce"})},
                  {"resources", {{"requests", {{"storage", "5Gi"}}}}}}},
                {"status", {{"phase", "Pending"}}}};
  if (!selected_node.empty()) {
    claim["metadata"]["annotations"] = {{"volume.kubernetes.io/selected-node", selected_node}};
  }
  return claim;
}

const std::set<std::string> kOwnNodes = {"sim-node-0", "sim-node-1"};

TEST(ProvisionerTest, TheClassWaitsForTheFirstConsumerAndMayBeTheDefault) {
  const json standard = MakeStorageClass("standard", true);
  EXPECT_EQ(standard["provisioner"], std::string(kSimProvisioner));
  EXPECT_EQ(standard["volumeBindingMode"], "WaitForFirstConsumer");
  EXPECT_EQ(standard["reclaimPolicy"], "Delete");
  EXPECT_EQ(standard["metadata"]["annotations"][std::string(kAnnotationDefaultClass)], "true");
  EXPECT_FALSE(MakeStorageClass("other", false)["metadata"].contains("annotations"));
}

// A claim with one of the sim's nodes selected gets a volume on that node,
// reserved for it, of its size and modes.
TEST(ProvisionerTest, AVolumeIsMadeOnTheSelectedNodeForTheClaim) {
  const json storage_class = MakeStorageClass("standard", true);
  auto volume = VolumeForClaim(Claim("sim-node-1"), &storage_class, kOwnNodes);
  ASSERT_TRUE(volume.ok()) << volume.status().ToString();
  ASSERT_TRUE(volume->has_value());
  const json& pv = **volume;
  EXPECT_EQ(pv["metadata"]["name"], "pvc-c-1");
  EXPECT_EQ(pv["metadata"]["annotations"][std::string(kAnnotationProvisionedBy)],
            std::string(kSimProvisioner));
  EXPECT_EQ(pv["spec"]["capacity"]["storage"], "5Gi");
  EXPECT_EQ(pv["spec"]["accessModes"], json::array({"ReadWriteOnce"}));
  EXPECT_EQ(pv["spec"]["storageClassName"], "standard");
  EXPECT_EQ(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete");
  EXPECT_EQ(pv["spec"]["claimRef"]["namespace"], "team-a");
  EXPECT_EQ(pv["spec"]["claimRef"]["name"], "data");
  EXPECT_EQ(pv["spec"]["claimRef"]["uid"], "c-1");
  const json& term = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0];
  EXPECT_EQ(term["matchExpressions"][0]["key"], "kubernetes.io/hostname");
  EXPECT_EQ(term["matchExpressions"][0]["values"], json::array({"sim-node-1"}));
}

TEST(ProvisionerTest, ClaimsThatAreNotTheSimsToProvisionAreLeftAlone) {
  const json standard = MakeStorageClass("standard", true);
  json other_class = standard;
  other_class["provisioner"] = "ebs.csi.aws.com";
  auto none = [&](const json& claim, const json* storage_class) {
    auto volume = VolumeForClaim(claim, storage_class, kOwnNodes);
    return volume.ok() && !volume->has_value();
  };
  EXPECT_TRUE(none(Claim(""), &standard)) << "no node selected yet";
  EXPECT_TRUE(none(Claim("a-real-node"), &standard)) << "another kubelet's node";
  EXPECT_TRUE(none(Claim("sim-node-0"), &other_class)) << "another provisioner's class";
  EXPECT_TRUE(none(Claim("sim-node-0"), nullptr)) << "a class that does not exist";
  json bound = Claim("sim-node-0");
  bound["spec"]["volumeName"] = "pv-1";
  EXPECT_TRUE(none(bound, &standard));
  json deleting = Claim("sim-node-0");
  deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_TRUE(none(deleting, &standard));
  json sizeless = Claim("sim-node-0");
  sizeless["spec"].erase("resources");
  EXPECT_FALSE(VolumeForClaim(sizeless, &standard, kOwnNodes).ok());
}

TEST(ProvisionerTest, OnlyItsOwnReleasedVolumesWithTheDeletePolicyAreDeleted) {
  const json standard = MakeStorageClass("standard", true);
  json volume = **VolumeForClaim(Claim("sim-node-0"), &standard, kOwnNodes);
  volume["status"] = {{"phase", "Bound"}};
  EXPECT_FALSE(VolumeToDelete(volume));
  volume["status"]["phase"] = "Released";
  EXPECT_TRUE(VolumeToDelete(volume));
  json retained = volume;
  retained["spec"]["persistentVolumeReclaimPolicy"] = "Retain";
  EXPECT_FALSE(VolumeToDelete(retained));
  json someone_elses = volume;
  someone_elses["metadata"]["annotations"][std::string(kAnnotationProvisionedBy)] = "other";
  EXPECT_FALSE(VolumeToDelete(someone_elses));
}

}  // namespace
}  // namespace hybridjob::sim
