#include <cerrno>
#include <charconv>
#include <fstream>
#include <sstream>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <hybridjob/common/files.h>

#include <hybridjob/api/member_signature.h>

namespace hybridjob::api {

namespace {

constexpr size_t kMinMemberKeyLength = 32;
constexpr std::string_view kSignatureVersion = "v1";

std::string Hex(const unsigned char* data, size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(size * 2);
  for (size_t i = 0; i < size; ++i) {
    out.push_back(kDigits[data[i] >> 4]);
    out.push_back(kDigits[data[i] & 0xf]);
  }
  return out;
}

std::string Mac(std::string_view key, const MemberClaim& claim, int64_t issued_unix,
                std::string_view nonce) {
  // Each field ends with a newline, which no name, uid or nonce holds.
  const std::string message = std::string(kSignatureVersion) + "\n" + claim.namespace_name + "\n" +
                              claim.pod_name + "\n" + claim.job_uid + "\n" +
                              std::to_string(issued_unix) + "\n" + std::string(nonce) + "\n";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest, &length);
  return Hex(digest, length);
}

bool IsHex(std::string_view text) {
  return !text.empty() && text.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

}  // namespace

Result<MemberKeys> ParseMemberKeys(std::string_view text) {
  MemberKeys keys;
  std::istringstream lines{std::string(text)};
  int number = 0;
  for (std::string line; std::getline(lines, line);) {
    ++number;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.pop_back();
    }
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string::npos || line[start] == '#') {
      continue;
    }
    line = line.substr(start);
    if (line.size() < kMinMemberKeyLength) {
      return InvalidArgument("member key on line " + std::to_string(number) + " has " +
                             std::to_string(line.size()) + " characters; at least " +
                             std::to_string(kMinMemberKeyLength) +
                             " are needed (e.g. openssl rand -hex 32)");
    }
    keys.keys.push_back(std::move(line));
  }
  if (keys.keys.empty()) {
    return InvalidArgument("no member key: the file holds no key line");
  }
  return keys;
}

Result<MemberKeys> ReadMemberKeyFile(const std::string& path) {
  auto text = ReadFile(path, "member key file");
  if (!text.ok()) {
    return text.status();
  }
  auto keys = ParseMemberKeys(*text);
  if (!keys.ok()) {
    return keys.status().WithContext(path);
  }
  return keys;
}

Result<MemberKeyFlag> LoadMemberKeyFlag(const std::string& path) {
  constexpr std::string_view kOpen =
      "members are not signed, so a pod made by hand with a job's uid under a vacant member "
      "name can join its gang (docs/security.md)";
  if (path.empty()) {
    return MemberKeyFlag{{}, "no --member-key-file: " + std::string(kOpen)};
  }
  std::ifstream probe(path);
  if (!probe && errno == ENOENT) {
    return MemberKeyFlag{{},
                         "--member-key-file " + path +
                             " does not exist (its Secret not "
                             "created yet?): " +
                             std::string(kOpen)};
  }
  auto keys = ReadMemberKeyFile(path);
  if (!keys.ok()) {
    return keys.status().WithContext("--member-key-file");
  }
  return MemberKeyFlag{std::move(*keys), ""};
}

std::string NewMemberNonce() {
  unsigned char bytes[16];
  if (RAND_bytes(bytes, sizeof(bytes)) != 1) {
    // Only when the system has no entropy at all; a fixed nonce is then
    // refused as a reuse by the scheduler for the second pod, never trusted twice.
    return std::string(32, '0');
  }
  return Hex(bytes, sizeof(bytes));
}

std::string SignMember(const MemberKeys& keys, const MemberClaim& claim, int64_t issued_unix,
                       std::string_view nonce) {
  return std::string(kSignatureVersion) + "." + std::to_string(issued_unix) + "." +
         std::string(nonce) + "." + Mac(keys.keys.front(), claim, issued_unix, nonce);
}

Result<VerifiedSignature> VerifyMember(const MemberKeys& keys, const MemberClaim& claim,
                                       std::string_view annotation, int64_t created_unix) {
  if (annotation.empty()) {
    return InvalidArgument("it carries no " + std::string(kMemberSignatureAnnotation) +
                           " annotation");
  }
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t dot = annotation.find('.', start);
    parts.push_back(annotation.substr(start, dot == std::string_view::npos ? dot : dot - start));
    if (dot == std::string_view::npos) {
      break;
    }
    start = dot + 1;
  }
  int64_t issued = 0;
  if (parts.size() != 4 || parts[0] != kSignatureVersion ||
      std::from_chars(parts[1].data(), parts[1].data() + parts[1].size(), issued).ec !=
          std::errc() ||
      !IsHex(parts[2]) || !IsHex(parts[3])) {
    return InvalidArgument("its " + std::string(kMemberSignatureAnnotation) +
                           " annotation is not a signature");
  }
  bool matched = false;
  for (const std::string& key : keys.keys) {
    const std::string expected = Mac(key, claim, issued, parts[2]);
    if (expected.size() == parts[3].size() &&
        CRYPTO_memcmp(expected.data(), parts[3].data(), expected.size()) == 0) {
      matched = true;
      break;
    }
  }
  if (!matched) {
    return InvalidArgument(
        "its signature was not made for this pod with a key the scheduler "
        "holds");
  }
  if (created_unix < issued - kMemberSignatureSkewSeconds ||
      created_unix > issued + kMemberSignatureWindowSeconds) {
    return InvalidArgument("its signature was made " + std::to_string(created_unix - issued) +
                           " s before the pod was created, outside the window of " +
                           std::to_string(kMemberSignatureWindowSeconds) +
                           " s: copied from an earlier pod");
  }
  return VerifiedSignature{issued, std::string(parts[2])};
}

bool MemberNonceLedger::Claim(const std::string& nonce, const std::string& pod_uid,
                              int64_t issued_unix) {
  if (issued_unix > newest_issued_) {
    newest_issued_ = issued_unix;
    // A nonce signed this long before the newest can no longer pass the
    // window check on a pod created now.
    const int64_t horizon =
        newest_issued_ - 2 * kMemberSignatureWindowSeconds - kMemberSignatureSkewSeconds;
    std::erase_if(uses_,
                  [horizon](const auto& entry) { return entry.second.issued_unix < horizon; });
  }
  auto [it, inserted] = uses_.try_emplace(nonce, Use{pod_uid, issued_unix});
  return inserted || it->second.pod_uid == pod_uid;
}

}  // namespace hybridjob::api
