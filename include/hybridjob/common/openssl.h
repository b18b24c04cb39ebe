// OpenSSL objects owned by std::unique_ptr, and OpenSSL's error queue as
// text. Header-only: include it only where OpenSSL is linked.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace hybridjob::openssl {

struct Free {
  void operator()(BIO* bio) const { BIO_free(bio); }
  void operator()(BIGNUM* number) const { BN_free(number); }
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
  void operator()(EVP_PKEY_CTX* context) const { EVP_PKEY_CTX_free(context); }
  void operator()(SSL_CTX* context) const { SSL_CTX_free(context); }
  void operator()(X509* cert) const { X509_free(cert); }
};

template <typename T>
using Ptr = std::unique_ptr<T, Free>;

// `what`, then every error OpenSSL queued on this thread, which empties the queue.
inline std::string ErrorText(std::string_view what) {
  std::string message(what);
  const char* separator = ": ";
  while (const unsigned long code = ERR_get_error()) {
    char text[256];
    ERR_error_string_n(code, text, sizeof(text));
    message += separator;
    message += text;
    separator = "; ";
  }
  return message;
}

}  // namespace hybridjob::openssl
