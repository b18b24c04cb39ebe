#include <algorithm>
#include <cmath>

#include <hybridjob/api/names.h>
#include <hybridjob/scheduler/core/gpu_resources.h>

namespace hybridjob::scheduler {

GpuResources::GpuResources() : entries_{{std::string(kResourceNvidiaGpu), kMilliGpusPerGpu}} {}

GpuResources GpuResources::Uniform(const std::vector<std::string>& names) {
  GpuResources gpus;
  gpus.entries_.clear();
  for (const std::string& name : names) {
    gpus.entries_.push_back({name, kMilliGpusPerGpu});
  }
  return gpus;
}

Result<GpuResources> GpuResources::Make(const std::vector<std::pair<std::string, double>>& weights,
                                        std::string_view field) {
  const std::string prefix(field);
  if (weights.empty()) {
    return InvalidArgument(prefix + ": name at least one resource");
  }
  GpuResources gpus;
  gpus.entries_.clear();
  for (const auto& [name, weight] : weights) {
    if (name.find('/') == std::string::npos || !api::IsQualifiedName(name)) {
      return InvalidArgument(prefix + ": \"" + name +
                             "\" is not an extended resource name (a domain prefix and a name, "
                             "e.g. nvidia.com/gpu)");
    }
    if (gpus.Contains(name)) {
      return InvalidArgument(prefix + ": \"" + name + "\" is listed twice");
    }
    // Weights are kept to a thousandth of a GPU; anything that rounds to
    // nothing, or to more than a rack of GPUs, is a typo.
    if (!std::isfinite(weight) || weight < 0.001 || weight > 1000) {
      return InvalidArgument(prefix + "." + name +
                             ": the weight (GPUs per unit) must be between 0.001 and 1000");
    }
    gpus.entries_.push_back(
        {name, static_cast<int64_t>(std::llround(weight * static_cast<double>(kMilliGpusPerGpu)))});
  }
  return gpus;
}

std::vector<std::string> GpuResources::Names() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const GpuResource& entry : entries_) {
    names.push_back(entry.name);
  }
  return names;
}

bool GpuResources::Contains(std::string_view name) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const GpuResource& entry) { return entry.name == name; });
}

int64_t GpuResources::MilliGpus(const ResourceList& resources) const {
  int64_t total = 0;
  for (const GpuResource& entry : entries_) {
    total += resources.Scalar(entry.name) * entry.milli_weight;
  }
  return total;
}

bool GpuResources::AnyIn(const ResourceList& resources) const {
  return std::any_of(entries_.begin(), entries_.end(),
                     [&](const GpuResource& entry) { return resources.Scalar(entry.name) > 0; });
}

ResourceList AsGpuEquivalents(const ResourceList& amount, const GpuResources& gpus, bool round_up) {
  const int64_t total = gpus.MilliGpus(amount);
  ResourceList out = amount;
  for (const GpuResource& gpu : gpus.entries()) {
    if (total == 0 && amount.Get(gpu.name) == 0) {
      continue;
    }
    const int64_t units =
        round_up ? (total + gpu.milli_weight - 1) / gpu.milli_weight : total / gpu.milli_weight;
    out.Set(gpu.name, units);
  }
  return out;
}

std::string FormatMilliGpus(int64_t milli_gpus) {
  const bool negative = milli_gpus < 0;
  const int64_t magnitude = negative ? -milli_gpus : milli_gpus;
  std::string text = (negative ? "-" : "") + std::to_string(magnitude / kMilliGpusPerGpu);
  int64_t fraction = magnitude % kMilliGpusPerGpu;
  if (fraction != 0) {
    std::string digits = std::to_string(fraction);
    digits.insert(0, 3 - digits.size(), '0');
    while (digits.back() == '0') {
      digits.pop_back();
    }
    text += "." + digits;
  }
  return text;
}

std::string FormatGpuCount(int64_t milli_gpus) {
  return FormatMilliGpus(milli_gpus) + (milli_gpus == kMilliGpusPerGpu ? " GPU" : " GPUs");
}

}  // namespace hybridjob::scheduler
