// Parsing of the storage objects the planner checks volumes against
// (objects/storage.h): claims, persistent volumes and storage classes.
#include <hybridjob/common/json_fields.h>
#include <hybridjob/common/quantity.h>
#include <hybridjob/scheduler/objects/storage.h>

#include "strict_fields.h"

namespace hybridjob::scheduler {
namespace {

using nlohmann::json;

// The class annotation that predates spec.storageClassName; where set, the PV
// controller and kube-scheduler read it first.
constexpr std::string_view kLegacyClassAnnotation = "volume.beta.kubernetes.io/storage-class";

const json& Metadata(const json& object) {
  static const json kEmpty = json::object();
  const json* metadata = Strict().Object(object, "metadata", "");
  return metadata != nullptr ? *metadata : kEmpty;
}

std::string RequiredName(const json& metadata) {
  std::string name = Strict().String(metadata, "name", "metadata").value_or("");
  if (name.empty()) {
    ThrowFieldError("metadata.name", "required");
  }
  return name;
}

using Annotations = std::map<std::string, std::string>;

Annotations AnnotationsOf(const json& metadata) {
  return Strict().StringMap(metadata, "annotations", "metadata");
}

std::string StorageClassOf(const Annotations& annotations, const json* spec) {
  if (auto legacy = annotations.find(std::string(kLegacyClassAnnotation));
      legacy != annotations.end()) {
    return legacy->second;
  }
  return spec != nullptr ? Strict().String(*spec, "storageClassName", "spec").value_or("") : "";
}

AccessModes AccessModesOf(const json& spec) {
  AccessModes modes = 0;
  const std::vector<std::string> names = Strict().StringList(spec, "accessModes", "spec");
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (name == "ReadWriteOnce") {
      modes |= kReadWriteOnce;
    } else if (name == "ReadOnlyMany") {
      modes |= kReadOnlyMany;
    } else if (name == "ReadWriteMany") {
      modes |= kReadWriteMany;
    } else if (name == "ReadWriteOncePod") {
      modes |= kReadWriteOncePod;
    } else {
      ThrowFieldError(IndexPath("spec.accessModes", i), "unsupported access mode \"" + name + "\"");
    }
  }
  return modes;
}

bool BlockMode(const json& spec) {
  const std::string mode = Strict().String(spec, "volumeMode", "spec").value_or("Filesystem");
  if (mode != "Filesystem" && mode != "Block") {
    ThrowFieldError("spec.volumeMode", "must be Filesystem or Block, not \"" + mode + "\"");
  }
  return mode == "Block";
}

// The storage amount of a ResourceList-shaped member (requests, capacity).
int64_t StorageBytes(const json& parent, std::string_view key, const std::string& path) {
  const json* resources = Strict().Object(parent, key, path);
  if (resources == nullptr) {
    return 0;
  }
  const std::string resources_path = JoinPath(path, key);
  std::optional<std::string> text = Strict().Quantity(*resources, "storage", resources_path);
  if (!text.has_value()) {
    return 0;
  }
  Result<int64_t> bytes = ParseQuantity(*text);
  if (!bytes.ok()) {
    ThrowFieldError(JoinPath(resources_path, "storage"), bytes.status().message());
  }
  if (*bytes < 0) {
    ThrowFieldError(JoinPath(resources_path, "storage"), "must not be negative");
  }
  return *bytes;
}

ClaimInfo ParseClaimOrThrow(const json& object) {
  if (!object.is_object()) {
    ThrowFieldError("persistentvolumeclaim", "expected an object");
  }
  const json& metadata = Metadata(object);
  ClaimInfo claim;
  claim.name = RequiredName(metadata);
  claim.namespace_name = Strict().String(metadata, "namespace", "metadata").value_or("");
  if (claim.namespace_name.empty()) {
    ThrowFieldError("metadata.namespace", "required");
  }
  claim.uid = Strict().String(metadata, "uid", "metadata").value_or("");
  claim.deleting = Strict().String(metadata, "deletionTimestamp", "metadata").has_value();
  const Annotations annotations = AnnotationsOf(metadata);
  if (auto selected = annotations.find(std::string(kAnnotationSelectedNode));
      selected != annotations.end()) {
    claim.selected_node = selected->second;
  }
  if (const json* status = Strict().Object(object, "status", "")) {
    claim.bound = Strict().String(*status, "phase", "status").value_or("") == "Bound";
  }
  const json* spec = Strict().Object(object, "spec", "");
  claim.storage_class = StorageClassOf(annotations, spec);
  if (spec == nullptr) {
    return claim;
  }
  claim.volume_name = Strict().String(*spec, "volumeName", "spec").value_or("");
  claim.access_modes = AccessModesOf(*spec);
  claim.block_mode = BlockMode(*spec);
  if (const json* resources = Strict().Object(*spec, "resources", "spec")) {
    claim.requested_bytes = StorageBytes(*resources, "requests", "spec.resources");
  }
  if (const json* selector = JsonMember(*spec, "selector")) {
    claim.selector = ValueOrThrowFieldError(ParseLabelSelectorJson(*selector, "spec.selector"));
  }
  return claim;
}

VolumeInfo ParseVolumeOrThrow(const json& object) {
  if (!object.is_object()) {
    ThrowFieldError("persistentvolume", "expected an object");
  }
  const json& metadata = Metadata(object);
  VolumeInfo volume;
  volume.name = RequiredName(metadata);
  volume.labels = LabelMap(Strict().StringMap(metadata, "labels", "metadata"));
  const json* spec = Strict().Object(object, "spec", "");
  volume.storage_class = StorageClassOf(AnnotationsOf(metadata), spec);
  // A volume the PV controller has not looked at yet is Pending.
  volume.phase = "Pending";
  if (const json* status = Strict().Object(object, "status", "")) {
    volume.phase = Strict().String(*status, "phase", "status").value_or("Pending");
  }
  if (spec == nullptr) {
    return volume;
  }
  volume.access_modes = AccessModesOf(*spec);
  volume.block_mode = BlockMode(*spec);
  volume.capacity_bytes = StorageBytes(*spec, "capacity", "spec");
  if (const json* claim_ref = Strict().Object(*spec, "claimRef", "spec")) {
    volume.claim_namespace = Strict().String(*claim_ref, "namespace", "spec.claimRef").value_or("");
    volume.claim_name = Strict().String(*claim_ref, "name", "spec.claimRef").value_or("");
    volume.claim_uid = Strict().String(*claim_ref, "uid", "spec.claimRef").value_or("");
  }
  if (const json* affinity = Strict().Object(*spec, "nodeAffinity", "spec")) {
    if (const json* required = Strict().Object(*affinity, "required", "spec.nodeAffinity")) {
      const json* terms =
          Strict().Array(*required, "nodeSelectorTerms", "spec.nodeAffinity.required");
      volume.node_affinity = ValueOrThrowFieldError(
          ParseNodeSelectorTermsJson(terms != nullptr ? *terms : json::array(),
                                     "spec.nodeAffinity.required.nodeSelectorTerms"));
    }
  }
  return volume;
}

StorageClassInfo ParseStorageClassOrThrow(const json& object) {
  if (!object.is_object()) {
    ThrowFieldError("storageclass", "expected an object");
  }
  StorageClassInfo storage_class;
  storage_class.name = RequiredName(Metadata(object));
  storage_class.provisioner = Strict().String(object, "provisioner", "").value_or("");
  const std::string mode = Strict().String(object, "volumeBindingMode", "").value_or("Immediate");
  if (mode != "Immediate" && mode != "WaitForFirstConsumer") {
    ThrowFieldError("volumeBindingMode",
                    "must be Immediate or WaitForFirstConsumer, not \"" + mode + "\"");
  }
  storage_class.wait_for_first_consumer = mode == "WaitForFirstConsumer";
  const json* topologies = Strict().Array(object, "allowedTopologies", "");
  if (topologies == nullptr) {
    return storage_class;
  }
  for (size_t i = 0; i < topologies->size(); ++i) {
    const std::string path = IndexPath("allowedTopologies", i);
    const json& topology = (*topologies)[i];
    if (!topology.is_object()) {
      ThrowFieldError(path, "expected an object");
    }
    NodeSelectorTerm term;
    const json* expressions = Strict().Array(topology, "matchLabelExpressions", path);
    for (size_t j = 0; expressions != nullptr && j < expressions->size(); ++j) {
      const std::string item_path = IndexPath(JoinPath(path, "matchLabelExpressions"), j);
      const json& item = (*expressions)[j];
      if (!item.is_object()) {
        ThrowFieldError(item_path, "expected an object");
      }
      SelectorRequirement requirement;
      requirement.key = Strict().String(item, "key", item_path).value_or("");
      if (requirement.key.empty()) {
        ThrowFieldError(JoinPath(item_path, "key"), "required");
      }
      requirement.op = SelectorOperator::kIn;
      requirement.values = Strict().StringList(item, "values", item_path);
      term.match_expressions.push_back(std::move(requirement));
    }
    storage_class.allowed_topologies.push_back(std::move(term));
  }
  return storage_class;
}

}  // namespace

Result<ClaimInfo> ParseClaim(const nlohmann::json& claim) {
  return GuardedParse<ClaimInfo>("persistentvolumeclaim", [&] { return ParseClaimOrThrow(claim); });
}

Result<VolumeInfo> ParseVolume(const nlohmann::json& volume) {
  return GuardedParse<VolumeInfo>("persistentvolume", [&] { return ParseVolumeOrThrow(volume); });
}

Result<StorageClassInfo> ParseStorageClass(const nlohmann::json& storage_class) {
  return GuardedParse<StorageClassInfo>("storageclass",
                                        [&] { return ParseStorageClassOrThrow(storage_class); });
}

}  // namespace hybridjob::scheduler
