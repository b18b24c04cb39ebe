// What the simulated kubelet does with a pod bound to one of its nodes — a
// pure function of the pod and the time, so it is unit-tested and the shell
// only writes what it says.
//
// Pods ask for their fate with annotations:
//   sim.hybridjob.io/duration:  how long the containers run ("30s"); absent = forever
//   sim.hybridjob.io/exit-code: the main container's exit code at the end (default 0)
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/objects/resources.h>
#include <hybridjob/sim/exec_pod.h>

namespace hybridjob::sim {

inline constexpr const char* kDurationAnnotation = "sim.hybridjob.io/duration";
inline constexpr const char* kExitCodeAnnotation = "sim.hybridjob.io/exit-code";

using WallClock = std::chrono::system_clock;

// A volume of a pod that names another object, which must be there (and a
// claim Bound) before the kubelet can mount it and start the containers.
struct SimMount {
  enum class Kind { kClaim, kConfigMap, kSecret };
  Kind kind = Kind::kClaim;
  std::string volume;  // the pod's volume name
  std::string object;  // the claim, ConfigMap or Secret name
};

// What the kubelet found of the object a mount names.
enum class MountState { kReady, kMissing, kUnbound };

// The kubelet's words for a mount it cannot set up (a FailedMount Event).
std::string MountFailureMessage(const SimMount& mount, MountState state);

// How a container ended, as the pod's status last reported it.
struct SimTermination {
  int exit_code = 0;
  std::optional<WallClock::time_point> finished_at;
};

// Values kept for the synthetic log longer than this are cut (a TF_CONFIG
// grows with the job), so each pod's share of memory stays small.
inline constexpr size_t kSyntheticLogValueLimit = 400;

// A container of a pod. Besides its name and image, default mode keeps what
// the container was given, for the synthetic log `kubectl logs` shows
// (synthetic_log.h); exec mode serves real logs and keeps none of it.
struct SimContainer {
  std::string name;
  std::string image;
  std::vector<std::string> command;
  std::vector<std::string> args;
  // The variables through which a member learns its place in the job
  // (HYBRIDJOB_*, TF_CONFIG, MASTER_ADDR, DMLC_*, ...), those with a plain value.
  std::vector<std::pair<std::string, std::string>> job_env;
  // Where the pod's cluster-spec volume is mounted in this container; "" if not.
  std::string cluster_spec_path;
  std::optional<SimTermination> terminated;
};

// The few fields of a pod the kubelet acts on.
struct SimPod {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string node_name;
  std::string phase;  // "" until the kubelet reports one
  std::optional<WallClock::time_point> start_time;
  bool deleting = false;
  std::optional<WallClock::time_point> deletion_time;  // metadata.deletionTimestamp
  std::optional<std::chrono::milliseconds> run_for;    // from the duration annotation
  int exit_code = 0;
  std::string annotation_error;  // a bad annotation fails the pod, with this message
  std::vector<SimContainer> containers;
  std::vector<SimContainer> init_containers;
  // The ConfigMap of the pod's cluster-spec volume (the controller's
  // <job>-cluster); "" if it has none. Default mode only.
  std::string cluster_config_map;
  // Claims, and ConfigMaps and Secrets not marked optional, that the volumes
  // name (generic ephemeral volumes as their <pod>-<volume> claims).
  std::vector<SimMount> mounts;
  // What the pod asks of its node, as kube-scheduler and the kubelet count it
  // (only the pods count when the spec cannot be read).
  scheduler::ResourceList requests;
  // Exec mode: what it takes to run the containers, or why the pod cannot be read.
  std::shared_ptr<const ExecPod> exec;
  std::string exec_error;
};

// with_exec: also decode what exec mode needs to run the pod; without it,
// what the synthetic log tells of each container.
Result<SimPod> DecodeSimPod(const nlohmann::json& pod, bool with_exec = false);

enum class KubeletStep {
  kNothing,  // nothing to do now; maybe later (see wake_at)
  kStart,    // report Running
  kFinish,   // report Succeeded or Failed
  kRemove,   // graceful deletion done: delete the pod for good
};

struct KubeletDecision {
  KubeletStep step = KubeletStep::kNothing;
  // For kStart / kFinish: a strategic merge patch of the status, so conditions
  // other writers own (DisruptionTarget, the scheduler's) stay, as a kubelet keeps them.
  nlohmann::json status_patch;
  std::optional<WallClock::time_point> wake_at;  // when to look at the pod again
};

// The kubelet's resource admission: a pod bound to a node must fit beside the
// pods the kubelet already admitted there, or it is refused before any
// container starts (phase Failed, reason OutOf<resource>), as happens when two
// schedulers bind onto one node at once.
struct AdmissionRefusal {
  std::string reason;   // "OutOfcpu", "OutOfmemory", "OutOfpods", "OutOfnvidia.com/gpu"
  std::string message;  // "Node didn't have enough resource: ..."
};
std::optional<AdmissionRefusal> AdmitPod(const scheduler::ResourceList& request,
                                         const scheduler::ResourceList& admitted,
                                         const scheduler::ResourceList& allocatable);

// The status a kubelet writes for a pod its admission refused.
nlohmann::json RefusalStatusPatch(const AdmissionRefusal& refusal);

// The status a kubelet writes for an admitted pod whose volumes cannot be
// mounted yet: Pending, every container waiting in ContainerCreating.
nlohmann::json ContainerCreatingStatusPatch(const SimPod& pod, WallClock::time_point now,
                                            const std::string& host_ip);

// pod_ip / host_ip: the addresses to report.
KubeletDecision DecideKubeletStep(const SimPod& pod, WallClock::time_point now,
                                  const std::string& pod_ip, const std::string& host_ip);

}  // namespace hybridjob::sim
