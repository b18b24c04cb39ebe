// How to reach and authenticate to the API server: kubeconfig, in-cluster
// service account, and the precedence between them.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <hybridjob/common/status.h>

namespace hybridjob::k8s {

struct ClientConfig {
  std::string server;  // https://host:port, no trailing slash
  std::string ca_pem;  // PEM bundle to trust; empty means the system's roots
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // overrides the name checked in the server cert

  std::string bearer_token;
  std::string token_file;  // re-read when it changes: bound tokens rotate
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string username;  // basic auth, rarely used
  std::string password;

  std::string namespace_name = "default";  // the context's namespace

  // Client-side flow control, shared by every call through one client.
  double qps = 50;
  int burst = 100;
  int max_in_flight = 64;
  std::chrono::seconds request_timeout{30};
  std::string user_agent = "hybridjob";
};

// Parses kubeconfig text. Relative file references resolve against base_dir.
// context_name empty means current-context. File references (CA, client
// cert/key) are read here so the returned config is self-contained; tokenFile
// stays a path because it must be re-read.
Result<ClientConfig> ParseKubeconfig(std::string_view yaml_text, const std::string& base_dir,
                                     const std::string& context_name = "");

Result<ClientConfig> LoadKubeconfigFile(const std::string& path,
                                        const std::string& context_name = "");

// The pod's service account: token, CA and namespace under root, server from
// KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT.
inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";
Result<ClientConfig> LoadInClusterConfig(const std::string& root = std::string(kServiceAccountDir));

// --kubeconfig flag > $KUBECONFIG (first entry of a colon list) > in-cluster.
Result<ClientConfig> ResolveClientConfig(const std::string& kubeconfig_flag,
                                         const std::string& context_name = "");

}  // namespace hybridjob::k8s
