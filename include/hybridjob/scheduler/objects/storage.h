// The storage objects the planner checks volumes against, as the scheduler
// reads them from the API server: claims, persistent volumes and storage
// classes, and their parsing. Pure data; the decisions are in
// core/volumes.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/objects/objects.h>

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

// core/v1 PersistentVolumeClaim and PersistentVolume, storage.k8s.io/v1
// StorageClass. The class is the legacy volume.beta.kubernetes.io/storage-class
// annotation when set, else spec.storageClassName, as the PV controller reads
// it. Malformed fields give an InvalidArgument status naming the field.
Result<ClaimInfo> ParseClaim(const nlohmann::json& claim);
Result<VolumeInfo> ParseVolume(const nlohmann::json& volume);
Result<StorageClassInfo> ParseStorageClass(const nlohmann::json& storage_class);

}  // namespace hybridjob::scheduler
