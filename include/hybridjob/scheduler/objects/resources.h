// The scheduler's resource model: what a node offers and what pods ask for.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>

namespace hybridjob::scheduler {

// Resource names with a field of their own in ResourceList; any other name
// (nvidia.com/gpu, hugepages-2Mi, example.com/fpga) is a scalar resource.
inline constexpr std::string_view kResourceCpu = "cpu";
inline constexpr std::string_view kResourceMemory = "memory";
inline constexpr std::string_view kResourceEphemeralStorage = "ephemeral-storage";
inline constexpr std::string_view kResourcePods = "pods";
inline constexpr std::string_view kResourceNvidiaGpu = "nvidia.com/gpu";

struct ScalarResource {
  std::string name;
  int64_t amount = 0;

  friend bool operator==(const ScalarResource&, const ScalarResource&) = default;
};

// Amounts of every resource kind: cpu in millicores, memory and ephemeral
// storage in bytes, pods as a count, scalar resources in whole units.
class ResourceList {
 public:
  int64_t milli_cpu = 0;
  int64_t memory = 0;
  int64_t ephemeral_storage = 0;
  int64_t pods = 0;

  // Amount of a scalar resource, 0 when absent.
  int64_t Scalar(std::string_view name) const;
  void SetScalar(std::string_view name, int64_t amount);
  void AddScalar(std::string_view name, int64_t delta);
  // Sorted by name, so two lists can be walked side by side.
  const std::vector<ScalarResource>& scalars() const { return scalars_; }

  // Amount of any resource by its Kubernetes name ("cpu" is in millicores).
  int64_t Get(std::string_view name) const;
  void Set(std::string_view name, int64_t amount);

  ResourceList& operator+=(const ResourceList& other);
  ResourceList& operator-=(const ResourceList& other);
  // Per resource maximum, as init containers combine with app containers.
  void SetToMax(const ResourceList& other);
  // True when nothing at all is asked for (pods count included).
  bool IsZero() const;

  // "cpu=1500m memory=16Gi nvidia.com/gpu=2 pods=1", zero amounts left out.
  std::string ToString() const;

  // Equal amounts of every resource; an absent scalar equals a zero one.
  friend bool operator==(const ResourceList& lhs, const ResourceList& rhs);

 private:
  std::vector<ScalarResource> scalars_;
};

ResourceList operator+(ResourceList lhs, const ResourceList& rhs);
ResourceList operator-(ResourceList lhs, const ResourceList& rhs);

// The first resource in which `request` does not fit into `allocatable - used`.
// Returns an empty view when everything fits. The pods count is checked first,
// then cpu, memory, ephemeral storage and scalars, as kube-scheduler does; a
// scalar the node does not have counts as zero allocatable.
std::string_view FirstInsufficientResource(const ResourceList& request, const ResourceList& used,
                                           const ResourceList& allocatable);

// How many copies of `request` fit in `capacity`, at most `limit`: the
// least quotient over the resources it asks for (a scalar the capacity lacks
// counts as zero). `limit` when it asks for nothing.
int64_t CopiesThatFit(const ResourceList& request, const ResourceList& capacity, int64_t limit);

// Reads a core/v1 ResourceList object ({"cpu":"500m","memory":"1Gi",...}).
// Values may be strings or JSON numbers; negative amounts are refused.
Result<ResourceList> ParseResourceList(const nlohmann::json& resources);

}  // namespace hybridjob::scheduler
