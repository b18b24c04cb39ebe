#include <chrono>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/controller/departed.h>

namespace hybridjob::controller {
namespace {

using ::testing::IsEmpty;
using ::testing::SizeIs;
using Clock = DepartedMembers::Clock;
using std::chrono::seconds;

ObservedPod Member(const std::string& role, int32_t index, const std::string& uid, bool disrupted) {
  ObservedPod pod;
  pod.name = "train-" + role + "-" + std::to_string(index);
  pod.uid = uid;
  pod.job_name = "train";
  pod.role = role;
  pod.index = index;
  pod.reclaimed = disrupted;
  return pod;
}

const Clock::time_point kEpoch{};

TEST(DepartedMembersTest, KeepsOnlyMembersDeletedWhileMarkedForDisruption) {
  DepartedMembers departed;
  departed.PodDeleted("ns/train", Member("worker", 3, "u3", true), kEpoch);
  departed.PodDeleted("ns/train", Member("worker", 1, "u1", false), kEpoch);
  const std::vector<ObservedPod> gone = departed.For("ns/train", {}, kEpoch + seconds(1));
  ASSERT_THAT(gone, SizeIs(1));
  EXPECT_EQ(gone[0].index, 3);
  EXPECT_EQ(gone[0].uid, "u3");
  EXPECT_THAT(departed.For("ns/other", {}, kEpoch), IsEmpty());
}

TEST(DepartedMembersTest, ARecordEndsWhenANewerPodTakesTheIndex) {
  DepartedMembers departed;
  departed.PodDeleted("ns/train", Member("worker", 3, "u3", true), kEpoch);
  departed.PodDeleted("ns/train", Member("worker", 2, "u2", true), kEpoch);
  const std::vector<ObservedPod> pods = {Member("worker", 3, "u3-new", false),
                                         Member("worker", 0, "u0", false)};
  const std::vector<ObservedPod> gone = departed.For("ns/train", pods, kEpoch);
  ASSERT_THAT(gone, SizeIs(1));
  EXPECT_EQ(gone[0].index, 2);
  // Dropped for good: the record does not come back once that pod goes too.
  EXPECT_THAT(departed.For("ns/train", {}, kEpoch), SizeIs(1));
}

TEST(DepartedMembersTest, ARecordEndsAfterItsTtlOrWithItsJob) {
  DepartedMembers departed(seconds(60));
  departed.PodDeleted("ns/a", Member("worker", 1, "u1", true), kEpoch);
  departed.PodDeleted("ns/b", Member("worker", 1, "u1b", true), kEpoch);
  EXPECT_THAT(departed.For("ns/a", {}, kEpoch + seconds(59)), SizeIs(1));
  EXPECT_THAT(departed.For("ns/a", {}, kEpoch + seconds(60)), IsEmpty());
  EXPECT_EQ(departed.JobCount(), 1u);
  departed.Forget("ns/b");
  EXPECT_EQ(departed.JobCount(), 0u);
}

TEST(DepartedMembersTest, TheLatestDeletionOfAnIndexIsKept) {
  DepartedMembers departed;
  departed.PodDeleted("ns/train", Member("worker", 2, "old", true), kEpoch);
  departed.PodDeleted("ns/train", Member("worker", 2, "new", true), kEpoch + seconds(5));
  const std::vector<ObservedPod> gone = departed.For("ns/train", {}, kEpoch + seconds(6));
  ASSERT_THAT(gone, SizeIs(1));
  EXPECT_EQ(gone[0].uid, "new");
}

}  // namespace
}  // namespace hybridjob::controller
