#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/observability/access_review.h>

namespace hybridjob::observability {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(BearerTokenTest, TakesTheTokenOfABearerHeaderOnly) {
  EXPECT_EQ(BearerToken("Bearer abc.def"), "abc.def");
  EXPECT_EQ(BearerToken("bearer   abc "), "abc");
  EXPECT_EQ(BearerToken("BEARER abc"), "abc");
  EXPECT_EQ(BearerToken("Basic dXNlcjpwYXNz"), "");
  EXPECT_EQ(BearerToken("Bearer "), "");
  EXPECT_EQ(BearerToken(""), "");
  EXPECT_EQ(BearerToken("Bearerabc"), "");
}

TEST(TokenReviewTest, RequestCarriesTheTokenAndTheAudiences) {
  EXPECT_EQ(TokenReviewRequest("t0k", {}),
            json::parse(R"({"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview",
                            "spec":{"token":"t0k"}})"));
  EXPECT_EQ(TokenReviewRequest("t0k", {"api"})["spec"]["audiences"], json::array({"api"}));
}

TEST(TokenReviewTest, AnAuthenticatedReviewNamesTheUserWithGroupsAndExtra) {
  auto user = ParseTokenReview(json::parse(R"({
    "kind": "TokenReview", "apiVersion": "authentication.k8s.io/v1",
    "status": {"authenticated": true, "user": {
      "username": "system:serviceaccount:a:viewer", "uid": "u-1",
      "groups": ["system:serviceaccounts", "system:serviceaccounts:a", "system:authenticated"],
      "extra": {"authentication.kubernetes.io/pod-name": ["p"]}}}})"));
  ASSERT_TRUE(user.ok()) << user.status().ToString();
  ASSERT_TRUE(user->has_value());
  EXPECT_EQ((*user)->username, "system:serviceaccount:a:viewer");
  EXPECT_EQ((*user)->uid, "u-1");
  EXPECT_EQ((*user)->groups.size(), 3u);
  EXPECT_EQ((*user)->extra.at("authentication.kubernetes.io/pod-name"),
            std::vector<std::string>{"p"});
}

TEST(TokenReviewTest, AnUnknownTokenIsNobodyAndABadReplyIsAnError) {
  auto nobody = ParseTokenReview(
      json::parse(R"({"kind":"TokenReview","status":{"authenticated":false,"error":"expired"}})"));
  ASSERT_TRUE(nobody.ok());
  EXPECT_FALSE(nobody->has_value());
  auto no_status = ParseTokenReview(json::parse(R"({"kind":"TokenReview"})"));
  ASSERT_TRUE(no_status.ok());
  EXPECT_FALSE(no_status->has_value());

  auto wrong_kind = ParseTokenReview(json::parse(R"({"kind":"Status","status":"Failure"})"));
  ASSERT_FALSE(wrong_kind.ok());
  EXPECT_THAT(wrong_kind.status().message(), HasSubstr("not a TokenReview (Status)"));
  auto nameless = ParseTokenReview(
      json::parse(R"({"kind":"TokenReview","status":{"authenticated":true,"user":{}}})"));
  EXPECT_FALSE(nameless.ok()) << "authenticated, but as nobody, is no answer";
}

TEST(SubjectAccessReviewTest, ResourceAndNonResourceChecksAsTheApiServerReadsThem) {
  UserInfo user{"alice", "u-1", {"team-a"}, {{"scopes", {"x"}}}};
  EXPECT_EQ(SubjectAccessReviewRequest(
                user, AccessCheck::Resource("list", "batch.hybridjob.io", "hybridjobs", "a")),
            json::parse(R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview",
        "spec":{"user":"alice","uid":"u-1","groups":["team-a"],"extra":{"scopes":["x"]},
                "resourceAttributes":{"verb":"list","group":"batch.hybridjob.io",
                                      "resource":"hybridjobs","namespace":"a"}}})"));
  const json metrics =
      SubjectAccessReviewRequest(UserInfo{"bob"}, AccessCheck::NonResource("get", "/metrics"));
  EXPECT_EQ(metrics["spec"], json::parse(R"({"user":"bob",
      "nonResourceAttributes":{"path":"/metrics","verb":"get"}})"));
  // Every namespace: no namespace field at all.
  EXPECT_FALSE(
      SubjectAccessReviewRequest(
          UserInfo{"bob"}, AccessCheck::Resource("list", "", "nodes"))["spec"]["resourceAttributes"]
          .contains("namespace"));
}

TEST(SubjectAccessReviewTest, AllowedOnlyWhenAllowedAndNotDenied) {
  EXPECT_TRUE(*ParseSubjectAccessReview(
      json::parse(R"({"kind":"SubjectAccessReview","status":{"allowed":true}})")));
  EXPECT_FALSE(*ParseSubjectAccessReview(
      json::parse(R"({"kind":"SubjectAccessReview","status":{"allowed":false}})")));
  EXPECT_FALSE(*ParseSubjectAccessReview(
      json::parse(R"({"kind":"SubjectAccessReview","status":{"allowed":true,"denied":true}})")));
  EXPECT_FALSE(*ParseSubjectAccessReview(json::parse(R"({"kind":"SubjectAccessReview"})")));
  EXPECT_FALSE(ParseSubjectAccessReview(json::parse(R"({"kind":"TokenReview"})")).ok());
}

TEST(AccessCheckTest, DescribesWhatIsAskedFor) {
  EXPECT_EQ(AccessCheck::NonResource("get", "/metrics").Describe(), "get /metrics");
  EXPECT_EQ(AccessCheck::Resource("list", "batch.hybridjob.io", "hybridjobs", "a").Describe(),
            "list hybridjobs.batch.hybridjob.io in namespace a");
  EXPECT_EQ(AccessCheck::Resource("list", "", "nodes").Describe(), "list nodes");
}

// Answers from a script, counting the questions.
class ScriptedReviewer : public AccessReviewer {
 public:
  Result<std::optional<UserInfo>> Authenticate(std::string_view token) override {
    ++authentications;
    if (fail) {
      return Unavailable("connection refused");
    }
    if (token == "good") {
      return std::optional<UserInfo>(UserInfo{"alice"});
    }
    return std::optional<UserInfo>();
  }
  Result<bool> Authorize(const UserInfo& user, const AccessCheck& check) override {
    ++authorizations;
    if (fail) {
      return Unavailable("connection refused");
    }
    return user.username == "alice" && check.namespace_name == "a";
  }
  int authentications = 0;
  int authorizations = 0;
  bool fail = false;
};

class CachingReviewerTest : public ::testing::Test {
 protected:
  CachingReviewerTest() {
    auto inner = std::make_unique<ScriptedReviewer>();
    scripted_ = inner.get();
    cached_ = CachingAccessReviewer(std::move(inner), ttl_, [this] { return now_; });
  }
  void Advance(std::chrono::seconds by) { now_ += by; }

