// Start-up rejection: each binary, given a kubeconfig or scheduler config it
// cannot use, must stop before doing anything else, exit non-zero, and say
// which file and which field is wrong. None of these runs reaches a cluster.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "child_process.h"
#include "test_cluster.h"

namespace hybridjob::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

// "-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n":
// valid base64, unusable PEM.
constexpr const char* kBogusPemBase64 =
    "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCm5vdCBhIGNlcnRpZmljYXRlCi0tLS0tRU5EIENFUlRJRklDQVRFLS0t"
    "LS0K";

// A kubeconfig whose parts the cases below replace one at a time. The server is
// never contacted: every case is refused before the first request.
struct KubeconfigParts {
  std::string current_context = "current-context: dev\n";
  std::string cluster = "    server: https://127.0.0.1:1\n";
  std::string user = "    token: not-a-real-token\n";
  std::string context = "    cluster: local\n    user: me\n";

  std::string Text() const {
    return "apiVersion: v1\nkind: Config\n" + current_context +
           "clusters:\n- name: local\n  cluster:\n" + cluster + "users:\n- name: me\n  user:\n" +
           user + "contexts:\n- name: dev\n  context:\n" + context;
  }
};

struct Outcome {
  int exit_code = -1;
  std::string output;
};

class StartupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Parameterised names hold '/': one flat directory per test.
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::replace(name.begin(), name.end(), '/', '_');
    dir_ = fs::temp_directory_path() / ("hj-startup-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) const {
    const fs::path path = dir_ / name;
    std::ofstream(path) << content;
    return path.string();
  }

  // Runs build/bin/<binary> with args and waits for it to exit on its own.
  Outcome Start(const std::string& binary, std::vector<std::string> args) const {
    args.insert(args.begin(), BinaryDir() + "/" + binary);
    const std::string log = (dir_ / (binary + ".log")).string();
    ChildProcess child(std::move(args), log);
    EXPECT_TRUE(child.started()) << binary;
    Outcome run;
    run.exit_code = child.WaitForExit(std::chrono::seconds(60));
    run.output = child.Log();
    EXPECT_NE(run.exit_code, -1) << binary << " did not exit on its own:\n" << run.output;
    return run;
  }

  fs::path dir_;
};

// The same kubeconfig problems for every binary: each loads its client the
// same way, but each must also stop on the failure rather than carry on.
class KubeconfigStartupTest : public StartupTest,
                              public ::testing::WithParamInterface<std::string> {
 protected:
  // Starts the binary with --kubeconfig FILE, expecting it to refuse.
  std::string Refused(const std::string& kubeconfig_path) const {
    Outcome run = Start(GetParam(), {"--kubeconfig", kubeconfig_path});
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_THAT(run.output, HasSubstr(GetParam() + ": ")) << "the message names the program";
    return run.output;
  }
  std::string Refused(const KubeconfigParts& parts) const {
    return Refused(Write("kubeconfig", parts.Text()));
  }
};

TEST_P(KubeconfigStartupTest, MissingFile) {
  const std::string path = (dir_ / "no-such-kubeconfig").string();
  EXPECT_THAT(Refused(path), AllOf(HasSubstr("cannot read"), HasSubstr(path)));
}

TEST_P(KubeconfigStartupTest, InvalidYaml) {
  const std::string path = Write("kubeconfig", "clusters: [unclosed\n  - {name: x\n");
  EXPECT_THAT(Refused(path), AllOf(HasSubstr(path), HasSubstr("invalid YAML")));
}

TEST_P(KubeconfigStartupTest, NotAMap) {
  const std::string path = Write("kubeconfig", "- just\n- a list\n");
  EXPECT_THAT(Refused(path), AllOf(HasSubstr(path), HasSubstr("not a YAML map")));
}

TEST_P(KubeconfigStartupTest, NoCurrentContext) {
  KubeconfigParts parts;
  parts.current_context = "";
  EXPECT_THAT(Refused(parts), HasSubstr("no current-context"));
}

