#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <poll.h>
#include <spawn.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <hybridjob/k8s/credential_source.h>

#include "text.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace hybridjob::k8s {
namespace {

namespace fs = std::filesystem;
using SteadyClock = std::chrono::steady_clock;

constexpr size_t kStderrInMessage = 1024;

bool IsExecutableFile(const std::string& path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
         ::access(path.c_str(), X_OK) == 0;
}

Status Unauthorized(std::string message) {
  return {StatusCode::kUnauthorized, std::move(message)};
}

// Closes what it holds when it goes, so every early return is clean.
class Fd {
 public:
  Fd() = default;
  ~Fd() { Close(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  void Reset(int fd) {
    Close();
    fd_ = fd;
  }
  void Close() {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

 private:
  int fd_ = -1;
};

struct Pipe {
  Fd read;
  Fd write;
};

Status MakePipe(Pipe* pipe) {
  int fds[2];
  // Close-on-exec: only the dup2'd copies reach the child.
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    return Internal(std::string("pipe: ") + std::strerror(errno));
  }
  pipe->read.Reset(fds[0]);
  pipe->write.Reset(fds[1]);
  return Status::Ok();
}

// RAII for the posix_spawn attribute objects.
struct SpawnSetup {
  posix_spawn_file_actions_t actions{};
  posix_spawnattr_t attr{};
  SpawnSetup() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnSetup() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnSetup(const SpawnSetup&) = delete;
  SpawnSetup& operator=(const SpawnSetup&) = delete;
};

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) {
    out.push_back(const_cast<char*>(s.c_str()));  // NOLINT(cppcoreguidelines-pro-type-const-cast)
  }
  out.push_back(nullptr);
  return out;
}

// Waits for the child; kills its process group at `deadline`. Returns the
// wait status, or -1 when the child cannot be waited for.
int ReapBy(pid_t pid, SteadyClock::time_point deadline, bool* timed_out) {
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      return status;
    }
    if (done < 0 && errno != EINTR) {
      return -1;
    }
    if (SteadyClock::now() >= deadline) {
      *timed_out = true;
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return status;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The process's environment with `extra` set (replacing earlier values).
std::vector<std::string> Environment(
    const std::vector<std::pair<std::string, std::string>>& extra) {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    env.emplace_back(*entry);
  }
  for (const auto& [name, value] : extra) {
    const std::string prefix = name + "=";
    std::erase_if(env, [&](const std::string& e) { return e.starts_with(prefix); });
    env.push_back(prefix + value);
  }
  return env;
}

std::string NotFoundMessage(const ExecConfig& exec) {
  std::string message = "exec plugin: executable " + exec.command + " not found";
  if (!exec.install_hint.empty()) {
    message += "\n\n" + exec.install_hint;
  } else {
    message += " (install it, or fix users[].user.exec.command in the kubeconfig)";
  }
  return message;
}

}  // namespace

