// Fuzzes the gang scheduler's configuration file parser with arbitrary text.
//
// Contracts checked besides crashes: a refused file is refused with a message,
// and an accepted one satisfies every bound docs/scheduler-config.md promises,
// so the scheduler never starts with a value its loops cannot use.
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <set>
#include <string_view>

#include <hybridjob/k8s/rate_limiter.h>
#include <hybridjob/scheduler/shell/config.h>

namespace {

namespace scheduler = hybridjob::scheduler;

[[noreturn]] void Fail(std::string_view what, std::string_view input) {
  std::cerr << "contract broken: " << what << "\n" << input << "\n";
  std::abort();
}

void CheckAccepted(const scheduler::SchedulerConfig& config, std::string_view input) {
  if (config.scheduler_name.empty()) {
    Fail("empty schedulerName accepted", input);
  }
  if (config.gpu_resources.entries().empty()) {
    Fail("no gpuResources accepted", input);
  }
  if (config.percentage_of_nodes_to_score < 0 || config.percentage_of_nodes_to_score > 100) {
    Fail("percentageOfNodesToScore out of range", input);
  }
  if (config.gang_backoff_seconds < 0 || config.gang_backoff_seconds > 3600) {
    Fail("gangBackoffSeconds out of range", input);
  }
  if (!std::isfinite(config.client_qps) || config.client_qps < 0) {
    Fail("clientQPS not a finite number >= 0", input);
  }
  if (config.client_burst < 1 || config.client_burst > std::numeric_limits<int>::max() ||
      config.bind_concurrency < 1 || config.bind_concurrency > 1024) {
    Fail("clientBurst or bindConcurrency out of range", input);
  }
  // The API client's rate limiter at the accepted rate: once the burst is
  // spent, the wait for the next request is never negative.
  const auto start = std::chrono::steady_clock::time_point{} + std::chrono::hours(1);
  hybridjob::k8s::TokenBucket bucket(config.client_qps, 1, start);
  (void)bucket.Reserve(start);
  if (bucket.Reserve(start) < hybridjob::k8s::Duration::zero()) {
    Fail("negative rate-limiter wait", input);
  }
  const scheduler::LeaderElectionSettings& election = config.leader_election;
  if (election.enabled &&
      !(election.lease_duration > election.renew_deadline &&
        election.renew_deadline > election.retry_period && election.retry_period.count() > 0)) {
    Fail("leader election timings out of order", input);
  }
  std::set<std::string> names;
  for (const scheduler::QueueSpec& queue : config.queues) {
    if (queue.name.empty() || !names.insert(queue.name).second) {
      Fail("empty or duplicate queue name accepted", input);
    }
    if (!std::isfinite(queue.weight) || queue.weight <= 0) {
      Fail("queue weight not positive", input);
    }
  }
  if (config.reclaim.max_groups_per_cycle < 0 || config.starvation.max_wait_seconds < 0 ||
      config.starvation.max_reserved_groups < 0) {
    Fail("negative policy setting accepted", input);
  }
  (void)scheduler::PolicyConfigFrom(config);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto config = scheduler::ParseSchedulerConfig(input);
  if (!config.ok()) {
    if (config.status().ok() || config.status().message().empty()) {
      Fail("refused without a message", input);
    }
    return 0;
  }
  CheckAccepted(*config, input);
  return 0;
}
