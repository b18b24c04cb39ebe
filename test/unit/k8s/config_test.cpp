#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <hybridjob/k8s/config.h>

namespace hybridjob::k8s {
namespace {

namespace fs = std::filesystem;

// "-----BEGIN CERTIFICATE-----\nfake\n" in base64.
constexpr const char* kCaData = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmZha2UK";

std::string Kubeconfig(const std::string& user_block, const std::string& extra_cluster = "") {
  return R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: )" +
         std::string(kCaData) + "\n" + extra_cluster + R"(
users:
- name: me
  user:
)" + user_block +
         R"(
contexts:
- name: dev
  context:
    cluster: local
    user: me
    namespace: team-a
- name: other
  context:
    cluster: local
    user: me
)";
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("hj-config-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  void Write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ / name) << content;
  }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

TEST(KubeconfigTest, ParsesTokenUserAndCurrentContext) {
  auto config = ParseKubeconfig(Kubeconfig("    token: abc123"), "/tmp");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->server, "https://127.0.0.1:6443");  // trailing slash dropped
  EXPECT_EQ(config->bearer_token, "abc123");
  EXPECT_EQ(config->ca_pem, "-----BEGIN CERTIFICATE-----\nfake\n");
  EXPECT_EQ(config->namespace_name, "team-a");
  EXPECT_FALSE(config->insecure_skip_tls_verify);
}

TEST(KubeconfigTest, ExplicitContextOverridesCurrentAndDefaultsNamespace) {
  auto config = ParseKubeconfig(Kubeconfig("    token: abc123"), "/tmp", "other");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->namespace_name, "default");
}

TEST(KubeconfigTest, UnknownContextIsClearError) {
  auto config = ParseKubeconfig(Kubeconfig("    token: abc123"), "/tmp", "nope");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(config.status().message().find("\"nope\""), std::string::npos);
}

TEST(KubeconfigTest, TokenFileAndCertificateFilesResolveRelativeToKubeconfig) {
  TempDir dir;
  dir.Write("client.crt", "CERT");
  dir.Write("client.key", "KEY");
  dir.Write("kubeconfig", Kubeconfig("    tokenFile: token\n    client-certificate: client.crt\n"
                                     "    client-key: client.key"));
  auto config = LoadKubeconfigFile((dir.path() / "kubeconfig").string());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->token_file, (dir.path() / "token").string());
  EXPECT_EQ(config->client_cert_pem, "CERT");
  EXPECT_EQ(config->client_key_pem, "KEY");
}

TEST(KubeconfigTest, CertificateWithoutKeyIsRejected) {
  auto config = ParseKubeconfig(Kubeconfig("    client-certificate-data: Q0VSVA=="), "/tmp");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("client key"), std::string::npos);
}

TEST(KubeconfigTest, MissingReferencedFileNamesTheFile) {
  auto config = ParseKubeconfig(Kubeconfig("    client-certificate: /nonexistent/c.crt\n"
                                           "    client-key: /nonexistent/c.key"),
                                "/tmp");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("/nonexistent/c.crt"), std::string::npos);
}

TEST(KubeconfigTest, CertificateAuthorityThatIsADirectoryOrEmptyIsRefused) {
  // Either used to read as "no CA": the system's roots were trusted instead.
  TempDir dir;
  fs::create_directories(dir.path() / "ca-dir");
  dir.Write("empty.crt", "");
  for (const std::string file : {"ca-dir", "empty.crt"}) {
    auto config = ParseKubeconfig(
        "current-context: a\ncontexts:\n- name: a\n  context: {cluster: local}\nclusters:\n"
        "- name: local\n  cluster: {server: 'https://x', certificate-authority: " +
            file + "}\n",
        dir.path());
    ASSERT_FALSE(config.ok()) << file;
    const std::string& message = config.status().message();
    EXPECT_NE(message.find("cluster \"local\": certificate-authority"), std::string::npos)
        << message;
    EXPECT_NE(message.find((dir.path() / file).string()), std::string::npos) << message;
  }
}

