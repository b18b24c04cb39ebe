// A small command-line parser with kubectl-style flags: --name=value or
// --name value, booleans as --flag / --flag=false, -h/--help. Unknown flags
// and bad values are errors that name the flag.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <hybridjob/common/status.h>

namespace hybridjob {

class FlagSet {
 public:
  explicit FlagSet(std::string program, std::string summary = "");

  // Registration: the target keeps its default unless the flag is given.
  void String(const std::string& name, std::string* target, std::string help);
  void Int(const std::string& name, int64_t* target, std::string help);
  void Double(const std::string& name, double* target, std::string help);
  void Bool(const std::string& name, bool* target, std::string help);
  void Duration(const std::string& name, std::chrono::milliseconds* target, std::string help);
  // What the usage line shows between the program and [flags], e.g.
  // "COMMAND [JOB]", for a program that takes positional arguments.
  void Arguments(std::string synopsis) { synopsis_ = std::move(synopsis); }
  // A one-letter form of a registered flag, as kubectl's -n and -o: "-n ns",
  // "-n=ns" and "-nns".
  void Shorthand(char letter, const std::string& name);
  // What --help gives as a registered flag's default, for a default that is
  // not its target's starting value: "$KUBECONFIG, else in-cluster", or the
  // configuration file's setting the flag overrides.
  void DescribeDefault(const std::string& name, std::string text);

  // Parses argv[first..]; positional arguments are collected.
  Status Parse(int argc, const char* const* argv, int first = 1);

  bool help_requested() const { return help_requested_; }
  const std::string& program() const { return program_; }
  // Positional arguments before a "--", and those after it (a command to run).
  const std::vector<std::string>& positional() const { return positional_; }
  const std::vector<std::string>& after_dash_dash() const { return after_dash_dash_; }
  bool WasSet(const std::string& name) const;
  std::string Usage() const;

 private:
  enum class Kind { kString, kInt, kDouble, kBool, kDuration };
  struct Flag {
    Kind kind;
    void* target;
    std::string help;
    std::string default_text;
    bool set = false;
  };
  Status Assign(const std::string& name, Flag& flag, const std::string& value);

  std::string program_;
  std::string summary_;
  std::map<std::string, Flag> flags_;
  std::map<char, std::string> shorthands_;
  std::string synopsis_;
  std::vector<std::string> positional_;
  std::vector<std::string> after_dash_dash_;
  bool help_requested_ = false;
};

// The start every binary shares: --log-level/--log-format, parsing, --help,
// no stray arguments, logging configured. Returns an exit code when the
// program should stop now (help printed, or an error reported on stderr).
struct LoggingFlags {
  std::string level = "info";
  std::string format = "text";
};
void AddLoggingFlags(FlagSet& flags, LoggingFlags* logging);
// Positional arguments are refused unless `positional_allowed`.
std::optional<int> ParseCommandLine(FlagSet& flags, int argc, const char* const* argv,
                                    const LoggingFlags& logging, bool positional_allowed = false);

// --metrics-addr and --health-addr, as every binary declares them: the
// host:port of the /metrics listener and of the /healthz and /readyz one; "0"
// turns that listener off. The defaults are *serving's values. Then how what
// needs authorisation (/metrics, the dashboard) is served: HTTPS with the
// certificate of --tls-cert-file/--tls-private-key-file (self-signed when
// neither is given), or plain HTTP for anyone with --insecure-serving.
struct ServingFlags {
  std::string metrics_addr;
  std::string health_addr;
  bool insecure_serving = false;
  std::string tls_cert_file;
  std::string tls_private_key_file;
};
void AddServingFlags(FlagSet& flags, ServingFlags* serving);
// The same flags for a binary whose configuration file (given by
// `config_flag`) sets them too, as metricsAddr and healthAddr: a flag that is
// given overrides the file; one that is not leaves the file's value, which
// defaults to *serving's.
void AddServingOverrideFlags(FlagSet& flags, ServingFlags* serving, const std::string& config_flag);

// Prints "program: message" to stderr and returns 1, for main()'s early exits.
int FailStartup(const std::string& program, const std::string& message);

}  // namespace hybridjob
