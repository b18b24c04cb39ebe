#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/common/json_fields.h>

namespace hybridjob {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;

const json kObject = json::parse(R"({
  "name": "a", "count": 3, "big": 9223372036854775807, "huge": 18446744073709551615,
  "flag": true, "nothing": null, "list": ["x", 1, "y"], "map": {"k": "v", "n": 2},
  "quantity": 4, "text_quantity": "10Gi", "child": {"leaf": 1}
})");

TEST(JsonFieldsTest, AbsentAndNullBothReadAsNotSet) {
  JsonFields fields;
  EXPECT_FALSE(fields.String(kObject, "missing", "x").has_value());
  EXPECT_FALSE(fields.String(kObject, "nothing", "x").has_value());
  EXPECT_EQ(fields.Object(kObject, "nothing", "x"), nullptr);
  EXPECT_EQ(JsonMember(kObject, "nothing"), nullptr);
  EXPECT_EQ(JsonMember(json::array(), "name"), nullptr);
  EXPECT_TRUE(fields.ok());
}

TEST(JsonFieldsTest, ReadsEachTypeItExpects) {
  JsonFields fields;
  EXPECT_EQ(fields.String(kObject, "name", ""), "a");
  EXPECT_EQ(fields.Int32(kObject, "count", ""), 3);
  EXPECT_EQ(fields.Int64(kObject, "big", ""), 9223372036854775807);
  EXPECT_EQ(fields.Bool(kObject, "flag", ""), true);
  EXPECT_EQ(fields.Quantity(kObject, "quantity", ""), "4");
  EXPECT_EQ(fields.Quantity(kObject, "text_quantity", ""), "10Gi");
  ASSERT_NE(fields.Object(kObject, "child", ""), nullptr);
  EXPECT_TRUE(fields.ok());
}

TEST(JsonFieldsTest, CollectModeReportsEveryErrorWithItsPath) {
  JsonFields fields;
  EXPECT_FALSE(fields.Int32(kObject, "name", "spec").has_value());
  EXPECT_FALSE(fields.Int32(kObject, "big", "spec").has_value());
  EXPECT_FALSE(fields.Int64(kObject, "huge", "spec").has_value());
  EXPECT_THAT(fields.StringList(kObject, "list", "spec"), ElementsAre("x", "y"));
  EXPECT_EQ(fields.StringMap(kObject, "map", "spec").size(), 1u);
  EXPECT_EQ(fields.Array(kObject, "child", "spec"), nullptr);
  EXPECT_THAT(fields.errors(),
              ElementsAre("spec.name: must be an integer", "spec.big: must be a 32-bit integer",
                          "spec.huge: must be an integer", "spec.list[1]: must be a string",
                          "spec.map.n: must be a string", "spec.child: must be a list"));
  EXPECT_EQ(fields.ToStatus().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(fields.ToStatus().message().find("spec.name: must be an integer; spec.big"), 0u);
}

TEST(JsonFieldsTest, LenientModeReadsAWrongTypeAsNotSetAndSaysNothing) {
  JsonFields fields(JsonFields::Mode::kLenient);
  EXPECT_FALSE(fields.String(kObject, "count", "").has_value());
  EXPECT_EQ(fields.Object(kObject, "list", ""), nullptr);
  EXPECT_THAT(fields.StringList(kObject, "list", ""), ElementsAre("x", "y"));
  EXPECT_TRUE(fields.ok());
  EXPECT_TRUE(fields.ToStatus().ok());
}

TEST(JsonFieldsTest, FirstErrorThrowsModeStopsAtTheFirstBadField) {
  JsonFields fields(JsonFields::Mode::kFirstErrorThrows);
  EXPECT_EQ(fields.String(kObject, "name", "metadata"), "a");
  try {
    fields.String(kObject, "count", "metadata");
    FAIL() << "a number read as a string must throw";
  } catch (const JsonFieldError& error) {
    EXPECT_STREQ(error.what(), "metadata.count: must be a string");
  }
}

TEST(JsonFieldsTest, UnknownFieldsAreReportedOnlyWhenAsked) {
  JsonFields quiet;
  quiet.CheckKnown(kObject, {"name"}, "x");
  EXPECT_TRUE(quiet.ok());
  JsonFields strict;
  strict.RejectUnknownFields(true).CheckKnown(json{{"name", 1}, {"nmae", 2}}, {"name"}, "x");
  EXPECT_THAT(strict.errors(), ElementsAre("x.nmae: unknown field"));
}

TEST(JsonFieldsTest, EnumeratedNamesTheSpellings) {
  JsonFields fields;
  auto parse = [](const std::string& text) -> std::optional<int> {
    return text == "One" ? std::optional<int>(1) : std::nullopt;
  };
  constexpr std::string_view kSpellings[] = {"One", "Two"};
  EXPECT_FALSE(
      (fields.Enumerated<int>(json{{"v", "Three"}}, "v", "s", parse, kSpellings)).has_value());
  EXPECT_THAT(fields.errors(),
              ElementsAre("s.v: unsupported value \"Three\": must be one of One, Two"));
}

TEST(JsonFieldsTest, Paths) {
  EXPECT_EQ(JoinPath("", "a"), "a");
  EXPECT_EQ(JoinPath("a", "b"), "a.b");
  EXPECT_EQ(IndexPath("a.b", 2), "a.b[2]");
}

}  // namespace
}  // namespace hybridjob
