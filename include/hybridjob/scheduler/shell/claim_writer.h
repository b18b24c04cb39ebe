// The binder's volume stage: before a placed gang's members are bound, what
// its plan decided for their unbound claims is written to the API server, as
// kube-scheduler's VolumeBinding PreBind does: a chosen PersistentVolume is
// pre-bound (spec.claimRef), a claim to be provisioned gets the
// volume.kubernetes.io/selected-node annotation. The PV controller and the
// provisioner do the rest; the loop waits, in its cache, until every claim is
// Bound (ClaimDecisionDone) and only then hands the gang to the binder.
//
// One worker writes gangs one after the other: writes are few (one per
// unbound claim) and must not wait behind, or hold up, member binds.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/mutex.h>
#include <hybridjob/common/status.h>
#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/workqueue.h>
#include <hybridjob/scheduler/core/volumes.h>

namespace hybridjob::scheduler {

// The PV controller's own mark on a volume whose claimRef a controller (not
// the user) set; kube-scheduler sets it when it pre-binds.
inline constexpr std::string_view kAnnotationBoundByController =
    "pv.kubernetes.io/bound-by-controller";

// Merge patches, built from the decision and (for the volume) the object as
// read: the resourceVersion makes the write fail with 409 when the volume
// changed since, so two schedulers never reserve one volume for two claims.
nlohmann::json PreBindVolumePatch(const ClaimDecision& decision,
                                  const std::string& resource_version);
nlohmann::json SelectNodePatch(const ClaimDecision& decision);

// Writes one decision: reads the volume and pre-binds it unless it is
// reserved for another claim already (Conflict), or annotates the claim.
// Writing what is there already succeeds.
Status WriteClaimDecision(k8s::ApiClient& client, const ClaimDecision& decision);

// What the writer tells the loop about a gang's claims.
struct ClaimWriteOutcome {
  std::string key;  // the gang's
  Status status;    // the first write that failed, or Ok
};

class ClaimWriter {
 public:
  using OutcomeSink = std::function<void(ClaimWriteOutcome)>;

  ClaimWriter(k8s::ApiClient& client, OutcomeSink outcomes);
  ~ClaimWriter();
  ClaimWriter(const ClaimWriter&) = delete;
  ClaimWriter& operator=(const ClaimWriter&) = delete;

  void Start();
  // Writes what is queued, then ends the worker.
  void Stop();
  // A gang submitted again before its writes started replaces them.
  void Submit(std::string key, std::vector<ClaimDecision> decisions);

 private:
  void Work();

  k8s::ApiClient& client_;
  OutcomeSink outcomes_;
  k8s::WorkQueue queue_;  // gang keys
  Mutex mu_;
  std::map<std::string, std::vector<ClaimDecision>> pending_ HJ_GUARDED_BY(mu_);
  std::thread worker_;
};

}  // namespace hybridjob::scheduler
