#include <utility>

#include <spdlog/spdlog.h>

#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/object_meta.h>
#include <hybridjob/scheduler/shell/claim_writer.h>

namespace hybridjob::scheduler {

using nlohmann::json;

json PreBindVolumePatch(const ClaimDecision& decision, const std::string& resource_version) {
  json claim_ref = {{"kind", "PersistentVolumeClaim"},
                    {"apiVersion", "v1"},
                    {"namespace", decision.namespace_name},
                    {"name", decision.claim_name}};
  if (!decision.claim_uid.empty()) {
    claim_ref["uid"] = decision.claim_uid;
  }
  return {{"metadata",
           {{"resourceVersion", resource_version},
            {"annotations", {{std::string(kAnnotationBoundByController), "yes"}}}}},
          {"spec", {{"claimRef", std::move(claim_ref)}}}};
}

json SelectNodePatch(const ClaimDecision& decision) {
  json metadata = {{"annotations", {{std::string(kAnnotationSelectedNode), decision.node_name}}}};
  if (!decision.claim_uid.empty()) {
    // A claim deleted and created again under the name is not the one planned.
    metadata["uid"] = decision.claim_uid;
  }
  return {{"metadata", std::move(metadata)}};
}

namespace {

Status PreBindVolume(k8s::ApiClient& client, const ClaimDecision& decision) {
  auto volume = client.Get(k8s::resources::PersistentVolumes(), "", decision.volume_name);
  if (!volume) {
    return volume.status();
  }
  const json* claim_ref = nullptr;
  if (auto spec = volume->find("spec"); spec != volume->end() && spec->is_object()) {
    if (auto ref = spec->find("claimRef"); ref != spec->end() && ref->is_object()) {
      claim_ref = &*ref;
    }
  }
  if (claim_ref != nullptr) {
    const bool ours = claim_ref->value("namespace", "") == decision.namespace_name &&
                      claim_ref->value("name", "") == decision.claim_name &&
                      (decision.claim_uid.empty() || claim_ref->value("uid", "").empty() ||
                       claim_ref->value("uid", "") == decision.claim_uid);
    if (ours) {
      return Status::Ok();
    }
    return Status(StatusCode::kConflict,
                  "persistentvolume \"" + decision.volume_name + "\" is reserved for claim " +
                      claim_ref->value("namespace", "") + "/" + claim_ref->value("name", ""));
  }
  const json patch = PreBindVolumePatch(decision, k8s::ResourceVersionOf(*volume));
  auto patched = client.Patch(k8s::resources::PersistentVolumes(), "", decision.volume_name,
                              k8s::PatchType::kMerge, patch.dump());
  return patched ? Status::Ok() : patched.status();
}

}  // namespace

Status WriteClaimDecision(k8s::ApiClient& client, const ClaimDecision& decision) {
  if (!decision.volume_name.empty()) {
    return PreBindVolume(client, decision);
  }
  auto patched =
      client.Patch(k8s::resources::PersistentVolumeClaims(), decision.namespace_name,
                   decision.claim_name, k8s::PatchType::kMerge, SelectNodePatch(decision).dump());
  return patched ? Status::Ok() : patched.status();
}

ClaimWriter::ClaimWriter(k8s::ApiClient& client, OutcomeSink outcomes)
    : client_(client), outcomes_(std::move(outcomes)) {}

ClaimWriter::~ClaimWriter() {
  Stop();
}

void ClaimWriter::Start() {
  worker_ = std::thread([this] { Work(); });
}

void ClaimWriter::Stop() {
  queue_.ShutDown();
  if (worker_.joinable()) {
    worker_.join();
  }
}

void ClaimWriter::Submit(std::string key, std::vector<ClaimDecision> decisions) {
  {
    MutexLock lock(mu_);
    pending_[key] = std::move(decisions);
  }
  queue_.Add(key);
}

void ClaimWriter::Work() {
  while (auto key = queue_.Get()) {
    std::vector<ClaimDecision> decisions;
    {
      MutexLock lock(mu_);
      auto it = pending_.find(*key);
      if (it != pending_.end()) {
        decisions = std::move(it->second);
        pending_.erase(it);
      }
    }
    ClaimWriteOutcome outcome{*key, Status::Ok()};
    for (const ClaimDecision& decision : decisions) {
      Status written = WriteClaimDecision(client_, decision);
      if (!written.ok()) {
        spdlog::warn("gang {}: claim {}/{}: {}", *key, decision.namespace_name, decision.claim_name,
                     written.ToString());
        outcome.status = std::move(written);
        break;  // the gang is planned again; what was written is honoured then
      }
    }
    outcomes_(std::move(outcome));
    queue_.Done(*key);
  }
}

}  // namespace hybridjob::scheduler
