// Exec credential plugins: the ExecCredential exchange, expiry, the credential
// source's caching and refresh, and running a plugin (test-owned scripts).
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <pthread.h>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <hybridjob/k8s/credential_source.h>
#include <hybridjob/k8s/exec_credential.h>

namespace hybridjob::k8s {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kV1 = "client.authentication.k8s.io/v1";
constexpr const char* kV1beta1 = "client.authentication.k8s.io/v1beta1";

WallClock::time_point At(const char* rfc3339) {
  auto time = ParseRfc3339(rfc3339);
  EXPECT_TRUE(time.ok()) << rfc3339 << ": " << time.status().ToString();
  return time.value_or(WallClock::time_point());
}

ExecConfig Exec(const std::string& command, const std::string& api_version = kV1) {
  ExecConfig exec;
  exec.api_version = api_version;
  exec.command = command;
  exec.interactive_mode = "Never";
  return exec;
}

// ---- Request encoding -----------------------------------------------------------

TEST(ExecCredentialRequestTest, WithoutClusterInfoHasOnlyInteractiveFalse) {
  ClientConfig cluster;
  cluster.server = "https://10.0.0.1:6443";
  const json request = json::parse(EncodeExecCredentialRequest(Exec("p", kV1beta1), cluster));
  EXPECT_EQ(request, json::parse(R"({"apiVersion": "client.authentication.k8s.io/v1beta1",
                                     "kind": "ExecCredential",
                                     "spec": {"interactive": false}})"));
}

TEST(ExecCredentialRequestTest, ClusterInfoCarriesServerCaAndTlsSettings) {
  ClientConfig cluster;
  cluster.server = "https://api.example.com";
  cluster.ca_pem = "-----BEGIN CERTIFICATE-----\nfake\n";
  cluster.tls_server_name = "kubernetes";
  cluster.insecure_skip_tls_verify = true;
  cluster.proxy_url = "http://proxy.corp:3128";
  cluster.bearer_token = "never-sent";
  ExecConfig exec = Exec("p");
  exec.provide_cluster_info = true;
  const std::string text = EncodeExecCredentialRequest(exec, cluster);
  EXPECT_EQ(text.find("never-sent"), std::string::npos);
  const json request = json::parse(text);
  EXPECT_EQ(request["apiVersion"], kV1);
  EXPECT_EQ(request["spec"]["interactive"], false);
  EXPECT_EQ(request["spec"]["cluster"], json::parse(R"({"server": "https://api.example.com",
                            "certificate-authority-data": "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCmZha2UK",
                            "insecure-skip-tls-verify": true,
                            "tls-server-name": "kubernetes",
                            "proxy-url": "http://proxy.corp:3128"})"));
}

TEST(ExecCredentialRequestTest, ClusterInfoOmitsUnsetFields) {
  ClientConfig cluster;
  cluster.server = "https://api.example.com";
  ExecConfig exec = Exec("p");
  exec.provide_cluster_info = true;
  const json request = json::parse(EncodeExecCredentialRequest(exec, cluster));
  EXPECT_EQ(request["spec"]["cluster"], json::parse(R"({"server": "https://api.example.com"})"));
}

// ---- Response decoding ----------------------------------------------------------

TEST(ExecCredentialDecodeTest, TokenWithExpiry) {
  auto credential = DecodeExecCredential(
      R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
          "status": {"token": "tok", "expirationTimestamp": "2030-01-02T03:04:05Z"}})",
      kV1);
  ASSERT_TRUE(credential.ok()) << credential.status().ToString();
  EXPECT_EQ(credential->token, "tok");
  EXPECT_TRUE(credential->client_cert_pem.empty());
  ASSERT_TRUE(credential->expiry.has_value());
  EXPECT_EQ(*credential->expiry, At("2030-01-02T03:04:05Z"));
}

TEST(ExecCredentialDecodeTest, CertificateAndKeyWithoutExpiry) {
  auto credential = DecodeExecCredential(
      R"({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
          "spec": {}, "status": {"clientCertificateData": "CERT", "clientKeyData": "KEY"}})",
      kV1beta1);
  ASSERT_TRUE(credential.ok()) << credential.status().ToString();
  EXPECT_TRUE(credential->token.empty());
  EXPECT_EQ(credential->client_cert_pem, "CERT");
  EXPECT_EQ(credential->client_key_pem, "KEY");
  EXPECT_FALSE(credential->expiry.has_value());
}

