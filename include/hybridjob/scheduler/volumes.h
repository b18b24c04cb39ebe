// Volumes as the gang planner sees them: claims, persistent volumes and
// storage classes, and the check kube-scheduler's VolumeBinding and
// VolumeRestrictions plugins make for one pod on one node. Pure data and
// decisions, no I/O: the shell's informers fill the catalog, the planner asks
// it, and a placed plan carries what the binder must do for the claims that
// are not bound yet (pre-bind a volume, or select a node for provisioning).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/objects.h>

namespace hybridjob::scheduler {

// spec.accessModes as bits, so "offers every mode the claim asks" is a mask test.
enum AccessMode : uint8_t {
  kReadWriteOnce = 1,
  kReadOnlyMany = 2,
  kReadWriteMany = 4,
  kReadWriteOncePod = 8,
};
using AccessModes = uint8_t;

// The provisioner name of classes whose volumes are made by hand (local PVs).
inline constexpr std::string_view kNoProvisioner = "kubernetes.io/no-provisioner";
// The node label local volumes are pinned by.
inline constexpr std::string_view kHostnameLabel = "kubernetes.io/hostname";
// The annotation the scheduler sets on a claim to provision it for a node.
inline constexpr std::string_view kAnnotationSelectedNode = "volume.kubernetes.io/selected-node";

struct StorageClassInfo {
  std::string name;
  std::string provisioner;
  // volumeBindingMode: WaitForFirstConsumer; false is Immediate.
  bool wait_for_first_consumer = false;
  // allowedTopologies: a provisioned volume can be had on a node that matches
  // any term (matchLabelExpressions as In requirements); empty allows every node.
  std::vector<NodeSelectorTerm> allowed_topologies;
};

struct ClaimInfo {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string storage_class;  // spec.storageClassName; empty: no class
  std::string volume_name;    // spec.volumeName: bound, or pre-bound, to this PV
  AccessModes access_modes = 0;
  int64_t requested_bytes = 0;
  bool block_mode = false;    // spec.volumeMode: Block
  std::string selected_node;  // the selected-node annotation
  bool deleting = false;      // metadata.deletionTimestamp is set
  bool bound = false;         // status.phase is Bound: the PV controller finished binding
  // spec.selector: only volumes whose labels match; such a claim is never
  // provisioned (the PV controller refuses to).
  std::optional<LabelSelector> selector;

  std::string Key() const { return PodKey(namespace_name, name); }
};

struct VolumeInfo {
  std::string name;
  LabelMap labels;
  std::string storage_class;
  AccessModes access_modes = 0;
  int64_t capacity_bytes = 0;
  bool block_mode = false;
  // Pending, Available, Bound, Released or Failed (status.phase); only an
  // Available volume is matched to a claim that is not reserved to it.
  std::string phase = "Available";
  // spec.claimRef: the claim the volume is bound or reserved to, if any.
  std::string claim_namespace;
  std::string claim_name;
  std::string claim_uid;
  // spec.nodeAffinity.required: absent, any node; present, a node matching a term.
  std::optional<std::vector<NodeSelectorTerm>> node_affinity;

  bool HasClaimRef() const { return !claim_name.empty(); }
};

// The one hostname a volume's node affinity allows, when it allows only one
// (a single term requiring kubernetes.io/hostname In [x]: local volumes).
std::optional<std::string> PinnedHostname(const VolumeInfo& volume);

// core/v1 PersistentVolumeClaim and PersistentVolume, storage.k8s.io/v1
// StorageClass. The class is the legacy volume.beta.kubernetes.io/storage-class
// annotation when set, else spec.storageClassName, as the PV controller reads
// it. Malformed fields give an InvalidArgument status naming the field.
Result<ClaimInfo> ParseClaim(const nlohmann::json& claim);
Result<VolumeInfo> ParseVolume(const nlohmann::json& volume);
Result<StorageClassInfo> ParseStorageClass(const nlohmann::json& storage_class);

// What the informers know of claims, volumes and classes. Until the shell
// says it tracks them (set_tracked), the planner ignores volumes entirely:
// a scheduler that does not watch claims must not refuse pods for them.
class StorageCatalog {
 public:
  bool tracked() const { return tracked_; }
  void set_tracked(bool tracked) { tracked_ = tracked; }

