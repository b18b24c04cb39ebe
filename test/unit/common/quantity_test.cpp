#include <cstdint>
#include <limits>
#include <string>

#include <gtest/gtest.h>

#include <hybridjob/common/quantity.h>

namespace hybridjob {
namespace {

struct Case {
  std::string text;
  int64_t expected;
};

class ParseQuantityTest : public ::testing::TestWithParam<Case> {};

TEST_P(ParseQuantityTest, WholeUnits) {
  Result<int64_t> parsed = ParseQuantity(GetParam().text);
  ASSERT_TRUE(parsed.ok()) << GetParam().text << ": " << parsed.status().ToString();
  EXPECT_EQ(*parsed, GetParam().expected) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    Kubernetes, ParseQuantityTest,
    ::testing::Values(Case{"0", 0}, Case{"1", 1}, Case{"2", 2}, Case{"007", 7},
                      Case{"100m", 1},  // rounds up like Quantity.Value()
                      Case{"1.5", 2}, Case{"1.0", 1}, Case{"1.", 1}, Case{".5", 1},
                      Case{"16Gi", int64_t{16} << 30}, Case{"512Mi", int64_t{512} << 20},
                      Case{"1Ki", 1024}, Case{"1Ti", int64_t{1} << 40},
                      Case{"1Pi", int64_t{1} << 50}, Case{"1Ei", int64_t{1} << 60},
                      Case{"7Ei", int64_t{7} << 60}, Case{"1.5Gi", 1610612736}, Case{"0.1Ki", 103},
                      Case{"0.5Ki", 512}, Case{"1e3", 1000}, Case{"1E3", 1000}, Case{"1e+3", 1000},
                      Case{"1e-3", 1}, Case{"1e0", 1}, Case{"2.5e2", 250}, Case{"1k", 1000},
                      Case{"2M", 2000000}, Case{"3G", 3000000000}, Case{"1T", 1000000000000},
                      Case{"1P", 1000000000000000}, Case{"1E", 1000000000000000000}, Case{"1n", 1},
                      Case{"1u", 1}, Case{"0m", 0}, Case{"0.000", 0}, Case{"+5", 5}, Case{"-1", -1},
                      Case{"-1.5", -2}, Case{"-100m", -1},
                      Case{"9223372036854775807", std::numeric_limits<int64_t>::max()},
                      Case{"1e-99999999999", 1}, Case{"0e99999999", 0}));

class ParseQuantityMilliTest : public ::testing::TestWithParam<Case> {};

TEST_P(ParseQuantityMilliTest, Thousandths) {
  Result<int64_t> parsed = ParseQuantityMilli(GetParam().text);
  ASSERT_TRUE(parsed.ok()) << GetParam().text << ": " << parsed.status().ToString();
  EXPECT_EQ(*parsed, GetParam().expected) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    Kubernetes, ParseQuantityMilliTest,
    ::testing::Values(Case{"100m", 100}, Case{"250m", 250}, Case{"2", 2000}, Case{"1.5", 1500},
                      Case{"0.25", 250}, Case{"0.0001", 1}, Case{"1n", 1}, Case{"1u", 1},
                      Case{"1500000n", 2}, Case{"1k", 1000000}, Case{"1e-3", 1},
                      Case{"1e3", 1000000}, Case{"1Ki", 1024000}, Case{"0", 0}, Case{"-100m", -100},
                      Case{"-0.0001", -1},
                      Case{"9223372036854775807m", std::numeric_limits<int64_t>::max()},
                      Case{"9223372036854775.807", std::numeric_limits<int64_t>::max()}));

class BadQuantityTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BadQuantityTest, IsRefused) {
  Result<int64_t> whole = ParseQuantity(GetParam());
  Result<int64_t> milli = ParseQuantityMilli(GetParam());
  EXPECT_FALSE(whole.ok()) << GetParam();
  EXPECT_FALSE(milli.ok()) << GetParam();
  EXPECT_EQ(whole.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(whole.status().message().find("quantity"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Malformed, BadQuantityTest,
                         ::testing::Values("", "abc", "Mi", ".", "-", "+", "1x", "1K", "1ki", "1MI",
                                           "1e", "1E+", "1.2.3", "--1", "+-1", "1 ", " 1", "1 Gi",
                                           "1Gi5", "1e3.5", "1e3e3", "0x10", "1,5", "∞",
                                           std::string(300, '1')));

TEST(ParseQuantityRangeTest, RefusesValuesOutsideInt64) {
  EXPECT_FALSE(ParseQuantity("9223372036854775808").ok());
  EXPECT_FALSE(ParseQuantity("8Ei").ok());
  EXPECT_FALSE(ParseQuantity("1e19").ok());
  EXPECT_FALSE(ParseQuantity("1e99999999999").ok());
  EXPECT_FALSE(ParseQuantity("123456789012345678901234567890n").ok());
  EXPECT_FALSE(ParseQuantityMilli("9223372036854775807").ok());
  EXPECT_FALSE(ParseQuantityMilli("16Ei").ok());
  EXPECT_TRUE(ParseQuantityMilli("9223372036854775").ok());
}

TEST(ParseQuantityRangeTest, HugeMantissaWithSmallExponentIsExact) {
  // 40 significant digits scaled down to a representable value.
  Result<int64_t> parsed = ParseQuantity("1234567890123456789012345678901234567890e-30");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(*parsed, 1234567891);  // 1234567890.12... rounded up
}

TEST(FormatQuantityTest, MilliValues) {
  EXPECT_EQ(FormatMilliQuantity(0), "0");
  EXPECT_EQ(FormatMilliQuantity(1500), "1500m");
  EXPECT_EQ(FormatMilliQuantity(2000), "2");
  EXPECT_EQ(FormatMilliQuantity(1), "1m");
}

TEST(FormatQuantityTest, BinaryValues) {
  EXPECT_EQ(FormatBinaryQuantity(0), "0");
  EXPECT_EQ(FormatBinaryQuantity(1000), "1000");
  EXPECT_EQ(FormatBinaryQuantity(1536), "1536");
  EXPECT_EQ(FormatBinaryQuantity(3072), "3Ki");
  EXPECT_EQ(FormatBinaryQuantity(int64_t{16} << 30), "16Gi");
  EXPECT_EQ(FormatBinaryQuantity(int64_t{1} << 60), "1Ei");
  EXPECT_EQ(FormatBinaryQuantity(int64_t{7} << 60), "7Ei");
  EXPECT_EQ(FormatBinaryQuantity(-(int64_t{2} << 20)), "-2Mi");
}

TEST(FormatQuantityTest, RoundTrips) {
  for (int64_t value : {int64_t{1}, int64_t{1023}, int64_t{4096}, int64_t{17} << 40}) {
    Result<int64_t> parsed = ParseQuantity(FormatBinaryQuantity(value));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, value);
  }
  for (int64_t milli : {int64_t{1}, int64_t{999}, int64_t{1000}, int64_t{123456}}) {
    Result<int64_t> parsed = ParseQuantityMilli(FormatMilliQuantity(milli));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, milli);
  }
}

}  // namespace
}  // namespace hybridjob
