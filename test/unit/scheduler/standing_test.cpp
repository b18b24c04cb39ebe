// When the loop writes a waiting gang's standing again, and the conditions
// that carry it.
#include <chrono>

#include <gtest/gtest.h>

#include <hybridjob/api/waiting.h>
#include <hybridjob/scheduler/shell/status_reporter.h>

namespace hybridjob::scheduler {
namespace {

using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

TEST(StandingNeedsWriteTest, NewsAtOnceAMovingLineAtMostEveryRefresh) {
  const Clock::time_point start{};
  const api::QueueStanding third{.name = "a", .position = 3, .reason = "InsufficientCapacity"};
  EXPECT_TRUE(StandingNeedsWrite(nullptr, third, "job-w-0", start, seconds{10}));

  const StandingWritten last{third, "job-w-0", start};
  EXPECT_FALSE(StandingNeedsWrite(&last, third, "job-w-0", start + seconds{60}, seconds{10}));

  api::QueueStanding second = third;
  second.position = 2;
  EXPECT_FALSE(StandingNeedsWrite(&last, second, "job-w-0", start + seconds{9}, seconds{10}));
  EXPECT_TRUE(StandingNeedsWrite(&last, second, "job-w-0", start + seconds{10}, seconds{10}));

  api::QueueStanding never = third;
  never.reason = "NeverFits";
  EXPECT_TRUE(StandingNeedsWrite(&last, never, "job-w-0", start, seconds{10}));
  api::QueueStanding moved = third;
  moved.name = "b";
  EXPECT_TRUE(StandingNeedsWrite(&last, moved, "job-w-0", start, seconds{10}));
  // The member that carried it is gone: the next one carries it at once.
  EXPECT_TRUE(StandingNeedsWrite(&last, third, "job-w-1", start, seconds{10}));
}

TEST(StandingNeedsWriteTest, TheConditionsSayWhatTheControllerReads) {
  const api::QueueStanding standing{.name = "a", .position = 2, .reason = "Fragmented"};
  const PodConditionWrite waiting = GangWaitingCondition(standing);
  EXPECT_EQ(waiting.type, api::kGangWaitingCondition);
  EXPECT_TRUE(waiting.value);
  EXPECT_EQ(api::ParseStanding(waiting.reason, waiting.message), standing);
  const PodConditionWrite placed = GangPlacedCondition();
  EXPECT_EQ(placed.type, api::kGangWaitingCondition);
  EXPECT_FALSE(placed.value);
}

}  // namespace
}  // namespace hybridjob::scheduler
