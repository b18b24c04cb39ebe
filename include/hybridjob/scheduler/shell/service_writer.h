// Persists the attained service of jobs in AttainedService queues to their
// status (status.attainedService), off the scheduling loop: writes are queued
// by job and coalesced (a newer value replaces one not yet written), and
// tried again with back-off unless the job is gone. ServiceWrites decides
// which records are due, so a running job costs one write a minute at most.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <hybridjob/api/types.h>
#include <hybridjob/common/mutex.h>
#include <hybridjob/common/status.h>
#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/workqueue.h>
#include <hybridjob/scheduler/core/attained_service.h>
#include <hybridjob/scheduler/core/tenancy.h>

namespace hybridjob::scheduler {

// A running job's service is written again at most this often; a new level
// at once.
inline constexpr std::chrono::seconds kServiceWritePeriod{60};

struct ServiceWrite {
  std::string namespace_name;
  std::string name;
  api::AttainedService service;
};

// What the loop last asked to write, per job key.
struct ServiceWritten {
  int64_t gpu_seconds = 0;
  int32_t level = 0;
  std::chrono::steady_clock::time_point at;
};

// The records whose job needs its status written: a new level, or (at most
// every kServiceWritePeriod) a whole GPU-second more than last written, or
// more than the job's status holds when nothing was written yet. Updates
// `written` for what it returns. Records of jobs the directory does not
// know are skipped.
std::vector<ServiceWrite> ServiceWrites(const std::vector<ServiceRecord>& records,
                                        const std::vector<double>& thresholds,
                                        const TenancyDirectory& directory,
                                        std::unordered_map<std::string, ServiceWritten>& written,
                                        std::chrono::steady_clock::time_point now);

// One JSON merge patch of the job's status subresource.
Status PatchAttainedService(k8s::ApiClient& client, const ServiceWrite& write);

class ServiceWriter {
 public:
  explicit ServiceWriter(k8s::ApiClient& client);
  ~ServiceWriter();
  ServiceWriter(const ServiceWriter&) = delete;
  ServiceWriter& operator=(const ServiceWriter&) = delete;

  // Queues the write; returns at once.
  void Write(ServiceWrite write);
  // Writes what is queued (once each), then ends the worker.
  void Stop();

  uint64_t written() const { return written_.load(); }

 private:
  void Work();

  k8s::ApiClient& client_;
  k8s::WorkQueue queue_;
  Mutex mu_;
  std::unordered_map<std::string, ServiceWrite> queued_ HJ_GUARDED_BY(mu_);  // by job key
  std::atomic<bool> stopping_{false};
  std::atomic<uint64_t> written_{0};
  std::thread worker_;
};

}  // namespace hybridjob::scheduler