TEST_P(KubeconfigStartupTest, CurrentContextThatDoesNotExist) {
  KubeconfigParts parts;
  parts.current_context = "current-context: staging\n";
  EXPECT_THAT(Refused(parts), HasSubstr("no context named \"staging\""));
}

TEST_P(KubeconfigStartupTest, ContextNamesMissingCluster) {
  KubeconfigParts parts;
  parts.context = "    cluster: nowhere\n    user: me\n";
  EXPECT_THAT(Refused(parts), HasSubstr("no cluster named \"nowhere\""));
}

TEST_P(KubeconfigStartupTest, ContextNamesMissingUser) {
  KubeconfigParts parts;
  parts.context = "    cluster: local\n    user: nobody\n";
  EXPECT_THAT(Refused(parts), HasSubstr("no user named \"nobody\""));
}

TEST_P(KubeconfigStartupTest, ServerWithoutScheme) {
  KubeconfigParts parts;
  parts.cluster = "    server: 127.0.0.1:6443\n";
  EXPECT_THAT(Refused(parts), AllOf(HasSubstr("cluster \"local\""), HasSubstr("http(s) URL"),
                                    HasSubstr("127.0.0.1:6443")));
}

TEST_P(KubeconfigStartupTest, ClusterWithoutServer) {
  KubeconfigParts parts;
  parts.cluster = "    insecure-skip-tls-verify: false\n";
  EXPECT_THAT(Refused(parts), HasSubstr("cluster \"local\" has no server"));
}

TEST_P(KubeconfigStartupTest, CertificateAuthorityDataNotBase64) {
  KubeconfigParts parts;
  parts.cluster += "    certificate-authority-data: \"%%% not base64 %%%\"\n";
  EXPECT_THAT(Refused(parts), AllOf(HasSubstr("cluster \"local\""),
                                    HasSubstr("certificate-authority-data is not valid base64")));
}

TEST_P(KubeconfigStartupTest, CertificateAuthorityThatIsNotACertificate) {
  KubeconfigParts parts;
  parts.cluster += std::string("    certificate-authority-data: ") + kBogusPemBase64 + "\n";
  EXPECT_THAT(Refused(parts), HasSubstr("unusable TLS material"));
}

TEST_P(KubeconfigStartupTest, CertificateAuthorityFileMissing) {
  KubeconfigParts parts;
  parts.cluster += "    certificate-authority: missing-ca.crt\n";
  EXPECT_THAT(Refused(parts), AllOf(HasSubstr("certificate-authority"),
                                    HasSubstr((dir_ / "missing-ca.crt").string())));
}

TEST_P(KubeconfigStartupTest, CertificateAuthorityFileIsADirectory) {
  fs::create_directories(dir_ / "ca-dir");
  KubeconfigParts parts;
  parts.cluster += "    certificate-authority: ca-dir\n";
  EXPECT_THAT(Refused(parts),
              AllOf(HasSubstr("certificate-authority"), HasSubstr((dir_ / "ca-dir").string())));
}

TEST_P(KubeconfigStartupTest, ClientCertificateFileUnreadable) {
  Write("client.key", "key");
  KubeconfigParts parts;
  parts.user = "    client-certificate: missing-client.crt\n    client-key: client.key\n";
  EXPECT_THAT(Refused(parts), AllOf(HasSubstr("client-certificate"),
                                    HasSubstr((dir_ / "missing-client.crt").string())));
}

TEST_P(KubeconfigStartupTest, ClientCertificateWithoutKey) {
  KubeconfigParts parts;
  parts.user = std::string("    client-certificate-data: ") + kBogusPemBase64 + "\n";
  EXPECT_THAT(Refused(parts),
              HasSubstr("user \"me\" needs both a client certificate and a client key"));
}

TEST_P(KubeconfigStartupTest, ExecCredentialsAreRefused) {
  KubeconfigParts parts;
  parts.user = "    exec:\n      command: get-token\n";
  EXPECT_THAT(Refused(parts), AllOf(HasSubstr("user \"me\""), HasSubstr("exec")));
}

