// Proof that hybridjob-controller made a member pod. Anyone who may create
// pods in a namespace can copy a job's labels, ownerReference (with its uid)
// and a member's name onto a pod of their own; the controller therefore signs
// each member it creates with a key only the binaries hold (a Secret mounted
// into both pods), over the namespace, the pod's name, the job's uid, the
// time of signing and a fresh nonce. The scheduler places a pending member
// only with a signature made with one of its keys, for that pod, signed
// close to the pod's creationTimestamp (which the API server sets), and
// whose nonce no other pod used: a signature copied from another member is
// refused, and so is one replayed onto a new pod later.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/status.h>

namespace hybridjob::api {

// On every member pod the controller creates, when it has a key.
inline constexpr std::string_view kMemberSignatureAnnotation =
    "batch.hybridjob.io/member-signature";

// A pod must be created within this many seconds after its signature was
// made (and at most kMemberSignatureSkewSeconds before, for clock skew).
inline constexpr int64_t kMemberSignatureWindowSeconds = 300;
inline constexpr int64_t kMemberSignatureSkewSeconds = 60;

// The keys of a key file: one per line (blank lines and lines starting with
// `#` skipped), each at least 32 characters, used as bytes. The first signs;
// every one verifies, so a key can be rotated in without refusing members
// signed with the old one.
struct MemberKeys {
  std::vector<std::string> keys;
  bool empty() const { return keys.empty(); }
};
Result<MemberKeys> ParseMemberKeys(std::string_view text);
Result<MemberKeys> ReadMemberKeyFile(const std::string& path);

// --member-key-file as both binaries read it. No path, or a path where no
// file is (an optional Secret not created yet): no keys, and a warning to
// log. A file that is there but not a key file: an error.
inline constexpr std::string_view kMemberKeyFileFlag = "member-key-file";
struct MemberKeyFlag {
  MemberKeys keys;
  std::string warning;
};
Result<MemberKeyFlag> LoadMemberKeyFlag(const std::string& path);

// What a signature vouches for.
struct MemberClaim {
  std::string namespace_name;
  std::string pod_name;
  std::string job_uid;
};

// 16 random bytes as hex.
std::string NewMemberNonce();
// "v1.<issued unix seconds>.<nonce>.<HMAC-SHA256 hex>", with the first key.
std::string SignMember(const MemberKeys& keys, const MemberClaim& claim, int64_t issued_unix,
                       std::string_view nonce);

struct VerifiedSignature {
  int64_t issued_unix = 0;
  std::string nonce;
};
// The signature's nonce when `annotation` is a signature of `claim` by one of
// the keys, made within the window around `created_unix`; else why not.
Result<VerifiedSignature> VerifyMember(const MemberKeys& keys, const MemberClaim& claim,
                                       std::string_view annotation, int64_t created_unix);

// Which pod used which nonce, so a signature serves one pod only. Entries are
// kept while a copy could still pass the window check, measured on the pods'
// own creation times (no clock of its own).
class MemberNonceLedger {
 public:
  // False when another pod (another uid) used `nonce`.
  bool Claim(const std::string& nonce, const std::string& pod_uid, int64_t issued_unix);
  size_t size() const { return uses_.size(); }

 private:
  struct Use {
    std::string pod_uid;
    int64_t issued_unix = 0;
  };
  std::map<std::string, Use> uses_;
  int64_t newest_issued_ = 0;
};

}  // namespace hybridjob::api
