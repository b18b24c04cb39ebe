// The binder's pure decisions: which failed binds may have taken, and what a
// member's Scheduled Event says.
#include <gtest/gtest.h>

#include <hybridjob/scheduler/shell/binder.h>

namespace hybridjob::scheduler {
namespace {

// Rolling a gang back deletes every member whose binding may have taken.
TEST(BindMayHaveTakenTest, OnlyARefusalFromTheServerProvesTheBindingDidNotTake) {
  EXPECT_TRUE(BindMayHaveTaken(Status::Ok()));
  // The connection broke: the request may have reached the server first.
  EXPECT_TRUE(BindMayHaveTaken(Unavailable("BIND: Failed to connect to any resolved endpoint")));
  EXPECT_TRUE(BindMayHaveTaken(Status(StatusCode::kTimeout, "client deadline passed")));
  EXPECT_TRUE(BindMayHaveTaken(
      Status(StatusCode::kUnavailable, "etcd leader changed").WithHttp(500, "InternalError")));
  EXPECT_TRUE(
      BindMayHaveTaken(Status(StatusCode::kTimeout, "request timed out").WithHttp(504, "Timeout")));
  // Already assigned to a node: by an earlier try of this very request, maybe.
  EXPECT_TRUE(BindMayHaveTaken(Status(StatusCode::kConflict, "pod p is already assigned to node n")
                                   .WithHttp(409, "Conflict")));

  EXPECT_FALSE(BindMayHaveTaken(
      Status(StatusCode::kForbidden, "cannot create pods/binding").WithHttp(403, "Forbidden")));
  EXPECT_FALSE(BindMayHaveTaken(
      Status(StatusCode::kNotFound, "pods \"p\" not found").WithHttp(404, "NotFound")));
  EXPECT_FALSE(BindMayHaveTaken(
      Status(StatusCode::kBadRequest, "uid mismatch").WithHttp(400, "BadRequest")));
  EXPECT_FALSE(BindMayHaveTaken(
      Status(StatusCode::kTooManyRequests, "slow down").WithHttp(429, "TooManyRequests")));
}

// One Scheduled Event per member, in kube-scheduler's words, with its gang.
TEST(ScheduledMessageTest, SaysWhereTheMemberWentAndWithWhichGang) {
  GangBind gang;
  gang.group_name = "bert";
  gang.summary = "worker 2 (min 2, max 4) in example.com/rack=r1";
  const PodRef member{"team", "bert-worker-1", "uid-1", "node-7"};
  EXPECT_EQ(ScheduledMessage(gang, member),
            "Successfully assigned team/bert-worker-1 to node-7 (gang bert placed: worker 2 (min "
            "2, max 4) in example.com/rack=r1)");
  gang.grows = true;
  EXPECT_EQ(ScheduledMessage(gang, member),
            "Successfully assigned team/bert-worker-1 to node-7 (gang bert grew: worker 2 (min 2, "
            "max 4) in example.com/rack=r1)");
}

}  // namespace
}  // namespace hybridjob::scheduler
