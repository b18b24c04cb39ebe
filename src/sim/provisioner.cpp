#include <utility>

#include <spdlog/spdlog.h>

#include <hybridjob/common/json_fields.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/object_meta.h>
#include <hybridjob/k8s/rate_limiter.h>
#include <hybridjob/scheduler/core/volumes.h>
#include <hybridjob/sim/provisioner.h>

namespace hybridjob::sim {

using nlohmann::json;

namespace {

// Where the sim says its volumes live on a node (nothing is written there).
constexpr std::string_view kVolumeRoot = "/var/lib/hybridjob-sim/volumes/";
constexpr std::string_view kClaimKeyPrefix = "claim/";
constexpr std::string_view kVolumeKeyPrefix = "volume/";

// A string member; absent, null or of another type reads as empty.
std::string StringAt(const json& object, std::string_view key) {
  return JsonFields(JsonFields::Mode::kLenient).String(object, key, "").value_or("");
}

}  // namespace

json HostnameNodeAffinity(const std::string& node) {
  const json requirement = {{"key", std::string(scheduler::kHostnameLabel)},
                            {"operator", "In"},
                            {"values", json::array({node})}};
  return {
      {"required",
       {{"nodeSelectorTerms", json::array({{{"matchExpressions", json::array({requirement})}}})}}}};
}

json MakeStorageClass(const std::string& name, bool default_class) {
  json storage_class = {
      {"apiVersion", "storage.k8s.io/v1"}, {"kind", "StorageClass"},
      {"metadata", {{"name", name}}},      {"provisioner", std::string(kSimProvisioner)},
      {"reclaimPolicy", "Delete"},         {"volumeBindingMode", "WaitForFirstConsumer"}};
  if (default_class) {
    storage_class["metadata"]["annotations"] = {{std::string(kAnnotationDefaultClass), "true"}};
  }
  return storage_class;
}

Result<std::optional<json>> VolumeForClaim(const json& claim, const json* storage_class,
                                           const std::set<std::string>& own_nodes) {
  const json* metadata = JsonMember(claim, "metadata");
  const json* spec = JsonMember(claim, "spec");
  if (metadata == nullptr || spec == nullptr ||
      JsonMember(*metadata, "deletionTimestamp") != nullptr ||
      !StringAt(*spec, "volumeName").empty()) {
    return std::optional<json>();
  }
  const std::string node = k8s::AnnotationOf(claim, scheduler::kAnnotationSelectedNode);
  if (node.empty() || !own_nodes.contains(node) || storage_class == nullptr ||
      StringAt(*storage_class, "provisioner") != kSimProvisioner) {
    return std::optional<json>();
  }
  const std::string uid = k8s::UidOf(claim);
  const json* resources = JsonMember(*spec, "resources");
  const json* requests = resources != nullptr ? JsonMember(*resources, "requests") : nullptr;
  const json* storage = requests != nullptr ? JsonMember(*requests, "storage") : nullptr;
  if (uid.empty() || storage == nullptr || !storage->is_string()) {
    return InvalidArgument("persistentvolumeclaim " + k8s::NamespaceOf(claim) + "/" +
                           k8s::NameOf(claim) +
                           ": no spec.resources.requests.storage to provision");
  }
  // External provisioners name a PV after its claim's uid: a retry after a
  // lost answer finds the volume it made already.
  const std::string name = "pvc-" + uid;
  json access_modes = json::array({"ReadWriteOnce"});
  if (const json* modes = JsonMember(*spec, "accessModes");
      modes != nullptr && modes->is_array() && !modes->empty()) {
    access_modes = *modes;
  }
  std::string reclaim = StringAt(*storage_class, "reclaimPolicy");
  if (reclaim.empty()) {
    reclaim = "Delete";
  }
  json volume = {{"apiVersion", "v1"},
                 {"kind", "PersistentVolume"},
                 {"metadata",
                  {{"name", name},
                   {"annotations", {{std::string(kAnnotationProvisionedBy), kSimProvisioner}}}}},
                 {"spec",
                  {{"capacity", {{"storage", *storage}}},
                   {"accessModes", access_modes},
                   {"storageClassName", k8s::NameOf(*storage_class)},
                   {"persistentVolumeReclaimPolicy", reclaim},
                   {"claimRef",
                    {{"kind", "PersistentVolumeClaim"},
                     {"apiVersion", "v1"},
                     {"namespace", k8s::NamespaceOf(claim)},
                     {"name", k8s::NameOf(claim)},
                     {"uid", uid}}},
                   {"local", {{"path", std::string(kVolumeRoot) + name}}},
                   {"nodeAffinity", HostnameNodeAffinity(node)}}}};
  if (const std::string mode = StringAt(*spec, "volumeMode"); !mode.empty()) {
    volume["spec"]["volumeMode"] = mode;
  }
  return std::optional<json>(std::move(volume));
}

bool VolumeToDelete(const json& volume) {
  if (k8s::AnnotationOf(volume, kAnnotationProvisionedBy) != kSimProvisioner) {
    return false;
  }
  const json* spec = JsonMember(volume, "spec");
  const json* status = JsonMember(volume, "status");
  if (spec == nullptr || status == nullptr ||
      StringAt(*spec, "persistentVolumeReclaimPolicy") != "Delete") {
    return false;
  }
  const std::string phase = StringAt(*status, "phase");
  return phase == "Released" || phase == "Failed";
}

Provisioner::Provisioner(k8s::ApiClient& client, std::string storage_class, bool default_class,
                         std::set<std::string> own_nodes)
    : client_(client),
      storage_class_(std::move(storage_class)),
      default_class_(default_class),
      own_nodes_(std::move(own_nodes)) {}

Provisioner::~Provisioner() {
  Stop();
}

Status Provisioner::Start() {
  auto created = client_.Create(k8s::resources::StorageClasses(), "",
                                MakeStorageClass(storage_class_, default_class_));
  if (!created && !k8s::IsAlreadyExists(created.status())) {
    return Status(created.status().code(),
                  "storage class " + storage_class_ + ": " + created.status().message());
  }
  queue_ = std::make_unique<k8s::WorkQueue>(std::make_unique<k8s::WorkqueueRateLimiter>(
      std::chrono::milliseconds(200), std::chrono::seconds(30), 100000, 100000));
  auto watch = [this](k8s::Resource resource, std::string prefix) {
    k8s::InformerOptions<json> options;
    options.reflector.resource = std::move(resource);
    auto informer = std::make_unique<k8s::Informer<json>>(client_, options);
    k8s::EventHandler<json> handler;
    handler.on_add = [this, prefix](const std::shared_ptr<const json>& object) {
      queue_->Add(prefix + k8s::ObjectKeyOf(*object));
    };
    handler.on_update = [this, prefix](const auto&, const std::shared_ptr<const json>& object) {
      queue_->Add(prefix + k8s::ObjectKeyOf(*object));
    };
    informer->AddEventHandler(std::move(handler));
    informer->Start();
    return informer;
  };
  claims_ = watch(k8s::resources::PersistentVolumeClaims(), std::string(kClaimKeyPrefix));
  volumes_ = watch(k8s::resources::PersistentVolumes(), std::string(kVolumeKeyPrefix));
  worker_ = std::thread([this] { Work(); });
  spdlog::info("provisioning claims of storage class {} (provisioner {}){}", storage_class_,
               kSimProvisioner, default_class_ ? ", the default class" : "");
  return Status::Ok();
}

void Provisioner::Stop() {
  if (claims_) {
    claims_->Stop();
  }
  if (volumes_) {
    volumes_->Stop();
  }
  if (queue_) {
    queue_->ShutDown();
  }
  if (worker_.joinable()) {
    worker_.join();
  }
}

void Provisioner::Work() {
  while (auto key = queue_->Get()) {
    Status handled = Handle(*key);
    if (handled.ok()) {
      queue_->Forget(*key);
    } else {
      spdlog::warn("provisioner: {}: {}", *key, handled.ToString());
      queue_->AddRateLimited(*key);
    }
    queue_->Done(*key);
  }
}

Status Provisioner::Handle(const std::string& key) {
  if (key.starts_with(kVolumeKeyPrefix)) {
    auto volume = volumes_->store().Get(key.substr(kVolumeKeyPrefix.size()));
    if (volume == nullptr || !VolumeToDelete(*volume)) {
      return Status::Ok();
    }
    k8s::DeleteOptions options;
    options.precondition_uid = k8s::UidOf(*volume);
    Status deleted =
        client_.Delete(k8s::resources::PersistentVolumes(), "", k8s::NameOf(*volume), options);
    if (deleted.ok()) {
      spdlog::info("deleted released volume {}", k8s::NameOf(*volume));
    }
    return deleted.ok() || k8s::IsNotFound(deleted) || k8s::IsConflict(deleted) ? Status::Ok()
                                                                                : deleted;
  }
  auto claim = claims_->store().Get(key.substr(kClaimKeyPrefix.size()));
  if (claim == nullptr) {
    return Status::Ok();
  }
  return ProvisionFor(*claim);
}

Status Provisioner::ProvisionFor(const json& claim) {
  Result<scheduler::ClaimInfo> parsed = scheduler::ParseClaim(claim);
  if (!parsed.ok()) {
    spdlog::warn("provisioner: {}", parsed.status().message());
    return Status::Ok();  // nothing a retry changes
  }
  if (parsed->storage_class.empty() || parsed->selected_node.empty()) {
    return Status::Ok();
  }
  auto storage_class = client_.Get(k8s::resources::StorageClasses(), "", parsed->storage_class);
  if (!storage_class) {
    return k8s::IsNotFound(storage_class.status()) ? Status::Ok() : storage_class.status();
  }
  auto volume = VolumeForClaim(claim, &*storage_class, own_nodes_);
  if (!volume) {
    spdlog::warn("provisioner: {}", volume.status().message());
    return Status::Ok();  // nothing a retry changes; the claim stays Pending
  }
  if (!volume->has_value()) {
    return Status::Ok();
  }
  auto created = client_.Create(k8s::resources::PersistentVolumes(), "", **volume);
  if (!created && !k8s::IsAlreadyExists(created.status())) {
    return created.status();
  }
  if (created) {
    spdlog::info("provisioned volume {} for claim {}/{} on node {}", k8s::NameOf(**volume),
                 k8s::NamespaceOf(claim), k8s::NameOf(claim),
                 k8s::AnnotationOf(claim, scheduler::kAnnotationSelectedNode));
  }
  return Status::Ok();
}

}  // namespace hybridjob::sim
