#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include <hybridjob/common/files.h>
#include <hybridjob/k8s/base64.h>
#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/proxy.h>

namespace hybridjob::k8s {
namespace {

namespace fs = std::filesystem;

std::string ResolvePath(const std::string& base_dir, const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute() || base_dir.empty()) {
    return path;
  }
  return (fs::path(base_dir) / path).string();
}

// Finds the entry named `name` in a kubeconfig list such as clusters[] and
// returns its inner map (entry[field]).
Result<YAML::Node> FindNamed(const YAML::Node& root, const char* list, const char* field,
                             const std::string& name) {
  const YAML::Node entries = root[list];
  if (entries && !entries.IsSequence()) {
    return InvalidArgument(std::string("kubeconfig: ") + list + " must be a list");
  }
  if (entries) {
    for (const auto& entry : entries) {
      if (entry["name"] && entry["name"].as<std::string>() == name) {
        const YAML::Node inner = entry[field];
        if (!inner || !inner.IsMap()) {
          return InvalidArgument(std::string("kubeconfig: ") + list + " entry \"" + name +
                                 "\" has no " + field + " map");
        }
        return inner;
      }
    }
  }
  return InvalidArgument(std::string("kubeconfig: no ") + field + " named \"" + name + "\" in " +
                         list);
}

std::string StringField(const YAML::Node& node, const char* key) {
  const YAML::Node value = node[key];
  return value && value.IsScalar() ? value.as<std::string>() : std::string();
}

// Reads a PEM either inline (base64 in *-data) or from a file. `owner` names
// the entry for messages: cluster "x" or user "y".
Result<std::string> PemField(const YAML::Node& node, const char* data_key, const char* file_key,
                             const std::string& base_dir, const std::string& owner) {
  const std::string data = StringField(node, data_key);
  if (!data.empty()) {
    auto decoded = Base64Decode(data);
    if (!decoded) {
      return InvalidArgument("kubeconfig: " + owner + ": " + data_key + " is not valid base64");
    }
    return *decoded;
  }
  const std::string file = StringField(node, file_key);
  if (!file.empty()) {
    // An empty file would silently mean "no CA" (trust the system's roots).
    const std::string path = ResolvePath(base_dir, file);
    auto pem = ReadFile(path, "kubeconfig: " + owner + ": " + file_key);
    if (pem && pem->empty()) {
      return InvalidArgument("kubeconfig: " + owner + ": " + file_key + ": " + path + " is empty");
    }
    return pem;
  }
  return std::string();
}

constexpr std::string_view kExecV1 = "client.authentication.k8s.io/v1";
constexpr std::string_view kExecV1beta1 = "client.authentication.k8s.io/v1beta1";

// users[].user.exec, validated as client-go's clientcmd does, plus refusing
// what a daemon cannot do (an interactive plugin).
Result<ExecConfig> ParseExec(const YAML::Node& node, const std::string& base_dir,
                             const std::string& owner) {
  const std::string where = "kubeconfig: " + owner + ": exec";
  if (!node.IsMap()) {
    return InvalidArgument(where + " must be a map");
  }
  ExecConfig exec;
  exec.api_version = StringField(node, "apiVersion");
  if (exec.api_version.empty()) {
    return InvalidArgument(where + ": apiVersion must be specified (" + std::string(kExecV1) +
                           " or " + std::string(kExecV1beta1) + ")");
  }
  if (exec.api_version != kExecV1 && exec.api_version != kExecV1beta1) {
    return InvalidArgument(where + ": apiVersion \"" + exec.api_version +
                           "\" is not supported; use " + std::string(kExecV1) + " or " +
                           std::string(kExecV1beta1));
  }
  exec.command = StringField(node, "command");
  if (exec.command.empty()) {
    return InvalidArgument(where + ": command must be specified");
  }
  // Like client-go: a relative path with a slash is relative to the
  // kubeconfig; a bare name is found in PATH when it runs.
  if (exec.command.find('/') != std::string::npos) {
    exec.command = ResolvePath(base_dir, exec.command);
  }
  if (const YAML::Node args = node["args"]; args && !args.IsNull()) {
    if (!args.IsSequence()) {
      return InvalidArgument(where + ": args must be a list of strings");
    }
    for (const auto& arg : args) {
      if (!arg.IsScalar()) {
        return InvalidArgument(where + ": args must be a list of strings");
      }
      exec.args.push_back(arg.as<std::string>());
    }
  }
  if (const YAML::Node env = node["env"]; env && !env.IsNull()) {
    if (!env.IsSequence()) {
      return InvalidArgument(where + ": env must be a list of {name, value}");
    }
    for (const auto& entry : env) {
      if (!entry.IsMap()) {
        return InvalidArgument(where + ": env must be a list of {name, value}");
      }
      std::string name = StringField(entry, "name");
      if (name.empty() || name.find('=') != std::string::npos) {
        return InvalidArgument(where + ": env entry needs a name without '='");
      }
      exec.env.emplace_back(std::move(name), StringField(entry, "value"));
    }
  }
  exec.install_hint = StringField(node, "installHint");
  if (const YAML::Node provide = node["provideClusterInfo"]; provide && !provide.IsNull()) {
    if (!YAML::convert<bool>::decode(provide, exec.provide_cluster_info)) {
      return InvalidArgument(where + ": provideClusterInfo must be true or false");
    }
  }
  exec.interactive_mode = StringField(node, "interactiveMode");
  if (exec.interactive_mode.empty()) {
    if (exec.api_version == kExecV1) {
      return InvalidArgument(where + ": interactiveMode must be specified for " +
                             std::string(kExecV1) + " (Never or IfAvailable)");
    }
    exec.interactive_mode = "IfAvailable";  // the v1beta1 default
  }
  if (exec.interactive_mode == "Always") {
    return InvalidArgument(where +
                           ": interactiveMode Always needs a terminal, which a controller never "
                           "has; use Never or IfAvailable");
  }
  if (exec.interactive_mode != "Never" && exec.interactive_mode != "IfAvailable") {
    return InvalidArgument(where + ": interactiveMode \"" + exec.interactive_mode +
                           "\" is not one of Never, IfAvailable, Always");
  }
  return exec;
}

Result<ClientConfig> ParseKubeconfigNode(const YAML::Node& root, const std::string& base_dir,
                                         const std::string& context_override) {
  if (!root || !root.IsMap()) {
    return InvalidArgument("kubeconfig: not a YAML map");
  }
  const std::string context_name =
      context_override.empty() ? StringField(root, "current-context") : context_override;
  if (context_name.empty()) {
    return InvalidArgument("kubeconfig: no current-context set and no context given");
  }
  auto context = FindNamed(root, "contexts", "context", context_name);
  if (!context) {
    return context.status();
  }
  const std::string cluster_name = StringField(*context, "cluster");
  const std::string user_name = StringField(*context, "user");
  if (cluster_name.empty()) {
    return InvalidArgument("kubeconfig: context \"" + context_name + "\" names no cluster");
  }
  auto cluster = FindNamed(root, "clusters", "cluster", cluster_name);
  if (!cluster) {
    return cluster.status();
  }

  ClientConfig config;
  config.server = StringField(*cluster, "server");
  if (config.server.empty()) {
    return InvalidArgument("kubeconfig: cluster \"" + cluster_name + "\" has no server");
  }
  const std::string given_server = config.server;
  const bool https = config.server.rfind("https://", 0) == 0;
  const bool http = config.server.rfind("http://", 0) == 0;
  const std::size_t scheme_length = https ? 8 : (http ? 7 : 0);
  while (config.server.size() > scheme_length && config.server.back() == '/') {
    config.server.pop_back();
  }
  // "https://" alone, or only slashes after the scheme, names no host.
  if (scheme_length == 0 || config.server.size() == scheme_length ||
      config.server[scheme_length] == '/') {
    return InvalidArgument("kubeconfig: cluster \"" + cluster_name +
                           "\" server must be an http(s) URL with a host, got \"" + given_server +
                           "\"");
  }
  config.insecure_skip_tls_verify = StringField(*cluster, "insecure-skip-tls-verify") == "true";
  config.tls_server_name = StringField(*cluster, "tls-server-name");
  config.proxy_url = StringField(*cluster, "proxy-url");
  if (!config.proxy_url.empty()) {
    if (auto proxy = http::ParseProxyUrl(config.proxy_url); !proxy) {
      return InvalidArgument("kubeconfig: cluster \"" + cluster_name +
                             "\" proxy-url: " + proxy.status().message());
    }
  }
  auto ca = PemField(*cluster, "certificate-authority-data", "certificate-authority", base_dir,
                     "cluster \"" + cluster_name + "\"");
  if (!ca) {
    return ca.status();
  }
  config.ca_pem = std::move(*ca);

  if (!user_name.empty()) {
    auto user = FindNamed(root, "users", "user", user_name);
    if (!user) {
      return user.status();
    }
    if ((*user)["auth-provider"]) {
      return InvalidArgument("kubeconfig: user \"" + user_name +
                             "\" uses auth-provider credentials, which are not supported; "
                             "use an exec plugin, a token, token file or client certificate");
    }
    if (const YAML::Node exec = (*user)["exec"]; exec && !exec.IsNull()) {
      auto parsed = ParseExec(exec, base_dir, "user \"" + user_name + "\"");
      if (!parsed) {
        return parsed.status();
      }
      config.exec = std::move(*parsed);
    }
    config.bearer_token = StringField(*user, "token");
    const std::string token_file = StringField(*user, "tokenFile");
    if (!token_file.empty()) {
      config.token_file = ResolvePath(base_dir, token_file);
    }
    const std::string owner = "user \"" + user_name + "\"";
    auto cert = PemField(*user, "client-certificate-data", "client-certificate", base_dir, owner);
    if (!cert) {
      return cert.status();
    }
    auto key = PemField(*user, "client-key-data", "client-key", base_dir, owner);
    if (!key) {
      return key.status();
    }
    if (cert->empty() != key->empty()) {
      return InvalidArgument("kubeconfig: user \"" + user_name +
                             "\" needs both a client certificate and a client key");
    }
    config.client_cert_pem = std::move(*cert);
    config.client_key_pem = std::move(*key);
    config.username = StringField(*user, "username");
    config.password = StringField(*user, "password");
  }
  const std::string ns = StringField(*context, "namespace");
  if (!ns.empty()) {
    config.namespace_name = ns;
  }
  return config;
}

}  // namespace

