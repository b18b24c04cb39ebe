// The controller's signature on a member pod: made for one pod of one job, by
// one of the keys, close to the pod's creation, and used by one pod only.
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/member_signature.h>

namespace hybridjob::api {
namespace {

using ::testing::HasSubstr;

const std::string kKey = std::string(64, 'a');
const std::string kOtherKey = std::string(64, 'b');
const MemberClaim kClaim{"team-a", "train-worker-1", "uid-1"};
constexpr int64_t kIssued = 1'800'000'000;

MemberKeys Keys(std::vector<std::string> keys) {
  return MemberKeys{std::move(keys)};
}

TEST(MemberKeysTest, OneKeyPerLineCommentsAndBlanksSkipped) {
  auto keys = ParseMemberKeys("# rotated in 2026\n" + kOtherKey + "\n\n  " + kKey + "  \r\n");
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  EXPECT_EQ(keys->keys, (std::vector<std::string>{kOtherKey, kKey}));
}

TEST(MemberKeysTest, ShortOrMissingKeysAreRefusedWithTheReason) {
  auto short_key = ParseMemberKeys("secret\n");
  ASSERT_FALSE(short_key.ok());
  EXPECT_THAT(short_key.status().message(), HasSubstr("line 1 has 6 characters; at least 32"));
  auto none = ParseMemberKeys("# nothing\n\n");
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), HasSubstr("holds no key line"));
}

TEST(MemberKeysTest, TheFlagWarnsWithoutAFileAndFailsOnABadOne) {
  auto unset = LoadMemberKeyFlag("");
  ASSERT_TRUE(unset.ok());
  EXPECT_TRUE(unset->keys.empty());
  EXPECT_THAT(unset->warning, HasSubstr("members are not signed"));
  const std::string dir = ::testing::TempDir();
  auto absent = LoadMemberKeyFlag(dir + "no-such-key");
  ASSERT_TRUE(absent.ok());
  EXPECT_TRUE(absent->keys.empty());
  EXPECT_THAT(absent->warning, HasSubstr("does not exist"));
  std::ofstream(dir + "short-key") << "short\n";
  auto bad = LoadMemberKeyFlag(dir + "short-key");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--member-key-file"));
  std::ofstream(dir + "good-key") << kKey << "\n";
  auto good = LoadMemberKeyFlag(dir + "good-key");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good->keys.keys, std::vector<std::string>{kKey});
  EXPECT_EQ(good->warning, "");
}

TEST(MemberSignatureTest, ASignatureVerifiesForItsPodWithinTheWindow) {
  const std::string nonce = NewMemberNonce();
  EXPECT_EQ(nonce.size(), 32u);
  EXPECT_NE(nonce, NewMemberNonce());
  const std::string signature = SignMember(Keys({kKey}), kClaim, kIssued, nonce);
  EXPECT_EQ(signature.rfind("v1.1800000000." + nonce + ".", 0), 0u) << signature;
  for (const int64_t created : {kIssued, kIssued + 1, kIssued - kMemberSignatureSkewSeconds,
                                kIssued + kMemberSignatureWindowSeconds}) {
    auto verified = VerifyMember(Keys({kKey}), kClaim, signature, created);
    ASSERT_TRUE(verified.ok()) << created << ": " << verified.status().ToString();
    EXPECT_EQ(verified->nonce, nonce);
    EXPECT_EQ(verified->issued_unix, kIssued);
  }
}

TEST(MemberSignatureTest, AnotherPodJobKeyOrTimeIsRefused) {
  const std::string signature = SignMember(Keys({kKey}), kClaim, kIssued, NewMemberNonce());
  auto refused = [&](const MemberKeys& keys, const MemberClaim& claim, const std::string& text,
                     int64_t created) {
    auto verified = VerifyMember(keys, claim, text, created);
    EXPECT_FALSE(verified.ok());
    return verified.ok() ? std::string() : verified.status().message();
  };
  EXPECT_THAT(refused(Keys({kKey}), {"team-a", "train-worker-2", "uid-1"}, signature, kIssued),
              HasSubstr("not made for this pod"));
  EXPECT_THAT(refused(Keys({kKey}), {"team-b", "train-worker-1", "uid-1"}, signature, kIssued),
              HasSubstr("not made for this pod"));
  EXPECT_THAT(refused(Keys({kKey}), {"team-a", "train-worker-1", "uid-2"}, signature, kIssued),
              HasSubstr("not made for this pod"));
  EXPECT_THAT(refused(Keys({kOtherKey}), kClaim, signature, kIssued),
              HasSubstr("not made for this pod"));
  EXPECT_THAT(refused(Keys({kKey}), kClaim, signature, kIssued + kMemberSignatureWindowSeconds + 1),
              HasSubstr("outside the window"));
  EXPECT_THAT(refused(Keys({kKey}), kClaim, signature, kIssued - kMemberSignatureSkewSeconds - 1),
              HasSubstr("outside the window"));
  // Its time moved into the window: the MAC no longer matches.
  std::string moved = signature;
  moved.replace(3, 10, std::to_string(kIssued + 3600));
  EXPECT_THAT(refused(Keys({kKey}), kClaim, moved, kIssued + 3600), HasSubstr("not made for"));
  for (const std::string junk :
       {"", "v1", "v2.1.ab.cd", "v1.x.ab.cd", "v1.1.AB.cd", "v1.1.ab.cd.e"}) {
    EXPECT_FALSE(VerifyMember(Keys({kKey}), kClaim, junk, 1).ok()) << junk;
  }
  EXPECT_THAT(refused(Keys({kKey}), kClaim, "", kIssued), HasSubstr("carries no"));
}

TEST(MemberSignatureTest, EveryKeyVerifiesAndTheFirstSigns) {
  const std::string old_signature = SignMember(Keys({kOtherKey}), kClaim, kIssued, "00ff");
  EXPECT_TRUE(VerifyMember(Keys({kKey, kOtherKey}), kClaim, old_signature, kIssued).ok())
      << "a key rotated in keeps the old one's members";
  const std::string new_signature = SignMember(Keys({kKey, kOtherKey}), kClaim, kIssued, "00ff");
  EXPECT_TRUE(VerifyMember(Keys({kKey}), kClaim, new_signature, kIssued).ok());
  EXPECT_FALSE(VerifyMember(Keys({kOtherKey}), kClaim, new_signature, kIssued).ok());
}

TEST(MemberNonceLedgerTest, ANonceServesOnePodAndIsForgottenOnceItCannotPass) {
  MemberNonceLedger ledger;
  EXPECT_TRUE(ledger.Claim("n1", "pod-uid-1", kIssued));
  EXPECT_TRUE(ledger.Claim("n1", "pod-uid-1", kIssued)) << "the same pod again";
  EXPECT_FALSE(ledger.Claim("n1", "pod-uid-2", kIssued)) << "a copy on another pod";
  EXPECT_TRUE(ledger.Claim("n2", "pod-uid-2", kIssued + 10));
  EXPECT_EQ(ledger.size(), 2u);
  // Much later signatures: n1 and n2 are too old for any new pod to use.
  EXPECT_TRUE(ledger.Claim("n3", "pod-uid-3", kIssued + 3600));
  EXPECT_EQ(ledger.size(), 1u);
}

}  // namespace
}  // namespace hybridjob::api