TEST(KubeconfigTest, InsecureSkipTlsVerifyIsHonoured) {
  auto config =
      ParseKubeconfig(Kubeconfig("    token: t", "    insecure-skip-tls-verify: true"), "/tmp");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->insecure_skip_tls_verify);
}

TEST(KubeconfigTest, BrokenInputsGiveClearErrors) {
  struct Case {
    std::string text;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"", "not a YAML map"},
      {"clusters: [", "invalid YAML"},
      {"current-context: x\ncontexts: []\n", "no context named \"x\""},
      {"contexts:\n- name: a\n  context: {cluster: c}\n", "no current-context"},
      {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n",
       "no cluster named \"c\""},
      {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\nclusters:\n- name: c\n"
       "  cluster: {}\n",
       "has no server"},
      {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\nclusters:\n- name: c\n"
       "  cluster: {server: 'ftp://x'}\n",
       "http(s) URL"},
      {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\nclusters:\n- name: c\n"
       "  cluster: {server: 'https:///'}\n",
       "URL with a host"},
      {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\nclusters:\n- name: c\n"
       "  cluster: {server: 'http://'}\n",
       "URL with a host"},
      {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\nclusters:\n- name: c\n"
       "  cluster: {server: 'https://x', certificate-authority-data: '!!notbase64'}\n",
       "cluster \"c\": certificate-authority-data is not valid base64"},
      {"current-context: a\ncontexts:\n- name: a\n  context: {cluster: c, user: u}\nclusters:\n"
       "- name: c\n  cluster: {server: 'https://x'}\nusers:\n- name: u\n  user:\n"
       "    auth-provider: {name: gcp}\n",
       "auth-provider credentials, which are not supported"},
      {"clusters: 3\ncurrent-context: a\ncontexts:\n- name: a\n  context: {cluster: c}\n",
       "must be a list"},
  };
  for (const auto& c : cases) {
    auto config = ParseKubeconfig(c.text, "/tmp");
    ASSERT_FALSE(config.ok()) << c.text;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument) << c.text;
    EXPECT_NE(config.status().message().find(c.expected), std::string::npos)
        << "input:\n"
        << c.text << "\nmessage: " << config.status().message();
  }
}

TEST(KubeconfigExecTest, ParsesEveryFieldOfV1) {
  auto config = ParseKubeconfig(Kubeconfig(R"(    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: gke-gcloud-auth-plugin
      args: [--flag, "two words"]
      env:
      - name: CLOUDSDK_CORE_PROJECT
        value: my-project
      - name: EMPTY
      installHint: Install it with gcloud components install gke-gcloud-auth-plugin
      provideClusterInfo: true
      interactiveMode: Never)"),
                                "/home/me/.kube");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_TRUE(config->exec.has_value());
  const ExecConfig& exec = *config->exec;
  EXPECT_EQ(exec.api_version, "client.authentication.k8s.io/v1");
  EXPECT_EQ(exec.command, "gke-gcloud-auth-plugin");  // a bare name stays for the PATH lookup
  EXPECT_EQ(exec.args, (std::vector<std::string>{"--flag", "two words"}));
  ASSERT_EQ(exec.env.size(), 2U);
  EXPECT_EQ(exec.env[0],
            std::make_pair(std::string("CLOUDSDK_CORE_PROJECT"), std::string("my-project")));
  EXPECT_EQ(exec.env[1], std::make_pair(std::string("EMPTY"), std::string()));
  EXPECT_EQ(exec.install_hint, "Install it with gcloud components install gke-gcloud-auth-plugin");
  EXPECT_TRUE(exec.provide_cluster_info);
  EXPECT_EQ(exec.interactive_mode, "Never");
  EXPECT_TRUE(config->bearer_token.empty());
}

TEST(KubeconfigExecTest, V1beta1DefaultsInteractiveModeAndClusterInfoOff) {
  auto config =
      ParseKubeconfig(Kubeconfig("    exec:\n"
                                 "      apiVersion: client.authentication.k8s.io/v1beta1\n"
                                 "      command: aws"),
                      "/tmp");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_TRUE(config->exec.has_value());
  EXPECT_EQ(config->exec->interactive_mode, "IfAvailable");
  EXPECT_FALSE(config->exec->provide_cluster_info);
  EXPECT_TRUE(config->exec->args.empty());
  EXPECT_TRUE(config->exec->env.empty());
}