Result<ClientConfig> ParseKubeconfig(std::string_view yaml_text, const std::string& base_dir,
                                     const std::string& context_name) {
  try {
    return ParseKubeconfigNode(YAML::Load(std::string(yaml_text)), base_dir, context_name);
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("kubeconfig: invalid YAML: ") + e.what());
  }
}

Result<ClientConfig> LoadKubeconfigFile(const std::string& path, const std::string& context_name) {
  auto text = ReadFile(path, "kubeconfig");
  if (!text) {
    return text.status();
  }
  auto config = ParseKubeconfig(*text, fs::path(path).parent_path().string(), context_name);
  if (!config) {
    return Status(config.status().code(), path + ": " + config.status().message());
  }
  return config;
}

Result<ClientConfig> LoadInClusterConfig(const std::string& root) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");  // NOLINT(concurrency-mt-unsafe)
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");  // NOLINT(concurrency-mt-unsafe)
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    return InvalidArgument(
        "not running in a cluster (KUBERNETES_SERVICE_HOST/PORT unset) and no kubeconfig given: "
        "pass --kubeconfig or set KUBECONFIG");
  }
  ClientConfig config;
  std::string host_part = host;
  if (host_part.find(':') != std::string::npos) {
    host_part = "[" + host_part + "]";  // IPv6
  }
  config.server = "https://" + host_part + ":" + port;
  config.token_file = root + "/token";
  auto token = ReadFile(config.token_file, "service account token");
  if (!token) {
    return token.status();
  }
  auto ca = ReadFile(root + "/ca.crt", "service account CA");
  if (!ca) {
    return ca.status();
  }
  config.ca_pem = std::move(*ca);
  auto ns = ReadFile(root + "/namespace", "service account namespace");
  if (ns && !ns->empty()) {
    config.namespace_name = *ns;
  }
  return config;
}

