// The certificate a binary serves HTTPS with: read from files (a mounted
// Secret, a cert-manager Certificate), or made self-signed at start, as
// Kubernetes components do when given no --tls-cert-file.
#pragma once

#include <string>
#include <vector>

#include <hybridjob/common/status.h>

namespace hybridjob::observability {

struct ServingCertificate {
  std::string certificate;  // PEM; the serving certificate first, then its chain
  std::string private_key;  // PEM
};

// A P-256 key and a certificate signed by it, valid from an hour ago for a
// year, for `hosts` (IP addresses or DNS names, as subject alternative names).
Result<ServingCertificate> SelfSignedCertificate(const std::string& common_name,
                                                 const std::vector<std::string>& hosts);

// Reads both files and checks that the key is the certificate's.
Result<ServingCertificate> ReadServingCertificate(const std::string& cert_file,
                                                  const std::string& key_file);

}  // namespace hybridjob::observability
