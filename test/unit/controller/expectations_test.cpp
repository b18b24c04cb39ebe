#include <gtest/gtest.h>

#include <hybridjob/controller/expectations.h>

namespace hybridjob::controller {
namespace {

using State = Expectations::State;
using std::chrono::milliseconds;
using std::chrono::seconds;

const Expectations::Clock::time_point kT0{seconds(1000)};
const std::string kJob = "ns/train";

ObservedPod Pod(const std::string& name, const std::string& uid, bool terminating = false) {
  ObservedPod pod;
  pod.name = name;
  pod.uid = uid;
  pod.job_name = "train";
  pod.terminating = terminating;
  return pod;
}

TEST(ExpectationsTest, NothingExpectedIsSatisfied) {
  Expectations expectations;
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0), State::kSatisfied);
  EXPECT_EQ(expectations.Size(), 0u);
  EXPECT_EQ(expectations.Pending(kJob), 0u);
  EXPECT_EQ(expectations.TimeToExpiry(kJob, kT0), Expectations::Clock::duration::zero());
}

TEST(ExpectationsTest, CreatedPodMustAppearInTheCache) {
  Expectations expectations;
  expectations.ExpectCreation(kJob, "train-worker-0", "u1", kT0);
  EXPECT_EQ(expectations.Pending(kJob), 1u);
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0), State::kPending);
  // Another pod of the job does not meet it.
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-worker-1", "u2")}, "1", kT0), State::kPending);
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-worker-0", "u1")}, "1", kT0 + seconds(1)),
            State::kSatisfied);
  EXPECT_EQ(expectations.Size(), 0u);
}

TEST(ExpectationsTest, CreationIsMetByTheAddEventEvenIfThePodIsGoneBeforeTheCheck) {
  Expectations expectations;
  expectations.ExpectCreation(kJob, "train-worker-0", "u1", kT0);
  expectations.PodSeen(kJob, Pod("train-worker-0", "u1"));
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0), State::kSatisfied);
}

TEST(ExpectationsTest, CreationIsMetByTheDeleteEventOfThatPod) {
  Expectations expectations;
  expectations.ExpectCreation(kJob, "train-worker-0", "u1", kT0);
  expectations.PodGone(kJob, Pod("train-worker-0", "u1"));
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0), State::kSatisfied);
}

TEST(ExpectationsTest, CreationWithAKnownUidIsNotMetByAnotherPodOfThatName) {
  Expectations expectations;
  expectations.ExpectCreation(kJob, "train-worker-0", "new", kT0);
  // The old, failed pod of the same name is still cached.
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-worker-0", "old")}, "1", kT0), State::kPending);
  expectations.PodSeen(kJob, Pod("train-worker-0", "old"));
  EXPECT_EQ(expectations.Pending(kJob), 1u);
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-worker-0", "new")}, "1", kT0), State::kSatisfied);
}

TEST(ExpectationsTest, CreationWithoutUidIsMetByAnyPodOfThatName) {
  Expectations expectations;
  expectations.ExpectCreation(kJob, "train-worker-0", "", kT0);
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-worker-0", "whatever")}, "1", kT0),
            State::kSatisfied);
}

TEST(ExpectationsTest, DeletedPodMustLeaveTheCache) {
  Expectations expectations;
  expectations.ExpectDeletion(kJob, "u1", kT0);
  // The failed pod the reconciler deleted is still cached: planning now would
  // count its restart a second time.
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-worker-0", "u1")}, "1", kT0), State::kPending);
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0), State::kSatisfied);
}

TEST(ExpectationsTest, DeletionIsMetByATerminatingPod) {
  Expectations expectations;
  expectations.ExpectDeletion(kJob, "u1", kT0);
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-ps-0", "u1", /*terminating=*/true)}, "1", kT0),
            State::kSatisfied);
}

TEST(ExpectationsTest, DeletionIsMetByEvents) {
  Expectations expectations;
  expectations.ExpectDeletion(kJob, "u1", kT0);
  expectations.ExpectDeletion(kJob, "u2", kT0);
  expectations.PodSeen(kJob, Pod("train-ps-0", "u1", /*terminating=*/true));
  expectations.PodGone(kJob, Pod("train-worker-0", "u2"));
  EXPECT_EQ(expectations.Pending(kJob), 0u);
  // An event that arrived late does not resurrect anything either.
  expectations.PodGone(kJob, Pod("train-worker-0", "u2"));
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-ps-0", "u1", true)}, "1", kT0), State::kSatisfied);
}

TEST(ExpectationsTest, ANewPodWithTheDeletedPodsNameMeetsTheDeletion) {
  Expectations expectations;
  expectations.ExpectDeletion(kJob, "old", kT0);
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-worker-0", "new")}, "1", kT0), State::kSatisfied);
}

