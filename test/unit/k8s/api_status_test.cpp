#include <gtest/gtest.h>

#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/resource.h>
#include <hybridjob/k8s/watch.h>

namespace hybridjob::k8s {
namespace {

TEST(ApiStatusTest, MapsHttpCodesAndReasons) {
  struct Case {
    int http;
    const char* reason;
    StatusCode expected;
  };
  const Case cases[] = {
      {404, "NotFound", StatusCode::kNotFound},
      {409, "AlreadyExists", StatusCode::kAlreadyExists},
      {409, "Conflict", StatusCode::kConflict},
      {410, "Expired", StatusCode::kGone},
      {403, "Forbidden", StatusCode::kForbidden},
      {401, "Unauthorized", StatusCode::kUnauthorized},
      {422, "Invalid", StatusCode::kInvalid},
      {429, "TooManyRequests", StatusCode::kTooManyRequests},
      {500, "InternalError", StatusCode::kUnavailable},
      {503, "ServiceUnavailable", StatusCode::kUnavailable},
      {504, "Timeout", StatusCode::kTimeout},
      {400, "BadRequest", StatusCode::kBadRequest},
  };
  for (const auto& c : cases) {
    const std::string body =
        std::string(R"({"kind":"Status","apiVersion":"v1","status":"Failure",)") +
        R"("message":"msg","reason":")" + c.reason + R"(","code":)" + std::to_string(c.http) + "}";
    Status s = StatusFromHttpResponse(c.http, body);
    EXPECT_EQ(s.code(), c.expected) << c.http << " " << c.reason;
    EXPECT_EQ(s.http_status(), c.http);
    EXPECT_EQ(s.reason(), c.reason);
    EXPECT_EQ(s.message(), "msg");
  }
}

TEST(ApiStatusTest, NonStatusBodyKeepsTextAndRetryAfter) {
  Status s = StatusFromHttpResponse(429, "slow down\n", std::chrono::seconds(3));
  EXPECT_EQ(s.code(), StatusCode::kTooManyRequests);
  EXPECT_EQ(s.message(), "slow down");
  ASSERT_TRUE(s.retry_after().has_value());
  EXPECT_EQ(s.retry_after()->count(), 3);
  EXPECT_TRUE(s.IsRetriable());
  EXPECT_EQ(s.ToString(), "TooManyRequests (HTTP 429): slow down");
}

// Found by fuzz_watch: a "kind" that is not a string made value() throw.
TEST(ApiStatusTest, BodyWhoseKindIsNotAStringIsKeptAsText) {
  const Status status = StatusFromHttpResponse(410, R"({"kind":410})");
  EXPECT_EQ(status.code(), StatusCode::kGone);
  EXPECT_EQ(status.http_status(), 410);
}

TEST(WatchDecodeTest, DecodesEveryEventType) {
  for (const auto& [name, type] : std::vector<std::pair<std::string, WatchEventType>>{
           {"ADDED", WatchEventType::kAdded},
           {"MODIFIED", WatchEventType::kModified},
           {"DELETED", WatchEventType::kDeleted},
           {"BOOKMARK", WatchEventType::kBookmark}}) {
    auto event = DecodeWatchEvent(R"({"type":")" + name +
                                  R"(","object":{"kind":"Pod","metadata":{"name":"p"}}})");
    ASSERT_TRUE(event.ok()) << name;
    EXPECT_EQ(event->type, type);
    EXPECT_EQ(event->object["metadata"]["name"], "p");
    EXPECT_EQ(WatchEventTypeName(type), name);
  }
}

TEST(WatchDecodeTest, ErrorEventCarriesGone) {
  auto event = DecodeWatchEvent(
      R"json({"type":"ERROR","object":{"kind":"Status","status":"Failure","message":"too old resource version: 1 (25)","reason":"Expired","code":410}})json");
  ASSERT_TRUE(event.ok());
  EXPECT_EQ(event->type, WatchEventType::kError);
  EXPECT_EQ(event->error.code(), StatusCode::kGone);
  EXPECT_NE(event->error.message().find("too old"), std::string::npos);
}

TEST(WatchDecodeTest, OutOfRangeCodeIsNotReadAsGone) {
  // 4294967706 is 410 modulo 2^32: it used to be truncated to 410 and relist.
  auto event = DecodeWatchEvent(R"({"type":"ERROR","object":{"kind":"Status","code":4294967706}})");
  ASSERT_TRUE(event.ok());
  EXPECT_FALSE(event->error.ok());
  EXPECT_NE(event->error.code(), StatusCode::kGone);
}

TEST(WatchDecodeTest, MalformedLinesAreErrorsNotCrashes) {
  for (const char* line :
       {"", "{", "[]", R"({"type":"ADDED"})", R"({"type":1,"object":{}})",
        R"({"type":"NOPE","object":{}})", R"({"type":"ADDED","object":3})", "\xff\xfe"}) {
    EXPECT_FALSE(DecodeWatchEvent(line).ok()) << line;
  }
}

TEST(ResourceTest, BuildsPaths) {
  EXPECT_EQ(resources::Pods().CollectionPath("ns"), "/api/v1/namespaces/ns/pods");
  EXPECT_EQ(resources::Pods().CollectionPath(""), "/api/v1/pods");
  EXPECT_EQ(resources::Pods().ObjectPath("ns", "p", "binding"),
            "/api/v1/namespaces/ns/pods/p/binding");
  EXPECT_EQ(resources::Nodes().ObjectPath("ignored", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(resources::HybridJobs().CollectionPath("x"),
            "/apis/batch.hybridjob.io/v1alpha1/namespaces/x/hybridjobs");
  EXPECT_EQ(resources::Leases().ApiVersion(), "coordination.k8s.io/v1");
  EXPECT_EQ(UrlEncode("a=b,c!=d"), "a%3Db%2Cc%21%3Dd");
}

}  // namespace
}  // namespace hybridjob::k8s
