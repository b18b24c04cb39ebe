#include <algorithm>

#include <hybridjob/scheduler/fair_share.h>

namespace hybridjob::scheduler {

std::vector<std::string> DrfResources(const std::vector<std::string>& gpu_resource_names) {
  std::vector<std::string> resources = {std::string(kResourceCpu), std::string(kResourceMemory)};
  for (const std::string& name : gpu_resource_names) {
    if (std::find(resources.begin(), resources.end(), name) == resources.end()) {
      resources.push_back(name);
    }
  }
  return resources;
}

double DominantShare(const ResourceList& usage, const ResourceList& capacity,
                     const std::vector<std::string>& resources) {
  double dominant = 0;
  for (const std::string& name : resources) {
    int64_t total = capacity.Get(name);
    if (total <= 0) {
      continue;
    }
    dominant =
        std::max(dominant, static_cast<double>(usage.Get(name)) / static_cast<double>(total));
  }
  return dominant;
}

FairShare::FairShare(const QueueTable& table, ResourceList capacity,
                     std::vector<std::string> resources)
    : capacity_(std::move(capacity)), resources_(std::move(resources)) {
  for (const QueueSpec& spec : table.queues()) {
    if (index_.contains(spec.name)) {
      continue;
    }
    index_.emplace(spec.name, accounts_.size());
    accounts_.push_back(QueueAccount{spec, true, {}, 0});
  }
}

FairShare FairShare::FromSnapshot(const Snapshot& snapshot, const QueueTable& table,
                                  const PolicyConfig& policy, std::vector<std::string> resources) {
  ResourceList capacity;
  for (const NodeState& node : snapshot.slots()) {
    if (!node.schedulable_slot()) {
      continue;
    }
    capacity += node.info.allocatable;
    for (const PodInfo* pod : node.pods) {
      if (!IsManagedPod(*pod, policy)) {
        capacity -= pod->requests;
      }
    }
  }
  FairShare share(table, std::move(capacity), std::move(resources));
  for (const NodeState& node : snapshot.slots()) {
    if (!node.in_use) {
      continue;
    }
    for (const PodInfo* pod : node.pods) {
      if (IsManagedPod(*pod, policy)) {
        share.Add(QueueOfPod(*pod), pod->requests, 1);
      }
    }
  }
  return share;
}

QueueAccount& FairShare::Account(std::string_view queue) {
  auto it = index_.find(queue);
  if (it != index_.end()) {
    return accounts_[it->second];
  }
  QueueAccount account;
  account.spec.name = std::string(queue);
  account.configured = false;
  index_.emplace(std::string(queue), accounts_.size());
  accounts_.push_back(std::move(account));
  return accounts_.back();
}

const QueueAccount* FairShare::Find(std::string_view queue) const {
  auto it = index_.find(queue);
  return it == index_.end() ? nullptr : &accounts_[it->second];
}

void FairShare::Add(std::string_view queue, const ResourceList& amount, int64_t pods) {
  QueueAccount& account = Account(queue);
  account.used += amount;
  account.pods += pods;
}

void FairShare::Remove(std::string_view queue, const ResourceList& amount, int64_t pods) {
  QueueAccount& account = Account(queue);
  account.used -= amount;
  account.pods -= pods;
}

double FairShare::WeightedShareOf(const QueueAccount& account, const ResourceList& used) const {
  double weight = account.spec.weight > 0 ? account.spec.weight : 1.0;
  return DominantShare(used, capacity_, resources_) / weight;
}

double FairShare::WeightedShare(const QueueAccount& account) const {
  return WeightedShareOf(account, account.used);
}

double FairShare::WeightedShare(std::string_view queue) const {
  const QueueAccount* account = Find(queue);
  return account == nullptr ? 0.0 : WeightedShare(*account);
}

bool FairShare::BelowGuarantee(const QueueAccount& account) {
  bool below = false;
  ForEachResource(account.spec.guaranteed, [&](std::string_view name, int64_t amount) {
    if (amount > 0 && account.used.Get(name) < amount) {
      below = true;
    }
  });
  return below;
}

bool FairShare::GoesFirst(const QueueAccount& a, const QueueAccount& b) const {
  bool a_below = BelowGuarantee(a);
  bool b_below = BelowGuarantee(b);
  if (a_below != b_below) {
    return a_below;
  }
  double a_share = WeightedShare(a);
  double b_share = WeightedShare(b);
  if (a_share != b_share) {
    return a_share < b_share;
  }
  return a.spec.name < b.spec.name;
}

}  // namespace hybridjob::scheduler
