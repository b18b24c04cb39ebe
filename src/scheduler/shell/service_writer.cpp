#include <cmath>
#include <optional>
#include <unordered_set>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/resource.h>
#include <hybridjob/scheduler/shell/service_writer.h>

namespace hybridjob::scheduler {
namespace {

// Attempts per write before it is given up (the next change queues it anew).
constexpr int kServiceWriteTries = 5;

}  // namespace

std::vector<ServiceWrite> ServiceWrites(const std::vector<ServiceRecord>& records,
                                        const std::vector<double>& thresholds,
                                        const TenancyDirectory& directory,
                                        std::unordered_map<std::string, ServiceWritten>& written,
                                        std::chrono::steady_clock::time_point now) {
  std::vector<ServiceWrite> out;
  for (const ServiceRecord& record : records) {
    const TrustedJob* job = directory.FindJob(record.namespace_name, record.name);
    if (job == nullptr) {
      continue;
    }
    const auto gpu_seconds = static_cast<int64_t>(std::floor(record.gpu_seconds));
    const int32_t level = ServiceLevel(record.gpu_seconds, thresholds);
    const std::string key = record.Key();
    auto last = written.find(key);
    bool due = false;
    if (last == written.end()) {
      due = gpu_seconds > job->attained_gpu_seconds.value_or(-1);
    } else {
      due = level != last->second.level || (gpu_seconds > last->second.gpu_seconds &&
                                            now - last->second.at >= kServiceWritePeriod);
    }
    if (!due) {
      continue;
    }
    written[key] = ServiceWritten{gpu_seconds, level, now};
    out.push_back(ServiceWrite{record.namespace_name, record.name,
                               api::AttainedService{gpu_seconds, level, record.queue}});
  }
  // Jobs gone from the ledger are forgotten here too.
  std::unordered_set<std::string> keys;
  for (const ServiceRecord& record : records) {
    keys.insert(record.Key());
  }
  std::erase_if(written, [&keys](const auto& entry) { return !keys.contains(entry.first); });
  return out;
}

Status PatchAttainedService(k8s::ApiClient& client, const ServiceWrite& write) {
  nlohmann::json service = {{"gpuSeconds", write.service.gpu_seconds},
                            {"level", write.service.level}};
  if (!write.service.queue.empty()) {
    service["queue"] = write.service.queue;
  }
  const nlohmann::json patch = {{"status", {{"attainedService", std::move(service)}}}};
  k8s::PatchOptions options;
  options.subresource = "status";
  auto patched = client.Patch(k8s::resources::HybridJobs(), write.namespace_name, write.name,
                              k8s::PatchType::kMerge, patch.dump(), options);
  if (!patched && !k8s::IsNotFound(patched.status())) {
    spdlog::warn("hybridjob {}/{}: could not write its attained service: {}", write.namespace_name,
                 write.name, patched.status().ToString());
  }
  return patched.status();
}

ServiceWriter::ServiceWriter(k8s::ApiClient& client)
    : client_(client), worker_([this] { Work(); }) {}

ServiceWriter::~ServiceWriter() {
  Stop();
}

void ServiceWriter::Write(ServiceWrite write) {
  const std::string key = write.namespace_name + "/" + write.name;
  {
    MutexLock lock(mu_);
    queued_[key] = std::move(write);
  }
  queue_.Add(key);
}

void ServiceWriter::Work() {
  while (std::optional<std::string> key = queue_.Get()) {
    std::optional<ServiceWrite> taken;
    {
      MutexLock lock(mu_);
      if (auto it = queued_.find(*key); it != queued_.end()) {
        taken = std::move(it->second);
        queued_.erase(it);
      }
    }
    if (!taken) {
      queue_.Done(*key);
      continue;
    }
    Status status = PatchAttainedService(client_, *taken);
    if (status.ok() || k8s::IsNotFound(status)) {
      ++written_;
      queue_.Forget(*key);
    } else if (stopping_.load() || queue_.NumRequeues(*key) + 1 >= kServiceWriteTries) {
      queue_.Forget(*key);
    } else {
      {
        MutexLock lock(mu_);
        queued_.try_emplace(*key, std::move(*taken));  // unless a newer one came
      }
      queue_.AddRateLimited(*key);
    }
    queue_.Done(*key);
  }
}

void ServiceWriter::Stop() {
  stopping_ = true;
  queue_.ShutDown();
  if (worker_.joinable()) {
    worker_.join();
  }
}

}  // namespace hybridjob::scheduler
