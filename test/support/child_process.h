// A binary under test, started as a child process with its output in a log
// file, and always stopped (SIGTERM, then SIGKILL) when the object goes.
#pragma once

#include <chrono>
#include <string>
#include <sys/types.h>
#include <vector>

namespace hybridjob::testing {

class ChildProcess {
 public:
  // An empty log_path leaves the child's output on ours.
  ChildProcess(std::vector<std::string> argv, std::string log_path);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  bool Running();
  // SIGTERM, wait up to `grace`, then SIGKILL. Returns the exit status code
  // (or 128+signal), -1 if it was not running.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  // SIGKILL at once, as a crash would.
  void Kill();
  // Waits for it to exit on its own; the exit code, or -1 on timeout.
  int WaitForExit(std::chrono::milliseconds timeout);
  const std::string& log_path() const { return log_path_; }
  std::string Log() const;

 private:
  int Reap(bool block);

  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string log_path_;
};

}  // namespace hybridjob::testing
