// The contract between hybridjob-controller, gang-scheduler and any other
// producer of pod groups: label and annotation keys carried by group members.
#pragma once

#include <string_view>

namespace hybridjob::api {

inline constexpr std::string_view kGroup = "batch.hybridjob.io";
inline constexpr std::string_view kVersion = "v1alpha1";
inline constexpr std::string_view kApiVersion = "batch.hybridjob.io/v1alpha1";
inline constexpr std::string_view kKind = "HybridJob";
inline constexpr std::string_view kPlural = "hybridjobs";

// Labels on every member pod (and the job's Service, ConfigMap, PVCs).
// A pod group is identified by namespace + job-name label.
inline constexpr std::string_view kJobNameLabel = "batch.hybridjob.io/job-name";
inline constexpr std::string_view kRoleLabel = "batch.hybridjob.io/role";
inline constexpr std::string_view kIndexLabel = "batch.hybridjob.io/index";
// On member pods, the cluster ConfigMap and the artifacts uploader: the run
// (status.run) they belong to. A re-run deletes the earlier run's and never
// counts them.
inline constexpr std::string_view kRunLabel = "batch.hybridjob.io/run";

// Annotation on every member pod: the whole group's shape as compact JSON, so
// the scheduler knows every role's bounds even before all pods exist:
//   {"roles":[{"name":"ps","min":1,"max":1,"priority":0},
//             {"name":"worker","min":2,"max":8,"priority":0}],
//    "queue":"research","scheduleTimeoutSeconds":300}
// Its type, parse and format: hybridjob/api/group_spec.h.
inline constexpr std::string_view kGroupSpecAnnotation = "batch.hybridjob.io/group-spec";

// PodScheduled=False reasons the gang scheduler writes on member pods.
// kSurplusReason: the group was placed and this pod was left out (index beyond
// what fitted); the controller deletes such pods.
inline constexpr std::string_view kSurplusReason = "GangSurplus";
// kWaitingReason: the group cannot reach every role's minimum yet.
inline constexpr std::string_view kWaitingReason = "Unschedulable";
// kUntrustedMemberReason: the pod claims a job's membership without belonging
// to the job (see scheduler/core/tenancy.h); it is never planned.
inline constexpr std::string_view kUntrustedMemberReason = "UntrustedMember";
// kInvalidGroupReason: the group's shape cannot be planned (a refused
// group-spec annotation, members that disagree).
inline constexpr std::string_view kInvalidGroupReason = "InvalidGroup";
// kVolumeBindingReason: the group was placed, but the claims its plan decided
// were not Bound in time (volumeBindTimeoutSeconds) or could not be written;
// it is planned again.
inline constexpr std::string_view kVolumeBindingReason = "WaitingForVolumes";
// Other reasons name the scheduling policy's cause (WaitCauseName in
// scheduler/core/policy_cycle.h): OverQueueMax, NotAllowedInQueue, ... The code a
// user reads (NeverFits, Fragmented, ...) is in the GangWaiting condition
// (api/waiting.h).

// Pod condition the gang scheduler sets (status True) on a member just before
// it evicts it, with reason kReclaimedReason or kPreemptedReason: the job
// gives up that index and shrinks. It is the scheduler's own marker because
// the standard DisruptionTarget condition (Kubernetes 1.26+) says only that a
// pod is being disrupted: the Eviction API handler overwrites its reason with
// EvictionByEvictionAPI, and a drain, the taint manager, PodGC, kube-scheduler
// preemption and the kubelet set it too. A member disrupted without this
// condition is replaced at the same index. When the eviction is refused the
// scheduler sets it back to False (reason kEvictionRefusedReason). Written
// through pods/status, which job owners are normally not granted.
inline constexpr std::string_view kGangEvictionCondition = "batch.hybridjob.io/GangEviction";
inline constexpr std::string_view kReclaimedReason = "Reclaimed";
inline constexpr std::string_view kPreemptedReason = "Preempted";
inline constexpr std::string_view kEvictionRefusedReason = "EvictionRefused";

// The standard pod condition of Kubernetes 1.26+ for a pod being disrupted.
inline constexpr std::string_view kDisruptionTargetCondition = "DisruptionTarget";

inline constexpr std::string_view kDefaultSchedulerName = "gang-scheduler";
// The queue of a job that names none (when its namespace names no default),
// and of pods outside any job.
inline constexpr std::string_view kDefaultQueue = "default";

// Annotation on the job's cluster ConfigMap: the membership the gang scheduler
// committed, as compact JSON of role -> member count ({"ps":1,"worker":2}).
// Members of a role are always indices 0..count-1.
inline constexpr std::string_view kMembersAnnotation = "batch.hybridjob.io/members";

// Annotation the gang-scheduler sets on each member it binds (through the
// binding, which the API server copies onto the pod) when the job has
// spec.topology: where the gang's topology units went, e.g.
// "example.com/rack=r1". The controller reports it as status.placement.
inline constexpr std::string_view kPlacementAnnotation = "batch.hybridjob.io/placement";

// Label on a job's TensorBoard Deployment, its pods and Service (value: the job
// name). Kept apart from kJobNameLabel so TensorBoard pods never join the group.
inline constexpr std::string_view kTensorboardLabel = "batch.hybridjob.io/tensorboard";

}  // namespace hybridjob::api
