// What a pod may claim: membership, queue and priority checked against the
// HybridJob, namespace and PriorityClass objects (tenancy.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <hybridjob/api/labels.h>
#include <hybridjob/scheduler/core/tenancy.h>

namespace hybridjob::scheduler {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TrustedJob Job(int32_t min_replicas = 2, int32_t max_replicas = 4) {
  TrustedJob job;
  job.namespace_name = "team-a";
  job.name = "train";
  job.uid = "uid-1";
  job.spec.roles = {GroupRole{"ps", 1, 1, 1}, GroupRole{"worker", min_replicas, max_replicas, 0}};
  job.spec.queue = "";
  job.spec.schedule_timeout_seconds = 60;
  return job;
}

// A member as the controller creates it.
PodInfo Member(const std::string& role, int32_t index) {
  PodInfo pod;
  pod.namespace_name = "team-a";
  pod.name = "train-" + role + "-" + std::to_string(index);
  pod.labels.Set(api::kJobNameLabel, "train");
  pod.labels.Set(api::kRoleLabel, role);
  pod.labels.Set(api::kIndexLabel, std::to_string(index));
  pod.job_name = "train";
  pod.role = role;
  pod.index = index;
  pod.controller =
      ControllerRef{std::string(api::kApiVersion), std::string(api::kKind), "train", "uid-1"};
  return pod;
}

class TenancyTest : public ::testing::Test {
 protected:
  void SetUp() override { directory_.UpsertJob(Job()); }
  TenancyDirectory directory_;
};

TEST_F(TenancyTest, AControlledMemberGetsTheJobsShapeAndTheDefaultQueue) {
  PodInfo pod = Member("worker", 1);
  EXPECT_TRUE(ResolvePod(pod, directory_));
  EXPECT_EQ(MembershipOf(pod), Membership::kTrusted);
  ASSERT_TRUE(pod.group_spec.has_value());
  EXPECT_EQ(pod.group_spec->roles.size(), 2u);
  EXPECT_EQ(pod.group_spec->queue, "default");
  EXPECT_EQ(pod.group_spec->schedule_timeout_seconds, 60);
  EXPECT_EQ(pod.queue, "default");
  // Resolving again changes nothing.
  EXPECT_FALSE(ResolvePod(pod, directory_));
}

// The annotation may ask for less than the job allows (the controller lowers
// minimums for members that succeeded), never for more, nor another queue.
TEST_F(TenancyTest, TheAnnotationMayOnlyAskForLess) {
  GroupSpec asked;
  asked.roles = {GroupRole{"ps", 1, 1, 9}, GroupRole{"worker", 1, 64, 9},
                 GroupRole{"extra", 5, 5, 0}};
  asked.queue = "vip";
  asked.schedule_timeout_seconds = 0;
  GroupSpec effective = EffectiveGroupSpec(Job(), asked);
  ASSERT_EQ(effective.roles.size(), 2u);
  EXPECT_EQ(effective.roles[1].min_replicas, 1);  // lowered
  EXPECT_EQ(effective.roles[1].max_replicas, 4);  // not raised
  EXPECT_EQ(effective.roles[1].priority, 0);      // the job's
  EXPECT_EQ(effective.roles[0].priority, 1);
  EXPECT_EQ(effective.queue, "");                    // the job's (the namespace default)
  EXPECT_EQ(effective.schedule_timeout_seconds, 0);  // shorter: members succeeded
  asked.schedule_timeout_seconds = 900;
  EXPECT_EQ(EffectiveGroupSpec(Job(), asked).schedule_timeout_seconds, 60);

  // Topology is the job's alone: a member cannot move its gang, nor free itself from it.
  TrustedJob bound = Job();
  bound.spec.topology = api::TopologySpec{"example.com/rack", api::TopologyMode::kRequired};
  asked.topology = api::TopologySpec{"example.com/zone", api::TopologyMode::kPreferred};
  asked.roles[1].topology = api::TopologySpec{"", api::TopologyMode::kNone};
  effective = EffectiveGroupSpec(bound, asked);
  EXPECT_EQ(effective.topology, bound.spec.topology);
  EXPECT_FALSE(effective.roles[1].topology.has_value());
  asked.topology.reset();

  // Succeeded indices pass, within the maximum that holds.
  asked.roles = {GroupRole{"worker", 1, 3, 0, std::nullopt, {0, 2, 5}}};
  effective = EffectiveGroupSpec(Job(), asked);
  EXPECT_THAT(effective.roles[1].completed, ElementsAre(0, 2));
  EXPECT_TRUE(effective.roles[0].completed.empty());

  asked.roles = {GroupRole{"worker", 3, 2, 0}};
  effective = EffectiveGroupSpec(Job(), asked);
  EXPECT_EQ(effective.roles[1].max_replicas, 2);
  EXPECT_EQ(effective.roles[1].min_replicas, 2);  // never above max
  EXPECT_EQ(effective.roles[0].min_replicas, 1);  // absent from the annotation: the job's
}

TEST_F(TenancyTest, APodWithoutTheJobAsControllerIsUntrusted) {
  PodInfo pod = Member("worker", 0);
  pod.controller.reset();
  pod.group_spec = GroupSpec{{GroupRole{"worker", 1, 1, 0}}, "vip", 0};
  ResolvePod(pod, directory_);
  EXPECT_EQ(MembershipOf(pod), Membership::kUntrusted);
  EXPECT_TRUE(pod.job_name.empty());
  EXPECT_FALSE(pod.group_spec.has_value());
  EXPECT_EQ(pod.queue, "default");  // the namespace's, not the annotation's
  EXPECT_THAT(pod.untrusted_reason, HasSubstr("no controller ownerReference"));

  pod.controller = ControllerRef{"apps/v1", "ReplicaSet", "train", "uid-1"};
  ResolvePod(pod, directory_);
  EXPECT_THAT(pod.untrusted_reason, HasSubstr("its controller is ReplicaSet \"train\""));

  pod.controller = ControllerRef{"batch.hybridjob.io/v1alpha1", "HybridJob", "other", "uid-1"};
  ResolvePod(pod, directory_);
  EXPECT_EQ(MembershipOf(pod), Membership::kUntrusted);
}

TEST_F(TenancyTest, AStaleOrForgedUidIsUntrusted) {
  PodInfo pod = Member("worker", 0);
  pod.controller->uid = "uid-of-an-earlier-job";
  ResolvePod(pod, directory_);
  EXPECT_EQ(MembershipOf(pod), Membership::kUntrusted);
  EXPECT_THAT(pod.untrusted_reason, HasSubstr("that job's uid is uid-1"));
}

TEST_F(TenancyTest, OnlyTheMemberNamesOfTheJobsRolesAreMembers) {
  PodInfo renamed = Member("worker", 0);
  renamed.name = "my-own-pod";
  ResolvePod(renamed, directory_);
  EXPECT_EQ(MembershipOf(renamed), Membership::kUntrusted);
  EXPECT_THAT(renamed.untrusted_reason, HasSubstr("is not named as member worker 0"));

  PodInfo other_role = Member("chief", 0);
  ResolvePod(other_role, directory_);
  EXPECT_THAT(other_role.untrusted_reason, HasSubstr("role \"chief\" is not a role"));
}

// A re-run's members are named for their run, so that the ended pods of the
// run before keep theirs; the name must match the run label.
TEST_F(TenancyTest, ALaterRunsMembersAreNamedForTheirRun) {
  PodInfo rerun = Member("worker", 0);
  rerun.name = "train-worker-0-run2";
  rerun.labels.Set(api::kRunLabel, "2");
  rerun.run = 2;
  ResolvePod(rerun, directory_);
  EXPECT_EQ(MembershipOf(rerun), Membership::kTrusted) << rerun.untrusted_reason;

  for (const auto& [name, run] : std::vector<std::pair<std::string, int64_t>>{
           {"train-worker-0-run2", 3}, {"train-worker-0", 2}, {"train-worker-0-run2", -1}}) {
    PodInfo mislabelled = Member("worker", 0);
    mislabelled.name = name;
    mislabelled.run = run;
    ResolvePod(mislabelled, directory_);
    EXPECT_EQ(MembershipOf(mislabelled), Membership::kUntrusted) << name << " run " << run;
    EXPECT_THAT(mislabelled.untrusted_reason, HasSubstr("is not named as member worker 0"));
  }
}

TEST_F(TenancyTest, AMemberOfAJobNotSeenYetAwaitsIt) {
  PodInfo pod = Member("worker", 0);
  directory_.RemoveJob("team-a", "train");
  ResolvePod(pod, directory_);
  EXPECT_EQ(MembershipOf(pod), Membership::kAwaitingJob);
  EXPECT_TRUE(pod.job_name.empty());
  directory_.UpsertJob(Job());
  EXPECT_TRUE(ResolvePod(pod, directory_));
  EXPECT_EQ(MembershipOf(pod), Membership::kTrusted);
}

TEST_F(TenancyTest, TheQueueIsTheJobsElseTheNamespacesDefault) {
  PodInfo lone;
  lone.namespace_name = "team-a";
  lone.name = "notebook";
  ResolvePod(lone, directory_);
  EXPECT_EQ(MembershipOf(lone), Membership::kNone);
  EXPECT_EQ(lone.queue, "default");

  json ns = {{"metadata",
              {{"name", "team-a"},
               {"labels", {{"tier", "gold"}}},
               {"annotations", {{std::string(kDefaultQueueKey), "research"}}}}}};
  Result<NamespaceInfo> info = ParseNamespaceInfo(ns);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->default_queue, "research");
  ns["metadata"]["labels"][std::string(kDefaultQueueKey)] = "vision";  // the label wins
  EXPECT_EQ(ParseNamespaceInfo(ns)->default_queue, "vision");
  directory_.UpsertNamespace(*ParseNamespaceInfo(ns));