  void UpsertClaim(ClaimInfo claim);
  void RemoveClaim(std::string_view namespace_name, std::string_view name);
  void UpsertVolume(VolumeInfo volume);
  void RemoveVolume(std::string_view name);
  void UpsertClass(StorageClassInfo storage_class);
  void RemoveClass(std::string_view name);
  // After a (re)list: exactly these, the rest are gone.
  void ReplaceClaims(std::vector<ClaimInfo> claims);
  void ReplaceVolumes(std::vector<VolumeInfo> volumes);
  void ReplaceClasses(std::vector<StorageClassInfo> classes);

  // What a committed plan assumes before the API server shows it, as
  // kube-scheduler's assume cache does: the first assumption of an object
  // keeps the informer's version, which an informer write drops (the server
  // has spoken) and Restore* puts back (the plan was given up).
  void AssumeClaim(ClaimInfo claim);
  void AssumeVolume(VolumeInfo volume);
  void RestoreClaim(std::string_view namespace_name, std::string_view name);
  void RestoreVolume(std::string_view name);

  const ClaimInfo* FindClaim(std::string_view namespace_name, std::string_view name) const;
  // By "namespace/name", the key ClaimUsers are indexed by.
  const ClaimInfo* FindClaimByKey(std::string_view claim_key) const;
  const VolumeInfo* FindVolume(std::string_view name) const;
  const StorageClassInfo* FindClass(std::string_view name) const;
  // The volumes of a class that may be had on a node: those whose node
  // affinity pins them to the node's hostname, and those not pinned to any
  // one hostname. Either kind still needs its affinity checked; volumes
  // pinned to other hostnames are left out, so a check on one node does not
  // scan every local volume of the cluster.
  struct Candidates {
    std::span<const VolumeInfo* const> pinned;
    std::span<const VolumeInfo* const> unpinned;
  };
  Candidates CandidatesFor(std::string_view storage_class, const NodeInfo& node) const;

 private:
  struct ClassVolumes {
    std::map<std::string, std::vector<const VolumeInfo*>, std::less<>> by_hostname;
    std::vector<const VolumeInfo*> unpinned;
  };
  // Upsert without touching what was assumed.
  void PutVolume(VolumeInfo volume);
  void Index(const VolumeInfo& volume);
  void Unindex(const VolumeInfo& volume);

  bool tracked_ = false;
  std::map<std::string, ClaimInfo, std::less<>> claims_;  // by namespace/name
  // The informer's versions of assumed objects (AssumeClaim, AssumeVolume).
  std::map<std::string, ClaimInfo, std::less<>> claims_before_assumed_;
  std::map<std::string, VolumeInfo, std::less<>> volumes_before_assumed_;
  // Elements of a std::map stay where they are, so the index points at them.
  std::map<std::string, VolumeInfo, std::less<>> volumes_;
  std::map<std::string, ClassVolumes, std::less<>> volumes_by_class_;
  std::map<std::string, StorageClassInfo, std::less<>> classes_;
};

// What a plan decided for one claim that is not bound yet: the volume to
// pre-bind it to, or (volume_name empty) the node to provision it for.
struct ClaimDecision {
  std::string namespace_name;
  std::string claim_name;
  std::string volume_name;
  std::string node_name;
  std::string claim_uid;  // what the volume's claimRef names, when known

