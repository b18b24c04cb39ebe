// How to reach and authenticate to the API server: kubeconfig, in-cluster
// service account, and the precedence between them.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <hybridjob/common/status.h>

namespace hybridjob::k8s {

// A kubeconfig user's `exec` credential plugin (client.authentication.k8s.io),
// as client-go runs it. Validated when the kubeconfig is parsed.
struct ExecConfig {
  std::string api_version;  // client.authentication.k8s.io/v1 or /v1beta1
  // As written, except that a relative path containing a slash has been
  // resolved against the kubeconfig's directory; a bare name is looked up in
  // PATH when the plugin runs.
  std::string command;
  std::vector<std::string> args;
  // Added to the process's own environment.
  std::vector<std::pair<std::string, std::string>> env;
  std::string install_hint;  // shown when the command cannot be found
  bool provide_cluster_info = false;
  // Never or IfAvailable: the binaries never have a terminal, so the plugin
  // always runs non-interactively. Always is refused when parsing.
  std::string interactive_mode;
};

struct ClientConfig {
  std::string server;  // https://host:port, no trailing slash
  std::string ca_pem;  // PEM bundle to trust; empty means the system's roots
  bool insecure_skip_tls_verify = false;
  std::string tls_server_name;  // overrides the name checked in the server cert
  // The cluster's proxy-url: every request goes through this HTTP proxy.
  // Empty: HTTPS_PROXY / HTTP_PROXY / NO_PROXY decide (k8s/proxy.h).
  std::string proxy_url;

  std::string bearer_token;
  std::string token_file;  // re-read when it changes: bound tokens rotate
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string username;  // basic auth, rarely used
  std::string password;
  // Used only when the user has no token, token file, client certificate or
  // basic auth (static credentials win, as in client-go).
  std::optional<ExecConfig> exec;

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
// stays a path because it must be re-read. An exec plugin is parsed, never run.
Result<ClientConfig> ParseKubeconfig(std::string_view yaml_text, const std::string& base_dir,
                                     const std::string& context_name = "");

Result<ClientConfig> LoadKubeconfigFile(const std::string& path,
                                        const std::string& context_name = "");

// The pod's service account: token, CA and namespace under root, server from
// KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT.
inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";
Result<ClientConfig> LoadInClusterConfig(const std::string& root = std::string(kServiceAccountDir));

// One file of a KUBECONFIG list, as read.
struct KubeconfigFile {
  std::string path;
  std::string text;
};

// The files of a KUBECONFIG list merged as kubectl merges them (client-go's
// loading rules): clusters, users and contexts by name, the first file that
// names one wins; current-context from the first file that sets one. Relative
// paths in an entry resolve against the directory of the file it came from.
// An empty file adds nothing; a malformed one is an error naming it.
Result<ClientConfig> ParseKubeconfigFiles(const std::vector<KubeconfigFile>& files,
                                          const std::string& context_name = "");

// The paths of a KUBECONFIG value: separated by ':', empty entries and
// repeats dropped, in order.
std::vector<std::string> KubeconfigPaths(std::string_view list);

// Every file of a KUBECONFIG value that exists, merged; files that do not
// exist are skipped, as kubectl skips them (an error when none does).
Result<ClientConfig> LoadKubeconfigList(std::string_view list,
                                        const std::string& context_name = "");

// --kubeconfig flag > $KUBECONFIG (its files merged) > in-cluster.
Result<ClientConfig> ResolveClientConfig(const std::string& kubeconfig_flag,
                                         const std::string& context_name = "");

}  // namespace hybridjob::k8s
