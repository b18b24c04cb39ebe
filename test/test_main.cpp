// The main() of every test binary. Like each component's main(), it sets up
// logging on the main thread before anything starts a thread: spdlog creates
// its registry on first use, and a worker thread creating it would race with
// the others that read it.
#include <cstdlib>
#include <iostream>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/common/logging.h>

int main(int argc, char** argv) {
  testing::InitGoogleMock(&argc, argv);
  const char* level = std::getenv("HYBRIDJOB_TEST_LOG_LEVEL");
  const hybridjob::Status logging =
      hybridjob::ConfigureLogging(level != nullptr ? level : "info", "text", "test");
  if (!logging.ok()) {
    std::cerr << "HYBRIDJOB_TEST_LOG_LEVEL: " << logging.ToString() << "\n";
    return 2;
  }
  return RUN_ALL_TESTS();
}
