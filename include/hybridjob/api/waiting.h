// Why a gang waits to start, as the gang-scheduler tells the controller: one
// wire contract. The scheduler writes it as a pod condition on one member of
// each waiting gang; the controller reads it into the job's status.queue and
// the Queued condition's reason.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <hybridjob/api/types.h>

namespace hybridjob::api {

// Pod condition, status True while the gang waits to start, on the gang's
// first pending member (lowest role, lowest index). Its reason is one of the
// codes below; its message FormatStanding's ("queue team-a, position 3").
// The numbers behind the reason are in the members' PodScheduled message.
inline constexpr std::string_view kGangWaitingCondition = "batch.hybridjob.io/GangWaiting";

// Waiting reasons (status.queue.reason and the Queued condition's reason).
// The minimum exceeds what the cluster's nodes could hold even empty, given
// the members' selectors, affinity, tolerations and the nodes' sizes.
inline constexpr std::string_view kReasonNeverFits = "NeverFits";
// Not enough free capacity on the nodes that admit the members.
inline constexpr std::string_view kReasonInsufficientCapacity = "InsufficientCapacity";
// Enough free capacity in total on the nodes that admit the members, but not
// in pieces a member fits in.
inline constexpr std::string_view kReasonFragmented = "Fragmented";
// The minimum would take the job's queue (or an ancestor) over its max.
inline constexpr std::string_view kReasonQueueLimit = "QueueLimit";
// The queue, or an ancestor, does not admit the job's namespace.
inline constexpr std::string_view kReasonNotAllowedInQueue = "NotAllowedInQueue";
// Another job goes first: the head of a StrictFIFO queue, or a job that
// waited longer and holds nodes reserved for it.
inline constexpr std::string_view kReasonFairShareOrder = "FairShareOrder";
// The job waited too long: nodes are kept free (drained) for it.
inline constexpr std::string_view kReasonReserved = "Reserved";
// Pods of other jobs are being evicted to make room for it.
inline constexpr std::string_view kReasonEvicting = "Evicting";
// The cluster has room for the minimum, but no single domain of the level
// its spec.topology requires does.
inline constexpr std::string_view kReasonTopologyUnsatisfiable = "TopologyUnsatisfiable";
// Nodes have room, but the members' claims cannot get volumes there yet.
inline constexpr std::string_view kReasonWaitingForVolumes = "WaitingForVolumes";
// A member still has scheduling gates.
inline constexpr std::string_view kReasonGated = "Gated";
// Member pods are missing past the schedule timeout (the API server refused
// them: a quota, an admission webhook).
inline constexpr std::string_view kReasonMembersMissing = "MembersMissing";
// The job names a queue the scheduler's configuration does not have, or one
// with child queues.
inline constexpr std::string_view kReasonUnknownQueue = "UnknownQueue";
inline constexpr std::string_view kReasonParentQueue = "ParentQueue";
// A member asks for what the scheduler does not allocate (resourceClaims).
inline constexpr std::string_view kReasonUnsupported = "UnsupportedResourceClaims";
// The group's shape cannot be planned: kInvalidGroupReason (labels.h).

// "queue team-a, position 3"; "queue team-a" when the job is not in line.
std::string FormatStanding(const QueueStanding& standing);
// The standing a GangWaiting condition says, or nullopt when its reason is
// empty or its message is not FormatStanding's.
std::optional<QueueStanding> ParseStanding(std::string_view reason, std::string_view message);

}  // namespace hybridjob::api
