#include <algorithm>
#include <cctype>

#include <hybridjob/api/names.h>
#include <hybridjob/api/time.h>
#include <hybridjob/common/duration.h>
#include <hybridjob/sim/synthetic_log.h>

namespace hybridjob::sim {
namespace {

// The $0 the controller gives the /bin/sh wrapper that sources a role's
// env file before it execs the member's command (children.cpp).
constexpr std::string_view kEnvWrapperName = "hybridjob-env";
constexpr size_t kLogLabelWidth = 15;

// `word` as a POSIX shell would take it back: bare when nothing in it is
// special, else single-quoted.
std::string ShellWordOf(std::string_view word) {
  constexpr std::string_view kPlain = "@%+=:,./_-";
  const bool bare = !word.empty() && std::all_of(word.begin(), word.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           kPlain.find(c) != std::string_view::npos;
  });
  if (bare) {
    return std::string(word);
  }
  std::string out = "'";
  for (char c : word) {
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  }
  return out + "'";
}

std::string CommandLineOf(std::vector<std::string>::const_iterator begin,
                          std::vector<std::string>::const_iterator end) {
  std::string out;
  for (auto word = begin; word != end; ++word) {
    out += (out.empty() ? "" : " ") + ShellWordOf(*word);
  }
  return out;
}

void AppendField(std::string& out, std::string_view label, std::string_view value) {
  std::string padded = label.empty() ? std::string() : std::string(label) + ":";
  padded.resize(std::max(padded.size() + 1, kLogLabelWidth), ' ');
  out += padded;
  out += value;
  out += '\n';
}

std::string EnvValueOf(const SimContainer& container, std::string_view name) {
  for (const auto& [key, value] : container.job_env) {
    if (key == name) {
      return value;
    }
  }
  return {};
}

void AppendGiven(std::string& out, const SimPod& pod, const SimContainer& container, bool init) {
  AppendField(out, "pod", pod.namespace_name + "/" + pod.name + " on node " + pod.node_name);
  AppendField(out, init ? "init container" : "container", container.name);
  AppendField(out, "image", container.image);
  const std::vector<std::string>& command = container.command;
  const bool wrapped = command.size() >= 4 && command[0] == "/bin/sh" && command[1] == "-c" &&
                       command[3] == kEnvWrapperName;
  if (wrapped) {
    const std::string role = EnvValueOf(container, "HYBRIDJOB_ROLE");
    AppendField(out, "command", CommandLineOf(command.begin() + 4, command.end()));
    AppendField(out, "",
                "(run by /bin/sh after it sources " + std::string(api::kClusterMountPath) + "/" +
                    (role.empty() ? "<role>" : role) + ".env, the job's cluster variables)");
  } else if (command.empty()) {
    AppendField(out, "command", "(the image's entrypoint)");
  } else {
    AppendField(out, "command", CommandLineOf(command.begin(), command.end()));
  }
  if (!container.args.empty()) {
    AppendField(out, "args", CommandLineOf(container.args.begin(), container.args.end()));
  }
  bool first = true;
  for (const auto& [name, value] : container.job_env) {
    AppendField(out, first ? "env" : "", name + "=" + value);
    first = false;
  }
  if (!pod.cluster_config_map.empty()) {
    AppendField(
        out, "cluster spec",
        "ConfigMap \"" + pod.cluster_config_map + "\", " +
            (container.cluster_spec_path.empty() ? std::string("not mounted in this container")
                                                 : "mounted at " + container.cluster_spec_path));
  }
}

std::string TimeOf(const std::optional<WallClock::time_point>& time) {
  return time ? api::FormatTime(*time) : std::string("an unrecorded time");
}

// The lifecycle of a container that has not ended, as DecideKubeletStep plays
// it: the first container ends as the annotations say, the others with it.
void AppendRunning(std::string& out, const SimPod& pod, size_t index) {
  out += "  started at " + TimeOf(pod.start_time) + "\n";
  if (pod.deleting) {
    out += "  the pod is being deleted: the container stops at once\n";
    return;
  }
  if (!pod.annotation_error.empty()) {
    out += "  fails at once with exit code " + std::string(index == 0 ? "2" : "0") +
           ", since an annotation is invalid: " + pod.annotation_error + "\n";
    return;
  }
  if (!pod.run_for) {
    out += "  runs until the pod is deleted (no " + std::string(kDurationAnnotation) +
           " annotation)\n";
    return;
  }
  std::string until;
  if (pod.start_time) {
    until = ", until " + api::FormatTime(*pod.start_time + *pod.run_for);
  }
  out += "  runs for " + FormatDuration(*pod.run_for) + " (annotation " +
         std::string(kDurationAnnotation) + ")" + until + "\n";
  if (index == 0) {
    out += "  then exits with code " + std::to_string(pod.exit_code) + " (annotation " +
           std::string(kExitCodeAnnotation) + ", 0 when unset)\n";
  } else {
    out += "  then exits with code 0, with the first container (whose " +
           std::string(kExitCodeAnnotation) + " decides the pod's phase)\n";
  }
}

void AppendLifecycle(std::string& out, const SimPod& pod, const SimContainer& container,
                     size_t index, bool init) {
  out += "lifecycle (simulated):\n";
  if (container.terminated) {
    if (pod.start_time && !init) {
      out += "  started at " + api::FormatTime(*pod.start_time) + "\n";
    }
    out += "  exited with code " + std::to_string(container.terminated->exit_code) + " at " +
           TimeOf(container.terminated->finished_at) +
           (init ? ", before the pod's containers started\n" : "\n");
    return;
  }
  if (pod.phase == "Succeeded" || pod.phase == "Failed") {
    out += "  never ran: the pod is " + pod.phase +
           " and no end of this container was reported (kubectl describe pod " + pod.name +
           " says why)\n";
    return;
  }
  if (init) {
    out += "  ran to completion with exit code 0 when the pod started\n";
    return;
  }
  AppendRunning(out, pod, index);
}

}  // namespace

Result<std::string> SyntheticContainerLog(const SimPod& pod, std::string_view container,
                                          bool previous) {
  const auto named = [&](const SimContainer& c) { return c.name == container; };
  auto found = std::find_if(pod.containers.begin(), pod.containers.end(), named);
  bool init = false;
  if (found == pod.containers.end()) {
    found = std::find_if(pod.init_containers.begin(), pod.init_containers.end(), named);
    if (found == pod.init_containers.end()) {
      return NotFound("container \"" + std::string(container) + "\" not found in pod \"" +
                      pod.name + "\"");
    }
    init = true;
  }
  const std::string quoted = "container \"" + found->name + "\" in pod \"" + pod.name + "\"";
  if (previous) {
    return Status(StatusCode::kBadRequest, "previous terminated " + quoted +
                                               " not found: a simulated container runs once "
                                               "and is never restarted");
  }
  if (pod.phase.empty() || pod.phase == "Pending") {
    return Status(StatusCode::kBadRequest, quoted + " is waiting to start: ContainerCreating");
  }
  std::string out =
      "hybridjob-sim simulates this member: no process runs, so there is no output to show.\n"
      "Below is what the container was given. `hybridjob-sim --exec` runs the commands for "
      "real.\n\n";
  AppendGiven(out, pod, *found, init);
  out += "\n";
  const auto& list = init ? pod.init_containers : pod.containers;
  AppendLifecycle(out, pod, *found, static_cast<size_t>(found - list.begin()), init);
  return out;
}

}  // namespace hybridjob::sim
