#include <algorithm>

#include <hybridjob/scheduler/core/what_if.h>

namespace hybridjob::scheduler {
namespace {

// Placeholder pods have no namespace, no labels and no affinity terms, so
// selectors of real pods never pick them (a term only selects pods of named
// namespaces or of its owner's, and no real namespace is empty).
PodInfo Placeholder(std::string name) {
  PodInfo pod;
  pod.name = std::move(name);
  pod.phase = "Running";
  return pod;
}

int64_t FreeOf(int64_t allocatable, int64_t requested) {
  return std::max<int64_t>(allocatable - requested, 0);
}

}  // namespace

WhatIf::WhatIf(Snapshot& snapshot) : snapshot_(snapshot), base_(snapshot.TentativeMark()) {}

WhatIf::~WhatIf() {
  Rollback();
}

bool WhatIf::Release(const PodInfo& pod) {
  std::optional<uint32_t> slot = snapshot_.FindNodeSlot(pod.node_name);
  if (!slot.has_value()) {
    return false;
  }
  PodInfo& release = scratch_.emplace_back(Placeholder("released:" + pod.Key()));
  release.node_name = pod.node_name;
  release.requests = ResourceList{} - pod.requests;
  snapshot_.PlaceTentatively(release, *slot);
  return true;
}

void WhatIf::Fill(uint32_t slot) {
  const NodeState& node = snapshot_.slots()[slot];
  PodInfo& fill = scratch_.emplace_back(Placeholder("fill:" + node.info.name));
  fill.node_name = node.info.name;
  const ResourceList& allocatable = node.info.allocatable;
  const ResourceList& requested = node.requested;
  fill.requests.milli_cpu = FreeOf(allocatable.milli_cpu, requested.milli_cpu);
  fill.requests.memory = FreeOf(allocatable.memory, requested.memory);
  fill.requests.ephemeral_storage =
      FreeOf(allocatable.ephemeral_storage, requested.ephemeral_storage);
  fill.requests.pods = FreeOf(allocatable.pods, requested.pods);
  for (const ScalarResource& scalar : allocatable.scalars()) {
    int64_t free = FreeOf(scalar.amount, requested.Scalar(scalar.name));
    if (free > 0) {
      fill.requests.SetScalar(scalar.name, free);
    }
  }
  snapshot_.PlaceTentatively(fill, slot);
}

size_t WhatIf::Mark() const {
  return snapshot_.TentativeMark();
}

void WhatIf::RollbackTo(size_t mark) {
  snapshot_.RollbackTentative(std::max(mark, base_));
}

void WhatIf::Rollback() {
  snapshot_.RollbackTentative(base_);
}

}  // namespace hybridjob::scheduler
