// The HybridJob resource (batch.hybridjob.io/v1alpha1) as C++ values.
//
// Fields whose default depends on other fields (maxReplicas, port, the success
// policy) are optional here and filled by ApplyDefaults; the Effective*
// accessors give the defaulted value whether or not defaults were applied.
// Pod templates stay opaque JSON: HybridJob only adds to them.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace hybridjob::api {

enum class Framework { kTensorFlow, kPyTorch, kMXNet, kMPI, kGeneric };

// TF_CONFIG, DMLC_* and MPI hostfiles are read once at start: a new
// membership restarts every member. PyTorch (TorchElastic) and generic jobs
// read /etc/hybridjob again.
inline bool LearnsMembershipLive(Framework framework) {
  return framework == Framework::kPyTorch || framework == Framework::kGeneric;
}

// What happens when a member's pod ends. The controller, not the kubelet,
// restarts members: pods always run with restartPolicy Never.
enum class RestartPolicy {
  kNever,      // a failed member fails the job
  kOnFailure,  // a failed member is recreated (same name and index)
  kExitCode,   // exit codes 1-127 fail the job, 128-255 (signals) are retried
  kAlways,     // recreated after failure and after success too
};

// Which pods to delete when the job finishes.
enum class CleanPodPolicy { kRunning, kAll, kNone };

enum class SuccessOperator { kAll, kAny };

enum class JobPhase {
  kPending,
  kQueued,
  kRunning,
  kRestarting,
  kSucceeded,
  kFailed,
  kSuspended,  // spec.suspend: no member pods until it is cleared
};

// How a gang's members sit in one domain of a topology level (a node label
// key among the scheduler's configured levels):
enum class TopologyMode {
  kRequired,   // every member inside one domain, or the gang waits
  kPreferred,  // as few domains as possible, never waiting for it
  kNone,       // a role's override only: the role is placed anywhere
};

std::string_view ToString(Framework value);
std::string_view ToString(RestartPolicy value);
std::string_view ToString(CleanPodPolicy value);
std::string_view ToString(SuccessOperator value);
std::string_view ToString(JobPhase value);
std::string_view ToString(TopologyMode value);

// Exact, case-sensitive spellings as in the CRD ("tensorflow", "OnFailure", ...).
std::optional<Framework> ParseFramework(std::string_view text);
std::optional<RestartPolicy> ParseRestartPolicy(std::string_view text);
std::optional<CleanPodPolicy> ParseCleanPodPolicy(std::string_view text);
std::optional<SuccessOperator> ParseSuccessOperator(std::string_view text);
std::optional<JobPhase> ParseJobPhase(std::string_view text);
std::optional<TopologyMode> ParseTopologyMode(std::string_view text);

// Every accepted spelling, in declaration order (the CRD enums list the same).
std::vector<std::string_view> AllFrameworks();
std::vector<std::string_view> AllRestartPolicies();
std::vector<std::string_view> AllCleanPodPolicies();
std::vector<std::string_view> AllSuccessOperators();
std::vector<std::string_view> AllJobPhases();
std::vector<std::string_view> AllTopologyModes();

bool IsTerminal(JobPhase phase);

// The port members listen on when a role names none.
int32_t DefaultPort(Framework framework);

inline constexpr std::string_view kDefaultCodeMountPath = "/workspace";
inline constexpr std::string_view kDefaultTensorboardServiceType = "ClusterIP";
inline constexpr std::string_view kDefaultAccessMode = "ReadWriteOnce";
inline constexpr int32_t kDefaultBackoffLimit = 3;
inline constexpr int32_t kDefaultRunHistoryLimit = 1;

// The subset of metav1.ObjectMeta HybridJob reads.
struct ObjectMeta {
  std::string name;
  std::string namespace_name;
  std::string uid;
  std::string resource_version;
  int64_t generation = 0;
  std::string creation_timestamp;  // RFC 3339, as the API server wrote it
  std::optional<std::string> deletion_timestamp;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;

  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;
};

// spec.topology and a role's override: which topology level the gang's
// members share a domain of, and how strictly.
struct TopologySpec {
  std::string level;  // node label key; empty only with mode None
  TopologyMode mode = TopologyMode::kRequired;

