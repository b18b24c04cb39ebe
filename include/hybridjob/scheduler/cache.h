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

namespace hybridjob::scheduler {

class SchedulerCache {
 public:
  explicit SchedulerCache(std::string scheduler_name);

  // Reflector sinks; the caller owns the reflectors.
  k8s::ReflectorSink& node_sink() { return node_sink_; }
  k8s::ReflectorSink& pod_sink() { return pod_sink_; }

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

  // All under mu_.
  void UpsertPodLocked(PodInfo pod);
  void RemovePodLocked(const std::string& namespace_name, const std::string& name);
  void BumpLocked();

  std::string scheduler_name_;
  NodeSink node_sink_{*this};
  PodSink pod_sink_{*this};

  mutable std::mutex mu_;
  std::condition_variable changed_;
  Snapshot snapshot_;
  std::unordered_map<std::string, std::unique_ptr<PodInfo>> pending_;
  std::unordered_set<std::string> assumed_;
  std::unordered_set<std::string> node_names_;
  uint64_t generation_ = 0;
  bool nodes_synced_ = false;
  bool pods_synced_ = false;
};

}  // namespace hybridjob::scheduler