std::optional<std::string> FindExecutable(const std::string& command, std::string_view path_list) {
  if (command.empty()) {
    return std::nullopt;
  }
  if (command.find('/') != std::string::npos) {
    return IsExecutableFile(command) ? std::optional<std::string>(command) : std::nullopt;
  }
  size_t start = 0;
  while (start <= path_list.size()) {
    size_t end = path_list.find(':', start);
    if (end == std::string_view::npos) {
      end = path_list.size();
    }
    std::string dir(path_list.substr(start, end - start));
    if (dir.empty()) {
      dir = ".";  // POSIX: an empty PATH entry is the current directory
    }
    const std::string candidate = dir + "/" + command;
    if (IsExecutableFile(candidate)) {
      return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

Result<ProcessResult> RunProcess(const std::string& executable,
                                 const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env, const ProcessLimits& limits) {
  Pipe out;
  Pipe err;
  if (Status s = MakePipe(&out); !s.ok()) {
    return s;
  }
  if (Status s = MakePipe(&err); !s.ok()) {
    return s;
  }
  SpawnSetup setup;
  posix_spawn_file_actions_addopen(&setup.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&setup.actions, out.write.get(), STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&setup.actions, err.write.get(), STDERR_FILENO);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
  // Sockets and files of ours that lack close-on-exec stay ours.
  posix_spawn_file_actions_addclosefrom_np(&setup.actions, STDERR_FILENO + 1);
#endif
  // The binaries block SIGTERM/SIGINT for sigwait; the plugin must not inherit
  // that, or a stuck plugin could only be killed with SIGKILL.
  sigset_t empty;
  sigemptyset(&empty);
  sigset_t defaults;
  sigemptyset(&defaults);
  for (const int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setsigmask(&setup.attr, &empty);
  posix_spawnattr_setsigdefault(&setup.attr, &defaults);
  posix_spawnattr_setpgroup(&setup.attr, 0);  // its own group: a timeout kills its children too
  posix_spawnattr_setflags(
      &setup.attr,
      static_cast<short>(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP));
  std::vector<char*> c_argv = CStrings(argv);
  std::vector<char*> c_env = CStrings(env);
  pid_t pid = -1;
  const int spawn_error = ::posix_spawn(&pid, executable.c_str(), &setup.actions, &setup.attr,
                                        c_argv.data(), c_env.data());
  out.write.Close();
  err.write.Close();
  if (spawn_error != 0) {
    Status failure(spawn_error == ENOENT ? StatusCode::kNotFound : StatusCode::kInternal,
                   "cannot run " + executable + ": " + std::strerror(spawn_error));
    return failure;
  }

  const auto deadline = SteadyClock::now() + limits.timeout;
  ProcessResult result;
  bool timed_out = false;
  bool too_much = false;
  std::array<pollfd, 2> fds = {pollfd{out.read.get(), POLLIN, 0},
                               pollfd{err.read.get(), POLLIN, 0}};
  std::array<char, 4096> buffer{};
  while ((fds[0].fd >= 0 || fds[1].fd >= 0) && !too_much) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    const int ready = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno != EINTR) {
      break;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].fd < 0 || (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) {
        continue;
      }
      const ssize_t n = ::read(fds[i].fd, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) {
        continue;
      }
      if (n <= 0) {
        fds[i].fd = -1;  // poll ignores negative descriptors
        continue;
      }
      std::string& sink = i == 0 ? result.out : result.err;
      sink.append(buffer.data(), static_cast<size_t>(n));
      if (i == 0 && sink.size() > limits.max_stdout) {
        too_much = true;
      } else if (i == 1 && sink.size() > limits.max_stderr) {
        sink.erase(0, sink.size() - limits.max_stderr);  // the end says what went wrong
      }
    }
  }
  if (timed_out || too_much) {
    ::kill(-pid, SIGKILL);
  }
  const int status = ReapBy(pid, timed_out || too_much ? SteadyClock::now() : deadline, &timed_out);
  if (too_much) {
    return Status(StatusCode::kInvalidArgument, executable + " wrote more than " +
                                                    std::to_string(limits.max_stdout) +
                                                    " bytes to stdout; it was killed");
  }
  if (timed_out) {
    return Status(StatusCode::kTimeout, executable + " did not finish within " +
                                            std::to_string(limits.timeout.count()) +
                                            " ms; it was killed");
  }
  if (status == -1) {
    return Internal("lost track of " + executable + " (waitpid failed)");
  }
  if (WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  return result;
}

Result<ExecCredential> RunExecPlugin(const ExecConfig& exec, const ClientConfig& cluster,
                                     const ProcessLimits& limits) {
  const char* path_env = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe)
  const auto executable =
      FindExecutable(exec.command, path_env != nullptr ? path_env : "/usr/local/bin:/usr/bin:/bin");
  if (!executable) {
    return Unauthorized(NotFoundMessage(exec));
  }
  std::vector<std::string> argv = {exec.command};
  argv.insert(argv.end(), exec.args.begin(), exec.args.end());
  auto extra = exec.env;
  extra.emplace_back("KUBERNETES_EXEC_INFO", EncodeExecCredentialRequest(exec, cluster));
  auto run = RunProcess(*executable, argv, Environment(extra), limits);
  if (!run) {
    if (run.status().code() == StatusCode::kNotFound) {
      return Unauthorized(NotFoundMessage(exec));
    }
    return Unauthorized("exec plugin: " + run.status().message());
  }
  if (run->exit_code != 0) {
    std::string message = "exec plugin: executable " + exec.command;
    message += run->signal != 0 ? " was killed by signal " + std::to_string(run->signal)
                                : " failed with exit code " + std::to_string(run->exit_code);
    std::string err(TrimSpace(run->err));
    if (err.size() > kStderrInMessage) {
      err = "..." + err.substr(err.size() - kStderrInMessage);
    }
    if (!err.empty()) {
      message += ": " + err;
    }
    return Unauthorized(std::move(message));
  }
  auto credential = DecodeExecCredential(run->out, exec.api_version);
  if (!credential) {
    return Unauthorized("exec plugin " + exec.command + ": " + credential.status().message());
  }
  return credential;
}

std::unique_ptr<CredentialSource> CredentialSource::ForConfig(const ClientConfig& config,
                                                              const ProcessLimits& limits) {
  const bool has_static = !config.bearer_token.empty() || !config.token_file.empty() ||
                          !config.client_cert_pem.empty() || !config.username.empty();
  if (config.exec && !has_static) {
    Fetch fetch = [exec = *config.exec, cluster = config, limits] {
      return RunExecPlugin(exec, cluster, limits);
    };
    return std::make_unique<CredentialSource>(std::move(fetch), [] { return WallClock::now(); });
  }
  return std::unique_ptr<CredentialSource>(new CredentialSource(
      config.bearer_token, config.token_file, config.client_cert_pem, config.client_key_pem));
}

CredentialSource::CredentialSource(Fetch fetch, Now now)
    : fetch_(std::move(fetch)), now_(std::move(now)) {}

CredentialSource::CredentialSource(std::string token, std::string token_file, std::string cert_pem,
                                   std::string key_pem)
    : token_file_(std::move(token_file)) {
  current_.token = std::move(token);
  current_.client_cert_pem = std::move(cert_pem);
  current_.client_key_pem = std::move(key_pem);
}

uint64_t CredentialSource::plugin_runs() const {
  MutexLock lock(mu_);
  return runs_;
}

Result<Credentials> CredentialSource::Get() {
  MutexLock lock(mu_);
  if (!fetch_) {
    return token_file_.empty() ? current_ : ReadTokenFileLocked();
  }
  const auto now = now_();
  if (cached_ && (!refresh_at_ || now < *refresh_at_)) {
    return current_;
  }
  auto fresh = RunPluginLocked();
  if (!fresh && cached_ && expiry_ && now < *expiry_) {
    // An early refresh failed but the credential we have is still good.
    spdlog::warn("refreshing credentials failed, using the current ones until they expire: {}",
                 fresh.status().message());
    return current_;
  }
  return fresh;
}

bool CredentialSource::RefreshAfterUnauthorized(const Credentials& used) {
  if (!fetch_) {
    return false;
  }
  MutexLock lock(mu_);
  if (cached_ && current_.generation != used.generation) {
    return true;  // another request already got newer credentials
  }
  cached_ = false;  // refused by the server: never send it again
  auto fresh = RunPluginLocked();
  if (!fresh) {
    spdlog::warn("the API server refused the credentials and refreshing them failed: {}",
                 fresh.status().message());
    return false;
  }
  return true;
}

Result<Credentials> CredentialSource::RunPluginLocked() {
  const auto obtained = now_();
  auto credential = fetch_();
  if (!credential) {
    return credential.status();
  }
  const bool cert_changed = credential->client_cert_pem != current_.client_cert_pem ||
                            credential->client_key_pem != current_.client_key_pem;
  current_.token = std::move(credential->token);
  current_.client_cert_pem = std::move(credential->client_cert_pem);
  current_.client_key_pem = std::move(credential->client_key_pem);
  ++current_.generation;
  if (cert_changed) {
    ++current_.cert_generation;
  }
  cached_ = true;
  refresh_at_ = RefreshTime(*credential, obtained);
  expiry_ = credential->expiry;
  ++runs_;
  return current_;
}

Credentials CredentialSource::ReadTokenFileLocked() {
  // Checked at most once a second: stat on every request would be waste.
  const auto now = SteadyClock::now();
  if (token_loaded_ && now - last_check_ < std::chrono::seconds(1)) {
    return current_;
  }
  last_check_ = now;
  std::error_code ec;
  const auto mtime = fs::last_write_time(token_file_, ec);
  if (ec) {
    return current_;  // keep the last good token while the file is being replaced
  }
  if (!token_loaded_ || mtime != token_mtime_) {
    std::ifstream in(token_file_);
    std::ostringstream text;
    text << in.rdbuf();
    std::string fresh(TrimSpace(text.str()));
    if (!fresh.empty()) {
      if (fresh != current_.token) {
        ++current_.generation;
      }
      current_.token = std::move(fresh);
      token_mtime_ = mtime;
      token_loaded_ = true;
    }
  }
  return current_;
}

}  // namespace hybridjob::k8s