  friend bool operator==(const TopologySpec&, const TopologySpec&) = default;
};

// One role of the job (ps, worker, chief, launcher, ...).
struct ReplicaSpec {
  std::string name;  // DNS-1035 label; the list is keyed by it
  int32_t min_replicas = 0;
  std::optional<int32_t> max_replicas;  // default: min_replicas
  int32_t priority = 0;                 // higher roles grow toward max first
  RestartPolicy restart_policy = RestartPolicy::kNever;
  std::optional<int32_t> port;  // default: DefaultPort(framework)
  // Unset: the role shares the job's spec.topology domain. Set: the role's
  // members keep to a domain of their own (or, with mode None, to none).
  std::optional<TopologySpec> topology;
  nlohmann::json pod_template = nlohmann::json::object();  // core/v1 PodTemplateSpec

  int32_t EffectiveMaxReplicas() const { return max_replicas.value_or(min_replicas); }
  int32_t EffectivePort(Framework framework) const { return port.value_or(DefaultPort(framework)); }

  friend bool operator==(const ReplicaSpec&, const ReplicaSpec&) = default;
};

struct RunPolicy {
  int32_t backoff_limit = kDefaultBackoffLimit;  // member restarts allowed before failing
  std::optional<int64_t> active_deadline_seconds;
  std::optional<int64_t> ttl_seconds_after_finished;
  CleanPodPolicy clean_pod_policy = CleanPodPolicy::kRunning;
  // Passed to the scheduler in the group-spec annotation: how long it waits for
  // every member pod to exist before planning with those that do.
  std::optional<int64_t> schedule_timeout_seconds;
  // The run the job asks for. A finished job whose rerun is above
  // status.run runs again, from the spec as it is then; the first run is
  // whatever rerun was when the job was created.
  int64_t rerun = 0;

  friend bool operator==(const RunPolicy&, const RunPolicy&) = default;
};

// When the job has succeeded: All = every member of the listed roles
// succeeded; Any = at least one member of the listed roles did.
struct SuccessPolicy {
  std::vector<std::string> roles;
  SuccessOperator op = SuccessOperator::kAll;

  friend bool operator==(const SuccessPolicy&, const SuccessPolicy&) = default;
};

// Storage for some or all roles: a PVC the job creates (size set) or an
// existing claim (existing_claim set), mounted at mount_path.
struct VolumeSpec {
  std::string name;
  std::optional<std::string> storage_class_name;
  std::optional<std::string> size;        // resource quantity, e.g. "100Gi"
  std::vector<std::string> access_modes;  // default [ReadWriteOnce] for created claims
  std::string mount_path;
  std::vector<std::string> roles;  // empty: every role
  bool retain = false;             // keep the created PVC after the job is deleted
  std::optional<std::string> existing_claim;

  // Whether members of `role` mount it.
  bool AppliesTo(std::string_view role) const;

  friend bool operator==(const VolumeSpec&, const VolumeSpec&) = default;
};

// A code archive fetched and unpacked by an init container before members start.
struct CodeSpec {
  std::string source;  // http://, https:// or s3:// URL of a .tar, .tar.gz, .tgz or .zip
  std::string mount_path = std::string(kDefaultCodeMountPath);
  std::optional<std::string> image;  // default: the controller's code-fetcher image
  // For s3:// sources: an S3-compatible store's URL (path-style requests),
  // and a Secret in the job's namespace whose keys (AWS_ACCESS_KEY_ID,
  // AWS_SECRET_ACCESS_KEY, optionally AWS_SESSION_TOKEN and AWS_REGION) become
  // the fetcher's environment. The controller never reads the Secret.
  std::optional<std::string> endpoint;
  std::optional<std::string> credentials_secret;

  friend bool operator==(const CodeSpec&, const CodeSpec&) = default;
};

