#include <algorithm>

#include <hybridjob/common/maps.h>
#include <hybridjob/scheduler/core/predicates.h>
#include <hybridjob/scheduler/core/volumes.h>

namespace hybridjob::scheduler {
namespace {

VolumeVerdict Reject(VolumeCode code, std::string_view claim) {
  VolumeVerdict verdict;
  verdict.code = code;
  verdict.claim = std::string(claim);
  return verdict;
}

bool VolumeNodeAffinityMatches(const VolumeInfo& volume, const NodeInfo& node) {
  if (!volume.node_affinity.has_value()) {
    return true;
  }
  return std::any_of(
      volume.node_affinity->begin(), volume.node_affinity->end(),
      [&node](const NodeSelectorTerm& term) { return NodeSelectorTermMatches(term, node); });
}

}  // namespace

// The one hostname a volume's node affinity allows, when it allows one: a
// single term that requires kubernetes.io/hostname In [x] (local volumes, as
// static provisioners write them).
std::optional<std::string> PinnedHostname(const VolumeInfo& volume) {
  if (!volume.node_affinity.has_value() || volume.node_affinity->size() != 1) {
    return std::nullopt;
  }
  for (const SelectorRequirement& requirement : volume.node_affinity->front().match_expressions) {
    if (requirement.key == kHostnameLabel && requirement.op == SelectorOperator::kIn &&
        requirement.values.size() == 1) {
      return requirement.values.front();
    }
  }
  return std::nullopt;
}

namespace {

// allowedTopologies terms hold only label requirements; a term without any
// matches every node (unlike a node selector term).
bool ClassAllowsNode(const StorageClassInfo& storage_class, const NodeInfo& node) {
  if (storage_class.allowed_topologies.empty()) {
    return true;
  }
  return std::any_of(storage_class.allowed_topologies.begin(),
                     storage_class.allowed_topologies.end(), [&node](const NodeSelectorTerm& term) {
                       return std::all_of(term.match_expressions.begin(),
                                          term.match_expressions.end(),
                                          [&node](const SelectorRequirement& requirement) {
                                            return requirement.Matches(node.labels);
                                          });
                     });
}

bool ReservedFor(const VolumeInfo& volume, const ClaimInfo& claim) {
  return volume.claim_namespace == claim.namespace_name && volume.claim_name == claim.name &&
         (volume.claim_uid.empty() || claim.uid.empty() || volume.claim_uid == claim.uid);
}

bool Taken(const VolumeInfo& volume, const VolumePlan& plan,
           const std::vector<ClaimDecision>& decided) {
  return plan.VolumeTaken(volume.name) ||
         std::any_of(decided.begin(), decided.end(), [&volume](const ClaimDecision& decision) {
           return decision.volume_name == volume.name;
         });
}

// The volume an unbound claim would get on this node, as the PV controller's
// matcher picks it: a volume reserved for the claim first, else the smallest
// available one of its class that offers its size, modes and volume mode
// (the name breaks ties, so every plan picks the same).
const VolumeInfo* MatchVolume(const ClaimInfo& claim, const NodeInfo& node,
                              const StorageCatalog& catalog, const VolumePlan& plan,
                              const std::vector<ClaimDecision>& decided) {
  const VolumeInfo* best = nullptr;
  const VolumeInfo* reserved_best = nullptr;
  auto consider = [&](const VolumeInfo& volume) {
    if (volume.block_mode != claim.block_mode || Taken(volume, plan, decided) ||
        !VolumeNodeAffinityMatches(volume, node)) {
      return;
    }
    if (volume.HasClaimRef()) {
      if (ReservedFor(volume, claim) &&
          (reserved_best == nullptr || volume.name < reserved_best->name)) {
        reserved_best = &volume;
      }
      return;
    }
    if (volume.phase != "Available" || volume.capacity_bytes < claim.requested_bytes ||
        (volume.access_modes & claim.access_modes) != claim.access_modes ||
        (claim.selector.has_value() && !claim.selector->Matches(volume.labels))) {
      return;
    }
    if (best == nullptr || volume.capacity_bytes < best->capacity_bytes ||
        (volume.capacity_bytes == best->capacity_bytes && volume.name < best->name)) {
      best = &volume;
    }
  };
  const StorageCatalog::Candidates candidates = catalog.CandidatesFor(claim.storage_class, node);
  for (const VolumeInfo* volume : candidates.pinned) {
    consider(*volume);
  }
  for (const VolumeInfo* volume : candidates.unpinned) {
    consider(*volume);
  }
  return reserved_best != nullptr ? reserved_best : best;
}

bool OnlyReadWriteOnce(AccessModes modes) {
  return (modes & kReadWriteOnce) != 0 && (modes & (kReadOnlyMany | kReadWriteMany)) == 0;
}

VolumeVerdict CheckClaim(const ClaimInfo* claim, std::string_view claim_name, const NodeInfo& node,
                         const StorageCatalog& catalog, const VolumePlan& plan,
                         const ClaimUsers* users, std::vector<ClaimDecision>* decided) {
  if (claim == nullptr) {
    return Reject(VolumeCode::kClaimNotFound, claim_name);
  }
  if (claim->deleting) {
    return Reject(VolumeCode::kClaimDeleting, claim_name);
  }
  // VolumeRestrictions: a ReadWriteOncePod claim has one user at most. A
  // ReadWriteOnce volume attaches to one node, so its users share that node.
  if (users != nullptr && !users->empty()) {
    if ((claim->access_modes & kReadWriteOncePod) != 0) {
      return Reject(VolumeCode::kReadWriteOncePodInUse, claim_name);
    }
    if (OnlyReadWriteOnce(claim->access_modes) &&
        std::any_of(users->begin(), users->end(),
                    [&node](const std::string& user_node) { return user_node != node.name; })) {
      return Reject(VolumeCode::kReadWriteOnceNode, claim_name);
    }
  }
  const ClaimDecision* earlier = plan.Find(claim->namespace_name, claim->name);
  std::string_view volume_name = claim->volume_name;
  if (earlier != nullptr) {
    if (earlier->volume_name.empty()) {
      // To be provisioned for the node an earlier member chose.
      return earlier->node_name == node.name ? VolumeVerdict{}
                                             : Reject(VolumeCode::kBindConflict, claim_name);
    }
    volume_name = earlier->volume_name;
  }
  if (!volume_name.empty()) {
    const VolumeInfo* volume = catalog.FindVolume(volume_name);
    if (volume == nullptr) {
      return Reject(VolumeCode::kVolumeMissing, claim_name);
    }
    return VolumeNodeAffinityMatches(*volume, node) ? VolumeVerdict{}
                                                    : Reject(VolumeCode::kNodeConflict, claim_name);
  }
  const StorageClassInfo* storage_class =
      claim->storage_class.empty() ? nullptr : catalog.FindClass(claim->storage_class);
  if (storage_class == nullptr || !storage_class->wait_for_first_consumer) {
    // The PV controller binds these on its own; a missing class never binds.
    return Reject(VolumeCode::kUnboundImmediate, claim_name);
  }
  if (!claim->selected_node.empty()) {
    // Provisioning for a node is under way; only that node will do.
    return claim->selected_node == node.name ? VolumeVerdict{}
                                             : Reject(VolumeCode::kBindConflict, claim_name);
  }
  for (const ClaimDecision& decision : *decided) {
    if (decision.IsFor(claim->namespace_name, claim->name)) {
      return {};  // the pod mounts the claim twice
    }
  }
  if (const VolumeInfo* volume = MatchVolume(*claim, node, catalog, plan, *decided)) {
    decided->push_back(
        ClaimDecision{claim->namespace_name, claim->name, volume->name, node.name, claim->uid});
    return {};
  }
  if (storage_class->provisioner.empty() || storage_class->provisioner == kNoProvisioner ||
      claim->selector.has_value() || !ClassAllowsNode(*storage_class, node)) {
    return Reject(VolumeCode::kBindConflict, claim_name);
  }
  decided->push_back(ClaimDecision{claim->namespace_name, claim->name, "", node.name, claim->uid});
  return {};
}

}  // namespace

void StorageCatalog::UpsertClaim(ClaimInfo claim) {
  std::string key = claim.Key();
  EraseKey(claims_before_assumed_, key);
  claims_.insert_or_assign(std::move(key), std::move(claim));
}

void StorageCatalog::AssumeClaim(ClaimInfo claim) {
  std::string key = claim.Key();
  auto it = claims_.find(key);
  if (it != claims_.end() && !claims_before_assumed_.contains(key)) {
    claims_before_assumed_.emplace(key, it->second);
  }
  claims_.insert_or_assign(std::move(key), std::move(claim));
}

void StorageCatalog::RestoreClaim(std::string_view namespace_name, std::string_view name) {
  auto saved = claims_before_assumed_.find(PodKey(namespace_name, name));
  if (saved == claims_before_assumed_.end()) {
    return;
  }
  claims_.insert_or_assign(saved->first, std::move(saved->second));
  claims_before_assumed_.erase(saved);
}

void StorageCatalog::AssumeVolume(VolumeInfo volume) {
  if (auto it = volumes_.find(volume.name);
      it != volumes_.end() && !volumes_before_assumed_.contains(volume.name)) {
    volumes_before_assumed_.emplace(volume.name, it->second);
  }
  PutVolume(std::move(volume));
}

void StorageCatalog::RestoreVolume(std::string_view name) {
  auto saved = volumes_before_assumed_.find(name);
  if (saved == volumes_before_assumed_.end()) {
    return;
  }
  VolumeInfo volume = std::move(saved->second);
  volumes_before_assumed_.erase(saved);
  PutVolume(std::move(volume));
}

void StorageCatalog::RemoveClaim(std::string_view namespace_name, std::string_view name) {
  const std::string key = PodKey(namespace_name, name);
  EraseKey(claims_before_assumed_, key);
  EraseKey(claims_, key);
}

void StorageCatalog::UpsertVolume(VolumeInfo volume) {
  EraseKey(volumes_before_assumed_, volume.name);
  PutVolume(std::move(volume));
}

void StorageCatalog::PutVolume(VolumeInfo volume) {
  if (auto it = volumes_.find(volume.name); it != volumes_.end()) {
    Unindex(it->second);
    it->second = std::move(volume);
    Index(it->second);
    return;
  }
  std::string name = volume.name;
  auto [it, inserted] = volumes_.emplace(std::move(name), std::move(volume));
  Index(it->second);
}

void StorageCatalog::RemoveVolume(std::string_view name) {
  EraseKey(volumes_before_assumed_, name);
  if (auto it = volumes_.find(name); it != volumes_.end()) {
    Unindex(it->second);
    volumes_.erase(it);
  }
}

void StorageCatalog::Index(const VolumeInfo& volume) {
  ClassVolumes& of_class = volumes_by_class_[volume.storage_class];
  if (std::optional<std::string> hostname = PinnedHostname(volume)) {
    of_class.by_hostname[*hostname].push_back(&volume);
  } else {
    of_class.unpinned.push_back(&volume);
  }
}

void StorageCatalog::Unindex(const VolumeInfo& volume) {
  auto of_class = volumes_by_class_.find(volume.storage_class);
  if (of_class == volumes_by_class_.end()) {
    return;
  }
  auto drop = [&volume](std::vector<const VolumeInfo*>& list) {
    list.erase(std::remove(list.begin(), list.end(), &volume), list.end());
  };
  if (std::optional<std::string> hostname = PinnedHostname(volume)) {
    auto pinned = of_class->second.by_hostname.find(*hostname);
    if (pinned != of_class->second.by_hostname.end()) {
      drop(pinned->second);
      if (pinned->second.empty()) {
        of_class->second.by_hostname.erase(pinned);
      }
    }
  } else {
    drop(of_class->second.unpinned);
  }
  if (of_class->second.by_hostname.empty() && of_class->second.unpinned.empty()) {
    volumes_by_class_.erase(of_class);
  }
}

StorageCatalog::Candidates StorageCatalog::CandidatesFor(std::string_view storage_class,
                                                         const NodeInfo& node) const {
  auto of_class = volumes_by_class_.find(storage_class);
  if (of_class == volumes_by_class_.end()) {
    return {};
  }
  Candidates candidates;
  candidates.unpinned = of_class->second.unpinned;
  if (const std::string* hostname = node.labels.Find(kHostnameLabel)) {
    if (auto pinned = of_class->second.by_hostname.find(*hostname);
        pinned != of_class->second.by_hostname.end()) {
      candidates.pinned = pinned->second;
    }
  }
  return candidates;
}

void StorageCatalog::UpsertClass(StorageClassInfo storage_class) {
  std::string name = storage_class.name;
  classes_.insert_or_assign(std::move(name), std::move(storage_class));
}

void StorageCatalog::RemoveClass(std::string_view name) {
  EraseKey(classes_, name);
}

void StorageCatalog::ReplaceClaims(std::vector<ClaimInfo> claims) {
  claims_.clear();
  claims_before_assumed_.clear();
  for (ClaimInfo& claim : claims) {
    UpsertClaim(std::move(claim));
  }
}

void StorageCatalog::ReplaceVolumes(std::vector<VolumeInfo> volumes) {
  volumes_.clear();
  volumes_by_class_.clear();
  volumes_before_assumed_.clear();
  for (VolumeInfo& volume : volumes) {
    UpsertVolume(std::move(volume));
  }
}

void StorageCatalog::ReplaceClasses(std::vector<StorageClassInfo> classes) {
  classes_.clear();
  for (StorageClassInfo& storage_class : classes) {
    UpsertClass(std::move(storage_class));
  }
}

const ClaimInfo* StorageCatalog::FindClaim(std::string_view namespace_name,
                                           std::string_view name) const {
  return FindClaimByKey(PodKey(namespace_name, name));
}

const ClaimInfo* StorageCatalog::FindClaimByKey(std::string_view claim_key) const {
  auto it = claims_.find(claim_key);
  return it == claims_.end() ? nullptr : &it->second;
}

const VolumeInfo* StorageCatalog::FindVolume(std::string_view name) const {
  auto it = volumes_.find(name);
  return it == volumes_.end() ? nullptr : &it->second;
}

const StorageClassInfo* StorageCatalog::FindClass(std::string_view name) const {
  auto it = classes_.find(name);
  return it == classes_.end() ? nullptr : &it->second;
}

std::string VolumeVerdict::Message() const {
  std::string quoted = "\"" + claim + "\"";
  switch (code) {
    case VolumeCode::kFits:
      return "fits";
    case VolumeCode::kClaimNotFound:
      return "persistentvolumeclaim " + quoted + " not found";
    case VolumeCode::kClaimDeleting:
      return "persistentvolumeclaim " + quoted + " is being deleted";
    case VolumeCode::kUnboundImmediate:
      return "pod has unbound immediate PersistentVolumeClaims (claim " + quoted + ")";
    case VolumeCode::kVolumeMissing:
      return "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s) (claim " +
             quoted + ")";
    case VolumeCode::kNodeConflict:
      return "node(s) had volume node affinity conflict (claim " + quoted + ")";
    case VolumeCode::kBindConflict:
      return "node(s) didn't find available persistent volumes to bind (claim " + quoted + ")";
    case VolumeCode::kReadWriteOnceNode:
      return "node(s) do not hold the ReadWriteOnce claim " + quoted + "'s other users";
    case VolumeCode::kReadWriteOncePodInUse:
      return "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod "
             "access mode (claim " +
             quoted + ")";
  }
  return "unknown";
}

const ClaimDecision* VolumePlan::Find(std::string_view namespace_name,
                                      std::string_view claim_name) const {
  for (const ClaimDecision& decision : decisions_) {
    if (decision.IsFor(namespace_name, claim_name)) {
      return &decision;
    }
  }
  return nullptr;
}

bool VolumePlan::VolumeTaken(std::string_view volume_name) const {
  return std::any_of(decisions_.begin(), decisions_.end(), [&](const ClaimDecision& decision) {
    return !decision.volume_name.empty() && decision.volume_name == volume_name;
  });
}

void VolumePlan::Add(const ClaimDecision& decision) {
  if (Find(decision.namespace_name, decision.claim_name) == nullptr) {
    decisions_.push_back(decision);
  }
}

VolumeVerdict CheckPodVolumes(const PodInfo& pod, const NodeInfo& node,
                              const StorageCatalog& catalog, const VolumePlan& plan,
                              const ClaimUsersLookup& users_of) {
  VolumeVerdict fits;
  for (const std::string& name : pod.claims) {
    const std::string key = PodKey(pod.namespace_name, name);
    const ClaimInfo* claim = catalog.FindClaimByKey(key);
    const ClaimUsers* users = users_of ? users_of(key) : nullptr;
    VolumeVerdict verdict = CheckClaim(claim, name, node, catalog, plan, users, &fits.decisions);
    if (!verdict.ok()) {
      return verdict;
    }
  }
  return fits;
}

void AssumeClaimDecisions(StorageCatalog& catalog, const std::vector<ClaimDecision>& decisions) {
  for (const ClaimDecision& decision : decisions) {
    const ClaimInfo* claim = catalog.FindClaim(decision.namespace_name, decision.claim_name);
    if (claim == nullptr) {
      continue;
    }
    ClaimInfo assumed = *claim;
    if (decision.volume_name.empty()) {
      assumed.selected_node = decision.node_name;
    } else if (const VolumeInfo* volume = catalog.FindVolume(decision.volume_name)) {
      assumed.volume_name = decision.volume_name;
      VolumeInfo reserved = *volume;
      reserved.claim_namespace = claim->namespace_name;
      reserved.claim_name = claim->name;
      reserved.claim_uid = claim->uid;
      catalog.AssumeVolume(std::move(reserved));
    }
    catalog.AssumeClaim(std::move(assumed));
  }
}

void RestoreClaimDecisions(StorageCatalog& catalog, const std::vector<ClaimDecision>& decisions) {
  for (const ClaimDecision& decision : decisions) {
    catalog.RestoreClaim(decision.namespace_name, decision.claim_name);
    if (!decision.volume_name.empty()) {
      catalog.RestoreVolume(decision.volume_name);
    }
  }
}

void AddClaimsToAwait(const StorageCatalog& catalog, const PodInfo& pod, std::string_view node,
                      std::vector<ClaimDecision>& awaited) {
  if (!catalog.tracked()) {
    return;
  }
  for (const std::string& name : pod.claims) {
    const bool listed = std::any_of(
        awaited.begin(), awaited.end(),
        [&](const ClaimDecision& decision) { return decision.IsFor(pod.namespace_name, name); });
    const ClaimInfo* claim = catalog.FindClaim(pod.namespace_name, name);
    if (listed || (claim != nullptr && claim->bound)) {
      continue;
    }
    ClaimDecision wait{pod.namespace_name, name, "", std::string(node), ""};
    if (claim != nullptr) {
      wait.volume_name = claim->volume_name;
      wait.claim_uid = claim->uid;
    }
    awaited.push_back(std::move(wait));
  }
}

Result<bool> ClaimDecisionDone(const StorageCatalog& catalog, const ClaimDecision& decision) {
  const std::string quoted = "persistentvolumeclaim \"" + decision.claim_name + "\"";
  const ClaimInfo* claim = catalog.FindClaim(decision.namespace_name, decision.claim_name);
  if (claim == nullptr) {
    return NotFound(quoted + " not found");
  }
  if (claim->deleting) {
    return Status(StatusCode::kConflict, quoted + " is being deleted");
  }
  if (!claim->bound) {
    return false;
  }
  if (!decision.volume_name.empty() && claim->volume_name != decision.volume_name) {
    return Status(StatusCode::kConflict, quoted + " was bound to volume \"" + claim->volume_name +
                                             "\", not to \"" + decision.volume_name +
                                             "\" chosen for it");
  }
  return true;
}

AwaitedClaims CheckAwaitedClaims(const StorageCatalog& catalog,
                                 const std::vector<ClaimDecision>& awaited) {
  AwaitedClaims out;
  for (const ClaimDecision& decision : awaited) {
    Result<bool> done = ClaimDecisionDone(catalog, decision);
    if (!done.ok()) {
      out.failure = done.status();
      return out;
    }
    if (!*done) {
      out.unbound.push_back(decision.claim_name);
    }
  }
  return out;
}

}  // namespace hybridjob::scheduler
