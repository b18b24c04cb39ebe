#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/controller/refused_creates.h>

namespace hybridjob::controller {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

RefusedCreate Refusal(const std::string& pod, int32_t index) {
  return {pod, "worker", index, "exceeded quota: gpus"};
}

TEST(RefusedCreatesTest, ARefusalLastsUntilThatPodIsCreated) {
  RefusedCreates refused;
  refused.Refused("ns/job", "uid-1", Refusal("job-worker-2", 2));
  refused.Refused("ns/job", "uid-1", Refusal("job-worker-3", 3));
  EXPECT_THAT(refused.For("ns/job", "uid-1"),
              ElementsAre(Refusal("job-worker-2", 2), Refusal("job-worker-3", 3)));
  refused.Created("ns/job", "job-worker-2");
  EXPECT_THAT(refused.For("ns/job", "uid-1"), ElementsAre(Refusal("job-worker-3", 3)));
  refused.Created("ns/job", "job-worker-3");
  EXPECT_THAT(refused.For("ns/job", "uid-1"), IsEmpty());
  EXPECT_EQ(refused.JobCount(), 0u);
}

TEST(RefusedCreatesTest, AJobCreatedAgainUnderItsNameStartsAfresh) {
  RefusedCreates refused;
  refused.Refused("ns/job", "uid-1", Refusal("job-worker-2", 2));
  EXPECT_THAT(refused.For("ns/job", "uid-2"), IsEmpty());
  EXPECT_EQ(refused.JobCount(), 0u);
  refused.Refused("ns/job", "uid-1", Refusal("job-worker-2", 2));
  refused.Refused("ns/job", "uid-2", Refusal("job-worker-3", 3));
  EXPECT_THAT(refused.For("ns/job", "uid-2"), ElementsAre(Refusal("job-worker-3", 3)));
}

TEST(RefusedCreatesTest, ForgettingAJobDropsItsRefusals) {
  RefusedCreates refused;
  refused.Refused("ns/a", "uid-a", Refusal("a-worker-0", 0));
  refused.Refused("ns/b", "uid-b", Refusal("b-worker-0", 0));
  refused.Forget("ns/a");
  EXPECT_THAT(refused.For("ns/a", "uid-a"), IsEmpty());
  EXPECT_EQ(refused.For("ns/b", "uid-b").size(), 1u);
}

}  // namespace
}  // namespace hybridjob::controller