// Files of a job volume uploaded after the job succeeds, by an uploader pod
// the controller runs before the job's claims can go.
struct ArtifactsSpec {
  std::string volume;                   // a name in spec.volumes
  std::vector<std::string> paths;       // relative to the volume; directories recursively
  std::string destination;              // http(s):// URL prefix (PUT) or s3://<bucket>[/<prefix>]
  std::optional<std::string> endpoint;  // s3://: an S3-compatible store
  std::optional<std::string> credentials_secret;  // s3://: AWS_* keys, as for spec.code
  std::optional<std::string> image;               // default: the controller's fetcher image
  // How long the uploader may keep retrying (the kubelet restarts it with
  // back-off) before the upload is given up.
  int64_t deadline_seconds = 3600;

  friend bool operator==(const ArtifactsSpec&, const ArtifactsSpec&) = default;
};

struct TensorboardSpec {
  std::string log_dir;
  std::optional<std::string> image;  // default: the controller's TensorBoard image
  std::string service_type = std::string(kDefaultTensorboardServiceType);

  friend bool operator==(const TensorboardSpec&, const TensorboardSpec&) = default;
};

struct HybridJobSpec {
  Framework framework = Framework::kGeneric;
  std::vector<ReplicaSpec> replica_specs;
  RunPolicy run_policy;
  std::optional<SuccessPolicy> success_policy;  // default: see DefaultSuccessPolicy
  std::vector<VolumeSpec> volumes;
  std::optional<CodeSpec> code;
  std::optional<ArtifactsSpec> artifacts;
  std::optional<TensorboardSpec> tensorboard;
  // Unset: the namespace's default queue (chosen by the scheduler).
  std::optional<std::string> queue;
  // Unset: members go wherever they fit best, as without topology levels.
  std::optional<TopologySpec> topology;
  std::string scheduler_name = "gang-scheduler";
  // While true the job has no member pods (they are deleted, parameter
  // servers included) and activeDeadlineSeconds does not run; its Service,
  // claims, SSH key and TensorBoard stay. Cleared, the members are created
  // again and placed afresh, at any size between the minimums and maximums.
  bool suspend = false;
  // How many finished runs before the current one keep their ended member
  // pods, and so their logs, once the job is re-run: the newest of
  // status.previousRuns. At most kMaxPreviousRuns, which names them.
  int32_t run_history_limit = kDefaultRunHistoryLimit;

  const ReplicaSpec* FindRole(std::string_view name) const;
  const VolumeSpec* FindVolume(std::string_view name) const;
  // Some role has min != max: the membership is only known once the gang is
  // placed. Otherwise it is known when the pods are created.
  bool IsElastic() const;

  friend bool operator==(const HybridJobSpec&, const HybridJobSpec&) = default;
};

// The chief (or master) role if there is one, else all members of worker,
// else all members of every role.
SuccessPolicy DefaultSuccessPolicy(const HybridJobSpec& spec);
SuccessPolicy EffectiveSuccessPolicy(const HybridJobSpec& spec);

// Condition types on the job.
inline constexpr std::string_view kConditionCreated = "Created";
inline constexpr std::string_view kConditionScheduled = "Scheduled";
inline constexpr std::string_view kConditionRunning = "Running";
inline constexpr std::string_view kConditionRestarting = "Restarting";
inline constexpr std::string_view kConditionSucceeded = "Succeeded";
inline constexpr std::string_view kConditionFailed = "Failed";
inline constexpr std::string_view kConditionInvalid = "Invalid";
// Every member pod exists and the scheduler has not placed the gang yet; the
// reason and message are the scheduler's (Unschedulable, UnknownQueue, ...).
inline constexpr std::string_view kConditionQueued = "Queued";
// Member pods the job still wants cannot be created: the API server refuses
// them (a ResourceQuota, an admission webhook; reason FailedCreate, as on a
// ReplicaSet, quoting the server), or they would need a ConfigMap that does
// not exist (MissingConfigMap). Removed once neither holds.
inline constexpr std::string_view kConditionReplicaFailure = "ReplicaFailure";
// spec.suspend: True with JobSuspended while the job is suspended, False with
// JobResumed once it is cleared (as on a batch/v1 Job).
inline constexpr std::string_view kConditionSuspended = "Suspended";
inline constexpr std::string_view kReasonJobSuspended = "JobSuspended";
inline constexpr std::string_view kReasonJobResumed = "JobResumed";
// Edits of the spec the running job does not take (spec_edits.h): True, with
// the same reason, naming each ignored field; removed once the spec agrees
// with the run again, or the run ends.
inline constexpr std::string_view kConditionSpecChangeIgnored = "SpecChangeIgnored";