TEST(KubeconfigExecTest, CommandPathsResolveAsClientGoDoes) {
  const auto command_for = [](const std::string& command) {
    auto config = ParseKubeconfig(Kubeconfig("    exec:\n"
                                             "      apiVersion: client.authentication.k8s.io/v1\n"
                                             "      interactiveMode: IfAvailable\n"
                                             "      command: " +
                                             command),
                                  "/etc/kube");
    EXPECT_TRUE(config.ok()) << config.status().ToString();
    return config.ok() && config->exec ? config->exec->command : std::string();
  };
  EXPECT_EQ(command_for("./bin/plugin"), "/etc/kube/./bin/plugin");
  EXPECT_EQ(command_for("bin/plugin"), "/etc/kube/bin/plugin");
  EXPECT_EQ(command_for("/usr/local/bin/plugin"), "/usr/local/bin/plugin");
  EXPECT_EQ(command_for("plugin"), "plugin");
}

TEST(KubeconfigExecTest, InvalidExecBlocksGiveClearErrors) {
  const std::string v1 = "      apiVersion: client.authentication.k8s.io/v1\n";
  struct Case {
    std::string exec;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"      command: x\n      interactiveMode: Never", "apiVersion must be specified"},
      {"      apiVersion: client.authentication.k8s.io/v1alpha1\n      command: x",
       "\"client.authentication.k8s.io/v1alpha1\" is not supported"},
      {"      apiVersion: v1\n      command: x", "\"v1\" is not supported"},
      {v1 + "      interactiveMode: Never", "command must be specified"},
      {v1 + "      command: x", "interactiveMode must be specified"},
      {v1 + "      command: x\n      interactiveMode: Always", "needs a terminal"},
      {v1 + "      command: x\n      interactiveMode: Sometimes", "\"Sometimes\" is not one of"},
      {v1 + "      command: x\n      interactiveMode: Never\n      args: a", "args must be a list"},
      {v1 + "      command: x\n      interactiveMode: Never\n      env: [{value: v}]",
       "env entry needs a name"},
      {v1 + "      command: x\n      interactiveMode: Never\n      env: {A: b}",
       "env must be a list"},
      {v1 + "      command: x\n      interactiveMode: Never\n      provideClusterInfo: maybe",
       "provideClusterInfo must be true or false"},
  };
  for (const auto& c : cases) {
    auto config = ParseKubeconfig(Kubeconfig("    exec:\n" + c.exec), "/tmp");
    ASSERT_FALSE(config.ok()) << c.exec;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument) << c.exec;
    EXPECT_NE(config.status().message().find(c.expected), std::string::npos)
        << "exec:\n"
        << c.exec << "\nmessage: " << config.status().message();
    EXPECT_NE(config.status().message().find("user \"me\": exec"), std::string::npos)
        << config.status().message();
  }
}

TEST(KubeconfigExecTest, StaticTokenIsKeptBesideExec) {
  // Both are parsed; the client prefers the token, as client-go does.
  auto config = ParseKubeconfig(Kubeconfig("    token: static\n"
                                           "    exec:\n"
                                           "      apiVersion: client.authentication.k8s.io/v1\n"
                                           "      interactiveMode: Never\n"
                                           "      command: plugin"),
                                "/tmp");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->bearer_token, "static");
  EXPECT_TRUE(config->exec.has_value());
}

TEST(KubeconfigTest, MissingFileIsClearError) {
  auto config = LoadKubeconfigFile("/nonexistent/kubeconfig");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("/nonexistent/kubeconfig"), std::string::npos);
}

