// What hybridjob-sim's exec mode needs to run a pod's containers as local
// processes, and the pure decisions it makes about them: the container's
// environment (with the downward API and $(VAR) expansion), the files of a
// ConfigMap or Secret volume, where each volume is bound in a container, the
// hosts file that stands in for cluster DNS, restarts, and the pod status a
// kubelet would write. The process shell is exec_runtime.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>

namespace hybridjob::sim {

using ExecClock = std::chrono::system_clock;

struct ExecVolume {
  enum class Kind {
    kEmptyDir,
    kClaim,      // persistentVolumeClaim, or a generic ephemeral volume's <pod>-<volume> claim
    kConfigMap,  // also a projected volume's configMap sources
    kSecret,
    kHostPath,
    kUnsupported,  // mounted as an empty directory; `source` says what it was
  };
  struct Item {
    std::string key;
    std::string path;
    std::optional<int> mode;  // else the projection's default mode
  };
  // One ConfigMap or Secret whose keys a volume shows as files.
  struct Projection {
    Kind kind = Kind::kConfigMap;  // kConfigMap or kSecret
    std::string name;
    std::vector<Item> items;  // empty: every key, as a file of its name
    bool optional = false;
    int default_mode = 0644;  // defaultMode, as the API server defaults it
  };
  std::string name;
  Kind kind = Kind::kEmptyDir;
  std::string source;                   // claim name, host path, or the unsupported kind's field
  std::vector<Projection> projections;  // kConfigMap / kSecret
};

struct ExecMount {
  std::string volume;
  std::string path;      // mountPath
  std::string sub_path;  // subPath, relative to the volume
  bool read_only = false;
};

// A container's PATH when neither its spec nor its image says otherwise.
inline constexpr const char* kExecDefaultPath =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// hybridjob-sim --exec-image-paths: "IMAGE=PATH[,IMAGE=PATH...]", the PATH a
// container of each image runs with, standing in for the programs the image
// would hold (a curl-only fetcher image, say). Other images get
// kExecDefaultPath.
Result<std::map<std::string, std::string>> ParseExecImagePaths(std::string_view text);

// What a kubelet puts in terminationMessage for FallbackToLogsOnError: the
// last 80 lines of the container's log, at most their last 2,048 bytes.
std::string FallbackTerminationMessage(std::string_view log);

struct ExecContainer {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::string working_dir;
  // terminationMessagePolicy: "File" (the default) or "FallbackToLogsOnError".
  std::string termination_message_policy = "File";
  nlohmann::json env = nlohmann::json::array();       // as in the pod spec
  nlohmann::json env_from = nlohmann::json::array();  // as in the pod spec
  std::vector<ExecMount> mounts;
};

enum class ExecRestartPolicy { kAlways, kOnFailure, kNever };

struct ExecPod {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string node_name;
  std::string hostname;   // spec.hostname, else the pod's name
  std::string subdomain;  // spec.subdomain
  std::string service_account;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<ExecContainer> init_containers;
  std::vector<ExecContainer> containers;
  std::vector<ExecVolume> volumes;
  ExecRestartPolicy restart_policy = ExecRestartPolicy::kAlways;
  std::chrono::seconds termination_grace{30};
  // spec.activeDeadlineSeconds: the kubelet fails the pod once it has been
  // active this long.
  std::optional<std::chrono::seconds> active_deadline;
};

// A pod as the API server returns it. Errors name the field.
Result<ExecPod> DecodeExecPod(const nlohmann::json& pod);

// The ConfigMaps and Secrets a pod names (env, envFrom, volumes), by name.
// Secret values are decoded. An object missing from the map does not exist.
using ObjectData = std::map<std::string, std::string>;
struct PodObjects {
  std::map<std::string, ObjectData> config_maps;
  std::map<std::string, ObjectData> secrets;
};
struct ObjectNames {
  std::vector<std::string> config_maps;
  std::vector<std::string> secrets;
};
ObjectNames ReferencedObjects(const ExecPod& pod);

// The fields the downward API can show, once the pod has its address.
struct PodFields {
  std::string pod_ip;
  std::string host_ip;
  // PATH when the container sets none: what its image holds (ExecImagePaths).
  std::string default_path = kExecDefaultPath;
};

// The container's environment, in the order a kubelet builds it: envFrom,
// then env (each value's $(NAME) expanded against what came before), then
// HOSTNAME and PATH unless set. Errors are the kubelet's
// CreateContainerConfigError messages.
Result<std::vector<std::pair<std::string, std::string>>> ContainerEnvironment(
    const ExecPod& pod, const ExecContainer& container, const PodFields& fields,
    const PodObjects& objects);

// Kubernetes' $(NAME) expansion of command, args and env values: a defined
// NAME is replaced, an undefined reference is kept as written, $$ is a
// literal $.
std::string ExpandReferences(const std::string& text,
                             const std::map<std::string, std::string>& defined);

// The command line to execute: command (or /bin/sh when only args are given,
// as an image's entrypoint would be unknown) then args, expanded.
Result<std::vector<std::string>> ContainerArgv(const ExecContainer& container,
                                               const std::map<std::string, std::string>& env);

// A file of a ConfigMap or Secret volume.
struct VolumeFile {
  std::string content;
  int mode = 0644;
  friend bool operator==(const VolumeFile&, const VolumeFile&) = default;
};
// The files of a ConfigMap or Secret volume by relative path. A missing
// object or key is an error unless the projection is optional.
Result<std::map<std::string, VolumeFile>> VolumeFiles(const ExecVolume& volume,
                                                      const PodObjects& objects);

// A directory or file of the host bound at a path in a container.
struct ExecBind {
  std::filesystem::path source;
  std::string target;  // absolute, inside the container
  bool read_only = false;
};
// The binds of a container's volumeMounts given where each volume lives on
// the host. Mount and sub paths may not climb out with "..".
Result<std::vector<ExecBind>> ContainerBinds(
    const ExecContainer& container, const std::map<std::string, std::filesystem::path>& volumes);

// Cluster DNS for exec-mode pods: every running pod's names and address.
struct HostsEntry {
  std::string ip;
  std::string namespace_name;
  std::string hostname;
  std::string subdomain;
};
// The hosts file a member sees: localhost, its own names first (so its
// hostname is its own address), every other pod's
// <hostname>.<subdomain>.<ns>.svc[.<domain>], and each headless service
// <subdomain>.<ns>.svc[.<domain>] as its members' addresses.
std::string HostsFile(const HostsEntry& self, const std::vector<HostsEntry>& others,
                      const std::string& cluster_domain);

// Whether a container that exited with this code runs again.
bool RestartsAfterExit(ExecRestartPolicy policy, int exit_code);
// The kubelet's crash-loop back-off: 10 s doubling to 5 minutes.
std::chrono::seconds RestartBackoff(int restarts);

// What the runtime reports of one container.
struct ExecContainerStatus {
  enum class State { kWaiting, kRunning, kTerminated };
  std::string name;
  std::string image;
  State state = State::kWaiting;
  std::string reason;  // waiting: ContainerCreating, PodInitializing, CrashLoopBackOff, ...;
                       // terminated: Completed, Error, StartError, ...
  std::string message;
  int exit_code = 0;
  int signal = 0;
  ExecClock::time_point started_at{};
  ExecClock::time_point finished_at{};
  int restart_count = 0;
  struct Terminated {
    int exit_code = 0;
    std::string reason;
    ExecClock::time_point started_at{};
    ExecClock::time_point finished_at{};
    std::string message;
  };
  std::optional<Terminated> last_terminated;
};

struct ExecPodStatus {
  std::string namespace_name;
  std::string name;
  uint64_t version = 0;  // grows with every change
  std::string phase = "Pending";
  std::string reason;
  std::string message;
  std::string pod_ip;
  std::string host_ip;
  ExecClock::time_point start_time{};
  bool initialized = false;
  std::vector<ExecContainerStatus> init_containers;
  std::vector<ExecContainerStatus> containers;
  bool stopped = false;  // every process has exited after Stop
};

// The phase of a pod whose init containers are done, from its containers,
// as the kubelet derives it.
std::string PodPhaseFromContainers(const std::vector<ExecContainerStatus>& containers,
                                   ExecRestartPolicy policy);

// The strategic merge patch of the pod's status.
nlohmann::json ExecStatusPatch(const ExecPodStatus& status, ExecClock::time_point now);

}  // namespace hybridjob::sim
