// S3 end to end against a real S3-compatible server: s3rver, from the npm
// registry (hack/test-peers.sh), on loopback. hybridjob-sim --exec runs the
// controller's own fetcher and uploader scripts, so a job's code comes from
// the store and its model goes back to it, through both client paths:
//   - curl signing the requests (SigV4), in a fetcher image that holds curl
//     and no aws CLI (hybridjob-sim --exec-image-paths stands in for it);
//   - the aws CLI (Debian's awscli), in the default fetcher image.
// s3rver checks what S3 checks before a signature: the access key id, the
// SigV4 headers (x-amz-content-sha256 among them), buckets and keys. It does
// not recompute SigV4 signatures, so a wrong secret key would pass; a wrong
// access key id is the wrong-credentials case here.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <unistd.h>

#include <gtest/gtest.h>

#include "child_process.h"
#include "exec_system_test.h"
#include "system.h"

namespace hybridjob::testing {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

constexpr const char* kAccessKey = "S3RVER";  // s3rver's own account
constexpr const char* kSecretKey = "S3RVER";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What a command printed; its exit code in *exit_code.
std::string RunCommand(const std::vector<std::string>& argv, const std::string& log,
                       int* exit_code) {
  ChildProcess child(argv, log);
  *exit_code = child.WaitForExit(60s);
  return child.Log();
}

// An S3-compatible store on a free loopback port with the buckets `code` and
// `models`, stopped when the object goes.
class S3Store {
 public:
  explicit S3Store(const std::string& dir) : dir_(dir) {
    std::filesystem::create_directories(dir + "/data");
    int exit_code = -1;
    std::string bin =
        RunCommand({SourceDir() + "/hack/test-peers.sh"}, dir + "/peers.log", &exit_code);
    while (!bin.empty() && (bin.back() == '\n' || bin.back() == '\r')) {
      bin.pop_back();
    }
    bin = bin.substr(bin.rfind('\n') == std::string::npos ? 0 : bin.rfind('\n') + 1);
    if (exit_code != 0 || !std::filesystem::exists(bin + "/s3rver")) {
      error_ = "hack/test-peers.sh: " + ReadFile(dir + "/peers.log");
      return;
    }
    server_ = std::make_unique<ChildProcess>(
        std::vector<std::string>{bin + "/s3rver", "-d", dir + "/data", "-a", "127.0.0.1", "-p", "0",
                                 "--configure-bucket", "code", "--configure-bucket", "models"},
        dir + "/s3rver.log");
    std::smatch match;
    WaitFor(
        [&] {
          const std::string log = server_->Log();
          return std::regex_search(log, match, std::regex("listening on 127\\.0\\.0\\.1:([0-9]+)"));
        },
        30s);
    if (match.empty()) {
      error_ = "s3rver did not start: " + server_->Log();
      return;
    }
    endpoint_ = "http://127.0.0.1:" + match[1].str();
  }

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  const std::string& endpoint() const { return endpoint_; }
  std::string Log() const { return server_ != nullptr ? server_->Log() : ""; }

  // A signed PUT or GET of bucket/key by curl, as any S3 client makes it.
  int Put(const std::string& object, const std::string& file) const {
    return Curl({"-T", file, "--url", endpoint_ + "/" + object});
  }
  int Get(const std::string& object, const std::string& file) const {
    return Curl({"-o", file, "--url", endpoint_ + "/" + object});
  }

 private:
  int Curl(const std::vector<std::string>& args) const {
    std::vector<std::string> argv = {"/usr/bin/curl",
                                     "-sS",
                                     "--fail-with-body",
                                     "--aws-sigv4",
                                     "aws:amz:us-east-1:s3",
                                     "--user",
                                     std::string(kAccessKey) + ":" + kSecretKey,
                                     "-H",
                                     "x-amz-content-sha256: UNSIGNED-PAYLOAD"};
    argv.insert(argv.end(), args.begin(), args.end());
    int exit_code = -1;
    RunCommand(argv, dir_ + "/curl.log", &exit_code);
    return exit_code;
  }