TEST(InClusterConfigTest, ReadsServiceAccountFiles) {
  TempDir dir;
  dir.Write("token", "sa-token\n");
  dir.Write("ca.crt", "CA");
  dir.Write("namespace", "hybridjob-system");
  ::setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);  // NOLINT(concurrency-mt-unsafe)
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);       // NOLINT(concurrency-mt-unsafe)
  auto config = LoadInClusterConfig(dir.path().string());
  ::unsetenv("KUBERNETES_SERVICE_HOST");  // NOLINT(concurrency-mt-unsafe)
  ::unsetenv("KUBERNETES_SERVICE_PORT");  // NOLINT(concurrency-mt-unsafe)
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->server, "https://10.0.0.1:443");
  EXPECT_EQ(config->token_file, (dir.path() / "token").string());
  EXPECT_EQ(config->ca_pem, "CA");
  EXPECT_EQ(config->namespace_name, "hybridjob-system");
}

TEST(InClusterConfigTest, OutsideAClusterSaysWhatToDo) {
  ::unsetenv("KUBERNETES_SERVICE_HOST");  // NOLINT(concurrency-mt-unsafe)
  auto config = LoadInClusterConfig("/nonexistent");
  ASSERT_FALSE(config.ok());
  EXPECT_NE(config.status().message().find("--kubeconfig"), std::string::npos);
}

TEST(ResolveClientConfigTest, FlagBeatsEnvironment) {
  TempDir dir;
  dir.Write("flag", Kubeconfig("    token: from-flag"));
  dir.Write("env", Kubeconfig("    token: from-env"));
  ::setenv("KUBECONFIG", (dir.path() / "env").c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
  auto from_flag = ResolveClientConfig((dir.path() / "flag").string());
  auto from_env = ResolveClientConfig("");
  ::unsetenv("KUBECONFIG");  // NOLINT(concurrency-mt-unsafe)
  ASSERT_TRUE(from_flag.ok());
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_flag->bearer_token, "from-flag");
  EXPECT_EQ(from_env->bearer_token, "from-env");
}

// Two files as a team's KUBECONFIG might hold them: a personal one with a
// context of its own and the shared one, which also names "local".
std::string SharedKubeconfig() {
  return R"(apiVersion: v1
kind: Config
current-context: shared
clusters:
- name: local
  cluster:
    server: https://10.0.0.1:6443
- name: prod
  cluster:
    server: https://prod.example:6443
    certificate-authority: certs/prod-ca.crt
users:
- name: me
  user:
    token: from-shared
- name: robot
  user:
    tokenFile: tokens/robot
    client-certificate: certs/robot.crt
    client-key: certs/robot.key
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: ./bin/get-token
contexts:
- name: shared
  context:
    cluster: prod
    user: robot
    namespace: team-b
- name: dev
  context:
    cluster: prod
    user: robot
)";
}

TEST(KubeconfigTest, ProxyUrlIsKeptAndAnUnsupportedOneRefused) {
  const std::string proxied = "    proxy-url: http://proxy.corp:3128\n";
  auto config = ParseKubeconfig(Kubeconfig("    token: t", proxied), "/tmp");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->proxy_url, "http://proxy.corp:3128");
  auto socks =
      ParseKubeconfig(Kubeconfig("    token: t", "    proxy-url: socks5://p:1080\n"), "/tmp");
  ASSERT_FALSE(socks.ok());
  EXPECT_NE(socks.status().message().find(
                "cluster \"local\" proxy-url: proxy \"socks5://p:1080\": socks5:// proxies are not "
                "supported"),
            std::string::npos)
      << socks.status().message();
}