  EXPECT_TRUE(ResolvePod(lone, directory_));
  EXPECT_EQ(lone.queue, "vision");
  EXPECT_EQ(*lone.namespace_labels.Find("tier"), "gold");
  PodInfo member = Member("worker", 0);
  ResolvePod(member, directory_);
  EXPECT_EQ(member.group_spec->queue, "vision");

  TrustedJob named = Job();
  named.spec.queue = "shared";
  directory_.UpsertJob(named);
  ResolvePod(member, directory_);
  EXPECT_EQ(member.group_spec->queue, "shared");
  EXPECT_EQ(member.queue, "shared");
}

TEST_F(TenancyTest, PriorityAndPreemptionComeFromThePriorityClass) {
  PodInfo pod = Member("worker", 0);
  pod.priority = 1000000;  // spec.priority: whatever the pod says
  ResolvePod(pod, directory_);
  EXPECT_EQ(pod.priority, 0);
  EXPECT_TRUE(pod.preempts);

  pod.priority_class_name = "high";
  ResolvePod(pod, directory_);
  EXPECT_EQ(pod.priority, 0);
  EXPECT_FALSE(pod.preempts);  // a class not seen gives no standing

  Result<PriorityClassInfo> high = ParsePriorityClassInfo(
      json{{"metadata", {{"name", "high"}}}, {"value", 1000}, {"preemptionPolicy", "Never"}});
  ASSERT_TRUE(high.ok());
  directory_.UpsertPriorityClass(*high);
  ResolvePod(pod, directory_);
  EXPECT_EQ(pod.priority, 1000);
  EXPECT_FALSE(pod.preempts);

  directory_.UpsertPriorityClass(PriorityClassInfo{"high", 1000, true, false});
  ResolvePod(pod, directory_);
  EXPECT_TRUE(pod.preempts);
  pod.preemption_never = true;
  ResolvePod(pod, directory_);
  EXPECT_FALSE(pod.preempts);

  PodInfo unnamed = Member("worker", 1);
  directory_.UpsertPriorityClass(PriorityClassInfo{"low-default", 5, true, true});
  directory_.UpsertPriorityClass(PriorityClassInfo{"high-default", 50, true, true});
  ResolvePod(unnamed, directory_);
  EXPECT_EQ(unnamed.priority, 50);
}