  std::string dir_;
  std::string error_;
  std::string endpoint_;
  std::unique_ptr<ChildProcess> server_;
};

// A fetcher image that holds curl and the shell's tools, and no aws CLI.
constexpr const char* kCurlOnlyImage = "example.com/curl-only:1";

class S3EndToEndTest : public ExecSystemTest {
 protected:
  static void SetUpTestSuite() {
    std::string pattern = (std::filesystem::temp_directory_path() / "hybridjob-s3-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) {
      return;
    }
    image_dir_ = new std::string(pattern);
    std::filesystem::create_directories(*image_dir_ + "/bin");
    for (const char* tool : {"sh", "curl", "mktemp", "rm", "tr", "head", "tail", "sed", "printf",
                             "mkdir", "tar", "gzip", "find", "cat", "echo"}) {
      for (const char* prefix : {"/usr/bin/", "/bin/"}) {
        std::error_code ec;
        if (std::filesystem::exists(std::string(prefix) + tool) &&
            !std::filesystem::exists(*image_dir_ + "/bin/" + tool, ec)) {
          std::filesystem::create_symlink(std::string(prefix) + tool, *image_dir_ + "/bin/" + tool,
                                          ec);
        }
      }
    }
    StartSystem({.nodes = 2, .gpus_per_node = 4, .scheduler_config = ""},
                {.sim_args = {"--exec-image-paths",
                              std::string(kCurlOnlyImage) + "=" + *image_dir_ + "/bin"}});
  }
  static void TearDownTestSuite() {
    ExecSystemTest::TearDownTestSuite();
    if (image_dir_ != nullptr) {
      std::filesystem::remove_all(*image_dir_);
      delete image_dir_;
      image_dir_ = nullptr;
    }
  }
  void SetUp() override {
    ExecSystemTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) {
      return;
    }
    dir_ = system_->cluster().dir() + "/s3";
    store_ = std::make_unique<S3Store>(dir_);
    ASSERT_TRUE(store_->ok()) << store_->error();
  }
  void TearDown() override { store_.reset(); }

  // A Secret of the store's keys, as a user makes one.
  void CreateCredentials(const std::string& name, const std::string& access_key) {
    std::string output;
    ASSERT_EQ(system_->Kubectl("create secret generic " + name +
                                   " --from-literal=AWS_ACCESS_KEY_ID=" + access_key +
                                   " --from-literal=AWS_SECRET_ACCESS_KEY=" + kSecretKey +
                                   " --from-literal=AWS_REGION=us-east-1",
                               &output),
              0)
        << output;
  }

  // The code archive in the store at code/<name>.tar.gz: a run.sh and 64 KiB
  // of random weights. Returns the weights.
  std::string UploadCode(const std::string& name) {
    const std::string src = dir_ + "/" + name + "-src";
    std::filesystem::create_directories(src);
    std::mt19937 random(std::random_device{}());
    std::string weights(64 * 1024, '\0');
    for (char& byte : weights) {
      byte = static_cast<char>(random() & 0xff);
    }
    std::ofstream(src + "/weights.bin", std::ios::binary) << weights;
    std::ofstream(src + "/run.sh") << "mkdir -p /out/model\n"
                                      "cp \"$HYBRIDJOB_CODE_DIR/weights.bin\" /out/model/\n"
                                      "echo \"trained by $HYBRIDJOB_ROLE $HYBRIDJOB_INDEX\" > "
                                      "/out/model/trained.txt\n";
    int exit_code = -1;
    const std::string archive = dir_ + "/" + name + ".tar.gz";
    const std::string log =
        RunCommand({"/bin/tar", "-czf", archive, "-C", src, "run.sh", "weights.bin"},
                   dir_ + "/tar.log", &exit_code);
    EXPECT_EQ(exit_code, 0) << log;
    EXPECT_EQ(store_->Put("code/" + name + ".tar.gz", archive), 0)
        << ReadFile(dir_ + "/curl.log") << store_->Log();
    return weights;
  }

