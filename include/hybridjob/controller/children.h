// Manifests of the objects a job owns. Pure functions of the (defaulted) job.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <hybridjob/api/group_spec.h>
#include <hybridjob/api/types.h>
#include <hybridjob/common/status.h>
#include <hybridjob/controller/cluster_spec.h>
#include <hybridjob/controller/options.h>

namespace hybridjob::controller {

// Entries of the cluster ConfigMap (see cluster_spec.h).
inline constexpr std::string_view kClusterJsonKey = "cluster.json";
inline constexpr std::string_view kHostfileKey = "hostfile";
inline constexpr std::string_view kEnvFileSuffix = ".env";
// Keys of an MPI job's SSH Secret (type kubernetes.io/ssh-auth).
inline constexpr std::string_view kSshPrivateKeyKey = "ssh-privatekey";
inline constexpr std::string_view kSshPublicKeyKey = "ssh-publickey";
// What mpirun passes to ssh: members' host keys are made on the fly, so they
// cannot be known in advance; workers may take a moment to listen.
inline constexpr std::string_view kMpiSshArgs =
    "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectionAttempts=10 "
    "-o LogLevel=ERROR";

// The namespace a job's children live in ("default" when unset).
std::string JobNamespace(const api::HybridJob& job);

// ownerReference to the job: controller and blockOwnerDeletion set, so the
// garbage collector removes children with the job.
nlohmann::json OwnerReference(const api::HybridJob& job);

// Member pods, the cluster ConfigMap and the artifacts uploader carry the run
// label of job.status.run: the planner passes the job with the run it plans.
//
// Member <job>-<role>-<index>, built from the role's template: identity labels
// and env, group-spec annotation, scheduler name, hostname and subdomain,
// restartPolicy Never, the cluster ConfigMap mount, the code init container,
// the job's volumes; for non-elastic jobs the cluster environment, for elastic
// ones the env-file wrapper around each container's command.
nlohmann::json BuildMemberPod(const api::HybridJob& job, const api::ReplicaSpec& role,
                              int32_t index, const PlannerOptions& options);
// The same carrying `group_spec` rather than the job's own shape: a
// replacement's, once members have succeeded.
nlohmann::json BuildMemberPod(const api::HybridJob& job, const api::ReplicaSpec& role,
                              int32_t index, const api::GroupSpec& group_spec,
                              const PlannerOptions& options);

// ControllerRevision api::RunRevisionName(job, spec) holding `spec` (the
// spec a run of the job starts with), owned by the job.
nlohmann::json BuildRunRevision(const api::HybridJob& job, const api::HybridJobSpec& spec);
// The spec a revision holds, if it is the job's (its controller) and its
// fixed fields are the ones the job's run recorded (status.runSpec.hash).
Result<api::HybridJobSpec> StartedSpecOf(const nlohmann::json& revision, const api::HybridJob& job);

// The claim a job volume mounts: its existingClaim, else <job>-<volume>.
std::string ClaimName(const api::HybridJob& job, const api::VolumeSpec& volume);

// The init container that fetches and unpacks spec.code into the code
// volume (api::kCodeVolumeName at code.mountPath); it takes the AWS_*
// variables and envFrom of `first_container`, the member's own.
nlohmann::json BuildCodeFetcher(const api::HybridJob& job, const nlohmann::json& first_container,
                                const PlannerOptions& options);

// Secret <job>-ssh of an MPI job, without its data: the key pair is made
// where the Secret is created (the shell), never planned.
nlohmann::json BuildSshKeySecret(const api::HybridJob& job);

// Pod <job>-artifacts: uploads spec.artifacts from the job volume, on `node`
// when given (where the members that wrote it ran: a node-local volume is
// there), else wherever the default scheduler puts it. The kubelet retries a
// failed upload with back-off (restartPolicy OnFailure) until
// artifacts.deadlineSeconds (activeDeadlineSeconds).
nlohmann::json BuildArtifactsPod(const api::HybridJob& job, const std::string& node,
                                 const PlannerOptions& options);

// The headless Service <job>: one DNS record per member, ready or not.
nlohmann::json BuildHeadlessService(const api::HybridJob& job);

// ConfigMap <job>-cluster for a committed membership.
nlohmann::json BuildClusterConfigMap(const api::HybridJob& job, const Membership& membership,
                                     const PlannerOptions& options);

// PVC <job>-<volume>; retained claims carry no ownerReference.
nlohmann::json BuildVolumeClaim(const api::HybridJob& job, const api::VolumeSpec& volume);

nlohmann::json BuildTensorboardDeployment(const api::HybridJob& job, const PlannerOptions& options);
// Whether `volume` holds the job's TensorBoard log directory, so TensorBoard
// mounts its claim (read-only).
bool HoldsTensorboardLogs(const api::HybridJob& job, const api::VolumeSpec& volume);
nlohmann::json BuildTensorboardService(const api::HybridJob& job);

// `text` with every '$' doubled, so the kubelet's $(VAR) expansion in command
// and args leaves it exactly as written.
std::string EscapeKubeExpansion(std::string_view text);

// Fixed scripts run with /bin/sh -c. Everything variable is passed as a
// positional argument, never spliced into the script text.
// kEnvWrapperScript: sources the role's env file, then execs "$@".
extern const std::string_view kEnvWrapperScript;
// kCodeFetchScript: $1 = source URL, $2 = destination directory.
extern const std::string_view kCodeFetchScript;
// kArtifactsUploadScript: $1 = destination, $2 = the volume's mount path, then
// the paths to upload, relative to it.
extern const std::string_view kArtifactsUploadScript;
// kWaitForWorkersScript: $1 = the MPI hostfile; returns once every host in it
// accepts SSH with the job's key.
extern const std::string_view kWaitForWorkersScript;

}  // namespace hybridjob::controller
