// docs/user-guide.md run as written: its marked blocks, in order, in one
// shell, from the repository's root, starting with its "Try it locally"
// block, which brings up the whole system with hack/local-system.sh.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "child_process.h"
#include "guide_blocks.h"
#include "test_cluster.h"

namespace hybridjob::testing {
namespace {

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string ShellQuoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

// The local system the guide starts is always stopped, whatever the guide did.
class LocalSystemGuard {
 public:
  explicit LocalSystemGuard(std::string dir) : dir_(std::move(dir)) {}
  ~LocalSystemGuard() {
    const std::string down =
        ShellQuoted(SourceDir() + "/hack/local-system.sh") + " down --dir " + ShellQuoted(dir_);
    (void)std::system((down + " >/dev/null 2>&1").c_str());
  }
  LocalSystemGuard(const LocalSystemGuard&) = delete;
  LocalSystemGuard& operator=(const LocalSystemGuard&) = delete;

  // The three binaries' logs, while the system runs.
  std::string Logs() const {
    std::string out;
    std::error_code ignored;
    for (const char* name : {"hybridjob-sim", "gang-scheduler", "hybridjob-controller"}) {
      const std::filesystem::path log =
          std::filesystem::path(dir_) / "logs" / (name + std::string(".log"));
      if (std::filesystem::exists(log, ignored)) {
        out += "==> " + log.string() + "\n" + ReadFile(log) + "\n";
      }
    }
    return out;
  }

 private:
  std::string dir_;
};

TEST(UserGuideEndToEndTest, TheGuidesRunnableBlocksRunAsWritten) {
  const std::string guide_path = SourceDir() + "/docs/user-guide.md";
  Result<std::vector<GuideBlock>> blocks = ExtractGuideBlocks(ReadFile(guide_path));
  ASSERT_TRUE(blocks.ok()) << guide_path << ": " << blocks.status().message();
  // The walk from an empty shell to a finished job, and the commands around it.
  ASSERT_GE(blocks->size(), 8u) << "the guide lost its runnable blocks";

  const std::string work = std::filesystem::temp_directory_path().string() + "/hybridjob-guide-" +
                           std::to_string(::getpid());
  std::filesystem::create_directories(work);
  const std::string system_dir = work + "/system";
  LocalSystemGuard system(system_dir);
  // Where the reader's shell differs from this one: a fresh directory for
  // the local system (another may run), the binaries under test, no
  // KUBECONFIG of the machine's.
  const std::string prelude = "cd " + ShellQuoted(SourceDir()) + "\n" +
                              "export HYBRIDJOB_LOCAL_DIR=" + ShellQuoted(system_dir) + "\n" +
                              "export HYBRIDJOB_LOCAL_BIN=" + ShellQuoted(BinaryDir()) + "\n" +
                              "unset KUBECONFIG\n";
  const std::string script_path = work + "/guide.sh";
  {
    std::ofstream script(script_path);
    script << prelude << GuideScript(*blocks, "docs/user-guide.md");
  }
  ChildProcess run({"/bin/bash", script_path}, work + "/guide.log");
  ASSERT_TRUE(run.started());
  const int code = run.WaitForExit(std::chrono::seconds(240));
  EXPECT_EQ(code, 0) << (code < 0 ? "timed out\n" : "") << run.Log() << "\n" << system.Logs();
  if (std::getenv("HYBRIDJOB_GUIDE_LOG") != nullptr) {
    std::cout << run.Log();  // the guide's whole output, to read
  }
  std::error_code ignored;
  if (code == 0) {
    std::filesystem::remove_all(work, ignored);
  }
}

}  // namespace
}  // namespace hybridjob::testing
