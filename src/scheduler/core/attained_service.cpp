#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include <hybridjob/scheduler/core/attained_service.h>
#include <hybridjob/scheduler/core/gpu_resources.h>

namespace hybridjob::scheduler {
namespace {

// Summed spans are not exact.
constexpr double kServiceEpsilon = 1e-3;

}  // namespace

std::string ServiceRecord::Key() const {
  return namespace_name + "/" + name;
}

Status ValidateAttainedService(const AttainedServiceSettings& settings, std::string_view field) {
  const std::string prefix(field);
  if (settings.levels < 1 || settings.levels > 16) {
    return InvalidArgument(prefix + ".levels: must be 1 to 16");
  }
  if (!(settings.first_threshold_gpu_hours > 0) ||
      !std::isfinite(settings.first_threshold_gpu_hours)) {
    return InvalidArgument(prefix + ".firstThresholdGpuHours: must be a positive number");
  }
  if (!(settings.threshold_factor > 1) || !std::isfinite(settings.threshold_factor)) {
    return InvalidArgument(prefix + ".thresholdFactor: must be a number above 1");
  }
  if (settings.promote_after_seconds < 0) {
    return InvalidArgument(prefix + ".promoteAfterSeconds: must not be negative");
  }
  return Status::Ok();
}

std::vector<double> ServiceThresholds(const AttainedServiceSettings& settings) {
  std::vector<double> thresholds;
  double threshold = settings.first_threshold_gpu_hours * 3600;
  for (int32_t level = 1; level < settings.levels; ++level) {
    thresholds.push_back(threshold);
    threshold *= settings.threshold_factor;
  }
  return thresholds;
}

int32_t ServiceLevel(double gpu_seconds, const std::vector<double>& thresholds) {
  int32_t level = 0;
  while (static_cast<size_t>(level) < thresholds.size() &&
         gpu_seconds + kServiceEpsilon >= thresholds[static_cast<size_t>(level)]) {
    ++level;
  }
  return level;
}

void AccountService(std::vector<ServiceRecord>& records, Timestamp now) {
  for (ServiceRecord& record : records) {
    if (now > record.at) {
      const double span = std::chrono::duration<double>(now - record.at).count();
      record.gpu_seconds +=
          static_cast<double>(record.milli_gpus) / static_cast<double>(kMilliGpusPerGpu) * span;
      record.at = now;
    }
  }
}

void RefreshService(std::vector<ServiceRecord>& records, const Snapshot& snapshot,
                    const GpuResources& gpus, Timestamp now) {
  AccountService(records, now);
  for (ServiceRecord& record : records) {
    int64_t milli_gpus = 0;
    for (const PodInfo* pod : snapshot.GroupMembers(record.namespace_name, record.name)) {
      milli_gpus += gpus.MilliGpus(pod->requests);
    }
    record.milli_gpus = milli_gpus;
    record.at = std::max(record.at, now);
    if (milli_gpus > 0) {
      record.last_held = now;
    }
  }
}

void SeedService(std::vector<ServiceRecord>& records, std::string_view namespace_name,
                 std::string_view name, std::string_view queue, double gpu_seconds, Timestamp now) {
  for (ServiceRecord& record : records) {
    if (record.namespace_name == namespace_name && record.name == name) {
      record.gpu_seconds = std::max(record.gpu_seconds, gpu_seconds);
      return;
    }
  }
  ServiceRecord record;
  record.namespace_name = std::string(namespace_name);
  record.name = std::string(name);
  record.queue = std::string(queue);
  record.gpu_seconds = gpu_seconds;
  record.at = now;
  record.last_held = now;
  records.push_back(std::move(record));
}

std::string FormatService(double gpu_seconds) {
  char text[48];
  if (gpu_seconds >= 3600) {
    std::snprintf(text, sizeof(text), "%.1f GPU-h", gpu_seconds / 3600);
  } else if (gpu_seconds >= 60) {
    std::snprintf(text, sizeof(text), "%.0f GPU-min", gpu_seconds / 60);
  } else {
    std::snprintf(text, sizeof(text), "%.0f GPU-s", gpu_seconds);
  }
  return text;
}

}  // namespace hybridjob::scheduler
