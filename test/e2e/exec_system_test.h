// The fixture of an e2e suite whose tests share one System running
// hybridjob-sim --exec (members as real processes, which needs root). Each
// test skips without root, and fails instead under CI, which runs as root.
#pragma once

#include <cstdlib>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "system.h"

namespace hybridjob::testing {

class ExecSystemTest : public ::testing::Test {
 protected:
  // From the suite's SetUpTestSuite; does nothing without root.
  static void StartSystem(const SystemOptions& options, ReplicaOptions replicas) {
    if (geteuid() != 0) {
      return;
    }
    replicas.sim_args.insert(replicas.sim_args.begin(), "--exec");
    system_ = new System(options, replicas);
  }
  static void TearDownTestSuite() {
    delete system_;
    system_ = nullptr;
  }
  // A suite's own SetUp calls this first and returns when
  // IsSkipped() || HasFatalFailure().
  void SetUp() override {
    if (geteuid() != 0) {
      if (std::getenv("CI") != nullptr) {
        FAIL() << "hybridjob-sim --exec needs root, and CI runs as root";
      }
      GTEST_SKIP() << "hybridjob-sim --exec needs root";
    }
    ASSERT_NE(system_, nullptr);
    ASSERT_TRUE(system_->ok()) << system_->Logs();
  }

  static std::string Kubectl(const std::string& args) {
    std::string output;
    system_->Kubectl(args, &output);
    return output;
  }
  static std::string Logs(const std::string& args) { return Kubectl("logs " + args); }

  // One suite per test binary: ctest runs each test in a process of its own.
  static inline System* system_ = nullptr;
};

}  // namespace hybridjob::testing