namespace {

// The named entries' fields that hold paths, as client-go resolves them
// against the file an entry came from.
void ResolveEntryPaths(YAML::Node inner, const char* const* fields, const std::string& base_dir) {
  for (const char* const* field = fields; *field != nullptr; ++field) {
    const std::string path = StringField(inner, *field);
    if (!path.empty()) {
      inner[*field] = ResolvePath(base_dir, path);
    }
  }
}

constexpr const char* kClusterPathFields[] = {"certificate-authority", nullptr};
constexpr const char* kUserPathFields[] = {"client-certificate", "client-key", "tokenFile",
                                           nullptr};

// Appends to merged[list] each entry of file[list] whose name is new, with
// its paths resolved against base_dir.
Status MergeNamed(const YAML::Node& file, YAML::Node& merged, const char* list, const char* field,
                  const std::string& base_dir, const std::string& path) {
  const YAML::Node entries = file[list];
  if (!entries || entries.IsNull()) {
    return Status::Ok();
  }
  if (!entries.IsSequence()) {
    return InvalidArgument(path + ": kubeconfig: " + list + " must be a list");
  }
  for (const auto& entry : entries) {
    const std::string name = entry.IsMap() ? StringField(entry, "name") : std::string();
    if (name.empty()) {
      return InvalidArgument(path + ": kubeconfig: an entry of " + list + " has no name");
    }
    bool seen = false;
    for (const auto& kept : merged[list]) {
      seen = seen || StringField(kept, "name") == name;
    }
    if (seen) {
      continue;  // an earlier file named it first
    }
    YAML::Node copy = YAML::Clone(entry);
    if (YAML::Node inner = copy[field]; inner && inner.IsMap()) {
      if (std::string_view(list) == "clusters") {
        ResolveEntryPaths(inner, kClusterPathFields, base_dir);
      } else if (std::string_view(list) == "users") {
        ResolveEntryPaths(inner, kUserPathFields, base_dir);
        if (YAML::Node exec = inner["exec"]; exec && exec.IsMap()) {
          const std::string command = StringField(exec, "command");
          if (command.find('/') != std::string::npos) {
            exec["command"] = ResolvePath(base_dir, command);
          }
        }
      }
    }
    merged[list].push_back(copy);
  }
  return Status::Ok();
}

}  // namespace

