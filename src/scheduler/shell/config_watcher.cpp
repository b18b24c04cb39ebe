#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include <hybridjob/scheduler/shell/config_watcher.h>

namespace hybridjob::scheduler {
namespace {

std::optional<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) {
    return std::nullopt;
  }
  return text.str();
}

}  // namespace

ConfigFileWatcher::ConfigFileWatcher(std::string path, std::chrono::milliseconds poll_interval,
                                     ApplyFunction apply, RefuseFunction refuse)
    : path_(std::move(path)),
      poll_interval_(poll_interval),
      apply_(std::move(apply)),
      refuse_(std::move(refuse)) {}

ConfigFileWatcher::~ConfigFileWatcher() {
  Stop();
}

Result<SchedulerConfig> ConfigFileWatcher::Load() {
  std::optional<std::string> text = ReadWholeFile(path_);
  if (!text) {
    return InvalidArgument("scheduler config: cannot read " + path_);
  }
  last_text_ = *text;
  auto config = ParseSchedulerConfig(*text);
  if (!config) {
    return InvalidArgument(path_ + ": " + config.status().message());
  }
  return config;
}

ConfigFileWatcher::Check ConfigFileWatcher::CheckOnce() {
  std::optional<std::string> text = ReadWholeFile(path_);
  if (!text) {
    // Mid-swap or removed: keep what is in force, say so once.
    if (last_readable_) {
      last_readable_ = false;
      refuse_(InvalidArgument("scheduler config: cannot read " + path_ +
                              "; keeping the configuration in force"));
      return Check::kRefused;
    }
    return Check::kUnchanged;
  }
  last_readable_ = true;
  if (*text == last_text_) {
    return Check::kUnchanged;
  }
  last_text_ = *text;
  auto config = ParseSchedulerConfig(*text);
  if (!config) {
    refuse_(InvalidArgument(path_ + ": " + config.status().message() +
                            "; keeping the configuration in force"));
    return Check::kRefused;
  }
  apply_(*config);
  return Check::kApplied;
}

void ConfigFileWatcher::Start() {
  thread_ = std::thread([this] { Run(); });
}

void ConfigFileWatcher::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) {
    thread_.join();
  }
}

void ConfigFileWatcher::Run() {
  MutexLock lock(mu_);
  while (!lock.WaitFor(cv_, poll_interval_, [this]() HJ_REQUIRES(mu_) { return stopping_; })) {
    lock.Unlock();
    CheckOnce();
    lock.Lock();
  }
}

}  // namespace hybridjob::scheduler
