// Weighted dominant-resource fairness across queues, as Mesos's DRF sorter:
// a queue's dominant share is the largest fraction of the cluster's cpu,
// memory or GPUs it uses; divided by its weight, it orders the queues (lowest
// first). Usage is computed from the snapshot: every bound or assumed pod this
// scheduler owns counts toward its group's queue.
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <hybridjob/scheduler/queues.h>
#include <hybridjob/scheduler/resources.h>
#include <hybridjob/scheduler/snapshot.h>

namespace hybridjob::scheduler {

// The resources DRF compares: cpu, memory and each GPU resource name.
std::vector<std::string> DrfResources(const std::vector<std::string>& gpu_resource_names);

// The largest usage / capacity over `resources`; resources the cluster has
// none of are left out.
double DominantShare(const ResourceList& usage, const ResourceList& capacity,
                     const std::vector<std::string>& resources);

struct QueueAccount {
  QueueSpec spec;
  // False for a queue that pods name but the configuration does not have (it
  // was removed by a reload): weight 1, nothing guaranteed, no ceiling.
  bool configured = true;
  ResourceList used;  // requests of its bound and assumed pods
  int64_t pods = 0;
};

class FairShare {
 public:
  FairShare(const QueueTable& table, ResourceList capacity, std::vector<std::string> resources);

  // Capacity: the allocatable of every node with an object, less what pods of
  // other schedulers request there. Usage: requests of every managed pod in the
  // snapshot (tentative placements included), by queue.
  static FairShare FromSnapshot(const Snapshot& snapshot, const QueueTable& table,
                                const PolicyConfig& policy, std::vector<std::string> resources);

  const ResourceList& capacity() const { return capacity_; }
  const std::vector<std::string>& resources() const { return resources_; }
  // Stable addresses: accounts are only ever appended.
  const std::deque<QueueAccount>& accounts() const { return accounts_; }

  // The account of `queue`; one is made (unconfigured) for a name not seen yet.
  QueueAccount& Account(std::string_view queue);
  const QueueAccount* Find(std::string_view queue) const;
  void Add(std::string_view queue, const ResourceList& amount, int64_t pods = 0);
  void Remove(std::string_view queue, const ResourceList& amount, int64_t pods = 0);

  // Dominant share divided by weight.
  double WeightedShare(const QueueAccount& account) const;
  double WeightedShare(std::string_view queue) const;
  // The weighted share the queue would have if it used `used`.
  double WeightedShareOf(const QueueAccount& account, const ResourceList& used) const;
  // Whether the queue uses less than its guarantee of some guaranteed resource.
  static bool BelowGuarantee(const QueueAccount& account);
  // Queue order: below its guarantee first, then the lower weighted share,
  // then the name.
  bool GoesFirst(const QueueAccount& a, const QueueAccount& b) const;

 private:
  ResourceList capacity_;
  std::vector<std::string> resources_;
  std::deque<QueueAccount> accounts_;
  std::unordered_map<std::string, size_t, StringHash, std::equal_to<>> index_;
};

}  // namespace hybridjob::scheduler
