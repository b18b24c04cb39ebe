#include <gtest/gtest.h>

#include <hybridjob/api/waiting.h>

namespace hybridjob::api {
namespace {

TEST(ApiWaitingTest, StandingRoundTripsThroughTheConditionMessage) {
  const QueueStanding in_line{.name = "team-a", .position = 3, .reason = "Fragmented"};
  EXPECT_EQ(FormatStanding(in_line), "queue team-a, position 3");
  EXPECT_EQ(ParseStanding(in_line.reason, FormatStanding(in_line)), in_line);

  const QueueStanding not_in_line{.name = "default", .position = 0, .reason = "QueueLimit"};
  EXPECT_EQ(FormatStanding(not_in_line), "queue default");
  EXPECT_EQ(ParseStanding(not_in_line.reason, FormatStanding(not_in_line)), not_in_line);
}

TEST(ApiWaitingTest, MessagesNotWrittenByTheSchedulerAreRefused) {
  EXPECT_FALSE(ParseStanding("", "queue a, position 1"));
  EXPECT_FALSE(ParseStanding("NeverFits", "position 1"));
  EXPECT_FALSE(ParseStanding("NeverFits", "queue "));
  EXPECT_FALSE(ParseStanding("NeverFits", "queue a, position x"));
  EXPECT_FALSE(ParseStanding("NeverFits", "queue a, position 0"));
  EXPECT_FALSE(ParseStanding("NeverFits", "queue a, position -2"));
  EXPECT_FALSE(ParseStanding("NeverFits", "queue a, position 2 of 9"));
  EXPECT_FALSE(ParseStanding("NeverFits", "queue a, position 99999999999"));
}

}  // namespace
}  // namespace hybridjob::api