  bool IsFor(std::string_view claim_namespace, std::string_view claim) const {
    return namespace_name == claim_namespace && claim_name == claim;
  }
  friend bool operator==(const ClaimDecision&, const ClaimDecision&) = default;
};

// Where the other pods using a claim are (bound, assumed or tentatively
// placed): the node names, one entry per pod.
using ClaimUsers = std::vector<std::string>;

enum class VolumeCode : uint8_t {
  kFits = 0,
  kClaimNotFound,      // persistentvolumeclaim "x" not found
  kClaimDeleting,      // persistentvolumeclaim "x" is being deleted
  kUnboundImmediate,   // the PV controller, not the scheduler, binds it
  kVolumeMissing,      // bound to a PV that does not exist
  kNodeConflict,       // the bound PV's node affinity excludes the node
  kBindConflict,       // no PV to bind and no way to provision one here
  kReadWriteOnceNode,  // a ReadWriteOnce claim is in use on another node
  kReadWriteOncePodInUse,
};

struct VolumeVerdict {
  VolumeCode code = VolumeCode::kFits;
  std::string claim;  // the claim the verdict is about
  // When it fits: what placing the pod here decides for its unbound claims.
  std::vector<ClaimDecision> decisions;

  bool ok() const { return code == VolumeCode::kFits; }
  // kube-scheduler's wording where it has one, with the claim named:
  // "node(s) had volume node affinity conflict (claim data)".
  std::string Message() const;
};

// The volumes of a plan in progress: claims decided so far.
class VolumePlan {
 public:
  const ClaimDecision* Find(std::string_view namespace_name, std::string_view claim_name) const;
  bool VolumeTaken(std::string_view volume_name) const;
  void Add(const ClaimDecision& decision);
  const std::vector<ClaimDecision>& decisions() const { return decisions_; }

 private:
  std::vector<ClaimDecision> decisions_;
};

// Where a claim's users are, by claim key (namespace/name); nullptr for none.
using ClaimUsersLookup = std::function<const ClaimUsers*(std::string_view claim_key)>;

// Whether `pod` can have every claim it mounts on `node`, given the catalog,
// the claims decided earlier in the plan and where each claim's other users
// are. The first claim that does not fit decides the verdict.
VolumeVerdict CheckPodVolumes(const PodInfo& pod, const NodeInfo& node,
                              const StorageCatalog& catalog, const VolumePlan& plan,
                              const ClaimUsersLookup& users_of);

// Applies a committed plan's decisions to the catalog, as kube-scheduler's
// assume cache does: the claim shows its volume (or selected node) and the
// volume its claim, so later plans of the same cycle do not take them again.
// Informer updates replace these with what the API server holds.
void AssumeClaimDecisions(StorageCatalog& catalog, const std::vector<ClaimDecision>& decisions);
// Undoes AssumeClaimDecisions for a plan that was given up, where no informer
// write has replaced the assumption yet.
void RestoreClaimDecisions(StorageCatalog& catalog, const std::vector<ClaimDecision>& decisions);

// Adds to `awaited` each claim of `pod` (placed on `node`) that is not Bound
// yet and not in `awaited` already: a placed gang waits for these besides
// what its plan decided, since a claim whose volume or node was chosen by an
// earlier plan (or by its user) fits the node before it is bound. Nothing
// when volumes are not tracked.
void AddClaimsToAwait(const StorageCatalog& catalog, const PodInfo& pod, std::string_view node,
                      std::vector<ClaimDecision>& awaited);

// Whether the PV controller has finished what a decision asked: the claim is
// Bound (to the pre-bound volume, when one was chosen). False while it still
// may be; an error when it never will (the claim is gone or being deleted, or
// bound to another volume).
Result<bool> ClaimDecisionDone(const StorageCatalog& catalog, const ClaimDecision& decision);

// Where the claims a placed gang waits for stand, all at once.
struct AwaitedClaims {
  Status failure;                    // the first that will never be bound as chosen
  std::vector<std::string> unbound;  // the claims not Bound yet
  bool AllBound() const { return failure.ok() && unbound.empty(); }
};
AwaitedClaims CheckAwaitedClaims(const StorageCatalog& catalog,
                                 const std::vector<ClaimDecision>& awaited);

}  // namespace hybridjob::scheduler