TEST_P(KubeconfigStartupTest, KubeconfigVariableNamingMissingFile) {
  const std::string path = (dir_ / "from-env").string();
  ::setenv("KUBECONFIG", path.c_str(), 1);
  Outcome run = Start(GetParam(), {});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, AllOf(HasSubstr("cannot read"), HasSubstr(path)));
  // A list skips missing files, as kubectl does, and says so when none exists.
  const std::string second = (dir_ / "second").string();
  ::setenv("KUBECONFIG", (path + ":" + second).c_str(), 1);
  run = Start(GetParam(), {});
  ::unsetenv("KUBECONFIG");
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output,
              AllOf(HasSubstr("none of its files exists"), HasSubstr(path + ":" + second)));
}

TEST_P(KubeconfigStartupTest, NoKubeconfigOutsideACluster) {
  ::unsetenv("KUBECONFIG");
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  Outcome run = Start(GetParam(), {});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, AllOf(HasSubstr("not running in a cluster"), HasSubstr("--kubeconfig")));
}

INSTANTIATE_TEST_SUITE_P(Binaries, KubeconfigStartupTest,
                         ::testing::Values("hybridjob-controller", "gang-scheduler",
                                           "hybridjob-sim"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// A duration flag no double can hold used to escape as std::out_of_range and
// abort the controller.
TEST_F(StartupTest, ControllerDurationFlagBeyondRange) {
  Outcome run = Start("hybridjob-controller",
                      {"--leader-election-lease-duration", std::string(400, '9') + "s"});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output,
              AllOf(HasSubstr("--leader-election-lease-duration"), HasSubstr("is too long")));
}

// The flags of a --help text, one entry each (a long name's help goes on
// the next line), -h/--help left out.
std::vector<std::string> FlagEntries(const std::string& help) {
  std::vector<std::string> entries;
  std::istringstream lines(help.substr(std::min(help.find("\nFlags:\n"), help.size())));
  std::string line;
  while (std::getline(lines, line)) {
    const size_t text = line.find_first_not_of(' ');
    if (text == std::string::npos) {
      continue;
    }
    if (text < 32 && line[text] == '-') {
      if (line.find("--help") == std::string::npos) {
        entries.push_back(line);
      }
    } else if (text == 32 && !entries.empty()) {
      entries.back() += "\n" + line;
    }
  }
  return entries;
}

// Both long-running binaries give every flag's default in --help, and their
// listeners say what "0" does, in the same words.
TEST_F(StartupTest, HelpGivesEveryFlagsDefault) {
  for (const std::string binary : {"hybridjob-controller", "gang-scheduler"}) {
    SCOPED_TRACE(binary);
    Outcome run = Start(binary, {"--help"});
    EXPECT_EQ(run.exit_code, 0) << run.output;
    const std::vector<std::string> entries = FlagEntries(run.output);
    EXPECT_GE(entries.size(), 6u) << run.output;
    for (const std::string& entry : entries) {
      EXPECT_THAT(entry, HasSubstr(" (default ")) << "a flag without its default";
    }
    EXPECT_THAT(run.output, HasSubstr("host:port of /metrics; \"0\" disables it (default "));
    EXPECT_THAT(run.output,
                HasSubstr("host:port of /healthz and /readyz; \"0\" disables it (default "));
  }
}

// gang-scheduler --config: the file is read before anything else, so no
// kubeconfig is needed to see it refused.
class SchedulerConfigStartupTest : public StartupTest {
 protected:
  std::string Refused(const std::string& config_text) const {
    const std::string path = Write("scheduler.yaml", config_text);
    Outcome run = Start("gang-scheduler", {"--config", path});
    EXPECT_EQ(run.exit_code, 1) << run.output;
    EXPECT_THAT(run.output, HasSubstr(path)) << "the message names the file";
    return run.output;
  }
};

TEST_F(SchedulerConfigStartupTest, MissingFile) {
  const std::string path = (dir_ / "absent.yaml").string();
  Outcome run = Start("gang-scheduler", {"--config", path});
  EXPECT_EQ(run.exit_code, 1) << run.output;
  EXPECT_THAT(run.output, AllOf(HasSubstr("cannot read"), HasSubstr(path)));
}

TEST_F(SchedulerConfigStartupTest, InvalidYaml) {
  EXPECT_THAT(Refused("queues: [{name: a\n"), HasSubstr("invalid YAML"));
}

TEST_F(SchedulerConfigStartupTest, NotAMap) {
  EXPECT_THAT(Refused("- binpack\n"), HasSubstr("expected a YAML map"));
}

TEST_F(SchedulerConfigStartupTest, UnknownField) {
  EXPECT_THAT(Refused("scoring: binpack\nscorring: spread\n"),
              HasSubstr("scorring: unknown field"));
}

TEST_F(SchedulerConfigStartupTest, UnknownNestedField) {
  EXPECT_THAT(Refused("leaderElection:\n  enabled: true\n  leaseDurationSeconds: 15\n"),
              HasSubstr("leaderElection.leaseDurationSeconds: unknown field"));
}

TEST_F(SchedulerConfigStartupTest, WrongType) {
  EXPECT_THAT(Refused("bindConcurrency: lots\n"),
              HasSubstr("bindConcurrency: \"lots\" is not a valid integer"));
}

TEST_F(SchedulerConfigStartupTest, ValueOutOfRange) {
  EXPECT_THAT(Refused("percentageOfNodesToScore: 150\n"),
              HasSubstr("percentageOfNodesToScore: must be between 0 and 100"));
}

TEST_F(SchedulerConfigStartupTest, ClientQpsNotANumber) {
  EXPECT_THAT(Refused("clientQPS: .nan\n"), HasSubstr("clientQPS"));
}

TEST_F(SchedulerConfigStartupTest, NegativeQueueWeight) {
  EXPECT_THAT(Refused("queues:\n- name: research\n  weight: -2\n"),
              HasSubstr("queues[0].weight: must be positive"));
}

TEST_F(SchedulerConfigStartupTest, BadQuantity) {
  EXPECT_THAT(Refused("queues:\n- name: research\n  guaranteed:\n    memory: 12Gb\n"),
              AllOf(HasSubstr("queues[0].guaranteed.memory"), HasSubstr("12Gb")));
}

TEST_F(SchedulerConfigStartupTest, NegativeQuantity) {
  EXPECT_THAT(Refused("queues:\n- name: research\n  max:\n    nvidia.com/gpu: -4\n"),
              HasSubstr("queues[0].max.nvidia.com/gpu: must not be negative"));
}

TEST_F(SchedulerConfigStartupTest, DuplicateQueueNames) {
  EXPECT_THAT(Refused("queues:\n- name: research\n- name: interns\n- name: research\n"),
              HasSubstr("queues[2].name: duplicate queue \"research\""));
}

TEST_F(SchedulerConfigStartupTest, GuaranteedAboveMax) {
  EXPECT_THAT(Refused("queues:\n- name: research\n  guaranteed: {nvidia.com/gpu: 8}\n"
                      "  max: {nvidia.com/gpu: 4}\n"),
              HasSubstr("queues[0]: guaranteed nvidia.com/gpu 8 exceeds max"));
}

TEST_F(SchedulerConfigStartupTest, BadDuration) {
  EXPECT_THAT(Refused("leaderElection:\n  retryPeriod: 2 seconds\n"),
              HasSubstr("leaderElection.retryPeriod"));
}

TEST_F(SchedulerConfigStartupTest, DurationTooLongToRepresent) {
  EXPECT_THAT(Refused("leaderElection:\n  leaseDuration: " + std::string(400, '9') + "s\n"),
              HasSubstr("leaderElection.leaseDuration"));
}

TEST_F(SchedulerConfigStartupTest, LeaderElectionTimingsOutOfOrder) {
  EXPECT_THAT(Refused("leaderElection:\n  enabled: true\n  leaseDuration: 5s\n"
                      "  renewDeadline: 10s\n"),
              HasSubstr("leaseDuration > renewDeadline > retryPeriod"));
}

TEST_F(SchedulerConfigStartupTest, BadAddress) {
  EXPECT_THAT(Refused("metricsAddr: localhost\n"),
              HasSubstr("metricsAddr: \"localhost\" must be host:port"));
}

}  // namespace
}  // namespace hybridjob::testing
