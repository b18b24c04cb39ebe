#include <hybridjob/observability/instrumentation.h>

namespace hybridjob::observability {

void InstrumentClient(k8s::RestClient& client, Registry& registry) {
  client.SetRequestObserver([&registry](std::string_view verb, std::string_view, int code,
                                        std::chrono::steady_clock::duration latency) {
    const std::string verb_text(verb);
    registry
        .GetCounter("hybridjob_api_requests_total",
                    "API server requests by verb and HTTP code (0: no response)",
                    {{"verb", verb_text}, {"code", std::to_string(code)}})
        .Inc();
    registry
        .GetHistogram("hybridjob_api_request_duration_seconds", "API server request latency",
                      LatencyBuckets(), {{"verb", verb_text}})
        .Observe(std::chrono::duration<double>(latency).count());
  });
}

k8s::WorkQueueObserver WorkQueueMetrics(Registry& registry, const std::string& queue_name) {
  const Labels labels = {{"name", queue_name}};
  Gauge& depth =
      registry.GetGauge("hybridjob_workqueue_depth", "Keys waiting in the workqueue", labels);
  Histogram& waited = registry.GetHistogram(
      "hybridjob_workqueue_queue_duration_seconds",
      "Time a key waits in the workqueue before a worker takes it", LatencyBuckets(), labels);
  Histogram& worked =
      registry.GetHistogram("hybridjob_workqueue_work_duration_seconds",
                            "Time a worker spends on one key", LatencyBuckets(), labels);
  Counter& retries = registry.GetCounter("hybridjob_workqueue_retries_total",
                                         "Keys requeued with backoff", labels);
  k8s::WorkQueueObserver observer;
  observer.on_depth = [&depth](size_t d) { depth.Set(static_cast<double>(d)); };
  observer.on_queue_latency = [&waited](k8s::Duration d) {
    waited.Observe(std::chrono::duration<double>(d).count());
  };
  observer.on_work_duration = [&worked](k8s::Duration d) {
    worked.Observe(std::chrono::duration<double>(d).count());
  };
  observer.on_retry = [&retries] { retries.Inc(); };
  return observer;
}

}  // namespace hybridjob::observability
