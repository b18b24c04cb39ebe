#include <map>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/planner.h>
#include <hybridjob/scheduler/core/volumes.h>

#include "builders.h"

namespace hybridjob::scheduler {
namespace {

using ::testing::ElementsAre;
using testing::GroupFixture;
using ::testing::HasSubstr;
using testing::MakeSpec;
using testing::NodeBuilder;
using testing::PodBuilder;
using testing::TermRequiring;

constexpr int64_t kGiB = int64_t{1} << 30;
constexpr std::string_view kHostname = "kubernetes.io/hostname";

StorageClassInfo LocalClass() {
  return StorageClassInfo{"local", std::string(kNoProvisioner), true, {}};
}

StorageClassInfo ProvisionedClass(std::vector<NodeSelectorTerm> allowed = {}) {
  return StorageClassInfo{"fast", "sim.hybridjob.io/local", true, std::move(allowed)};
}

ClaimInfo Claim(const std::string& name, const std::string& storage_class,
                AccessModes modes = kReadWriteOnce, int64_t bytes = 10 * kGiB) {
  ClaimInfo claim;
  claim.namespace_name = "team";
  claim.name = name;
  claim.uid = "uid-" + name;
  claim.storage_class = storage_class;
  claim.access_modes = modes;
  claim.requested_bytes = bytes;
  return claim;
}

// A local PV on one node, as a static provisioner or an admin makes it.
VolumeInfo LocalVolume(const std::string& name, const std::string& node,
                       int64_t bytes = 100 * kGiB) {
  VolumeInfo volume;
  volume.name = name;
  volume.storage_class = "local";
  volume.access_modes = kReadWriteOnce;
  volume.capacity_bytes = bytes;
  volume.node_affinity = std::vector<NodeSelectorTerm>{
      TermRequiring(std::string(kHostname), SelectorOperator::kIn, {node})};
  return volume;
}

NodeInfo Node(const std::string& name, const std::string& zone = "a") {
  return NodeBuilder(name).Label(std::string(kHostname), name).Label("zone", zone).Build();
}

VolumeVerdict Check(const PodInfo& pod, const NodeInfo& node, const StorageCatalog& catalog,
                    const VolumePlan& plan = {}, const ClaimUsers* users = nullptr) {
  return CheckPodVolumes(pod, node, catalog, plan, [users](std::string_view) { return users; });
}

TEST(CheckPodVolumesTest, MissingOrDeletingClaimsFitNowhere) {
  StorageCatalog catalog;
  PodInfo pod = PodBuilder("p").Claim("data").Build();
  VolumeVerdict missing = Check(pod, Node("n0"), catalog);
  EXPECT_EQ(missing.code, VolumeCode::kClaimNotFound);
  EXPECT_EQ(missing.Message(), "persistentvolumeclaim \"data\" not found");

  ClaimInfo deleting = Claim("data", "local");
  deleting.deleting = true;
  catalog.UpsertClaim(deleting);
  EXPECT_EQ(Check(pod, Node("n0"), catalog).code, VolumeCode::kClaimDeleting);
}

TEST(CheckPodVolumesTest, BoundClaimRestrictsNodesToItsVolumesAffinity) {
  StorageCatalog catalog;
  ClaimInfo claim = Claim("data", "local");
  claim.volume_name = "pv-n1";
  catalog.UpsertClaim(claim);
  catalog.UpsertVolume(LocalVolume("pv-n1", "n1"));
  PodInfo pod = PodBuilder("p").Claim("data").Build();

  EXPECT_TRUE(Check(pod, Node("n1"), catalog).ok());
  EXPECT_TRUE(Check(pod, Node("n1"), catalog).decisions.empty());  // nothing to bind
  VolumeVerdict elsewhere = Check(pod, Node("n0"), catalog);
  EXPECT_EQ(elsewhere.code, VolumeCode::kNodeConflict);
  EXPECT_EQ(elsewhere.Message(), "node(s) had volume node affinity conflict (claim \"data\")");

  catalog.RemoveVolume("pv-n1");
  EXPECT_EQ(Check(pod, Node("n1"), catalog).code, VolumeCode::kVolumeMissing);
}

TEST(CheckPodVolumesTest, UnboundImmediateClaimWaitsForTheVolumeController) {
  StorageCatalog catalog;
  catalog.UpsertClass(StorageClassInfo{"standard", "ebs.csi.aws.com", false, {}});
  catalog.UpsertClaim(Claim("data", "standard"));
  catalog.UpsertClaim(Claim("nameless", ""));
  EXPECT_EQ(Check(PodBuilder("p").Claim("data").Build(), Node("n0"), catalog).code,
            VolumeCode::kUnboundImmediate);
  EXPECT_EQ(Check(PodBuilder("p").Claim("nameless").Build(), Node("n0"), catalog).code,
            VolumeCode::kUnboundImmediate);
  // A class the catalog does not know binds nothing either.
  catalog.UpsertClaim(Claim("unknown-class", "gone"));
  EXPECT_EQ(Check(PodBuilder("p").Claim("unknown-class").Build(), Node("n0"), catalog).code,
            VolumeCode::kUnboundImmediate);
}

// spec.selector narrows the volumes a claim may get to those whose labels
// match, and the PV controller never provisions such a claim.
TEST(CheckPodVolumesTest, AClaimSelectorNarrowsTheVolumesAndRulesOutProvisioning) {
  StorageCatalog catalog;
  catalog.UpsertClass(LocalClass());
  ClaimInfo claim = Claim("data", "local");
  claim.selector = LabelSelector{{SelectorRequirement{"tier", SelectorOperator::kIn, {"ssd"}}}};
  catalog.UpsertClaim(claim);
  VolumeInfo hdd = LocalVolume("hdd", "n0", 20 * kGiB);
  hdd.labels = LabelMap{{"tier", "hdd"}};
  VolumeInfo ssd = LocalVolume("ssd", "n0", 40 * kGiB);
  ssd.labels = LabelMap{{"tier", "ssd"}};
  catalog.UpsertVolume(hdd);
  catalog.UpsertVolume(ssd);
  PodInfo pod = PodBuilder("p").Claim("data").Build();
  VolumeVerdict verdict = Check(pod, Node("n0"), catalog);
  ASSERT_TRUE(verdict.ok()) << verdict.Message();
  ASSERT_EQ(verdict.decisions.size(), 1u);
  EXPECT_EQ(verdict.decisions[0].volume_name, "ssd");

  StorageClassInfo provisioned = ProvisionedClass();
  catalog.UpsertClass(provisioned);
  ClaimInfo fast = Claim("scratch", "fast");
  fast.selector = claim.selector;
  catalog.UpsertClaim(fast);
  EXPECT_EQ(Check(PodBuilder("q").Claim("scratch").Build(), Node("n0"), catalog).code,
            VolumeCode::kBindConflict);
}

// The catalog looks up a node's local volumes by hostname instead of
// scanning every volume; volumes that are not pinned to one hostname are
// always candidates. Changing or removing a volume moves it in the index.
TEST(StorageCatalogTest, CandidatesAreTheNodesPinnedVolumesAndTheUnpinnedOnes) {
  StorageCatalog catalog;
  catalog.UpsertVolume(LocalVolume("on-n0", "n0"));
  catalog.UpsertVolume(LocalVolume("on-n1", "n1"));
  VolumeInfo zonal = LocalVolume("zonal", "unused");
  zonal.node_affinity =
      std::vector<NodeSelectorTerm>{TermRequiring("zone", SelectorOperator::kIn, {"a"})};
  catalog.UpsertVolume(zonal);
  VolumeInfo two_hosts = LocalVolume("two-hosts", "n0");
  two_hosts.node_affinity->push_back(
      TermRequiring(std::string(kHostname), SelectorOperator::kIn, {"n1"}));
  catalog.UpsertVolume(two_hosts);
  EXPECT_EQ(PinnedHostname(*catalog.FindVolume("on-n0")), "n0");
  EXPECT_EQ(PinnedHostname(zonal), std::nullopt);
  EXPECT_EQ(PinnedHostname(two_hosts), std::nullopt);

  auto names = [&catalog](const std::string& storage_class, const NodeInfo& node) {
    std::vector<std::string> out;
    StorageCatalog::Candidates candidates = catalog.CandidatesFor(storage_class, node);
    for (const VolumeInfo* volume : candidates.pinned) {
      out.push_back(volume->name);
    }
    for (const VolumeInfo* volume : candidates.unpinned) {
      out.push_back(volume->name);
    }
    return out;
  };
  EXPECT_THAT(names("local", Node("n0")), ElementsAre("on-n0", "zonal", "two-hosts"));
  EXPECT_THAT(names("local", Node("n1")), ElementsAre("on-n1", "zonal", "two-hosts"));
  EXPECT_TRUE(names("fast", Node("n0")).empty());

  VolumeInfo moved = LocalVolume("on-n0", "n1");
  catalog.UpsertVolume(moved);
  EXPECT_THAT(names("local", Node("n0")), ElementsAre("zonal", "two-hosts"));
  EXPECT_THAT(names("local", Node("n1")), ElementsAre("on-n1", "on-n0", "zonal", "two-hosts"));
  moved.storage_class = "fast";
  catalog.UpsertVolume(moved);
  EXPECT_THAT(names("fast", Node("n1")), ElementsAre("on-n0"));
  catalog.RemoveVolume("on-n0");
  catalog.RemoveVolume("zonal");
  EXPECT_TRUE(names("fast", Node("n1")).empty());
  EXPECT_THAT(names("local", Node("n1")), ElementsAre("on-n1", "two-hosts"));
  catalog.ReplaceVolumes({LocalVolume("fresh", "n1")});
  EXPECT_THAT(names("local", Node("n1")), ElementsAre("fresh"));
  EXPECT_TRUE(names("local", Node("n0")).empty());
}

// Among volumes of equal size the name decides, whatever order they came in.
TEST(CheckPodVolumesTest, EqualVolumesAreChosenByName) {
  StorageCatalog catalog;
  catalog.UpsertClass(LocalClass());
  catalog.UpsertClaim(Claim("data", "local"));
  catalog.UpsertVolume(LocalVolume("pv-b", "n0", 20 * kGiB));
  catalog.UpsertVolume(LocalVolume("pv-a", "n0", 20 * kGiB));
  catalog.UpsertVolume(LocalVolume("pv-c", "n0", 20 * kGiB));
  VolumeVerdict verdict = Check(PodBuilder("p").Claim("data").Build(), Node("n0"), catalog);
  ASSERT_TRUE(verdict.ok()) << verdict.Message();
  ASSERT_EQ(verdict.decisions.size(), 1u);
  EXPECT_EQ(verdict.decisions[0].volume_name, "pv-a");
}

TEST(CheckPodVolumesTest, WaitForFirstConsumerPicksTheSmallestFittingVolumeOnTheNode) {
  StorageCatalog catalog;
  catalog.UpsertClass(LocalClass());
  catalog.UpsertClaim(Claim("data", "local", kReadWriteOnce, 50 * kGiB));
  catalog.UpsertVolume(LocalVolume("big", "n0", 500 * kGiB));
  catalog.UpsertVolume(LocalVolume("small", "n0", 60 * kGiB));
  catalog.UpsertVolume(LocalVolume("too-small", "n0", 10 * kGiB));
  catalog.UpsertVolume(LocalVolume("other-node", "n1", 60 * kGiB));
  VolumeInfo taken = LocalVolume("taken", "n0", 60 * kGiB);
  taken.claim_namespace = "team";
  taken.claim_name = "someone-else";
  catalog.UpsertVolume(taken);
  PodInfo pod = PodBuilder("p").Claim("data").Build();

  VolumeVerdict verdict = Check(pod, Node("n0"), catalog);
  ASSERT_TRUE(verdict.ok()) << verdict.Message();
  EXPECT_THAT(verdict.decisions,
              ElementsAre(ClaimDecision{"team", "data", "small", "n0", "uid-data"}));

  // No provisioner: a node without a fitting volume cannot have the claim.
  VolumeVerdict none = Check(pod, Node("n2"), catalog);
  EXPECT_EQ(none.code, VolumeCode::kBindConflict);
  EXPECT_THAT(none.Message(), HasSubstr("didn't find available persistent volumes to bind"));

  // A volume taken earlier in the plan is not offered again.
  VolumePlan plan;
  plan.Add(ClaimDecision{"team", "other", "small", "n0", "uid-other"});
  EXPECT_THAT(Check(pod, Node("n0"), catalog, plan).decisions,
              ElementsAre(ClaimDecision{"team", "data", "big", "n0", "uid-data"}));
}

TEST(CheckPodVolumesTest, AccessModesAndVolumeModeMustBeOffered) {
  StorageCatalog catalog;
  catalog.UpsertClass(LocalClass());
  catalog.UpsertClaim(Claim("shared", "local", kReadWriteMany));
  catalog.UpsertVolume(LocalVolume("rwo", "n0"));
  PodInfo pod = PodBuilder("p").Claim("shared").Build();
  EXPECT_EQ(Check(pod, Node("n0"), catalog).code, VolumeCode::kBindConflict);

  VolumeInfo rwx = LocalVolume("rwx", "n0");
  rwx.access_modes = kReadWriteMany | kReadWriteOnce;
  rwx.block_mode = true;
  catalog.UpsertVolume(rwx);
  EXPECT_EQ(Check(pod, Node("n0"), catalog).code, VolumeCode::kBindConflict);  // Block
  rwx.block_mode = false;
  catalog.UpsertVolume(rwx);
  EXPECT_TRUE(Check(pod, Node("n0"), catalog).ok());
}

TEST(CheckPodVolumesTest, AVolumeReservedForTheClaimWinsWhateverItsSize) {
  StorageCatalog catalog;
  catalog.UpsertClass(LocalClass());
  catalog.UpsertClaim(Claim("data", "local", kReadWriteOnce, 50 * kGiB));
  catalog.UpsertVolume(LocalVolume("fits", "n0", 60 * kGiB));
  VolumeInfo reserved = LocalVolume("retained", "n0", 1000 * kGiB);
  reserved.phase = "Released";  // given to this claim by rewriting its claimRef
  reserved.claim_namespace = "team";
  reserved.claim_name = "data";
  catalog.UpsertVolume(reserved);
  EXPECT_THAT(Check(PodBuilder("p").Claim("data").Build(), Node("n0"), catalog).decisions,
              ElementsAre(ClaimDecision{"team", "data", "retained", "n0", "uid-data"}));
}

TEST(CheckPodVolumesTest, ProvisioningFollowsAllowedTopologiesAndTheSelectedNode) {
  StorageCatalog catalog;
  catalog.UpsertClass(ProvisionedClass({TermRequiring("zone", SelectorOperator::kIn, {"a"})}));
  catalog.UpsertClaim(Claim("scratch", "fast"));
  PodInfo pod = PodBuilder("p").Claim("scratch").Build();

  EXPECT_THAT(Check(pod, Node("n0", "a"), catalog).decisions,
              ElementsAre(ClaimDecision{"team", "scratch", "", "n0", "uid-scratch"}));
  EXPECT_EQ(Check(pod, Node("n1", "b"), catalog).code, VolumeCode::kBindConflict);

  // Once a node is selected, provisioning is under way for it alone.
  ClaimInfo selected = Claim("scratch", "fast");
  selected.selected_node = "n2";
  catalog.UpsertClaim(selected);
  EXPECT_EQ(Check(pod, Node("n0", "a"), catalog).code, VolumeCode::kBindConflict);
  VolumeVerdict on_selected = Check(pod, Node("n2", "a"), catalog);
  EXPECT_TRUE(on_selected.ok());
  EXPECT_TRUE(on_selected.decisions.empty());
}

TEST(CheckPodVolumesTest, ReadWriteOnceUsersShareANodeAndReadWriteOncePodHasOne) {
  StorageCatalog catalog;
  ClaimInfo rwo = Claim("logs", "local");
  rwo.volume_name = "pv";
  catalog.UpsertClaim(rwo);
  VolumeInfo volume = LocalVolume("pv", "n0");
  volume.node_affinity.reset();  // a network disk: any node may attach it
  catalog.UpsertVolume(volume);
  PodInfo pod = PodBuilder("p").Claim("logs").Build();
  ClaimUsers on_n0 = {"n0"};
  EXPECT_TRUE(Check(pod, Node("n0"), catalog, {}, &on_n0).ok());
  EXPECT_EQ(Check(pod, Node("n1"), catalog, {}, &on_n0).code, VolumeCode::kReadWriteOnceNode);

  ClaimInfo many = rwo;
  many.access_modes = kReadWriteOnce | kReadWriteMany;
  catalog.UpsertClaim(many);
  EXPECT_TRUE(Check(pod, Node("n1"), catalog, {}, &on_n0).ok());

  ClaimInfo single = rwo;
  single.access_modes = kReadWriteOncePod;
  catalog.UpsertClaim(single);
  EXPECT_EQ(Check(pod, Node("n0"), catalog, {}, &on_n0).code, VolumeCode::kReadWriteOncePodInUse);
  EXPECT_TRUE(Check(pod, Node("n0"), catalog).ok());
}

// A local claim "data" with its volume "pv" on n0, and a claim "scratch" of
// a provisioned class.
void AddDataAndScratch(StorageCatalog& catalog) {
  catalog.UpsertClass(LocalClass());
  catalog.UpsertClass(ProvisionedClass());
  catalog.UpsertClaim(Claim("data", "local"));
  catalog.UpsertClaim(Claim("scratch", "fast"));
  catalog.UpsertVolume(LocalVolume("pv", "n0"));
}

TEST(AssumeClaimDecisionsTest, ClaimsShowTheirVolumeOrNodeAndVolumesTheirClaim) {
  StorageCatalog catalog;
  AddDataAndScratch(catalog);
  AssumeClaimDecisions(catalog, {ClaimDecision{"team", "data", "pv", "n0", "uid-data"},
                                 ClaimDecision{"team", "scratch", "", "n0", "uid-scratch"},
                                 ClaimDecision{"team", "gone", "", "n0", "uid-gone"}});
  EXPECT_EQ(catalog.FindClaim("team", "data")->volume_name, "pv");
  EXPECT_EQ(catalog.FindVolume("pv")->claim_name, "data");
  EXPECT_EQ(catalog.FindVolume("pv")->claim_uid, "uid-data");
  EXPECT_EQ(catalog.FindClaim("team", "scratch")->selected_node, "n0");
  EXPECT_EQ(catalog.FindClaim("team", "gone"), nullptr);
}

// A plan given up puts back what the informers last said; what an informer
// said meanwhile stays.
TEST(AssumeClaimDecisionsTest, RestoringAGivenUpPlanKeepsWhatTheServerSaidSince) {
  StorageCatalog catalog;
  AddDataAndScratch(catalog);
  const std::vector<ClaimDecision> decisions = {
      ClaimDecision{"team", "data", "pv", "n0", "uid-data"},
      ClaimDecision{"team", "scratch", "", "n0", "uid-scratch"}};
  AssumeClaimDecisions(catalog, decisions);
  // The server's word on scratch arrives before the plan is given up.
  ClaimInfo provisioned = Claim("scratch", "fast");
  provisioned.selected_node = "n1";
  catalog.UpsertClaim(provisioned);
  RestoreClaimDecisions(catalog, decisions);
  EXPECT_EQ(catalog.FindClaim("team", "data")->volume_name, "");
  EXPECT_FALSE(catalog.FindVolume("pv")->HasClaimRef());
  // Offered again, to any claim that fits.
  EXPECT_EQ(catalog.CandidatesFor("local", Node("n0")).pinned.size(), 1u);
  EXPECT_EQ(catalog.FindClaim("team", "scratch")->selected_node, "n1");
  // Restoring twice changes nothing.
  RestoreClaimDecisions(catalog, decisions);
  EXPECT_EQ(catalog.FindClaim("team", "scratch")->selected_node, "n1");
}

// A member's claims bound or provisioned since an earlier plan fit its node
// before they are Bound: its gang waits for them too.
TEST(AddClaimsToAwaitTest, EveryUnboundClaimOfAMemberIsAwaitedOnce) {
  StorageCatalog catalog;
  catalog.set_tracked(true);
  ClaimInfo provisioning = Claim("scratch", "fast");
  provisioning.selected_node = "n0";
  catalog.UpsertClaim(provisioning);
  ClaimInfo binding = Claim("data", "local");
  binding.volume_name = "pv";
  catalog.UpsertClaim(binding);
  ClaimInfo bound = Claim("logs", "local");
  bound.volume_name = "pv-logs";
  bound.bound = true;
  catalog.UpsertClaim(bound);
  const PodInfo pod = PodBuilder("p").Claim("scratch").Claim("data").Claim("logs").Build();
  std::vector<ClaimDecision> awaited = {ClaimDecision{"team", "scratch", "", "n0", "uid-scratch"}};
  AddClaimsToAwait(catalog, pod, "n0", awaited);
  EXPECT_THAT(awaited, ElementsAre(ClaimDecision{"team", "scratch", "", "n0", "uid-scratch"},
                                   ClaimDecision{"team", "data", "pv", "n0", "uid-data"}));
  AddClaimsToAwait(catalog, pod, "n0", awaited);
  EXPECT_EQ(awaited.size(), 2u) << "a claim shared by members is awaited once";

  std::vector<ClaimDecision> untracked;
  catalog.set_tracked(false);
  AddClaimsToAwait(catalog, pod, "n0", untracked);
  EXPECT_TRUE(untracked.empty());
}

TEST(ClaimDecisionDoneTest, DoneWhenTheClaimIsBoundToWhatWasChosen) {
  StorageCatalog catalog;
  const ClaimDecision pre_bind{"team", "data", "pv", "n0", "uid-data"};
  const ClaimDecision provision{"team", "scratch", "", "n0", "uid-scratch"};
  EXPECT_EQ(ClaimDecisionDone(catalog, pre_bind).status().code(), StatusCode::kNotFound);

  ClaimInfo data = Claim("data", "local");
  catalog.UpsertClaim(data);
  EXPECT_FALSE(*ClaimDecisionDone(catalog, pre_bind));
  data.volume_name = "pv";
  data.bound = true;
  catalog.UpsertClaim(data);
  EXPECT_TRUE(*ClaimDecisionDone(catalog, pre_bind));
  data.volume_name = "someone-elses";
  catalog.UpsertClaim(data);
  Result<bool> elsewhere = ClaimDecisionDone(catalog, pre_bind);
  ASSERT_FALSE(elsewhere.ok());
  EXPECT_THAT(elsewhere.status().message(), HasSubstr("someone-elses"));

  ClaimInfo scratch = Claim("scratch", "fast");
  scratch.volume_name = "pvc-uid-scratch";
  scratch.bound = true;
  catalog.UpsertClaim(scratch);
  EXPECT_TRUE(*ClaimDecisionDone(catalog, provision)) << "any volume the provisioner made";
  scratch.deleting = true;
  catalog.UpsertClaim(scratch);
  EXPECT_FALSE(ClaimDecisionDone(catalog, provision).ok());
}

TEST(CheckAwaitedClaimsTest, NamesTheUnboundAndStopsAtOneThatWillNeverBind) {
  StorageCatalog catalog;
  ClaimInfo data = Claim("data", "local");
  data.volume_name = "pv";
  data.bound = true;
  catalog.UpsertClaim(data);
  catalog.UpsertClaim(Claim("scratch", "fast"));
  const ClaimDecision bound{"team", "data", "pv", "n0", "uid-data"};
  const ClaimDecision provisioning{"team", "scratch", "", "n0", "uid-scratch"};
  AwaitedClaims waiting = CheckAwaitedClaims(catalog, {bound, provisioning});
  EXPECT_TRUE(waiting.failure.ok());
  EXPECT_THAT(waiting.unbound, ElementsAre("scratch"));
  EXPECT_FALSE(waiting.AllBound());
  EXPECT_TRUE(CheckAwaitedClaims(catalog, {bound}).AllBound());
  const ClaimDecision gone{"team", "gone", "", "n0", "uid-gone"};
  EXPECT_EQ(CheckAwaitedClaims(catalog, {bound, gone}).failure.code(), StatusCode::kNotFound);
}

// The planner with volumes tracked: whole gangs go where every member's
// claims can be had.
class VolumePlannerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 3; ++i) {
      std::string name = "n" + std::to_string(i);
      ASSERT_TRUE(snapshot_
                      .UpsertNode(NodeBuilder(name)
                                      .Gpus(8)
                                      .Label(std::string(kHostname), name)
                                      .Label("zone", i == 2 ? "b" : "a")
                                      .Build())
                      .ok());
    }
    snapshot_.storage().set_tracked(true);
    snapshot_.storage().UpsertClass(LocalClass());
    snapshot_.storage().UpsertClass(ProvisionedClass());
  }

  static std::map<std::string, std::string> Placement(const GroupPlan& plan) {
    std::map<std::string, std::string> out;
    for (const Assignment& assignment : plan.assignments) {
      out[assignment.pod->name] = assignment.node_name;
    }
    return out;
  }

  // Workers 0 and 1 mounting the local claims data-0 and data-1.
  GroupFixture TwoMembersWithClaimsOfTheirOwn() {
    GroupFixture job("job", MakeSpec({GroupRole{"worker", 2, 2, 0}}));
    for (int i = 0; i < 2; ++i) {
      std::string claim = "data-" + std::to_string(i);
      snapshot_.storage().UpsertClaim(Claim(claim, "local"));
      job.AddMembers("worker", i, 1, [&claim](PodBuilder& pod) { pod.Gpus(1).Claim(claim); });
    }
    return job;
  }

  Snapshot snapshot_;
  PlannerConfig config_;
};

