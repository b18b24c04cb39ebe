#include <arpa/inet.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <hybridjob/common/files.h>
#include <hybridjob/common/openssl.h>
#include <hybridjob/observability/tls.h>

namespace hybridjob::observability {

using openssl::ErrorText;

namespace {

std::string BioText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return size > 0 ? std::string(data, static_cast<size_t>(size)) : std::string();
}

bool AddExtension(X509* cert, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert, cert, nullptr, nullptr, 0);
  X509_EXTENSION* extension = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (extension == nullptr) {
    return false;
  }
  const bool added = X509_add_ext(cert, extension, -1) == 1;
  X509_EXTENSION_free(extension);
  return added;
}

bool IsIpAddress(const std::string& address) {
  unsigned char buffer[sizeof(struct in6_addr)];
  return inet_pton(AF_INET, address.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, address.c_str(), buffer) == 1;
}

}  // namespace

Result<ServingCertificate> SelfSignedCertificate(const std::string& common_name,
                                                 const std::vector<std::string>& hosts) {
  openssl::Ptr<EVP_PKEY_CTX> key_ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nullptr));
  EVP_PKEY* raw_key = nullptr;
  if (!key_ctx || EVP_PKEY_keygen_init(key_ctx.get()) != 1 ||
      EVP_PKEY_CTX_set_ec_paramgen_curve_nid(key_ctx.get(), NID_X9_62_prime256v1) != 1 ||
      EVP_PKEY_keygen(key_ctx.get(), &raw_key) != 1) {
    return Internal(ErrorText("generating a serving key"));
  }
  openssl::Ptr<EVP_PKEY> key(raw_key);

  openssl::Ptr<X509> cert(X509_new());
  unsigned char serial_bytes[16];
  if (!cert || RAND_bytes(serial_bytes, sizeof(serial_bytes)) != 1) {
    return Internal(ErrorText("making a serving certificate"));
  }
  serial_bytes[0] &= 0x7f;  // a positive serial
  openssl::Ptr<BIGNUM> serial(BN_bin2bn(serial_bytes, sizeof(serial_bytes), nullptr));
  X509_NAME* name = X509_get_subject_name(cert.get());
  std::string alt_names;
  for (const std::string& host : hosts) {
    alt_names +=
        (alt_names.empty() ? "" : ",") + std::string(IsIpAddress(host) ? "IP:" : "DNS:") + host;
  }
  constexpr long kOneHour = 3600;
  constexpr long kOneYear = 365L * 24 * kOneHour;
  if (!serial || X509_set_version(cert.get(), 2) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(cert.get())) == nullptr ||
      X509_gmtime_adj(X509_getm_notBefore(cert.get()), -kOneHour) == nullptr ||
      X509_gmtime_adj(X509_getm_notAfter(cert.get()), kOneYear) == nullptr ||
      X509_set_pubkey(cert.get(), key.get()) != 1 ||
      X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                 -1, 0) != 1 ||
      X509_set_issuer_name(cert.get(), name) != 1 ||
      (!alt_names.empty() && !AddExtension(cert.get(), NID_subject_alt_name, alt_names)) ||
      !AddExtension(cert.get(), NID_ext_key_usage, "serverAuth") ||
      !AddExtension(cert.get(), NID_key_usage, "critical,digitalSignature,keyEncipherment") ||
      X509_sign(cert.get(), key.get(), EVP_sha256()) == 0) {
    return Internal(ErrorText("making a serving certificate"));
  }

  openssl::Ptr<BIO> cert_bio(BIO_new(BIO_s_mem()));
  openssl::Ptr<BIO> key_bio(BIO_new(BIO_s_mem()));
  if (!cert_bio || !key_bio || PEM_write_bio_X509(cert_bio.get(), cert.get()) != 1 ||
      PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
          1) {
    return Internal(ErrorText("encoding a serving certificate"));
  }
  return ServingCertificate{BioText(cert_bio.get()), BioText(key_bio.get())};
}

Result<ServingCertificate> ReadServingCertificate(const std::string& cert_file,
                                                  const std::string& key_file) {
  if (cert_file.empty() != key_file.empty()) {
    return InvalidArgument(
        "--tls-cert-file and --tls-private-key-file go together: give both or neither");
  }
  auto cert_text = ReadFile(cert_file, "--tls-cert-file");
  if (!cert_text.ok()) {
    return InvalidArgument("--tls-cert-file " + cert_file + " cannot be read");
  }
  auto key_text = ReadFile(key_file, "--tls-private-key-file");
  if (!key_text.ok()) {
    return InvalidArgument("--tls-private-key-file " + key_file + " cannot be read");
  }
  openssl::Ptr<BIO> cert_bio(
      BIO_new_mem_buf(cert_text->data(), static_cast<int>(cert_text->size())));
  openssl::Ptr<X509> cert(cert_bio ? PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr)
                                   : nullptr);
  if (!cert) {
    return InvalidArgument(ErrorText("--tls-cert-file " + cert_file + " holds no PEM certificate"));
  }
  openssl::Ptr<BIO> key_bio(BIO_new_mem_buf(key_text->data(), static_cast<int>(key_text->size())));
  openssl::Ptr<EVP_PKEY> key(
      key_bio ? PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr) : nullptr);
  if (!key) {
    return InvalidArgument(
        ErrorText("--tls-private-key-file " + key_file + " holds no unencrypted PEM private key"));
  }
  if (X509_check_private_key(cert.get(), key.get()) != 1) {
    return InvalidArgument(ErrorText("--tls-private-key-file " + key_file +
                                     " is not the key of the certificate in " + cert_file));
  }
  return ServingCertificate{std::move(*cert_text), std::move(*key_text)};
}

}  // namespace hybridjob::observability