// spec.artifacts: whether the files were uploaded after the job succeeded.
// False with reason Uploading or Retrying while the uploader runs, True with
// Uploaded, False with UploadFailed once it was given up. The job stays
// Succeeded whatever happens to its upload.
inline constexpr std::string_view kConditionArtifactsUploaded = "ArtifactsUploaded";
inline constexpr std::string_view kReasonUploading = "Uploading";
inline constexpr std::string_view kReasonRetrying = "Retrying";
inline constexpr std::string_view kReasonUploaded = "Uploaded";
inline constexpr std::string_view kReasonUploadFailed = "UploadFailed";

// Reasons on conditions and Events beyond the condition types themselves.
inline constexpr std::string_view kReasonBackoffLimitExceeded = "BackoffLimitExceeded";
inline constexpr std::string_view kReasonDeadlineExceeded = "DeadlineExceeded";
inline constexpr std::string_view kReasonMemberFailed = "MemberFailed";
inline constexpr std::string_view kReasonInvalid = "Invalid";
inline constexpr std::string_view kReasonFailedCreate = "FailedCreate";
// ReplicaFailure: members would need a ConfigMap that does not exist.
inline constexpr std::string_view kReasonMissingConfigMap = "MissingConfigMap";
// The gang scheduler shrank or grew the job (elastic reclaim, growth).
inline constexpr std::string_view kReasonMembershipChanged = "MembershipChanged";
// Event: a member the cluster took away (drain, kubelet refusal) is replaced.
inline constexpr std::string_view kReasonMemberReplaced = "MemberReplaced";
// Event: a finished job runs again (spec.runPolicy.rerun above status.run).
inline constexpr std::string_view kReasonRerun = "Rerun";

struct Condition {
  std::string type;
  std::string status;  // "True", "False" or "Unknown"
  std::string reason;
  std::string message;
  std::string last_transition_time;  // RFC 3339
  std::string last_update_time;      // RFC 3339

  friend bool operator==(const Condition&, const Condition&) = default;
};

// Counts for one role. Members are the indices the scheduler committed.
struct ReplicaStatus {
  std::string name;
  int32_t members = 0;    // committed by the gang placement; 0 until placed
  int32_t scheduled = 0;  // pods bound to a node
  int32_t active = 0;     // pods pending or running
  int32_t succeeded = 0;
  int32_t failed = 0;
  int32_t restarts = 0;  // members recreated so far

  friend bool operator==(const ReplicaStatus&, const ReplicaStatus&) = default;
};

// How long a gang waits for all its member pods to exist before it is planned
// with those that do, when the job does not say.
inline constexpr int64_t kDefaultScheduleTimeoutSeconds = 300;

// One role of a pod group: how many members it may run with.
struct GroupRole {
  std::string name;
  int32_t min_replicas = 1;
  int32_t max_replicas = 1;
  int32_t priority = 0;  // higher roles grow toward their maximum first
  // The role's override of the group's topology (a domain of its own, or
  // mode None for none); unset: the role shares the group's domain.
  std::optional<TopologySpec> topology;
  // Indices whose members succeeded, ascending: they never get a pod again,
  // so they hold their place in the run of indices from 0 (the controller
  // has already lowered the minimum by their count).
  std::vector<int32_t> completed;

  friend bool operator==(const GroupRole&, const GroupRole&) = default;
};

// The whole group's shape.
struct GroupSpec {
  std::vector<GroupRole> roles;
  // Empty: the job names no queue (its namespace's default queue applies).
  std::string queue;
  // Unset: kDefaultScheduleTimeoutSeconds. Zero: never wait.
  std::optional<int64_t> schedule_timeout_seconds;
  // Every role without an override keeps to one domain of this level.
  std::optional<TopologySpec> topology;
  // A change of membership restarts every member (the framework reads its
  // cluster spec only at start): the scheduler never shrinks such a group
  // to grow another one, only for a waiting group's minimum.
  bool resize_restarts = false;

