// The scalar resources the scheduler counts as GPUs, each with its weight:
// what one unit of it is worth in GPUs. A whole GPU (nvidia.com/gpu,
// amd.com/gpu) weighs 1; a MIG slice weighs a fraction (nvidia.com/mig-1g.10gb:
// 0.125). Fair share, packing, domain capacity and the reasons all count
// weighted GPUs, so eight such slices count as one GPU everywhere.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/objects/resources.h>

namespace hybridjob::scheduler {

// Weighted GPU amounts are kept in thousandths of a GPU, so sums are exact.
inline constexpr int64_t kMilliGpusPerGpu = 1000;

struct GpuResource {
  std::string name;
  int64_t milli_weight = kMilliGpusPerGpu;  // thousandths of a GPU per unit

  friend bool operator==(const GpuResource&, const GpuResource&) = default;
};

class GpuResources {
 public:
  // nvidia.com/gpu, weight 1.
  GpuResources();
  // Every name weighs 1. The names are not checked (see Make).
  static GpuResources Uniform(const std::vector<std::string>& names);
  // Checked: each name an extended resource name (a domain prefix and a name)
  // listed once, each weight finite and between 0.001 and 1000 GPUs. At least
  // one resource. Messages name `field`.
  static Result<GpuResources> Make(const std::vector<std::pair<std::string, double>>& weights,
                                   std::string_view field);

  const std::vector<GpuResource>& entries() const { return entries_; }
  std::vector<std::string> Names() const;
  bool Contains(std::string_view name) const;

  // Weighted GPUs in `resources`, in thousandths of a GPU.
  int64_t MilliGpus(const ResourceList& resources) const;
  // Whether `resources` holds any amount of a configured GPU resource.
  bool AnyIn(const ResourceList& resources) const;

  friend bool operator==(const GpuResources&, const GpuResources&) = default;

 private:
  std::vector<GpuResource> entries_;
};

// `amount` as a queue's guarantee and max see it: each configured GPU
// resource's quantity replaced by every GPU in `amount`, weighted, in that
// resource's units (rounded up, or down), so a max of 8 nvidia.com/gpu holds
// 64 nvidia.com/mig-1g.10gb slices of weight 0.125. Other resources as they are.
ResourceList AsGpuEquivalents(const ResourceList& amount, const GpuResources& gpus,
                              bool round_up = true);

// "12", "0.5", "1.125": thousandths of a GPU as a GPU count.
std::string FormatMilliGpus(int64_t milli_gpus);
// "12 GPUs", "1 GPU", "0.5 GPUs".
std::string FormatGpuCount(int64_t milli_gpus);

}  // namespace hybridjob::scheduler