TEST_F(VolumePlannerTest, AGangSharingOneLocalClaimLandsOnTheNodeOfItsVolume) {
  snapshot_.storage().UpsertClaim(Claim("data", "local"));
  snapshot_.storage().UpsertVolume(LocalVolume("pv-n2", "n2"));
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 4, 4, 0}}));
  job.AddMembers("worker", 0, 4, [](PodBuilder& pod) { pod.Gpus(1).Claim("data"); });

  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  for (const auto& [pod, node] : Placement(plan)) {
    EXPECT_EQ(node, "n2") << pod;
  }
  EXPECT_THAT(plan.claim_decisions,
              ElementsAre(ClaimDecision{"team", "data", "pv-n2", "n2", "uid-data"}));

  ASSERT_TRUE(CommitPlan(snapshot_, plan).ok());
  EXPECT_EQ(snapshot_.storage().FindClaim("team", "data")->volume_name, "pv-n2");
  EXPECT_THAT(*snapshot_.ClaimUsersOf("team/data"), ElementsAre("n2", "n2", "n2", "n2"));
}

TEST_F(VolumePlannerTest, AProvisionedReadWriteOnceClaimPinsItsUsersToOneNode) {
  snapshot_.storage().UpsertClaim(Claim("scratch", "fast"));
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 3, 3, 0}}));
  job.AddMembers("worker", 0, 3, [](PodBuilder& pod) { pod.Gpus(2).Claim("scratch"); });

  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  std::map<std::string, std::string> placement = Placement(plan);
  ASSERT_EQ(placement.size(), 3u);
  std::string node = placement.begin()->second;
  for (const auto& [pod, on] : placement) {
    EXPECT_EQ(on, node) << pod;
  }
  EXPECT_THAT(plan.claim_decisions,
              ElementsAre(ClaimDecision{"team", "scratch", "", node, "uid-scratch"}));
}