  // A job whose code comes from s3://code/<name>.tar.gz and whose model goes
  // to s3://models/runs/<name>, with the given fetcher image and Secret.
  std::string Manifest(const std::string& name, const std::string& image,
                       const std::string& fetch_secret, const std::string& upload_secret,
                       const std::string& source) {
    const std::string image_line = image.empty() ? "" : "    image: " + image + "\n";
    return R"(apiVersion: batch.hybridjob.io/v1alpha1
kind: HybridJob
metadata:
  name: )" +
           name + R"(
spec:
  code:
    source: )" +
           source + R"(
    endpoint: )" +
           store_->endpoint() + R"(
    credentialsSecret: )" +
           fetch_secret + "\n" + image_line + R"(  volumes:
  - name: out
    size: 1Gi
    mountPath: /out
  artifacts:
    volume: out
    paths: [model]
    destination: s3://models/runs/)" +
           name + R"(
    endpoint: )" +
           store_->endpoint() + R"(
    credentialsSecret: )" +
           upload_secret + "\n" + image_line + R"(  replicaSpecs:
  - name: worker
    minReplicas: 1
    restartPolicy: Never
    template:
      spec:
        containers:
        - name: main
          image: busybox
          command: [/bin/sh, -c, 'sh "$HYBRIDJOB_CODE_DIR/run.sh"']
)";
  }

  json UploadCondition(const std::string& job) {
    const json object = system_->Job(job);
    if (!object.is_object() || !object.contains("status") || !object["status"].is_object()) {
      return json::object();
    }
    for (const json& c : object["status"].value("conditions", json::array())) {
      if (c.value("type", "") == "ArtifactsUploaded") {
        return c;
      }
    }
    return json::object();
  }

  // Code in and model out through one client path; the stored model is
  // byte-identical to what the job wrote.
  void RoundTrip(const std::string& name, const std::string& image) {
    const std::string weights = UploadCode(name);
    CreateCredentials(name + "-store", kAccessKey);
    std::string output;
    ASSERT_EQ(system_->Apply(Manifest(name, image, name + "-store", name + "-store",
                                      "s3://code/" + name + ".tar.gz"),
                             &output),
              0)
        << output;
    ASSERT_TRUE(WaitFor([&] { return UploadCondition(name).value("status", "") == "True"; }, 90s))
        << "phase " << system_->Phase(name) << " " << UploadCondition(name).dump() << "\n"
        << Logs(name + "-worker-0 -c hybridjob-code") << Logs(name + "-artifacts") << "\n"
        << store_->Log() << system_->Logs();
    EXPECT_EQ(system_->Phase(name), "Succeeded");
    EXPECT_EQ(UploadCondition(name)["reason"], "Uploaded");
    ASSERT_EQ(store_->Get("models/runs/" + name + "/model/weights.bin", dir_ + "/weights.out"), 0)
        << ReadFile(dir_ + "/curl.log");
    EXPECT_TRUE(ReadFile(dir_ + "/weights.out") == weights) << "the stored weights differ";
    ASSERT_EQ(store_->Get("models/runs/" + name + "/model/trained.txt", dir_ + "/trained.out"), 0)
        << ReadFile(dir_ + "/curl.log");
    EXPECT_EQ(ReadFile(dir_ + "/trained.out"), "trained by worker 0\n");
    EXPECT_NE(Logs(name + "-artifacts").find("uploaded 2 files to s3://models/runs/" + name),
              std::string::npos)
        << Logs(name + "-artifacts");
  }

  static inline std::string* image_dir_ = nullptr;
  std::string dir_;
  std::unique_ptr<S3Store> store_;
};