TEST(ExecCredentialDecodeTest, BadOutputsGiveClearErrorsWithoutQuotingSecrets) {
  struct Case {
    std::string output;
    std::string expected;
  };
  const std::string head =
      R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", )";
  const std::vector<Case> cases = {
      {"", "not a JSON ExecCredential"},
      {"secret-token", "not a JSON ExecCredential"},
      {R"(["secret-token"])", "not a JSON ExecCredential"},
      {R"({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
           "status": {"token": "secret-token"}})",
       "configured to use API version client.authentication.k8s.io/v1, plugin returned apiVersion "
       "\"client.authentication.k8s.io/v1beta1\""},
      {R"({"apiVersion": "client.authentication.k8s.io/v1", "kind": "Secret",
           "status": {"token": "secret-token"}})",
       "kind \"Secret\""},
      {head + "\"spec\": {}}", "didn't return a status field"},
      {head + "\"status\": {}}", "didn't return a token or cert/key pair"},
      {head + R"("status": {"token": ""}})", "didn't return a token or cert/key pair"},
      {head + R"("status": {"token": 42}})", "token must be a string"},
      {head + R"("status": {"clientCertificateData": "secret-token"}})", "not both"},
      {head + R"("status": {"clientKeyData": "secret-token"}})", "not both"},
      {head + R"("status": {"token": "secret-token", "expirationTimestamp": "tomorrow"}})",
       "expirationTimestamp: \"tomorrow\" is not an RFC 3339 time"},
  };
  for (const auto& c : cases) {
    auto credential = DecodeExecCredential(c.output, kV1);
    ASSERT_FALSE(credential.ok()) << c.output;
    const std::string& message = credential.status().message();
    EXPECT_NE(message.find(c.expected), std::string::npos)
        << "output: " << c.output << "\nmessage: " << message;
    EXPECT_EQ(message.find("secret-token"), std::string::npos) << message;
  }
}

// ---- Time -----------------------------------------------------------------------

TEST(Rfc3339Test, ParsesUtcFractionsAndOffsets) {
  using std::chrono::seconds;
  const auto epoch = [](WallClock::time_point t) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  };
  EXPECT_EQ(epoch(At("1970-01-01T00:00:00Z")), 0);
  EXPECT_EQ(epoch(At("2024-02-29T12:00:00Z")), 1709208000000);
  EXPECT_EQ(epoch(At("2024-02-29T12:00:00.25Z")), 1709208000250);
  EXPECT_EQ(epoch(At("2024-02-29t12:00:00.123456789z")), 1709208000123);
  // 14:00 at +02:00 is noon UTC; 07:30 at -04:30 likewise.
  EXPECT_EQ(At("2024-02-29T14:00:00+02:00"), At("2024-02-29T12:00:00Z"));
  EXPECT_EQ(At("2024-02-29T07:30:00-04:30"), At("2024-02-29T12:00:00Z"));
}

TEST(Rfc3339Test, RefusesWhatIsNotATime) {
  for (const char* text :
       {"", "2024-02-29", "2024-02-29T12:00:00", "2023-02-29T12:00:00Z", "2024-13-01T00:00:00Z",
        "2024-01-01T24:00:00Z", "2024-01-01T00:00:00+0200", "2024-01-01T00:00:00.Z",
        "2024-01-01T00:00:00Z trailing", "20240101T000000Z", "1714557600"}) {
    EXPECT_FALSE(ParseRfc3339(text).ok()) << text;
  }
}

