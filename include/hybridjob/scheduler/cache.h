// The scheduler's cache: every node and every pod on a node (any scheduler's)
// in a Snapshot, plus the pending pods this scheduler owns. Fed by reflectors;
// read by the scheduling loop under one lock. Pods being bound are "assumed"
// into the snapshot at once, so no capacity is handed out twice; the informer's
// view of the binding confirms them, a failed bind forgets them.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/k8s/reflector.h>
#include <hybridjob/scheduler/objects.h>
#include <hybridjob/scheduler/snapshot.h>
#include <hybridjob/scheduler/tenancy.h>

namespace hybridjob::scheduler {

class SchedulerCache {
 public:
  explicit SchedulerCache(std::string scheduler_name);

  // Reflector sinks; the caller owns the reflectors.
  k8s::ReflectorSink& node_sink() { return node_sink_; }
  k8s::ReflectorSink& pod_sink() { return pod_sink_; }
  // HybridJobs, namespaces and PriorityClasses: what pods' claims are checked
  // against (tenancy.h). Every pod is resolved against them as it arrives,
  // and again when one of them changes.
  k8s::ReflectorSink& job_sink() { return job_sink_; }
  k8s::ReflectorSink& namespace_sink() { return namespace_sink_; }
  k8s::ReflectorSink& priority_class_sink() { return priority_class_sink_; }

  // Runs fn(snapshot, pending pods not assumed) under the cache lock. fn
  // returns the keys of the pods its committed plans assumed onto nodes.
  using CycleFn =
      std::function<std::vector<std::string>(Snapshot&, const std::vector<const PodInfo*>&)>;
  void RunLocked(const CycleFn& fn);
  // Reads the snapshot under the cache lock (metrics), without collecting pending pods.
  void ReadSnapshot(const std::function<void(const Snapshot&)>& fn) const;

  // A bind failed or was rolled back: the pod leaves its node and is pending again.
  void ForgetAssumed(const std::string& namespace_name, const std::string& name);

  // Bumped by every change that may let a waiting group fit or a new group
  // start: a node added or changed, a pod gone, finished or arrived, a
  // forgotten assumption.
  uint64_t generation() const;
  // Waits until generation() differs from `seen` or the timeout passes.
  uint64_t WaitForChange(uint64_t seen, std::chrono::milliseconds timeout);
  void Wake();  // ends a WaitForChange early (shutdown)

  bool HasSynced() const;
  size_t PendingCount() const;
  size_t AssumedCount() const;

 private:
  class NodeSink final : public k8s::ReflectorSink {
   public:
    explicit NodeSink(SchedulerCache& cache) : cache_(cache) {}
    void Replace(std::vector<nlohmann::json> items, const std::string& rv) override;
    void Apply(k8s::WatchEventType type, nlohmann::json object) override;

   private:
    SchedulerCache& cache_;
  };
  class PodSink final : public k8s::ReflectorSink {
   public:
    explicit PodSink(SchedulerCache& cache) : cache_(cache) {}
    void Replace(std::vector<nlohmann::json> items, const std::string& rv) override;
    void Apply(k8s::WatchEventType type, nlohmann::json object) override;

   private:
    SchedulerCache& cache_;
  };

  enum class TenancyKind : uint8_t { kJob, kNamespace, kPriorityClass };
  class TenancySink final : public k8s::ReflectorSink {
   public:
    TenancySink(SchedulerCache& cache, TenancyKind kind) : cache_(cache), kind_(kind) {}
    void Replace(std::vector<nlohmann::json> items, const std::string& rv) override;
    void Apply(k8s::WatchEventType type, nlohmann::json object) override;

   private:
    // Adds or replaces the object in the directory; whether anything changed.
    bool UpsertLocked(const nlohmann::json& object);
    bool RemoveLocked(const nlohmann::json& object);
    // Pods whose resolution the object's change may affect.
    void ReresolveLocked(const nlohmann::json& object);

    SchedulerCache& cache_;
    TenancyKind kind_;
    std::unordered_set<std::string> keys_;  // objects in the directory, for Replace
  };

  // All under mu_.
  void UpsertPodLocked(PodInfo pod);
  // Resolves again the pods `matches` selects; bumps the generation if any changed.
  void ReresolvePodsLocked(const std::function<bool(const PodInfo&)>& matches);
  void IndexClaimLocked(const PodInfo& pod, bool add);
  void RemovePodLocked(const std::string& namespace_name, const std::string& name);
  void BumpLocked();

  std::string scheduler_name_;
  NodeSink node_sink_{*this};
  PodSink pod_sink_{*this};
  TenancySink job_sink_{*this, TenancyKind::kJob};
  TenancySink namespace_sink_{*this, TenancyKind::kNamespace};
  TenancySink priority_class_sink_{*this, TenancyKind::kPriorityClass};

  mutable std::mutex mu_;
  std::condition_variable changed_;
  Snapshot snapshot_;
  std::unordered_map<std::string, std::unique_ptr<PodInfo>> pending_;
  std::unordered_set<std::string> assumed_;
  std::unordered_set<std::string> node_names_;
  TenancyDirectory directory_;
  // Pods (pending or on a node) by the job their job-name label claims.
  std::unordered_map<std::string, std::unordered_set<std::string>> claimants_;
  uint64_t generation_ = 0;
  bool nodes_synced_ = false;
  bool pods_synced_ = false;
  bool jobs_synced_ = false;
  bool namespaces_synced_ = false;
  bool priority_classes_synced_ = false;
};

}  // namespace hybridjob::scheduler
