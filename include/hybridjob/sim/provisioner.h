// hybridjob-sim's volume provisioner: what a node-local dynamic provisioner
// (local-path, a CSI driver with node topology) does on a real cluster, for
// the sim's own nodes. It owns one StorageClass (volumeBindingMode
// WaitForFirstConsumer, provisioner kSimProvisioner), creates a PV pinned to
// the node a claim's scheduler selected (volume.kubernetes.io/selected-node)
// with its claimRef set, so the PV controller binds the two, and deletes the
// PVs it made once they are Released under the Delete reclaim policy.
//
// The decisions are pure functions of the objects (unit-tested); the
// Provisioner class is the shell: two informers, a work queue, one worker.
#pragma once

#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>
#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/informer.h>
#include <hybridjob/k8s/workqueue.h>

namespace hybridjob::sim {

// The provisioner name the sim answers to, in a StorageClass.
inline constexpr std::string_view kSimProvisioner = "sim.hybridjob.io/local";
// The annotation a provisioner marks the PVs it made with (the PV controller
// leaves their deletion to that provisioner).
inline constexpr std::string_view kAnnotationProvisionedBy = "pv.kubernetes.io/provisioned-by";
inline constexpr std::string_view kAnnotationDefaultClass =
    "storageclass.kubernetes.io/is-default-class";

// A PV's spec.nodeAffinity that pins it to one node by kubernetes.io/hostname,
// as node-local volumes are pinned.
nlohmann::json HostnameNodeAffinity(const std::string& node);

// The StorageClass the sim provisions for.
nlohmann::json MakeStorageClass(const std::string& name, bool default_class);

// The PV to create for a claim, or nullopt when the sim has nothing to do for
// it: bound already, being deleted, no node selected yet, a node that is not
// one of `own_nodes`, or a class that is not the sim's. `storage_class` is the
// claim's class as read (null when it does not exist). A claim the sim should
// provision but cannot (no storage request) gives an error for an Event.
Result<std::optional<nlohmann::json>> VolumeForClaim(const nlohmann::json& claim,
                                                     const nlohmann::json* storage_class,
                                                     const std::set<std::string>& own_nodes);

// Whether a PV is one the sim made that its reclaim policy says to delete
// now: Released (its claim is gone) or Failed, with policy Delete.
bool VolumeToDelete(const nlohmann::json& volume);

class Provisioner {
 public:
  // storage_class: the class to own (created when missing).
  Provisioner(k8s::ApiClient& client, std::string storage_class, bool default_class,
              std::set<std::string> own_nodes);
  ~Provisioner();
  Provisioner(const Provisioner&) = delete;
  Provisioner& operator=(const Provisioner&) = delete;

  // Creates the StorageClass (an existing one of that name is kept as is),
  // then starts watching claims and volumes.
  Status Start();
  void Stop();

 private:
  void Work();
  // Keys are "claim/<namespace>/<name>" and "volume/<name>".
  Status Handle(const std::string& key);
  Status ProvisionFor(const nlohmann::json& claim);

  k8s::ApiClient& client_;
  const std::string storage_class_;
  const bool default_class_;
  const std::set<std::string> own_nodes_;
  std::unique_ptr<k8s::Informer<nlohmann::json>> claims_;
  std::unique_ptr<k8s::Informer<nlohmann::json>> volumes_;
  std::unique_ptr<k8s::WorkQueue> queue_;
  std::thread worker_;
};

}  // namespace hybridjob::sim
