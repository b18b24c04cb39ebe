// The scheduling loop's view of the cluster: every node and every pod on a
// node (any scheduler's) in a Snapshot, the pending pods this scheduler owns,
// and what pods' claims are checked against (tenancy.h). The loop owns it
// alone, so it has no lock: informers reach it as deltas (deltas.h) that the
// loop applies between cycles. Pods being bound are "assumed" onto their
// nodes at once, so no capacity is handed out twice; the informer's view of
// the binding confirms them, a failed bind forgets them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/core/tenancy.h>
#include <hybridjob/scheduler/objects/objects.h>
#include <hybridjob/scheduler/shell/deltas.h>

namespace hybridjob::scheduler {

class SchedulerCache {
 public:
  explicit SchedulerCache(std::string scheduler_name);

  // Applies one change. True when it may change a plan: a node added or
  // changed, a pod gone, finished or arrived, a member's group, queue or
  // priority changed, capacity freed in place. A status update that changes
  // none of these is false: it needs no cycle.
  bool Apply(Delta delta);

  // The pending pods a cycle plans: this scheduler's, not bound, not assumed.
  std::vector<const PodInfo*> Pending() const;
  Snapshot& snapshot() { return snapshot_; }
  const Snapshot& snapshot() const { return snapshot_; }
  // The HybridJobs, namespaces and PriorityClasses the scheduler trusts.
  const TenancyDirectory& directory() const { return directory_; }
  // The keys member signatures are checked with (before the first Apply);
  // none: not checked.
  void SetMemberKeys(api::MemberKeys keys) { directory_.SetMemberKeys(std::move(keys)); }

  // A pod a cycle placed (already added to the snapshot by the plan).
  void Assume(std::string key);
  // A bind failed or was rolled back: the pod leaves its node and is pending
  // again. True when it was assumed.
  bool ForgetAssumed(const std::string& namespace_name, const std::string& name);

  // Nodes that members of a gang whose resize restarts it (resizeRestarts)
  // left while their job goes on: the job is restarting, and its new
  // members should find them free. Taken once.
  struct Vacated {
    std::string group_key;  // GroupKey
    std::string namespace_name;
    std::string job_name;
    std::string node_name;
  };
  std::vector<Vacated> TakeVacated();

  // The pod as last seen, pending or on a node; null when gone.
  const PodInfo* FindPod(const std::string& namespace_name, const std::string& name) const;

  // Nodes, pods, HybridJobs, namespaces, PriorityClasses, claims, volumes and
  // storage classes all listed once.
  bool HasSynced() const;
  size_t PendingCount() const { return pending_.size(); }
  size_t AssumedCount() const { return assumed_.size(); }

 private:
  bool ApplyOne(Upsert<NodeInfo> delta);
  bool ApplyOne(Removal<NodeInfo> delta);
  bool ApplyOne(Relist<NodeInfo> delta);
  bool ApplyOne(Upsert<PodInfo> delta);
  bool ApplyOne(Removal<PodInfo> delta);
  bool ApplyOne(Relist<PodInfo> delta);
  bool ApplyOne(Upsert<TrustedJob> delta);
  bool ApplyOne(Removal<TrustedJob> delta);
  bool ApplyOne(Relist<TrustedJob> delta);
  bool ApplyOne(Upsert<NamespaceInfo> delta);
  bool ApplyOne(Removal<NamespaceInfo> delta);
  bool ApplyOne(Relist<NamespaceInfo> delta);
  bool ApplyOne(Upsert<PriorityClassInfo> delta);
  bool ApplyOne(Removal<PriorityClassInfo> delta);
  bool ApplyOne(Relist<PriorityClassInfo> delta);
  bool ApplyOne(Upsert<ClaimInfo> delta);
  bool ApplyOne(Removal<ClaimInfo> delta);
  bool ApplyOne(Relist<ClaimInfo> delta);
  bool ApplyOne(Upsert<VolumeInfo> delta);
  bool ApplyOne(Removal<VolumeInfo> delta);
  bool ApplyOne(Relist<VolumeInfo> delta);
  bool ApplyOne(Upsert<StorageClassInfo> delta);
  bool ApplyOne(Removal<StorageClassInfo> delta);
  bool ApplyOne(Relist<StorageClassInfo> delta);
  // Volumes count in plans once claims, volumes and classes are all listed.
  void TrackStorageOnceListed();

  bool UpsertPod(PodInfo pod);
  bool RemovePod(const std::string& namespace_name, const std::string& name);
  // Resolves again the pods `matches` selects; whether any changed.
  bool ReresolvePods(const std::function<bool(const PodInfo&)>& matches);
  bool ReresolveClaimantsOf(const std::string& namespace_name, const std::string& job_name);
  void IndexClaim(const PodInfo& pod, bool add);

  std::string scheduler_name_;
  Snapshot snapshot_;
  std::unordered_map<std::string, std::unique_ptr<PodInfo>> pending_;
  std::unordered_set<std::string> assumed_;
  std::unordered_set<std::string> node_names_;
  TenancyDirectory directory_;
  api::MemberNonceLedger nonces_;  // which pod used each member signature
  std::vector<Vacated> vacated_;
  // Pods (pending or on a node) by the job their job-name label claims.
  std::unordered_map<std::string, std::unordered_set<std::string>> claimants_;
  bool nodes_synced_ = false;
  bool pods_synced_ = false;
  bool jobs_synced_ = false;
  bool namespaces_synced_ = false;
  bool priority_classes_synced_ = false;
  bool claims_synced_ = false;
  bool volumes_synced_ = false;
  bool storage_classes_synced_ = false;
};

}  // namespace hybridjob::scheduler