  ReviewCacheTtl ttl_;
  std::chrono::steady_clock::time_point now_{};
  ScriptedReviewer* scripted_ = nullptr;
  std::unique_ptr<AccessReviewer> cached_;
};

TEST_F(CachingReviewerTest, KeepsATokensUserForItsTtlThenAsksAgain) {
  for (int i = 0; i < 3; ++i) {
    auto user = cached_->Authenticate("good");
    ASSERT_TRUE(user.ok() && user->has_value());
    EXPECT_EQ((*user)->username, "alice");
  }
  EXPECT_EQ(scripted_->authentications, 1);
  Advance(ttl_.authenticated - std::chrono::seconds(1));
  ASSERT_TRUE(cached_->Authenticate("good").ok());
  EXPECT_EQ(scripted_->authentications, 1);
  Advance(std::chrono::seconds(1));
  ASSERT_TRUE(cached_->Authenticate("good").ok());
  EXPECT_EQ(scripted_->authentications, 2);
}

TEST_F(CachingReviewerTest, AnUnknownTokenIsKeptBrieflyAndErrorsNotAtAll) {
  EXPECT_FALSE(cached_->Authenticate("forged")->has_value());
  EXPECT_FALSE(cached_->Authenticate("forged")->has_value());
  EXPECT_EQ(scripted_->authentications, 1);
  Advance(ttl_.unauthenticated);
  EXPECT_FALSE(cached_->Authenticate("forged")->has_value());
  EXPECT_EQ(scripted_->authentications, 2);

  scripted_->fail = true;
  EXPECT_FALSE(cached_->Authenticate("other").ok());
  EXPECT_FALSE(cached_->Authenticate("other").ok());
  EXPECT_EQ(scripted_->authentications, 4) << "a failed review is asked again";
  scripted_->fail = false;
  EXPECT_TRUE(cached_->Authenticate("other").ok());
}

TEST_F(CachingReviewerTest, KeepsAllowedLongerThanDeniedAndTellsChecksApart) {
  const UserInfo alice{"alice"};
  const AccessCheck in_a = AccessCheck::Resource("list", "batch.hybridjob.io", "hybridjobs", "a");
  const AccessCheck in_b = AccessCheck::Resource("list", "batch.hybridjob.io", "hybridjobs", "b");
  EXPECT_TRUE(*cached_->Authorize(alice, in_a));
  EXPECT_FALSE(*cached_->Authorize(alice, in_b));
  EXPECT_TRUE(*cached_->Authorize(alice, in_a));
  EXPECT_FALSE(*cached_->Authorize(alice, in_b));
  EXPECT_EQ(scripted_->authorizations, 2);
  // Another user with the same check is another question.
  EXPECT_FALSE(*cached_->Authorize(UserInfo{"mallory"}, in_a));
  EXPECT_EQ(scripted_->authorizations, 3);
  // The same name in other groups too.
  EXPECT_TRUE(*cached_->Authorize(UserInfo{"alice", "", {"admins"}}, in_a));
  EXPECT_EQ(scripted_->authorizations, 4);

  Advance(ttl_.denied);
  EXPECT_FALSE(*cached_->Authorize(alice, in_b));
  EXPECT_TRUE(*cached_->Authorize(alice, in_a));
  EXPECT_EQ(scripted_->authorizations, 5) << "the denial expired, the permission did not";
  Advance(ttl_.allowed);
  EXPECT_TRUE(*cached_->Authorize(alice, in_a));
  EXPECT_EQ(scripted_->authorizations, 6);
}

TEST(CachingReviewerBoundsTest, StaysWithinItsSizeAndStillAnswers) {
  auto inner = std::make_unique<ScriptedReviewer>();
  ScriptedReviewer* scripted = inner.get();
  ReviewCacheTtl ttl;
  ttl.max_entries = 8;
  std::chrono::steady_clock::time_point now{};
  auto cached = CachingAccessReviewer(std::move(inner), ttl, [&now] { return now; });
  for (int i = 0; i < 100; ++i) {
    now += std::chrono::milliseconds(10);
    EXPECT_FALSE(cached->Authenticate("token-" + std::to_string(i))->has_value());
  }
  EXPECT_EQ(scripted->authentications, 100);
  // The latest are still kept.
  EXPECT_FALSE(cached->Authenticate("token-99")->has_value());
  EXPECT_EQ(scripted->authentications, 100);
}

}  // namespace
}  // namespace hybridjob::observability
