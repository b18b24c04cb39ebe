#include <spdlog/spdlog.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/scheduler/shell/evictor.h>
#include <hybridjob/scheduler/shell/status_reporter.h>

namespace hybridjob::scheduler {

Evictor::Evictor(k8s::ApiClient& client, k8s::EventRecorder& events, SchedulerStats& stats)
    : client_(client), events_(events), stats_(stats) {}

std::map<std::string, std::pair<uint64_t, uint64_t>> Evictor::EvictedPerQueue() const {
  MutexLock lock(mu_);
  return evicted_per_queue_;
}

void Evictor::CarryOut(const std::vector<Eviction>& evictions, const PolicyConfig& policy,
                       Timestamp now, PolicyState& state) {
  // Written here, not through the asynchronous reporter: they must be on the
  // pods before the evictions are.
  std::vector<Eviction> marking = evictions;
  OrderForMarking(marking);
  for (const auto& eviction : marking) {
    const std::string reason(eviction.cause == EvictionCause::kReclaim ? api::kReclaimedReason
                                                                       : api::kPreemptedReason);
    (void)PatchPodConditions(
        client_, eviction.namespace_name, eviction.name,
        {{std::string(api::kGangEvictionCondition), true, reason, eviction.message},
         {std::string(api::kDisruptionTargetCondition), true, reason + "ByGangScheduler",
          eviction.message}});
  }
  for (const auto& eviction : evictions) {
    Evict(eviction, policy, now, state);
  }
}

void Evictor::Evict(const Eviction& eviction, const PolicyConfig& policy, Timestamp now,
                    PolicyState& state) {
  const std::string cause(EvictionCauseName(eviction.cause));
  Status status = k8s::EvictPod(client_, eviction.namespace_name, eviction.name, eviction.uid,
                                EvictionApiVersion());
  PodRef victim{eviction.namespace_name, eviction.name, eviction.uid, eviction.node_name};
  if (status.ok() || k8s::IsNotFound(status)) {
    ++stats_.evictions;
    {
      MutexLock lock(mu_);
      auto& counts = evicted_per_queue_[eviction.victim_queue];
      (eviction.cause == EvictionCause::kReclaim ? counts.first : counts.second) += 1;
    }
    spdlog::info("evicted {}/{} ({}): {}", eviction.namespace_name, eviction.name, cause,
                 eviction.message);
    events_.Record(PodReference(victim), k8s::EventType::kWarning,
                   eviction.cause == EvictionCause::kReclaim ? "Reclaimed" : "Preempted",
                   eviction.message);
    return;
  }
  ++stats_.evictions_refused;
  spdlog::warn("eviction of {}/{} ({}) refused: {}", eviction.namespace_name, eviction.name, cause,
               status.ToString());
  RecordRefusedEviction(state, eviction, policy, now);
  const std::string refused(api::kEvictionRefusedReason);
  (void)PatchPodConditions(
      client_, eviction.namespace_name, eviction.name,
      {{std::string(api::kGangEvictionCondition), false, refused, status.message()},
       {std::string(api::kDisruptionTargetCondition), false, refused, status.message()}});
  events_.Record(PodReference(victim), k8s::EventType::kWarning, "EvictionRefused",
                 cause + " for " + eviction.for_group + " refused: " + status.message());
}

const std::string& Evictor::EvictionApiVersion() {
  if (eviction_api_version_.empty()) {
    Result<std::string> discovered = k8s::DiscoverEvictionApiVersion(client_);
    if (!discovered) {
      // Every server so far accepts v1beta1 bodies; ask again next time.
      spdlog::warn("could not discover the Eviction API version ({}); using {}",
                   discovered.status().ToString(), k8s::kEvictionV1beta1);
      static const std::string kFallback(k8s::kEvictionV1beta1);
      return kFallback;
    }
    eviction_api_version_ = *discovered;
    spdlog::info("evictions use {}", eviction_api_version_);
  }
  return eviction_api_version_;
}

}  // namespace hybridjob::scheduler