TEST(RefreshTimeTest, ATenthOfTheLifetimeBeforeExpiryAtMostTenSeconds) {
  const auto now = At("2030-01-01T00:00:00Z");
  ExecCredential credential;
  EXPECT_FALSE(RefreshTime(credential, now).has_value()) << "no expiry: until a 401";
  credential.expiry = now + 1h;
  EXPECT_EQ(RefreshTime(credential, now), now + 1h - 10s);
  credential.expiry = now + 5s;
  EXPECT_EQ(RefreshTime(credential, now), now + 4500ms);
  credential.expiry = now - 1s;  // already expired: used once, replaced next time
  EXPECT_EQ(RefreshTime(credential, now), now - 1s);
}

// ---- Credential source ----------------------------------------------------------

// A plugin that hands out numbered tokens with a lifetime, on a fake clock.
class FakePlugin {
 public:
  WallClock::time_point now = At("2030-01-01T00:00:00Z");
  std::chrono::seconds lifetime = 100s;
  bool fail = false;
  std::string cert;
  int runs = 0;

  std::unique_ptr<CredentialSource> Source() {
    return std::make_unique<CredentialSource>([this] { return Fetch(); }, [this] { return now; });
  }

 private:
  Result<ExecCredential> Fetch() {
    if (fail) {
      return Status(StatusCode::kUnauthorized, "plugin failed");
    }
    ++runs;
    ExecCredential credential;
    credential.token = "token-" + std::to_string(runs);
    credential.client_cert_pem = cert;
    credential.client_key_pem = cert.empty() ? "" : "key";
    if (lifetime.count() > 0) {
      credential.expiry = now + lifetime;
    }
    return credential;
  }
};

TEST(CredentialSourceTest, CachesUntilShortlyBeforeExpiry) {
  FakePlugin plugin;
  auto source = plugin.Source();
  EXPECT_TRUE(source->uses_plugin());
  auto first = source->Get();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->token, "token-1");
  plugin.now += 89s;  // refresh at 100 s - 10 s
  EXPECT_EQ(source->Get()->token, "token-1");
  EXPECT_EQ(plugin.runs, 1);
  plugin.now += 1s;
  auto second = source->Get();
  EXPECT_EQ(second->token, "token-2");
  EXPECT_NE(second->generation, first->generation);
  EXPECT_EQ(source->plugin_runs(), 2U);
}

TEST(CredentialSourceTest, NoExpiryMeansCachedUntilUnauthorized) {
  FakePlugin plugin;
  plugin.lifetime = 0s;
  auto source = plugin.Source();
  EXPECT_EQ(source->Get()->token, "token-1");
  plugin.now += 24h * 365;
  EXPECT_EQ(source->Get()->token, "token-1");
  EXPECT_EQ(plugin.runs, 1);
}

TEST(CredentialSourceTest, FailedEarlyRefreshKeepsAStillValidCredential) {
  FakePlugin plugin;
  auto source = plugin.Source();
  ASSERT_EQ(source->Get()->token, "token-1");
  plugin.fail = true;
  plugin.now += 95s;  // inside the refresh margin, before expiry
  EXPECT_EQ(source->Get()->token, "token-1");
  plugin.now += 5s;  // expired now: the failure is the answer
  auto expired = source->Get();
  ASSERT_FALSE(expired.ok());
  EXPECT_EQ(expired.status().message(), "plugin failed");
}

TEST(CredentialSourceTest, FailureWithNothingCachedIsReturned) {
  FakePlugin plugin;
  plugin.fail = true;
  auto source = plugin.Source();
  auto credentials = source->Get();
  ASSERT_FALSE(credentials.ok());
  EXPECT_EQ(credentials.status().code(), StatusCode::kUnauthorized);
  plugin.fail = false;
  EXPECT_EQ(source->Get()->token, "token-1") << "a failure is not cached";
}