TEST(TenancyParseTest, ObjectsWithoutWhatTrustNeedsAreRefused) {
  EXPECT_FALSE(ParsePriorityClassInfo(json{{"metadata", {{"name", "x"}}}}).ok());
  EXPECT_FALSE(ParseNamespaceInfo(json::object()).ok());
  EXPECT_FALSE(ParseTrustedJob(json{{"metadata", {{"name", "j"}}}, {"spec", json::object()}}).ok());
  Result<TrustedJob> job =
      ParseTrustedJob(json{{"metadata", {{"name", "j"}, {"namespace", "n"}, {"uid", "u"}}},
                           {"spec",
                            {{"queue", "q"},
                             {"runPolicy", {{"scheduleTimeoutSeconds", 30}}},
                             {"replicaSpecs", json::array({{{"name", "worker"},
                                                            {"minReplicas", 2},
                                                            {"maxReplicas", 8},
                                                            {"priority", 3},
                                                            {"template", json::object()}}})}}}});
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->spec.queue, "q");
  EXPECT_EQ(job->spec.schedule_timeout_seconds, 30);
  ASSERT_EQ(job->spec.roles.size(), 1u);
  EXPECT_EQ(job->spec.roles[0], (GroupRole{"worker", 2, 8, 3}));
}

// A running job's shape is the gang the controller recorded for its run
// (status.runSpec.group): a changed queue or minimum is not the scheduler's to
// act on, and an edit the run takes (maxReplicas) counts once the controller
// has taken it.
TEST(TenancyParseTest, ARunningJobIsScheduledAsItsRunGoesOn) {
  json object = {{"metadata", {{"name", "j"}, {"namespace", "n"}, {"uid", "u"}}},
                 {"spec",
                  {{"queue", "q"},
                   {"replicaSpecs", json::array({{{"name", "worker"},
                                                  {"minReplicas", 2},
                                                  {"maxReplicas", 8},
                                                  {"template", json::object()}}})}}}};
  object["status"]["runSpec"] = {
      {"hash", "0123456789abcdef"},
      {"revision", "j-run-0123456789"},
      {"group",
       {{"roles", json::array({{{"name", "worker"}, {"min", 2}, {"max", 8}}})}, {"queue", "q"}}}};
  object["spec"]["queue"] = "elsewhere";
  object["spec"]["replicaSpecs"][0]["minReplicas"] = 1;
  object["spec"]["replicaSpecs"][0]["maxReplicas"] = 4;
  Result<TrustedJob> job = ParseTrustedJob(object);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->spec.queue, "q");
  ASSERT_EQ(job->spec.roles.size(), 1u);
  EXPECT_EQ(job->spec.roles[0], (GroupRole{"worker", 2, 8, 0})) << "not yet taken";

  object["status"]["runSpec"]["group"]["roles"][0]["max"] = 4;
  job = ParseTrustedJob(object);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->spec.roles[0], (GroupRole{"worker", 2, 4, 0})) << "maxReplicas is taken";
}