TEST_F(S3EndToEndTest, CurlSignedRequestsFetchTheCodeAndUploadTheModelByteForByte) {
  RoundTrip("s3-curl", kCurlOnlyImage);
  // Every request reached the store signed with the job's key.
  EXPECT_NE(store_->Log().find("s3-curl.tar.gz 200"), std::string::npos) << store_->Log();
}

TEST_F(S3EndToEndTest, TheAwsCliFetchesTheCodeAndUploadsTheModelByteForByte) {
  if (!std::filesystem::exists("/usr/bin/aws")) {
    if (std::getenv("CI") != nullptr) {
      FAIL() << "Debian's awscli is missing: make deps installs it";
    }
    GTEST_SKIP() << "no aws CLI in /usr/bin (Debian's awscli)";
  }
  RoundTrip("s3-aws", "");
}

TEST_F(S3EndToEndTest, WrongCredentialsAndAMissingObjectFailSayingWhatTheStoreAnswered) {
  UploadCode("s3-refused");
  CreateCredentials("good-store", kAccessKey);
  CreateCredentials("bad-store", "NOT-A-KEY");
  std::string output;
  // The code is there and fetched; the upload's key is unknown to the store.
  ASSERT_EQ(system_->Apply(Manifest("s3-refused", kCurlOnlyImage, "good-store", "bad-store",
                                    "s3://code/s3-refused.tar.gz"),
                           &output),
            0)
      << output;
  // The code is not there.
  ASSERT_EQ(system_->Apply(Manifest("s3-missing", kCurlOnlyImage, "good-store", "good-store",
                                    "s3://code/no-such-archive.tar.gz"),
                           &output),
            0)
      << output;

  ASSERT_TRUE(WaitFor(
      [&] {
        return UploadCondition("s3-refused").value("message", "").find("InvalidAccessKeyId") !=
               std::string::npos;
      },
      90s))
      << UploadCondition("s3-refused").dump() << "\n"
      << Logs("s3-refused-artifacts") << store_->Log() << system_->Logs();
  const json refused = UploadCondition("s3-refused");
  EXPECT_EQ(refused["status"], "False");
  EXPECT_EQ(refused["reason"], "Retrying");
  EXPECT_NE(refused["message"].get<std::string>().find(
                "the server answered InvalidAccessKeyId: The AWS Access Key Id you provided does "
                "not exist in our records."),
            std::string::npos)
      << refused.dump();
  EXPECT_EQ(system_->Phase("s3-refused"), "Succeeded") << "the upload never fails the job";
  // The uploader's log says it too, and nothing reached the store.
  EXPECT_NE(Logs("s3-refused-artifacts --previous").find("InvalidAccessKeyId"), std::string::npos)
      << Logs("s3-refused-artifacts --previous");
  EXPECT_NE(store_->Get("models/runs/s3-refused/model/weights.bin", dir_ + "/none.out"), 0);

  ASSERT_TRUE(WaitFor([&] { return system_->Phase("s3-missing") == "Failed"; }, 60s))
      << system_->Phase("s3-missing") << "\n"
      << Logs("s3-missing-worker-0 -c hybridjob-code") << system_->Logs();
  const json job = system_->Job("s3-missing");
  std::string failed;
  for (const json& c : job["status"].value("conditions", json::array())) {
    if (c.value("type", "") == "Failed") {
      failed = c.value("message", "");
    }
  }
  EXPECT_NE(failed.find("s3-missing-worker-0 failed in init container hybridjob-code with exit "
                        "code 1: hybridjob-code: could not fetch s3://code/no-such-archive.tar.gz: "
                        "the server answered NoSuchKey: The specified key does not exist."),
            std::string::npos)
      << failed;
  EXPECT_NE(Logs("s3-missing-worker-0 -c hybridjob-code").find("NoSuchKey"), std::string::npos)
      << Logs("s3-missing-worker-0 -c hybridjob-code");
  EXPECT_EQ(UploadCondition("s3-missing"), json::object()) << "a failed job uploads nothing";
}

}  // namespace
}  // namespace hybridjob::testing