TEST(CredentialSourceTest, UnauthorizedRunsThePluginOnceForAllRequestsThatSawIt) {
  FakePlugin plugin;
  auto source = plugin.Source();
  const Credentials used = *source->Get();
  // Two requests sent with token-1 both get a 401: only the first reruns.
  EXPECT_TRUE(source->RefreshAfterUnauthorized(used));
  EXPECT_TRUE(source->RefreshAfterUnauthorized(used));
  EXPECT_EQ(plugin.runs, 2);
  EXPECT_EQ(source->Get()->token, "token-2");
  // A 401 to the new token runs it again.
  EXPECT_TRUE(source->RefreshAfterUnauthorized(*source->Get()));
  EXPECT_EQ(source->Get()->token, "token-3");
}

TEST(CredentialSourceTest, UnauthorizedWithAFailingPluginGivesUpAndForgetsTheToken) {
  FakePlugin plugin;
  auto source = plugin.Source();
  const Credentials used = *source->Get();
  plugin.fail = true;
  EXPECT_FALSE(source->RefreshAfterUnauthorized(used));
  EXPECT_FALSE(source->Get().ok()) << "the refused token must not be sent again";
}

TEST(CredentialSourceTest, CertificateGenerationChangesOnlyWithTheCertificate) {
  FakePlugin plugin;
  auto source = plugin.Source();
  const Credentials token_only = *source->Get();
  EXPECT_EQ(token_only.cert_generation, 0U) << "no certificate: the initial TLS context serves";
  plugin.cert = "CERT-A";
  ASSERT_TRUE(source->RefreshAfterUnauthorized(token_only));
  const Credentials with_a = *source->Get();
  EXPECT_EQ(with_a.client_cert_pem, "CERT-A");
  EXPECT_EQ(with_a.client_key_pem, "key");
  EXPECT_NE(with_a.cert_generation, token_only.cert_generation);
  ASSERT_TRUE(source->RefreshAfterUnauthorized(with_a));
  const Credentials again_a = *source->Get();
  EXPECT_NE(again_a.generation, with_a.generation);
  EXPECT_EQ(again_a.cert_generation, with_a.cert_generation) << "same certificate: same TLS";
  plugin.cert = "CERT-B";
  ASSERT_TRUE(source->RefreshAfterUnauthorized(again_a));
  EXPECT_NE(source->Get()->cert_generation, again_a.cert_generation);
}

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("hj-exec-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& content, bool executable = false) {
    const fs::path file = path_ / name;
    std::ofstream(file) << content;
    if (executable) {
      fs::permissions(file, fs::perms::owner_all, fs::perm_options::replace);
    }
    return file.string();
  }
  std::string Read(const std::string& name) const {
    std::ifstream in(path_ / name);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

TEST(CredentialSourceTest, StaticTokenAndTokenFileNeverRefreshOnUnauthorized) {
  TempDir dir;
  ClientConfig config;
  config.bearer_token = "static";
  auto source = CredentialSource::ForConfig(config);
  EXPECT_FALSE(source->uses_plugin());
  EXPECT_EQ(source->Get()->token, "static");
  EXPECT_FALSE(source->RefreshAfterUnauthorized(*source->Get()));

  config.token_file = dir.Write("token", "from-file\n");
  auto file_source = CredentialSource::ForConfig(config);
  EXPECT_EQ(file_source->Get()->token, "from-file");
}

TEST(CredentialSourceTest, StaticCredentialsWinOverExec) {
  ClientConfig config;
  config.bearer_token = "static";
  config.exec = Exec("/nonexistent/plugin");
  auto source = CredentialSource::ForConfig(config);
  EXPECT_FALSE(source->uses_plugin());
  EXPECT_EQ(source->Get()->token, "static");
}

// ---- Running programs -----------------------------------------------------------

TEST(FindExecutableTest, SearchesThePathListForExecutableFiles) {
  TempDir a;
  TempDir b;
  a.Write("tool", "#!/bin/sh\n");  // not executable: skipped
  const std::string in_b = b.Write("tool", "#!/bin/sh\n", true);
  const std::string list = a.path().string() + ":" + b.path().string();
  EXPECT_EQ(FindExecutable("tool", list), in_b);
  EXPECT_FALSE(FindExecutable("missing", list).has_value());
  EXPECT_EQ(FindExecutable(in_b, ""), in_b) << "a path is taken as is";
  EXPECT_FALSE(FindExecutable((a.path() / "tool").string(), list).has_value());
  EXPECT_FALSE(FindExecutable(a.path().string(), list).has_value()) << "a directory";
}

TEST(RunProcessTest, CapturesOutputsExitCodeArgsAndExactEnvironment) {
  TempDir dir;
  const std::string script = dir.Write("s", R"sh(#!/bin/sh
printf 'args:%s|%s\n' "$1" "$2"
printf 'env:%s|%s\n' "$ONLY" "${HOME:-unset}"
printf 'stdin:%s\n' "$(cat)"
echo oops >&2
exit 3
)sh",
                                       true);
  auto result = RunProcess(script, {script, "a b", "$(touch x)"}, {"ONLY=1", "PATH=/usr/bin:/bin"});
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->exit_code, 3);
  EXPECT_EQ(result->signal, 0);
  // No shell between us and the program: arguments arrive verbatim.
  EXPECT_EQ(result->out, "args:a b|$(touch x)\nenv:1|unset\nstdin:\n");
  EXPECT_EQ(result->err, "oops\n");
  EXPECT_FALSE(fs::exists(dir.path() / "x"));
}