// With member keys, a pending member is placed only with the controller's
// signature for it; a signature copied onto another pod, or replayed onto a
// pod created later under a vacant name, is refused; a member already on a
// node keeps its place.
class SignedMemberTest : public TenancyTest {
 protected:
  void SetUp() override {
    TenancyTest::SetUp();
    directory_.SetMemberKeys(api::MemberKeys{{std::string(40, 'k')}});
  }
  PodInfo Signed(const std::string& role, int32_t index, int64_t issued, const std::string& uid) {
    PodInfo pod = Member(role, index);
    pod.uid = uid;
    pod.creation_time = Timestamp(std::chrono::seconds(issued + 1));
    pod.member_signature = api::SignMember(directory_.member_keys(),
                                           {pod.namespace_name, pod.name, "uid-1"}, issued,
                                           api::NewMemberNonce());
    return pod;
  }
  api::MemberNonceLedger nonces_;
};

TEST_F(SignedMemberTest, ASignedMemberIsTrustedAndAnUnsignedOneIsNot) {
  PodInfo pod = Signed("worker", 0, 1'800'000'000, "pod-1");
  ResolvePod(pod, directory_, &nonces_);
  EXPECT_EQ(MembershipOf(pod), Membership::kTrusted) << pod.untrusted_reason;
  EXPECT_FALSE(ResolvePod(pod, directory_, &nonces_)) << "resolving again changes nothing";

  PodInfo forged = Member("worker", 1);
  forged.uid = "pod-2";
  ResolvePod(forged, directory_, &nonces_);
  EXPECT_EQ(MembershipOf(forged), Membership::kUntrusted);
  EXPECT_THAT(forged.untrusted_reason,
              HasSubstr("claims to be member worker 1 of HybridJob \"train\", but it carries no "
                        "batch.hybridjob.io/member-signature annotation"));
  EXPECT_THAT(forged.untrusted_reason, HasSubstr("only pods hybridjob-controller made"));
}

TEST_F(SignedMemberTest, ACopiedOrReplayedSignatureIsRefused) {
  PodInfo original = Signed("worker", 0, 1'800'000'000, "pod-1");
  ResolvePod(original, directory_, &nonces_);
  ASSERT_EQ(MembershipOf(original), Membership::kTrusted);

  // Another member name: the signature was made for worker-0.
  PodInfo other_name = Member("worker", 1);
  other_name.uid = "pod-2";
  other_name.creation_time = original.creation_time;
  other_name.member_signature = original.member_signature;
  ResolvePod(other_name, directory_, &nonces_);
  EXPECT_THAT(other_name.untrusted_reason, HasSubstr("not made for this pod"));

  // The same name right after the original went: its nonce is spent.
  PodInfo same_name = original;
  same_name.uid = "pod-3";
  ResolvePod(same_name, directory_, &nonces_);
  EXPECT_EQ(MembershipOf(same_name), Membership::kUntrusted);
  EXPECT_THAT(same_name.untrusted_reason, HasSubstr("made for another pod, which used it first"));

  // The same name later (a scheduler that never saw the original): too old.
  PodInfo later = original;
  later.uid = "pod-4";
  later.creation_time += std::chrono::hours(1);
  ResolvePod(later, directory_);
  EXPECT_THAT(later.untrusted_reason, HasSubstr("outside the window"));
}

TEST_F(SignedMemberTest, AMemberOnANodeKeepsItsPlaceWithoutASignature) {
  PodInfo placed = Member("worker", 0);
  placed.uid = "pod-1";
  placed.node_name = "node-1";
  ResolvePod(placed, directory_, &nonces_);
  EXPECT_EQ(MembershipOf(placed), Membership::kTrusted)
      << "placed before keys were set, or by this scheduler after the same check";
}

TEST_F(TenancyTest, WithoutKeysSignaturesAreNotChecked) {
  PodInfo pod = Member("worker", 0);
  pod.member_signature = "not a signature";
  ResolvePod(pod, directory_);
  EXPECT_EQ(MembershipOf(pod), Membership::kTrusted);
}

}  // namespace
}  // namespace hybridjob::scheduler
