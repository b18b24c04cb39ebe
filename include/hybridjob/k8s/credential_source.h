// Where a RestClient's credentials come from: the kubeconfig's static token
// or client certificate, a token file re-read when it rotates, or an exec
// plugin run without a shell and cached until shortly before it expires.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/mutex.h>
#include <hybridjob/common/status.h>
#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/exec_credential.h>

namespace hybridjob::k8s {

// ---- Running a program (no shell) --------------------------------------------

struct ProcessLimits {
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};  // then SIGKILL
  size_t max_stdout = size_t{1} << 20;   // more is an error: no credential is that large
  size_t max_stderr = size_t{16} << 10;  // the rest is dropped, the tail kept
};

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  std::string out;
  std::string err;
};

// A path with a slash as it is, a bare name searched in `path_list` (PATH's
// format); only an executable regular file counts. None when not found.
std::optional<std::string> FindExecutable(const std::string& command, std::string_view path_list);

// Runs `executable` with argv (argv[0] included) and exactly `env` ("K=V"),
// stdin from /dev/null, in its own process group, with the caller's signal
// mask and dispositions reset. Waits until it exits, killing its group at the
// timeout; the child is always reaped. A timeout or oversized stdout is an
// error Status; a non-zero exit is not (the caller words it).
Result<ProcessResult> RunProcess(const std::string& executable,
                                 const std::vector<std::string>& argv,
                                 const std::vector<std::string>& env,
                                 const ProcessLimits& limits = {});

// Runs the exec plugin once, as client-go does: the process environment plus
// exec.env plus KUBERNETES_EXEC_INFO. Every failure (not found, with the
// install hint; non-zero exit, with the tail of stderr; bad output) is a
// kUnauthorized Status whose message says what to fix.
Result<ExecCredential> RunExecPlugin(const ExecConfig& exec, const ClientConfig& cluster,
                                     const ProcessLimits& limits = {});

// ---- The credential source -----------------------------------------------------

struct Credentials {
  std::string token;
  std::string client_cert_pem;
  std::string client_key_pem;
  // Changes whenever new credentials were obtained (a plugin run, a rotated
  // token file): a 401 with the current generation is worth a refresh.
  uint64_t generation = 0;
  // Changes only when the client certificate or key changes: the TLS context
  // must then be rebuilt. 0: the kubeconfig's static certificate, if any.
  uint64_t cert_generation = 0;
};

// Thread-safe; one per RestClient, which owns it. A single lock serialises
// plugin runs, so concurrent requests that need a refresh wait for one run
// rather than each starting the plugin.
class CredentialSource {
 public:
  using Fetch = std::function<Result<ExecCredential>()>;
  using Now = std::function<WallClock::time_point()>;

  // Static token/certificate, token file, or the exec plugin; static
  // credentials win over exec, as in client-go.
  static std::unique_ptr<CredentialSource> ForConfig(const ClientConfig& config,
                                                     const ProcessLimits& limits = {});
  // A plugin-backed source with its fetch and clock given (tests).
  CredentialSource(Fetch fetch, Now now);

  CredentialSource(const CredentialSource&) = delete;
  CredentialSource& operator=(const CredentialSource&) = delete;

  // The credentials to send now; runs the plugin when nothing is cached or
  // the cached credential is about to expire.
  Result<Credentials> Get();

  // The server answered 401 to a request sent with `used`. True when a retry
  // can use newer credentials: the plugin ran again now, or another request
  // already refreshed them. Always false without a plugin.
  bool RefreshAfterUnauthorized(const Credentials& used);

  bool uses_plugin() const { return static_cast<bool>(fetch_); }
  // How many times the plugin ran successfully.
  uint64_t plugin_runs() const;

 private:
  CredentialSource(std::string token, std::string token_file, std::string cert_pem,
                   std::string key_pem);
  Result<Credentials> RunPluginLocked() HJ_REQUIRES(mu_);
  Credentials ReadTokenFileLocked() HJ_REQUIRES(mu_);

  mutable Mutex mu_;
  Credentials current_ HJ_GUARDED_BY(mu_);
  // Plugin mode.
  Fetch fetch_;
  Now now_;
  bool cached_ HJ_GUARDED_BY(mu_) = false;
  std::optional<WallClock::time_point> refresh_at_ HJ_GUARDED_BY(mu_);
  std::optional<WallClock::time_point> expiry_ HJ_GUARDED_BY(mu_);
  uint64_t runs_ HJ_GUARDED_BY(mu_) = 0;
  // Token file mode.
  std::string token_file_;
  std::filesystem::file_time_type token_mtime_ HJ_GUARDED_BY(mu_){};
  std::chrono::steady_clock::time_point last_check_ HJ_GUARDED_BY(mu_){};
  bool token_loaded_ HJ_GUARDED_BY(mu_) = false;
};

}  // namespace hybridjob::k8s
