#include <cstdint>
#include <memory>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include <hybridjob/controller/ssh_keys.h>
#include <hybridjob/k8s/base64.h>

namespace hybridjob::controller {
namespace {

// An SSH wire-format string: a big-endian 32-bit length, then the bytes.
void AppendSshString(std::string& out, std::string_view bytes) {
  const auto size = static_cast<uint32_t>(bytes.size());
  for (int shift = 24; shift >= 0; shift -= 8) {
    out += static_cast<char>((size >> shift) & 0xff);
  }
  out.append(bytes);
}

}  // namespace

Result<SshKeyPair> GenerateSshKeyPair(const std::string& comment) {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), &EVP_PKEY_free);
  if (key == nullptr) {
    return Internal("generate an ECDSA P-256 key");
  }
  unsigned char point[133];
  size_t point_size = 0;
  if (EVP_PKEY_get_octet_string_param(key.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, point,
                                      sizeof point, &point_size) != 1 ||
      point_size != 65) {
    return Internal("read the public point of an ECDSA P-256 key");
  }
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), &BIO_free);
  if (bio == nullptr || PEM_write_bio_PrivateKey_traditional(bio.get(), key.get(), nullptr, nullptr,
                                                             0, nullptr, nullptr) != 1) {
    return Internal("write an ECDSA P-256 key as PEM");
  }
  char* pem = nullptr;
  const long pem_size = BIO_get_mem_data(bio.get(), &pem);
  SshKeyPair pair;
  pair.private_key_pem.assign(pem, static_cast<size_t>(pem_size));

  std::string blob;
  AppendSshString(blob, "ecdsa-sha2-nistp256");
  AppendSshString(blob, "nistp256");
  AppendSshString(blob, std::string_view(reinterpret_cast<const char*>(point), point_size));
  pair.public_key = "ecdsa-sha2-nistp256 " + k8s::Base64Encode(blob);
  if (!comment.empty()) {
    pair.public_key += " " + comment;
  }
  pair.public_key += "\n";
  return pair;
}

}  // namespace hybridjob::controller