Result<ClientConfig> ParseKubeconfigFiles(const std::vector<KubeconfigFile>& files,
                                          const std::string& context_name) {
  YAML::Node merged(YAML::NodeType::Map);
  for (const char* list : {"clusters", "users", "contexts"}) {
    merged[list] = YAML::Node(YAML::NodeType::Sequence);
  }
  std::string names;
  std::string current_context;  // the first file's that sets one
  for (const KubeconfigFile& file : files) {
    names += (names.empty() ? "" : ":") + file.path;
    YAML::Node root;
    try {
      root = YAML::Load(file.text);
    } catch (const YAML::Exception& e) {
      return InvalidArgument(file.path + ": kubeconfig: invalid YAML: " + e.what());
    }
    if (!root || root.IsNull()) {
      continue;  // an empty file adds nothing
    }
    if (!root.IsMap()) {
      return InvalidArgument(file.path + ": kubeconfig: not a YAML map");
    }
    const std::string base_dir = fs::path(file.path).parent_path().string();
    if (current_context.empty()) {
      current_context = StringField(root, "current-context");
    }
    for (const auto& [list, field] : {std::pair{"clusters", "cluster"}, std::pair{"users", "user"},
                                      std::pair{"contexts", "context"}}) {
      if (Status merged_list = MergeNamed(root, merged, list, field, base_dir, file.path);
          !merged_list.ok()) {
        return merged_list;
      }
    }
  }
  if (!current_context.empty()) {
    merged["current-context"] = current_context;
  }
  // Paths are already resolved per file: nothing is relative to one base.
  auto config = ParseKubeconfigNode(merged, "", context_name);
  if (!config) {
    return Status(config.status().code(), names + ": " + config.status().message());
  }
  return config;
}

std::vector<std::string> KubeconfigPaths(std::string_view list) {
  std::vector<std::string> paths;
  while (true) {
    const size_t end = list.find(':');
    const std::string path(list.substr(0, end));
    if (!path.empty() && std::find(paths.begin(), paths.end(), path) == paths.end()) {
      paths.push_back(path);
    }
    if (end == std::string_view::npos) {
      break;
    }
    list.remove_prefix(end + 1);
  }
  return paths;
}

Result<ClientConfig> LoadKubeconfigList(std::string_view list, const std::string& context_name) {
  const std::vector<std::string> paths = KubeconfigPaths(list);
  if (paths.size() == 1) {
    return LoadKubeconfigFile(paths.front(), context_name);  // must exist, as --kubeconfig
  }
  std::vector<KubeconfigFile> files;
  for (const std::string& path : paths) {
    std::error_code error;
    if (!fs::exists(path, error)) {
      continue;  // kubectl skips the list's missing files
    }
    auto text = ReadFile(path, "kubeconfig");
    if (!text) {
      return text.status();
    }
    files.push_back({path, std::move(*text)});
  }
  if (files.empty()) {
    return InvalidArgument("KUBECONFIG=" + std::string(list) + ": none of its files exists");
  }
  return ParseKubeconfigFiles(files, context_name);
}

Result<ClientConfig> ResolveClientConfig(const std::string& kubeconfig_flag,
                                         const std::string& context_name) {
  if (!kubeconfig_flag.empty()) {
    return LoadKubeconfigFile(kubeconfig_flag, context_name);
  }
  const char* env = std::getenv("KUBECONFIG");  // NOLINT(concurrency-mt-unsafe)
  if (env != nullptr && !KubeconfigPaths(env).empty()) {
    return LoadKubeconfigList(env, context_name);
  }
  return LoadInClusterConfig();
}

}  // namespace hybridjob::k8s