TEST(KubeconfigListTest, PathsAreSplitOnColonsWithoutEmptiesOrRepeats) {
  EXPECT_EQ(KubeconfigPaths("a:b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(KubeconfigPaths(":a::b:a:"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(KubeconfigPaths("::").empty());
}

TEST(KubeconfigListTest, TheFirstFileWinsPerNameAndForTheCurrentContext) {
  TempDir personal;
  TempDir shared;
  personal.Write("config", Kubeconfig("    token: from-personal"));
  shared.Write("config", SharedKubeconfig());
  std::filesystem::create_directories(shared.path() / "certs");
  shared.Write("certs/prod-ca.crt", "PROD CA");
  shared.Write("certs/robot.crt", "ROBOT CERT");
  shared.Write("certs/robot.key", "ROBOT KEY");
  const std::string list =
      (personal.path() / "config").string() + ":" + (shared.path() / "config").string();

  // current-context "dev" from the first file; "dev", "local" and "me" are
  // the first file's too, where the second also names them.
  auto first = LoadKubeconfigList(list);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->server, "https://127.0.0.1:6443");
  EXPECT_EQ(first->bearer_token, "from-personal");
  EXPECT_EQ(first->namespace_name, "team-a");

  // A context only the second file has, with its user and cluster: their
  // relative paths resolve against the second file's directory.
  auto second = LoadKubeconfigList(list, "shared");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->server, "https://prod.example:6443");
  EXPECT_EQ(second->ca_pem, "PROD CA");
  EXPECT_EQ(second->token_file, (shared.path() / "tokens/robot").string());
  EXPECT_EQ(second->client_cert_pem, "ROBOT CERT");
  EXPECT_EQ(second->client_key_pem, "ROBOT KEY");
  ASSERT_TRUE(second->exec.has_value());
  EXPECT_EQ(fs::path(second->exec->command).lexically_normal(), shared.path() / "bin/get-token");
  EXPECT_EQ(second->namespace_name, "team-b");

  // In the other order the shared file's current context and entries win.
  auto reversed = LoadKubeconfigList((shared.path() / "config").string() + ":" +
                                     (personal.path() / "config").string());
  ASSERT_TRUE(reversed.ok()) << reversed.status().ToString();
  EXPECT_EQ(reversed->server, "https://prod.example:6443");
  EXPECT_EQ(reversed->namespace_name, "team-b");
  auto dev = LoadKubeconfigList(
      (shared.path() / "config").string() + ":" + (personal.path() / "config").string(), "dev");
  ASSERT_TRUE(dev.ok()) << dev.status().ToString();
  EXPECT_EQ(dev->server, "https://prod.example:6443") << "the shared file's \"dev\" came first";

  // Through the environment, as every binary reads it.
  ::setenv("KUBECONFIG", list.c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
  auto from_env = ResolveClientConfig("", "shared");
  ::unsetenv("KUBECONFIG");  // NOLINT(concurrency-mt-unsafe)
  ASSERT_TRUE(from_env.ok()) << from_env.status().ToString();
  EXPECT_EQ(from_env->server, "https://prod.example:6443");
}

TEST(KubeconfigListTest, MissingFilesAreSkippedAndBrokenOnesNamed) {
  TempDir dir;
  dir.Write("config", Kubeconfig("    token: t"));
  dir.Write("empty", "");
  dir.Write("broken", "clusters: [unclosed\n");
  dir.Write("not-a-map", "- a\n- b\n");
  const std::string good = (dir.path() / "config").string();
  const std::string missing = (dir.path() / "missing").string();

  auto skipped = LoadKubeconfigList(missing + ":" + (dir.path() / "empty").string() + ":" + good);
  ASSERT_TRUE(skipped.ok()) << skipped.status().ToString();
  EXPECT_EQ(skipped->bearer_token, "t");

  auto none = LoadKubeconfigList(missing + ":" + (dir.path() / "also-missing").string());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("none of its files exists"), std::string::npos)
      << none.status().message();

  auto broken = LoadKubeconfigList(good + ":" + (dir.path() / "broken").string());
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find((dir.path() / "broken").string() +
                                           ": kubeconfig: invalid YAML"),
            std::string::npos)
      << broken.status().message();
  auto not_map = LoadKubeconfigList(good + ":" + (dir.path() / "not-a-map").string());
  ASSERT_FALSE(not_map.ok());
  EXPECT_NE(not_map.status().message().find("not a YAML map"), std::string::npos);

  // What no file sets is an error naming the files.
  auto unknown = LoadKubeconfigList(good + ":" + (dir.path() / "empty").string(), "nowhere");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("no context named \"nowhere\""), std::string::npos)
      << unknown.status().message();
  EXPECT_NE(unknown.status().message().find(good + ":"), std::string::npos)
      << unknown.status().message();

  // A single file must exist, as --kubeconfig's.
  auto single = LoadKubeconfigList(missing);
  ASSERT_FALSE(single.ok());
  EXPECT_NE(single.status().message().find(missing), std::string::npos);
}

}  // namespace
}  // namespace hybridjob::k8s
