// The scheduling loop's inbox, and the reflector sinks that fill it. A watch
// event never waits for a cycle, and no cycle runs under a lock the
// informers need: they only queue deltas, which the loop takes when a cycle
// begins.
#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/reflector.h>
#include <hybridjob/scheduler/shell/deltas.h>

namespace hybridjob::scheduler {

// Thread-safe.
class DeltaFeed {
 public:
  DeltaFeed();
  ~DeltaFeed();
  DeltaFeed(const DeltaFeed&) = delete;
  DeltaFeed& operator=(const DeltaFeed&) = delete;

  // Sinks for reflectors the caller owns. An object that does not parse is
  // logged and skipped; a HybridJob, PriorityClass or storage object that
  // stops parsing is taken as gone (its pods wait as if it were not there).
  k8s::ReflectorSink& node_sink() { return *node_sink_; }
  k8s::ReflectorSink& pod_sink() { return *pod_sink_; }
  k8s::ReflectorSink& job_sink() { return *job_sink_; }
  k8s::ReflectorSink& namespace_sink() { return *namespace_sink_; }
  k8s::ReflectorSink& priority_class_sink() { return *priority_class_sink_; }
  k8s::ReflectorSink& claim_sink() { return *claim_sink_; }
  k8s::ReflectorSink& volume_sink() { return *volume_sink_; }
  k8s::ReflectorSink& storage_class_sink() { return *storage_class_sink_; }

  void Push(Delta delta);
  // Waits until a delta is queued, Wake() is called or `deadline` passes,
  // and returns every delta queued, oldest first (possibly none).
  std::vector<Delta> Take(std::chrono::steady_clock::time_point deadline);
  // Ends a Take early (a reconfiguration, leadership, a finished bind, shutdown).
  void Wake();

 private:
  std::unique_ptr<k8s::ReflectorSink> node_sink_;
  std::unique_ptr<k8s::ReflectorSink> pod_sink_;
  std::unique_ptr<k8s::ReflectorSink> job_sink_;
  std::unique_ptr<k8s::ReflectorSink> namespace_sink_;
  std::unique_ptr<k8s::ReflectorSink> priority_class_sink_;
  std::unique_ptr<k8s::ReflectorSink> claim_sink_;
  std::unique_ptr<k8s::ReflectorSink> volume_sink_;
  std::unique_ptr<k8s::ReflectorSink> storage_class_sink_;

  Mutex mu_;
  std::condition_variable cv_;
  std::vector<Delta> queued_ HJ_GUARDED_BY(mu_);
  bool woken_ HJ_GUARDED_BY(mu_) = false;
};

}  // namespace hybridjob::scheduler
