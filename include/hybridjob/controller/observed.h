// The children of a job as the planner sees them: compact pods, and the other
// objects as they came from the API server.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/api/types.h>
#include <hybridjob/controller/references.h>

namespace hybridjob::controller {

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed, kUnknown };

struct ObservedPod {
  std::string name;
  std::string uid;
  std::string job_name;        // batch.hybridjob.io/job-name label
  std::string role;            // batch.hybridjob.io/role label
  int32_t index = -1;          // batch.hybridjob.io/index label; -1 if missing or malformed
  int64_t run = 0;             // batch.hybridjob.io/run label; 0 if missing, -1 if malformed
  std::string controller_uid;  // uid of the ownerReference with controller: true
  PodPhase phase = PodPhase::kPending;
  std::string node_name;  // set once bound
  bool surplus = false;   // PodScheduled=False, reason GangSurplus
  // batch.hybridjob.io/GangEviction=True: the gang scheduler evicts it
  // (reclaim or preemption), so the job shrinks rather than replacing it.
  bool reclaimed = false;
  // DisruptionTarget=True (Kubernetes 1.26+): something is taking the pod
  // away: a drain, the taint manager, PodGC, kube-scheduler preemption, the
  // kubelet, or the gang scheduler (then `reclaimed` is set too).
  bool disrupted = false;
  std::string disruption_reason;  // DisruptionTarget's reason, for messages
  // PodScheduled=False with another reason: why the scheduler leaves it
  // waiting (Unschedulable, UnknownQueue, OverQueueMax, ...).
  std::string waiting_reason;
  std::string waiting_message;
  // batch.hybridjob.io/GangWaiting=True (api/waiting.h): the gang waits to
  // start, and this member carries where it stands; when the condition said it.
  std::optional<api::QueueStanding> standing;
  std::string standing_since;
  bool terminating = false;  // metadata.deletionTimestamp set
  // The first non-zero exit code among terminated app containers (0 if all
  // terminated containers exited 0); unset when no container terminated.
  std::optional<int32_t> exit_code;
  // Container restarts by the kubelet (restartPolicy OnFailure or Always),
  // and the exit code of the latest restarted run.
  int32_t restarts = 0;
  std::optional<int32_t> last_exit_code;
  std::string reason;  // status.reason, e.g. Evicted
  // What a failed container said of its end: the termination message of the
  // current run (an app or init container that exited non-zero) and of the
  // run before a restart. The controller's own fetcher and uploader fill it
  // from their logs' tails (FallbackToLogsOnError) with what a store answered.
  std::string termination_message;
  std::string last_termination_message;
  // The init container that exited non-zero, and its exit code.
  std::string failed_init_container;
  std::optional<int32_t> init_exit_code;
  // The batch.hybridjob.io/group-spec annotation, as written.
  std::string group_spec;
  // The batch.hybridjob.io/placement annotation the gang-scheduler's binding set.
  std::string placement;

  bool bound() const { return !node_name.empty(); }
  // The kubelet refused the pod before any container ran (phase Failed with an
  // admission reason: OutOfcpu, OutOfnvidia.com/gpu, UnexpectedAdmissionError,
  // NodeAffinity, NodeLost, ...): a placement that did not take, not a crash.
  bool AdmissionRefused() const;
  // Taken away by something other than the gang scheduler (DisruptionTarget,
  // or status.reason Evicted from a kubelet older than 1.26), or refused by
  // the kubelet: the member is replaced at its index, with no restart counted.
  bool DisplacedByCluster() const {
    return !reclaimed && (disrupted || reason == "Evicted" || AdmissionRefused());
  }
  bool active() const {
    return phase == PodPhase::kPending || phase == PodPhase::kRunning ||
           phase == PodPhase::kUnknown;
  }

  friend bool operator==(const ObservedPod&, const ObservedPod&) = default;
};

// Whether a member moved on in its life between two observations: bound,
// a new phase, a container restarted, or something began taking it away.
// The shell reconciles such changes ahead of jobs not yet looked at; a new
// waiting reason or standing is news, not progress.
bool MemberProgressed(const ObservedPod& before, const ObservedPod& after);

// The batch.hybridjob.io/run label's value: 0 when absent (objects made
// before re-runs existed belong to run 0), -1 when malformed.
int64_t ParseRun(std::string_view text);

// Reads a core/v1 Pod; never fails: whatever is missing keeps its default.
ObservedPod ObservePod(const nlohmann::json& pod);

// A member pod the API server refused to create (a ResourceQuota, an
// admission webhook, a template it will not take), as the controller
// remembers it until a create of that pod succeeds.
struct RefusedCreate {
  std::string pod;
  std::string role;
  int32_t index = -1;
  std::string message;  // the API server's

  friend bool operator==(const RefusedCreate&, const RefusedCreate&) = default;
};

// Everything the controller's informers hold for one job, found by the
// job-name label (pods, Service, ConfigMap, PVCs) or by name.
struct Observed {
  std::vector<ObservedPod> pods;
  // Members deleted while marked for disruption, in their last state (see
  // DepartedMembers): their indices were evicted, not lost.
  std::vector<ObservedPod> departed;
  // Member pods of the job the API server refused to create (see
  // RefusedCreates).
  std::vector<RefusedCreate> refused;
  // Required ConfigMaps (references.h) that the API server says do not
  // exist; checked only until each was seen once.
  std::vector<RequiredConfigMap> missing;
  std::vector<nlohmann::json> services;
  std::vector<nlohmann::json> config_maps;
  std::vector<nlohmann::json> claims;
  std::vector<nlohmann::json> deployments;
  // The spec the run started with, read from its ControllerRevision when
  // job.spec no longer is it (api::NeedsStartedSpec); `run_spec_lost` when
  // that revision is gone or not the job's.
  std::optional<api::HybridJobSpec> run_spec;
  bool run_spec_lost = false;
};

std::string_view ToString(PodPhase phase);

}  // namespace hybridjob::controller
