// Metrics wiring shared by the binaries: API requests and workqueues.
#pragma once

#include <string>

#include <hybridjob/k8s/rest_client.h>
#include <hybridjob/k8s/workqueue.h>
#include <hybridjob/observability/metrics.h>

namespace hybridjob::observability {

// hybridjob_api_requests_total{verb,code} and
// hybridjob_api_request_duration_seconds{verb}.
void InstrumentClient(k8s::RestClient& client, Registry& registry);

// hybridjob_workqueue_{depth,queue_duration_seconds,work_duration_seconds,retries_total}
// with label name=<queue>.
k8s::WorkQueueObserver WorkQueueMetrics(Registry& registry, const std::string& queue_name);

}  // namespace hybridjob::observability
