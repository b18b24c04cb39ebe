// The scheduler's Prometheus series (docs/admin-guide.md lists them): read
// from the scheduler's counters and published figures on every scrape, and
// the gang latency histogram it observes.
#pragma once

#include <atomic>

#include <hybridjob/observability/metrics.h>
#include <hybridjob/scheduler/shell/gang_scheduler.h>

namespace hybridjob::scheduler {

// `leading` is read on every scrape (the hybridjob_scheduler_leader gauge).
// Both must outlive the registry's use of the collector.
void ExportSchedulerMetrics(observability::Registry& registry, GangScheduler& scheduler,
                            const std::atomic<bool>& leading);

}  // namespace hybridjob::scheduler