TEST(RunProcessTest, TimeoutKillsTheProcessGroupAndReaps) {
  TempDir dir;
  const std::string script = dir.Write(
      "slow", "#!/bin/sh\nsleep 30 &\necho $! > " + (dir.path() / "child").string() + "\nwait\n",
      true);
  const auto start = std::chrono::steady_clock::now();
  auto result = RunProcess(script, {script}, {"PATH=/usr/bin:/bin"}, {.timeout = 300ms});
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kTimeout);
  EXPECT_NE(result.status().message().find("did not finish within 300 ms"), std::string::npos)
      << result.status().message();
  // The grandchild got the group's SIGKILL too (gone or a zombie awaiting its new parent).
  const std::string child = dir.Read("child");
  ASSERT_FALSE(child.empty());
  const pid_t pid = std::stoi(child);
  bool dead = false;
  for (int i = 0; i < 100 && !dead; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    dead = !stat || paren == std::string::npos || line.substr(paren + 2, 1) == "Z";
    if (!dead) {
      std::this_thread::sleep_for(20ms);
    }
  }
  EXPECT_TRUE(dead) << "sleep " << pid << " survived";
}

TEST(RunProcessTest, OversizedOutputIsAnError) {
  TempDir dir;
  const std::string script =
      dir.Write("big", "#!/bin/sh\nhead -c 100000 /dev/zero\nsleep 30\n", true);
  auto result =
      RunProcess(script, {script}, {"PATH=/usr/bin:/bin"}, {.timeout = 10s, .max_stdout = 1000});
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.status().message().find("more than 1000 bytes"), std::string::npos)
      << result.status().message();
}

TEST(RunProcessTest, ChildDoesNotInheritBlockedSignals) {
  // The binaries block SIGTERM for sigwait; a plugin must still die of it.
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &term, &old);
  TempDir dir;
  const std::string script = dir.Write("term", "#!/bin/sh\nkill -TERM $$\nexit 0\n", true);
  auto result = RunProcess(script, {script}, {"PATH=/usr/bin:/bin"});
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(result->signal, SIGTERM);
  EXPECT_EQ(result->exit_code, -1);
}