TEST_F(VolumePlannerTest, PerMemberClaimsEachGetAVolumeOfTheirOwn) {
  snapshot_.storage().UpsertVolume(LocalVolume("pv-a", "n1"));
  snapshot_.storage().UpsertVolume(LocalVolume("pv-b", "n1"));
  GroupFixture job = TwoMembersWithClaimsOfTheirOwn();

  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  ASSERT_TRUE(plan.placed()) << plan.reason;
  EXPECT_THAT(plan.claim_decisions,
              ElementsAre(ClaimDecision{"team", "data-0", "pv-a", "n1", "uid-data-0"},
                          ClaimDecision{"team", "data-1", "pv-b", "n1", "uid-data-1"}));
}

TEST_F(VolumePlannerTest, AGangWhoseVolumesFitNowhereWaitsNamingTheClaimAndLeavesNoTrace) {
  snapshot_.storage().UpsertVolume(LocalVolume("only-one", "n0"));
  GroupFixture job = TwoMembersWithClaimsOfTheirOwn();

  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  EXPECT_EQ(plan.outcome, PlanOutcome::kWait);
  EXPECT_EQ(plan.shortfall, Shortfall::kVolumes);
  EXPECT_THAT(plan.reason, HasSubstr("worker: 1 of min 2 placeable"));
  EXPECT_THAT(plan.reason,
              HasSubstr("3 node(s) didn't find available persistent volumes to bind (claim "
                        "\"data-1\")"));
  EXPECT_TRUE(plan.claim_decisions.empty());
  EXPECT_EQ(snapshot_.ClaimUsersOf("team/data-0"), nullptr);
  EXPECT_EQ(snapshot_.storage().FindClaim("team", "data-0")->volume_name, "");
}

TEST_F(VolumePlannerTest, UntrackedVolumesAreIgnoredAsBefore) {
  snapshot_.storage().set_tracked(false);
  GroupFixture job("job", MakeSpec({GroupRole{"worker", 2, 2, 0}}));
  job.AddMembers("worker", 0, 2, [](PodBuilder& pod) { pod.Gpus(1).Claim("no-such-claim"); });
  GroupPlan plan = PlanGroup(snapshot_, job.Group(snapshot_), config_);
  EXPECT_TRUE(plan.placed()) << plan.reason;
  EXPECT_TRUE(plan.claim_decisions.empty());
}

}  // namespace
}  // namespace hybridjob::scheduler
