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
#include <hybridjob/scheduler/objects/objects.h>
#include <hybridjob/scheduler/objects/storage.h>

namespace hybridjob::scheduler {

// The one hostname a volume's node affinity allows, when it allows only one
// (a single term requiring kubernetes.io/hostname In [x]: local volumes).
std::optional<std::string> PinnedHostname(const VolumeInfo& volume);

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
