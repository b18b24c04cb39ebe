// Test support: waits, polling, for a condition that another thread (a shell's
// worker or watch reader) makes true.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace hybridjob::k8s::testing {

// Whether `condition` holds within `limit`, checked every 5 ms.
inline bool Eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return condition();
}

}  // namespace hybridjob::k8s::testing