TEST(ExpectationsTest, AnUpdateThatIsNotTerminatingDoesNotMeetADeletion) {
  Expectations expectations;
  expectations.ExpectDeletion(kJob, "u1", kT0);
  expectations.PodSeen(kJob, Pod("train-worker-0", "u1"));
  EXPECT_EQ(expectations.Pending(kJob), 1u);
}

TEST(ExpectationsTest, EmptyUidIsNeverExpected) {
  Expectations expectations;
  expectations.ExpectDeletion(kJob, "", kT0);
  expectations.ExpectJobChange(kJob, "", kT0);
  EXPECT_EQ(expectations.Size(), 0u);
}

TEST(ExpectationsTest, StatusWriteWaitsForTheCachedJobToMoveOn) {
  Expectations expectations;
  expectations.ExpectJobChange(kJob, "41", kT0);
  EXPECT_EQ(expectations.Check(kJob, {}, "41", kT0), State::kPending);
  // Versions are opaque: any other value means the cache has moved on.
  EXPECT_EQ(expectations.Check(kJob, {}, "40", kT0), State::kSatisfied);
}

TEST(ExpectationsTest, EverythingMustBeMet) {
  Expectations expectations;
  expectations.ExpectJobChange(kJob, "7", kT0);
  expectations.ExpectDeletion(kJob, "failed", kT0);
  expectations.ExpectCreation(kJob, "train-worker-3", "u3", kT0);
  EXPECT_EQ(expectations.Pending(kJob), 3u);
  EXPECT_EQ(expectations.Describe(kJob), "create train-worker-3, delete uid failed, status write");
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-worker-0", "failed")}, "8", kT0), State::kPending);
  EXPECT_EQ(expectations.Pending(kJob), 2u);
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-worker-3", "u3")}, "8", kT0), State::kSatisfied);
  EXPECT_EQ(expectations.Describe(kJob), "");
}

TEST(ExpectationsTest, JobsAreIndependent) {
  Expectations expectations;
  expectations.ExpectDeletion("ns/a", "u1", kT0);
  EXPECT_EQ(expectations.Check("ns/b", {Pod("b-worker-0", "u1")}, "1", kT0), State::kSatisfied);
  expectations.PodGone("ns/b", Pod("b-worker-0", "u1"));
  EXPECT_EQ(expectations.Pending("ns/a"), 1u);
  EXPECT_EQ(expectations.Check("ns/a", {Pod("a-worker-0", "u1")}, "1", kT0), State::kPending);
}

TEST(ExpectationsTest, UnmetExpectationsExpireSoAMissedEventNeverWedgesAJob) {
  Expectations expectations(seconds(30));
  expectations.ExpectDeletion(kJob, "u1", kT0);
  const std::vector<ObservedPod> stale = {Pod("train-worker-0", "u1")};
  EXPECT_EQ(expectations.Check(kJob, stale, "1", kT0 + seconds(29)), State::kPending);
  EXPECT_EQ(expectations.TimeToExpiry(kJob, kT0 + seconds(29)), seconds(1));
  EXPECT_EQ(expectations.Check(kJob, stale, "1", kT0 + seconds(30)), State::kExpired);
  // Dropped: the next check plans.
  EXPECT_EQ(expectations.Size(), 0u);
  EXPECT_EQ(expectations.Check(kJob, stale, "1", kT0 + seconds(31)), State::kSatisfied);
}

TEST(ExpectationsTest, ANewExpectationRestartsTheTimeout) {
  Expectations expectations(seconds(30));
  expectations.ExpectDeletion(kJob, "u1", kT0);
  expectations.ExpectCreation(kJob, "train-worker-1", "u2", kT0 + seconds(20));
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-worker-0", "u1")}, "1", kT0 + seconds(40)),
            State::kPending);
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-worker-0", "u1")}, "1", kT0 + seconds(50)),
            State::kExpired);
}

TEST(ExpectationsTest, ForgetDropsAJobsExpectations) {
  Expectations expectations;
  expectations.ExpectCreation(kJob, "train-worker-0", "u1", kT0);
  expectations.ExpectDeletion(kJob, "u0", kT0);
  expectations.Forget(kJob);
  EXPECT_EQ(expectations.Size(), 0u);
  EXPECT_EQ(expectations.Check(kJob, {Pod("train-worker-9", "u0")}, "1", kT0), State::kSatisfied);
}

TEST(ExpectationsTest, EventsForJobsWithoutExpectationsAreIgnored) {
  Expectations expectations;
  expectations.PodSeen(kJob, Pod("train-worker-0", "u1"));
  expectations.PodGone(kJob, Pod("train-worker-0", "u1"));
  EXPECT_EQ(expectations.Size(), 0u);
}

