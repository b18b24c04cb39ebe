// Reloads the scheduler's configuration file when it changes, without a
// restart: each new version is parsed and checked like the first; a good one
// is handed on, a bad one is refused and the last good one stays in force.
// Files mounted from a ConfigMap change by a symlink swap, so the watcher
// compares contents rather than modification times.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <hybridjob/common/mutex.h>
#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/shell/config.h>

namespace hybridjob::scheduler {

class ConfigFileWatcher {
 public:
  using ApplyFunction = std::function<void(const SchedulerConfig&)>;
  using RefuseFunction = std::function<void(const Status&)>;

  ConfigFileWatcher(std::string path, std::chrono::milliseconds poll_interval, ApplyFunction apply,
                    RefuseFunction refuse);
  ~ConfigFileWatcher();
  ConfigFileWatcher(const ConfigFileWatcher&) = delete;
  ConfigFileWatcher& operator=(const ConfigFileWatcher&) = delete;

  // Reads and checks the file as it is now; it becomes the version later
  // changes are compared with. For the start, before Start().
  Result<SchedulerConfig> Load();

  enum class Check { kUnchanged, kApplied, kRefused };
  // Compares the file with the last version seen, and applies or refuses a
  // change. A refused version is not reported again until the file changes.
  Check CheckOnce();

  // Polls in a thread of its own until Stop().
  void Start();
  void Stop();

 private:
  void Run();

  const std::string path_;
  const std::chrono::milliseconds poll_interval_;
  ApplyFunction apply_;
  RefuseFunction refuse_;
  std::string last_text_;  // the last version seen, good or bad
  bool last_readable_ = true;

  Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ HJ_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace hybridjob::scheduler
