#include <map>
#include <memory>
#include <string>
#include <vector>

#include <hybridjob/scheduler/shell/metrics.h>

namespace hybridjob::scheduler {

namespace obs = observability;

void ExportSchedulerMetrics(obs::Registry& registry, GangScheduler& scheduler,
                            const std::atomic<bool>& leading) {
  auto& gang_latency =
      registry.GetHistogram("hybridjob_scheduler_gang_latency_seconds",
                            "From a group's oldest member's creation to its last member's binding",
                            obs::ExponentialBuckets(0.5, 2, 14));
  scheduler.SetGangLatencyObserver([&gang_latency](std::chrono::duration<double> latency) {
    gang_latency.Observe(latency.count());
  });
  // The labels each queue's info series was last given, so that a reload
  // moving a queue in the tree zeroes the series it leaves behind.
  auto queue_info_labels = std::make_shared<std::map<std::string, obs::Labels>>();
  registry.AddCollector([&scheduler, &leading, queue_info_labels](obs::Registry& r) {
    const auto& stats = scheduler.stats();
    auto counter = [&r](const char* name, const char* help, double value) {
      auto& c = r.GetCounter(name, help);
      c.Inc(value - c.Value());
    };
    counter("hybridjob_scheduler_cycles_total", "Scheduling cycles run",
            static_cast<double>(stats.cycles.load()));
    counter("hybridjob_scheduler_groups_scheduled_total", "Pod groups placed and bound",
            static_cast<double>(stats.groups_scheduled.load()));
    counter("hybridjob_scheduler_pods_scheduled_total", "Pods bound",
            static_cast<double>(stats.pods_bound.load()));
    counter("hybridjob_scheduler_bind_errors_total", "Failed bindings",
            static_cast<double>(stats.bind_errors.load()));
    counter("hybridjob_scheduler_groups_rolled_back_total",
            "Groups whose binding failed part-way and was undone",
            static_cast<double>(stats.groups_rolled_back.load()));
    counter("hybridjob_scheduler_surplus_pods_total", "Members left out of placed groups",
            static_cast<double>(stats.surplus_marked.load()));
    r.GetGauge("hybridjob_scheduler_pending_groups", "Groups that waited in the last cycle")
        .Set(static_cast<double>(stats.groups_waiting.load()));
    r.GetGauge("hybridjob_scheduler_pending_pods", "Pods of this scheduler not yet bound")
        .Set(static_cast<double>(scheduler.PendingPods()));
    r.GetGauge("hybridjob_scheduler_cycle_duration_seconds", "Duration of the last cycle")
        .Set(static_cast<double>(stats.last_cycle_micros.load()) / 1e6);
    for (const auto& [resource, totals] : scheduler.ResourceTotals()) {
      r.GetGauge("hybridjob_scheduler_allocatable", "Allocatable on schedulable nodes",
                 {{"resource", resource}})
          .Set(totals.first);
      r.GetGauge("hybridjob_scheduler_allocated", "Requested by pods on nodes",
                 {{"resource", resource}})
          .Set(totals.second);
    }
    counter("hybridjob_scheduler_groups_grown_total", "Running groups given more members",
            static_cast<double>(stats.groups_grown.load()));
    counter("hybridjob_scheduler_events_dropped_total",
            "Events not written because too many were waiting for the API server",
            static_cast<double>(scheduler.EventsDropped()));
    counter("hybridjob_scheduler_evictions_total", "Evictions the Eviction API accepted",
            static_cast<double>(stats.evictions.load()));
    counter("hybridjob_scheduler_evictions_refused_total",
            "Evictions the Eviction API refused (a PodDisruptionBudget, say)",
            static_cast<double>(stats.evictions_refused.load()));
    for (const auto& report : scheduler.QueueReports()) {
      const auto& queue = report.status;
      const obs::Labels labels = {{"queue", queue.name}};
      // The queue tree, to join on `queue`. A parent's pending groups, usage
      // and shares are its subtree's; its oldest-waiting age and eviction
      // counters count only groups in the queue itself (none: jobs run in
      // leaves), so they stay 0.
      const obs::Labels info = {
          {"queue", queue.name}, {"parent", queue.parent}, {"leaf", queue.leaf ? "true" : "false"}};
      const char* info_help =
          "1 per queue: its parent (empty at the top level) and whether jobs run in it";
      auto [last_info, first_seen] = queue_info_labels->try_emplace(queue.name, info);
      if (!first_seen && last_info->second != info) {
        r.GetGauge("hybridjob_queue_info", info_help, last_info->second).Set(0);
        last_info->second = info;
      }
      r.GetGauge("hybridjob_queue_info", info_help, info).Set(1);
      r.GetGauge("hybridjob_queue_pending_groups", "Groups of the queue waiting to start", labels)
          .Set(queue.waiting_groups);
      r.GetGauge("hybridjob_queue_oldest_waiting_seconds",
                 "Age of the queue's oldest group waiting to start", labels)
          .Set(report.oldest_waiting_seconds);
      r.GetGauge("hybridjob_queue_weighted_share", "Dominant share divided by weight", labels)
          .Set(queue.weighted_share);
      auto& reclaimed = r.GetCounter("hybridjob_queue_reclaimed_pods_total",
                                     "Members evicted from the queue by reclaim", labels);
      reclaimed.Inc(static_cast<double>(report.reclaimed_pods) - reclaimed.Value());
      auto& preempted = r.GetCounter("hybridjob_queue_preempted_pods_total",
                                     "Members evicted from the queue by preemption", labels);
      preempted.Inc(static_cast<double>(report.preempted_pods) - preempted.Value());
      auto resource_gauges = [&](const char* name, const char* help, auto&& amount) {
        for (const std::string& resource : std::vector<std::string>{"cpu", "memory"}) {
          r.GetGauge(name, help, {{"queue", queue.name}, {"resource", resource}})
              .Set(amount(resource));
        }
        for (const GpuResource& gpu : scheduler.gpu_resources().entries()) {
          r.GetGauge(name, help, {{"queue", queue.name}, {"resource", gpu.name}})
              .Set(amount(gpu.name));
        }
      };
      // cpu in cores, as the cluster-wide gauges.
      auto scaled = [](const std::string& resource, int64_t amount) {
        return resource == "cpu" ? static_cast<double>(amount) / 1000.0
                                 : static_cast<double>(amount);
      };
      resource_gauges("hybridjob_queue_allocated", "Requested by the queue's bound pods",
                      [&](const std::string& res) { return scaled(res, queue.used.Get(res)); });
      resource_gauges(
          "hybridjob_queue_guaranteed", "What the queue is entitled to",
          [&](const std::string& res) { return scaled(res, queue.guaranteed.Get(res)); });
      resource_gauges("hybridjob_queue_max", "The queue's ceiling (-1: none)",
                      [&](const std::string& res) {
                        auto limit = queue.max.Limit(res);
                        return limit ? scaled(res, *limit) : -1.0;
                      });
    }
    r.GetGauge("hybridjob_scheduler_leader", "1 while this replica leads").Set(leading ? 1 : 0);
  });
}

}  // namespace hybridjob::scheduler
