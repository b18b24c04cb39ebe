#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/k8s/warnings.h>

namespace hybridjob::k8s {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(WarningHeaderTest, AsTheApiServerWritesIt) {
  EXPECT_THAT(
      ParseWarningHeader(
          R"(299 - "policy/v1beta1 PodDisruptionBudget is deprecated in v1.21+, unavailable in v1.25+; use policy/v1 PodDisruptionBudget")"),
      ElementsAre("policy/v1beta1 PodDisruptionBudget is deprecated in v1.21+, "
                  "unavailable in v1.25+; use policy/v1 PodDisruptionBudget"));
}

TEST(WarningHeaderTest, SeveralJoinedByCommasWithEscapesAndDates) {
  EXPECT_THAT(
      ParseWarningHeader(
          R"(299 - "first, with a comma", 299 - "say \"hi\" \\ there" "Sat, 01 Jan 2000 00:00:00 GMT",299 kube-apiserver "third")"),
      ElementsAre("first, with a comma", "say \"hi\" \\ there", "third"));
}

TEST(WarningHeaderTest, OtherCodesAndMalformedEntriesAreSkipped) {
  EXPECT_THAT(ParseWarningHeader(R"(199 - "not ours", 299 - "kept")"), ElementsAre("kept"));
  EXPECT_THAT(ParseWarningHeader(R"(299 - unquoted, 299 - "after")"), ElementsAre("after"));
  EXPECT_THAT(ParseWarningHeader(R"(299 - "unterminated)"), IsEmpty());
  EXPECT_THAT(ParseWarningHeader(""), IsEmpty());
  EXPECT_THAT(ParseWarningHeader("299"), IsEmpty());
  EXPECT_THAT(ParseWarningHeader(R"(299 - "")"), IsEmpty());
  EXPECT_THAT(ParseWarningHeader(",,,"), IsEmpty());
}

TEST(WarningDeduplicatorTest, EachTextOnceUpToItsCapacity) {
  WarningDeduplicator seen(2);
  EXPECT_THAT(seen.New({"a", "b", "a"}), ElementsAre("a", "b"));
  EXPECT_THAT(seen.New({"a", "b"}), IsEmpty());
  // Beyond the capacity a text is said but not remembered.
  EXPECT_THAT(seen.New({"c"}), ElementsAre("c"));
  EXPECT_THAT(seen.New({"c"}), ElementsAre("c"));
}

}  // namespace
}  // namespace hybridjob::k8s
