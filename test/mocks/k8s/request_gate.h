// Test support: holds requests at the fake API server until the test opens
// the gate, as a hung server would. A fault handler calls PassWhenOpen.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace hybridjob::k8s::testing {

class RequestGate {
 public:
  // Blocks the calling request until Open.
  void PassWhenOpen() {
    std::unique_lock lock(mu_);
    ++waiting_;
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
  }

  // True once a request waits at the gate (or has passed it); false after
  // `limit` without one.
  bool WaitForARequest(std::chrono::milliseconds limit = std::chrono::seconds{10}) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return waiting_ > 0; });
  }

  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int waiting_ = 0;
  bool open_ = false;
};

// Opens the gate when the scope ends, so a failing assertion never leaves a
// request (and the shell's thread behind it) blocked.
class OpenOnExit {
 public:
  explicit OpenOnExit(RequestGate& gate) : gate_(gate) {}
  OpenOnExit(const OpenOnExit&) = delete;
  OpenOnExit& operator=(const OpenOnExit&) = delete;
  ~OpenOnExit() { gate_.Open(); }

 private:
  RequestGate& gate_;
};

}  // namespace hybridjob::k8s::testing
