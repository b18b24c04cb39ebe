// The ExecCredential exchange of kubeconfig exec plugins
// (client.authentication.k8s.io/v1 and v1beta1): the request a plugin gets in
// KUBERNETES_EXEC_INFO, the answer it prints, and when that answer expires.
// Pure: running the plugin lives in credential_source.h.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

#include <hybridjob/common/status.h>
#include <hybridjob/k8s/config.h>

namespace hybridjob::k8s {

using WallClock = std::chrono::system_clock;

struct ExecCredential {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  // None: valid until the server refuses it (401).
  std::optional<WallClock::time_point> expiry;
};

// The JSON ExecCredential with only a spec: interactive is always false (a
// daemon has no terminal); spec.cluster (server, CA data in base64,
// insecure-skip-tls-verify, tls-server-name, proxy-url) only when
// provideClusterInfo.
std::string EncodeExecCredentialRequest(const ExecConfig& exec, const ClientConfig& cluster);

// Decodes a plugin's stdout. The apiVersion and kind must be what was asked;
// the status must carry a token and/or a client certificate with its key.
// Error messages never quote the output: it may hold secrets.
Result<ExecCredential> DecodeExecCredential(std::string_view output, std::string_view api_version);

// RFC 3339 as Kubernetes writes metav1.Time ("2024-05-01T10:00:00Z",
// optional fraction, Z or a +hh:mm offset).
Result<WallClock::time_point> ParseRfc3339(std::string_view text);

// When a credential obtained at `obtained` should be replaced: a tenth of its
// lifetime before it expires, at most 10 s before, so a request never leaves
// with a token that expires on the way. None: keep it until a 401.
std::optional<WallClock::time_point> RefreshTime(const ExecCredential& credential,
                                                 WallClock::time_point obtained);

}  // namespace hybridjob::k8s