  const GroupRole* FindRole(std::string_view name) const;
  int64_t ScheduleTimeoutSeconds() const {
    return schedule_timeout_seconds.value_or(kDefaultScheduleTimeoutSeconds);
  }

  friend bool operator==(const GroupSpec&, const GroupSpec&) = default;
};

// What the controller keeps of the spec a run started (or was last resumed)
// with (status.runSpec): enough to tell the edits the run does not take, and
// the gang as the run schedules it. The whole spec is in a ControllerRevision
// the job owns, read only when the spec's fixed fields changed (spec_edits.h).
struct RunSpecRecord {
  // RunFixedHash of the run's spec: the fields a running job takes no edits of.
  std::string hash;
  std::string revision;  // the ControllerRevision's name
  // The gang as the run schedules it, edits taken: what the gang-scheduler
  // trusts (the members' annotation can only lower it).
  GroupSpec group;

  friend bool operator==(const RunSpecRecord&, const RunSpecRecord&) = default;
};

// How an earlier run of the job ended (status.previousRuns).
struct PreviousRun {
  int64_t run = 0;
  JobPhase phase = JobPhase::kSucceeded;
  std::string reason;  // the Succeeded or Failed condition's
  std::string message;
  std::optional<std::string> start_time;
  std::optional<std::string> completion_time;
  int32_t restart_count = 0;

  friend bool operator==(const PreviousRun&, const PreviousRun&) = default;
};

// Where a job that waits to start stands (status.queue), as the
// gang-scheduler last said (api/waiting.h).
struct QueueStanding {
  std::string name;      // the queue
  int32_t position = 0;  // 1: the next of its queue to start; 0: not in line
  std::string reason;    // a waiting reason code (waiting.h)

  friend bool operator==(const QueueStanding&, const QueueStanding&) = default;
};

// The GPU service a job has attained, as the gang-scheduler keeps it for
// queues ordered by AttainedService (status.attainedService). Only the
// gang-scheduler writes it; it reads it back after a restart or failover.
struct AttainedService {
  int64_t gpu_seconds = 0;  // weighted GPUs x seconds held
  int32_t level = 0;        // 0: the least-served level
  std::string queue;        // the queue whose levels `level` is of

  friend bool operator==(const AttainedService&, const AttainedService&) = default;
};

// status.previousRuns keeps the newest this many.
inline constexpr size_t kMaxPreviousRuns = 10;

struct HybridJobStatus {
  std::optional<JobPhase> phase;  // absent until the controller first sees the job
  std::vector<Condition> conditions;
  std::vector<ReplicaStatus> replica_statuses;
  std::string ready_members;  // "3/4": members running / members expected
  std::optional<std::string> start_time;
  std::optional<std::string> completion_time;
  std::optional<std::string> last_restart_time;  // when the latest member restart began
  int32_t restart_count = 0;
  int64_t observed_generation = 0;
  // With spec.topology: where the gang-scheduler placed the members, e.g.
  // "example.com/rack=r1" (their batch.hybridjob.io/placement annotation).
  std::string placement;
  // The run this status describes: spec.runPolicy.rerun when it began.
  int64_t run = 0;
  std::vector<PreviousRun> previous_runs;  // oldest first, at most kMaxPreviousRuns
  // The current run's record of its spec; absent before it starts and while
  // the job is suspended. Edits to spec apply to the run only as
  // spec_edits.h allows.
  std::optional<RunSpecRecord> run_spec;
  // While the job waits to start: its queue, its place in it, and why.
  std::optional<QueueStanding> queue;
  std::optional<AttainedService> attained_service;

  const Condition* FindCondition(std::string_view type) const;
  bool HasTrueCondition(std::string_view type) const;
  const ReplicaStatus* FindReplicaStatus(std::string_view role) const;

  friend bool operator==(const HybridJobStatus&, const HybridJobStatus&) = default;
};

struct HybridJob {
  ObjectMeta metadata;
  HybridJobSpec spec;
  HybridJobStatus status;

  friend bool operator==(const HybridJob&, const HybridJob&) = default;
};

}  // namespace hybridjob::api
