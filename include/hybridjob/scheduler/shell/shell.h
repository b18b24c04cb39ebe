// What the parts of the scheduler's shell (loop, binder, evictor) share: the
// pod they act on and their counters.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include <hybridjob/k8s/event_recorder.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {

struct SchedulerStats {
  std::atomic<uint64_t> cycles{0};
  std::atomic<uint64_t> groups_scheduled{0};
  std::atomic<uint64_t> pods_bound{0};
  std::atomic<uint64_t> bind_errors{0};
  std::atomic<uint64_t> groups_rolled_back{0};
  std::atomic<uint64_t> surplus_marked{0};
  std::atomic<uint64_t> groups_waiting{0};  // in the last cycle
  std::atomic<uint64_t> groups_grown{0};    // running groups given more members
  std::atomic<uint64_t> evictions{0};       // accepted by the Eviction API
  std::atomic<uint64_t> evictions_refused{0};
  std::atomic<int64_t> last_cycle_micros{0};
};

// A pod the shell acts on, copied out of the cache (whose PodInfo the next
// delta may replace); node is where it is being bound, if anywhere.
struct PodRef {
  std::string namespace_name;
  std::string name;
  std::string uid;
  std::string node;
};

inline PodRef PodRefOf(const PodInfo& pod, std::string node = {}) {
  return {pod.namespace_name, pod.name, pod.uid, std::move(node)};
}

inline k8s::ObjectReference PodReference(const PodRef& pod) {
  k8s::ObjectReference ref;
  ref.api_version = "v1";
  ref.kind = "Pod";
  ref.namespace_name = pod.namespace_name;
  ref.name = pod.name;
  ref.uid = pod.uid;
  return ref;
}

}  // namespace hybridjob::scheduler