TEST(RunProcessTest, MissingExecutableIsNotFound) {
  auto result = RunProcess("/nonexistent/plugin", {"plugin"}, {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kNotFound);
}

// ---- RunExecPlugin ----------------------------------------------------------------

TEST(RunExecPluginTest, PassesArgsEnvAndExecInfoAndDecodesTheCredential) {
  TempDir dir;
  const std::string info = (dir.path() / "info").string();
  const std::string script = dir.Write("plugin", R"(#!/bin/sh
printf '%s' "$KUBERNETES_EXEC_INFO" > )" + info + R"(
cat <<EOF
{"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
 "status": {"token": "$1-$PLUGIN_SETTING", "expirationTimestamp": "2030-01-01T00:00:00Z"}}
EOF
)",
                                       true);
  ExecConfig exec = Exec(script);
  exec.args = {"from-args"};
  exec.env = {{"PLUGIN_SETTING", "from-env"}};
  exec.provide_cluster_info = true;
  ClientConfig cluster;
  cluster.server = "https://10.1.2.3:6443";
  auto credential = RunExecPlugin(exec, cluster);
  ASSERT_TRUE(credential.ok()) << credential.status().ToString();
  EXPECT_EQ(credential->token, "from-args-from-env");
  EXPECT_EQ(credential->expiry, At("2030-01-01T00:00:00Z"));
  const json request = json::parse(dir.Read("info"));
  EXPECT_EQ(request["apiVersion"], kV1);
  EXPECT_EQ(request["kind"], "ExecCredential");
  EXPECT_EQ(request["spec"]["interactive"], false);
  EXPECT_EQ(request["spec"]["cluster"]["server"], "https://10.1.2.3:6443");
}

TEST(RunExecPluginTest, BareCommandIsFoundInPath) {
  TempDir dir;
  dir.Write("hj-test-plugin", R"(#!/bin/sh
echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}}'
)",
            true);
  const char* old = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
  const std::string saved = old != nullptr ? old : "";
  const std::string path = dir.path().string() + ":" + saved;
  ::setenv("PATH", path.c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
  auto credential = RunExecPlugin(Exec("hj-test-plugin", kV1beta1), ClientConfig());
  ::setenv("PATH", saved.c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
  ASSERT_TRUE(credential.ok()) << credential.status().ToString();
  EXPECT_EQ(credential->token, "t");
}

TEST(RunExecPluginTest, NotFoundShowsTheInstallHint) {
  ExecConfig exec = Exec("hj-no-such-plugin-anywhere");
  exec.install_hint = "Install hj-no-such-plugin with your package manager.";
  auto credential = RunExecPlugin(exec, ClientConfig());
  ASSERT_FALSE(credential.ok());
  EXPECT_EQ(credential.status().code(), StatusCode::kUnauthorized);
  EXPECT_NE(credential.status().message().find("executable hj-no-such-plugin-anywhere not found"),
            std::string::npos)
      << credential.status().message();
  EXPECT_NE(credential.status().message().find(exec.install_hint), std::string::npos)
      << credential.status().message();
}

TEST(RunExecPluginTest, FailureCarriesExitCodeAndStderr) {
  TempDir dir;
  const std::string script =
      dir.Write("plugin", "#!/bin/sh\necho 'error: token expired, run login' >&2\nexit 1\n", true);
  auto credential = RunExecPlugin(Exec(script), ClientConfig());
  ASSERT_FALSE(credential.ok());
  EXPECT_EQ(credential.status().code(), StatusCode::kUnauthorized);
  EXPECT_NE(credential.status().message().find("failed with exit code 1: error: token expired, "
                                               "run login"),
            std::string::npos)
      << credential.status().message();
}

TEST(RunExecPluginTest, WrongApiVersionIsRefused) {
  TempDir dir;
  const std::string script = dir.Write(R"(plugin)", R"(#!/bin/sh
echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"t"}}'
)",
                                       true);
  auto credential = RunExecPlugin(Exec(script, kV1), ClientConfig());
  ASSERT_FALSE(credential.ok());
  EXPECT_NE(credential.status().message().find("configured to use API version"), std::string::npos)
      << credential.status().message();
}

}  // namespace
}  // namespace hybridjob::k8s
