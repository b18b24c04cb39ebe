// What the planner asks the reconciler to do. Every action is idempotent
// against the API server: creates may meet AlreadyExists and deletes NotFound,
// both of which count as success.
//
// The reconciler applies a plan's actions in order and stops at the first
// failure (then requeues): the order is part of the plan's meaning. In
// particular UpdateStatus comes first, so a restart is counted before the
// failed pod is deleted, and the cluster ConfigMap is written before surplus
// pods are deleted, so the committed membership is recorded before anything
// that depends on it happens.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/api/types.h>

namespace hybridjob::controller {

// Objects are complete manifests (apiVersion, kind, metadata with namespace,
// labels and ownerReferences): POST them to their collection as they are.
struct CreatePod {
  nlohmann::json pod;
};
struct CreateService {
  nlohmann::json service;
};
struct CreateConfigMap {
  nlohmann::json config_map;
};
// The ControllerRevision holding the spec a run starts with (spec_edits.h).
// One that exists already under its name (made from the same spec) will do.
struct CreateRunRevision {
  nlohmann::json revision;
};
// The revision of a run that ended (suspended, re-run).
struct DeleteRunRevision {
  std::string name;
};
// A full replacement (PUT); metadata.resourceVersion is the observed one, so a
// concurrent change makes it fail with Conflict.
struct UpdateConfigMap {
  nlohmann::json config_map;
};
// Delete the job's cluster ConfigMap (a suspended job's: its cluster spec is
// the stopped run's, and resumed members must wait for their own). uid is a
// precondition.
struct DeleteConfigMap {
  std::string name;
  std::string uid;
};
struct CreatePVC {
  nlohmann::json claim;
};
struct CreateDeployment {
  nlohmann::json deployment;
};
// An MPI job's SSH key Secret, before member pods are created: the manifest
// without data; the reconciler makes the key pair. The controller may create
// Secrets but never read them, so this comes with every plan that creates
// pods of an MPI job, and AlreadyExists is the common outcome.
struct CreateSshKeySecret {
  nlohmann::json secret;
};

// Delete one pod. uid is a precondition: a newer pod with the same name is
// never deleted by mistake.
struct DeletePod {
  std::string name;
  std::string uid;
  std::string reason;  // for logs: "surplus", "restart", "cleanup", "deadline", "suspend"
};

// Rewrite the group-spec annotation of a member that waits unbound, so the
// scheduler plans its gang as it now stands (members that succeeded meanwhile
// count toward the minimum). uid is a precondition, as for DeletePod.
struct PatchPodGroupSpec {
  std::string name;
  std::string uid;
  std::string group_spec;
};

// Write the job's status subresource, based on the observed resourceVersion.
struct UpdateStatus {
  api::HybridJobStatus status;
};

enum class EventType { kNormal, kWarning };

// What a Created Event counts: the job's members per role, in the spec's
// order, and the pods among them that the pass creates.
struct CreatedMembers {
  std::vector<std::pair<std::string, int32_t>> roles;        // role, members
  std::vector<std::pair<std::string, std::string>> creates;  // pod, its role
  // The job goes on without the members the API server refused.
  bool others_refused = false;
};

// "created 5 member pods: ps 1 worker 4", as the Created condition and Event
// say it.
std::string CreatedMessage(const CreatedMembers& members);

// An Event about the job itself.
struct RecordEvent {
  EventType type = EventType::kNormal;
  std::string reason;
  std::string message;
  // Set on the Created Event of a pass that creates members: it follows the
  // creates, and the reconciler records it once they are done, even when
  // one was refused, with CreatedEventOnceApplied.
  std::optional<CreatedMembers> created;
};

// The Created Event once the pass's creates were applied (`created_pods`:
// the names of those that took): as planned when every create took;
// counting only the members that exist when some did not ("created 3 of 11
// member pods: ..."), since the Event reports pods, not intentions; none
// when no create of the pass took (FailedCreate says why). Any other event
// is returned as it is.
std::optional<RecordEvent> CreatedEventOnceApplied(const RecordEvent& planned,
                                                   const std::set<std::string>& created_pods);

// Delete the HybridJob (ttlSecondsAfterFinished elapsed). Children go with it
// through their ownerReferences; retained PVCs have none and stay.
struct DeleteJob {
  std::string uid;  // precondition
};

using Action = std::variant<CreateRunRevision, DeleteRunRevision, UpdateStatus, RecordEvent,
                            CreatePVC, CreateService, CreateDeployment, CreateSshKeySecret,
                            CreateConfigMap, UpdateConfigMap, DeleteConfigMap, DeletePod,
                            PatchPodGroupSpec, CreatePod, DeleteJob>;

struct Plan {
  std::vector<Action> actions;
  // Reconcile again after this long even if nothing changes (restart backoff,
  // activeDeadlineSeconds, ttlSecondsAfterFinished).
  std::optional<std::chrono::seconds> requeue_after;

  bool empty() const { return actions.empty(); }
};

std::string_view ToString(EventType type);
// One line for logs: "CreatePod train-worker-3", "UpdateStatus phase=Running".
std::string Describe(const Action& action);

}  // namespace hybridjob::controller
