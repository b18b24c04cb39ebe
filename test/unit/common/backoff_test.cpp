#include <chrono>

#include <gtest/gtest.h>

#include <hybridjob/common/backoff.h>

namespace hybridjob {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(ExponentialBackoffTest, DoublesFromTheBaseUpToTheCap) {
  EXPECT_EQ(ExponentialBackoff(seconds(5), seconds(300), 0), seconds(5));
  EXPECT_EQ(ExponentialBackoff(seconds(5), seconds(300), 1), seconds(10));
  EXPECT_EQ(ExponentialBackoff(seconds(5), seconds(300), 5), seconds(160));
  EXPECT_EQ(ExponentialBackoff(seconds(5), seconds(300), 6), seconds(300));
  EXPECT_EQ(ExponentialBackoff(seconds(5), seconds(300), 7), seconds(300));
}

TEST(ExponentialBackoffTest, NeverOverflowsWhateverTheCount) {
  const nanoseconds cap = seconds(1000);
  for (int retries : {62, 63, 64, 1000, 1 << 30}) {
    EXPECT_EQ(ExponentialBackoff(nanoseconds(5'000'000), cap, retries), cap) << retries;
  }
  EXPECT_EQ(ExponentialBackoff(nanoseconds::max() / 3, nanoseconds::max(), 10), nanoseconds::max());
}

TEST(ExponentialBackoffTest, ABaseAtOrAboveTheCapIsTheCap) {
  EXPECT_EQ(ExponentialBackoff(seconds(10), seconds(10), 0), seconds(10));
  EXPECT_EQ(ExponentialBackoff(seconds(20), seconds(10), 0), seconds(10));
  EXPECT_EQ(ExponentialBackoff(milliseconds(0), milliseconds(10), 3), milliseconds(0));
}

TEST(ExponentialBackoffTest, ANegativeCountIsTheFirstRetry) {
  EXPECT_EQ(ExponentialBackoff(seconds(5), seconds(300), -1), seconds(5));
}

}  // namespace
}  // namespace hybridjob
