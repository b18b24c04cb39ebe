// Attained service: the GPU-seconds each group has held, for queues ordered
// by AttainedService (discretised least attained service, as Tiresias does).
// A group's level is the number of thresholds its service has reached; in
// such a queue a group of a lower level starts first, grows first and gives
// back last. The ledger is plain data in PolicyState: the cycle accounts it,
// the caller may seed it (a scheduler that restarted reads it back from
// where it persisted it) and persist it. Pure.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/core/gpu_resources.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {

struct AttainedServiceSettings {
  // Levels 0 (least served) to levels - 1. The first threshold, in
  // GPU-hours, ends level 0; each next one is threshold_factor times the
  // last.
  int32_t levels = 4;
  double first_threshold_gpu_hours = 1;
  double threshold_factor = 10;
  // Starvation guard: a group that has waited this long, to start or to run
  // again, goes to level 0 until it runs. 0: never.
  int64_t promote_after_seconds = 3600;
  // Whether a starved gang of an AttainedService queue gets nodes reserved
  // (starvation.maxWaitSeconds). Off by default: in the trace replay the
  // reserved nodes idle until their longest job ends, which cost more than
  // the reservations saved at every cluster size measured.
  bool reserve_for_starved = false;

  friend bool operator==(const AttainedServiceSettings&, const AttainedServiceSettings&) = default;
};

// One group's service. `milli_gpus` is what it held when the service was
// last accounted (`at`); it is taken to hold as much until the next account.
struct ServiceRecord {
  std::string namespace_name;
  std::string name;  // the group (job) name
  std::string queue;
  double gpu_seconds = 0;
  int64_t milli_gpus = 0;  // weighted GPUs, thousandths
  Timestamp at{};
  // When it last held GPUs; when first seen for a group that never did.
  Timestamp last_held{};

  // "namespace/name", as GroupKey.
  std::string Key() const;
  friend bool operator==(const ServiceRecord&, const ServiceRecord&) = default;
};

// A record whose group holds nothing and has not been seen for this long is
// dropped (the job ended, or left the queue).
inline constexpr int64_t kServiceForgetAfterSeconds = 600;

// "levels: must be 1 to 16" and the like, under `field`.
Status ValidateAttainedService(const AttainedServiceSettings& settings, std::string_view field);

// The thresholds in GPU-seconds, ascending (levels - 1 of them).
std::vector<double> ServiceThresholds(const AttainedServiceSettings& settings);
// 0 (least served) to thresholds.size(). Service within a millisecond of
// GPU time of a threshold has reached it.
int32_t ServiceLevel(double gpu_seconds, const std::vector<double>& thresholds);

// Adds to each record what it held since it was last accounted, up to `now`.
void AccountService(std::vector<ServiceRecord>& records, Timestamp now);
// Accounts up to `now`, then takes what each group holds in `snapshot` as
// what it holds from now on (a cycle does this for its ledger; a shell that
// ran no cycle may, to keep the ledger current).
void RefreshService(std::vector<ServiceRecord>& records, const Snapshot& snapshot,
                    const GpuResources& gpus, Timestamp now);
// Service read back from where it was persisted: the group's record gets at
// least `gpu_seconds` (service only grows, so the larger of the two is the
// true one); a group without a record gets one.
void SeedService(std::vector<ServiceRecord>& records, std::string_view namespace_name,
                 std::string_view name, std::string_view queue, double gpu_seconds, Timestamp now);

// "3.2 GPU-h", "45 GPU-min", "0 GPU-s": attained service as users read it.
std::string FormatService(double gpu_seconds);

}  // namespace hybridjob::scheduler