TEST(ExpectationsTest, RestartScenario) {
  // The reconciler counted a restart (status write based on version 10) and
  // deleted the failed member; its caches then catch up in either order.
  Expectations expectations;
  expectations.ExpectJobChange(kJob, "10", kT0);
  expectations.ExpectDeletion(kJob, "failed-uid", kT0);
  const std::vector<ObservedPod> before = {Pod("train-worker-0", "ok-uid"),
                                           Pod("train-worker-1", "failed-uid")};
  const std::vector<ObservedPod> after = {Pod("train-worker-0", "ok-uid")};
  // Job updated, pod not yet gone: still the failed pod in view, so wait.
  EXPECT_EQ(expectations.Check(kJob, before, "11", kT0 + milliseconds(5)), State::kPending);
  // Pod gone, job still at the old version: wait as well.
  expectations.ExpectJobChange(kJob, "10", kT0);
  EXPECT_EQ(expectations.Check(kJob, after, "10", kT0 + milliseconds(6)), State::kPending);
  EXPECT_EQ(expectations.Check(kJob, after, "11", kT0 + milliseconds(7)), State::kSatisfied);
}

nlohmann::json Object(const std::string& name, const std::string& resource_version) {
  return {{"metadata", {{"name", name}, {"resourceVersion", resource_version}}}};
}

TEST(ExpectationsTest, CreatedChildrenMustAppearInTheCache) {
  Expectations expectations;
  expectations.ExpectChild(kJob, Expectations::ChildKind::kService, "train", "", kT0);
  expectations.ExpectChild(kJob, Expectations::ChildKind::kConfigMap, "train-cluster", "", kT0);
  EXPECT_EQ(expectations.Pending(kJob), 2u);
  EXPECT_EQ(expectations.Describe(kJob), "create Service train, create ConfigMap train-cluster");
  Observed cached;
  // Without the children in view they stay outstanding.
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0), State::kPending);
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0, &cached), State::kPending);
  // A ConfigMap of that name does not meet the Service's expectation.
  cached.config_maps = {Object("train-cluster", "5"), Object("train", "6")};
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0, &cached), State::kPending);
  EXPECT_EQ(expectations.Describe(kJob), "create Service train");
  cached.services = {Object("train", "7")};
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0, &cached), State::kSatisfied);
  EXPECT_EQ(expectations.Size(), 0u);
}

TEST(ExpectationsTest, AnUpdatedConfigMapMustMoveOffItsOldVersion) {
  Expectations expectations;
  expectations.ExpectChild(kJob, Expectations::ChildKind::kConfigMap, "train-cluster", "5", kT0);
  EXPECT_EQ(expectations.Describe(kJob), "update ConfigMap train-cluster");
  Observed cached;
  cached.config_maps = {Object("train-cluster", "5")};
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0, &cached), State::kPending);
  cached.config_maps = {Object("train-cluster", "9")};
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0, &cached), State::kSatisfied);
}

TEST(ExpectationsTest, ADeletedConfigMapMustLeaveTheCache) {
  Expectations expectations;
  expectations.ExpectChildGone(kJob, Expectations::ChildKind::kConfigMap, "train-cluster", "u1",
                               kT0);
  EXPECT_EQ(expectations.Describe(kJob), "delete ConfigMap train-cluster");
  EXPECT_EQ(expectations.Pending(kJob), 1u);
  nlohmann::json old = Object("train-cluster", "5");
  old["metadata"]["uid"] = "u1";
  Observed cached;
  cached.config_maps = {old};
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0, &cached), State::kPending);
  // Without the children in view it stays outstanding.
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0), State::kPending);
  // A newer ConfigMap of that name is not the deleted one.
  nlohmann::json newer = Object("train-cluster", "8");
  newer["metadata"]["uid"] = "u2";
  cached.config_maps = {newer};
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0, &cached), State::kSatisfied);

  expectations.ExpectChildGone(kJob, Expectations::ChildKind::kConfigMap, "train-cluster", "u2",
                               kT0);
  cached.config_maps.clear();
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0, &cached), State::kSatisfied);
}

TEST(ExpectationsTest, ChildrenNeverShownExpireLikeEverythingElse) {
  Expectations expectations(seconds(30));
  expectations.ExpectChild(kJob, Expectations::ChildKind::kClaim, "train-data", "", kT0);
  Observed cached;
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0 + seconds(29), &cached), State::kPending);
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0 + seconds(30), &cached), State::kExpired);
  EXPECT_EQ(expectations.Check(kJob, {}, "1", kT0 + seconds(31), &cached), State::kSatisfied);
}

}  // namespace
}  // namespace hybridjob::controller
