// The commands of `kubectl hybridjob`: each reads what it needs through the
// project's client library and returns the text to print. Errors say which
// object could not be read and why, in the API server's words.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include <hybridjob/cli/output.h>
#include <hybridjob/common/status.h>
#include <hybridjob/k8s/api_client.h>
#include <hybridjob/scheduler/shell/config.h>

namespace hybridjob::cli {

// Where the gang-scheduler's configuration lives, as deploy/ and the chart
// install it: a ConfigMap's config.yaml.
inline constexpr std::string_view kDefaultSchedulerConfig =
    "hybridjob-system/gang-scheduler-config";

struct CommandOptions {
  std::string namespace_name = "default";  // -n, else the context's namespace
  OutputFormat format = OutputFormat::kTable;
  std::string scheduler_config = std::string(kDefaultSchedulerConfig);  // NAMESPACE/NAME
  // logs
  std::string role;
  int64_t index = -1;
  int64_t tail = -1;  // lines from the end; -1: all
  std::string container;
  int64_t run = -1;     // the members of this run; -1: the run the status describes
  bool follow = false;  // stream each log until it ends
  // With follow: at most this many logs at once, as kubectl's --max-log-requests.
  int64_t max_log_requests = 5;
  // With follow: how long a member on a node whose container has not started
  // yet (creating, initializing) is waited for, as kubectl's
  // --pod-running-timeout.
  std::chrono::milliseconds pod_running_timeout{20000};
};

// Whether the API server refused a log because the container has not
// started yet: a pod without a node, or a container still waiting to start
// (ContainerCreating, PodInitializing, an image being pulled). Following
// such a log waits for it.
bool LogNotStartedYet(const Status& refusal);

// The scheduler's configuration from its ConfigMap. When the ConfigMap is
// absent or may not be read, the defaults (one `default` queue, nvidia.com/gpu)
// with `*note` saying so; a configuration that does not parse is an error.
Result<scheduler::SchedulerConfig> ReadSchedulerConfig(k8s::ApiClient& client,
                                                       const std::string& reference,
                                                       std::string* note);

Result<std::string> RunStatus(k8s::ApiClient& client, const std::string& job,
                              const CommandOptions& options);
Result<std::string> RunQueues(k8s::ApiClient& client, const CommandOptions& options,
                              std::string* note);
Result<std::string> RunNodes(k8s::ApiClient& client, const CommandOptions& options,
                             std::string* note);
// A member whose log could not be read, and the API server's answer.
struct MemberLogFailure {
  std::string pod;
  Status error;
};

// How `logs` ends once `asked` members were read, as kubectl's commands end:
// OK when at least one log was shown (the members without one were noted);
// an error when none could be, naming the member's reason when only one
// was asked.
Status LogsOutcome(const std::string& job, size_t asked,
                   const std::vector<MemberLogFailure>& failures);

// The members' logs, each line prefixed "[pod/<name>] " when more than one
// member is shown, written to `out` member by member (with `follow`, line by
// line as they arrive, until every log has ended); a member without a log is
// noted on `err` with the API server's reason. `run` picks an earlier run's
// members, kept after a re-run (spec.runHistoryLimit). See LogsOutcome.
Status RunLogs(k8s::ApiClient& client, const std::string& job, const CommandOptions& options,
               std::ostream& out, std::ostream& err);

}  // namespace hybridjob::cli
