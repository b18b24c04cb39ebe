#include <algorithm>

#include <hybridjob/scheduler/fair_share.h>

namespace hybridjob::scheduler {

double DominantShare(const ResourceList& usage, const ResourceList& capacity,
                     const GpuResources& gpus) {
  double dominant = 0;
  auto consider = [&](int64_t used, int64_t total) {
    if (total > 0) {
      dominant = std::max(dominant, static_cast<double>(used) / static_cast<double>(total));
    }
  };
  consider(usage.milli_cpu, capacity.milli_cpu);
  consider(usage.memory, capacity.memory);
  consider(gpus.MilliGpus(usage), gpus.MilliGpus(capacity));
  return dominant;
}

FairShare::FairShare(const QueueTable& table, ResourceList capacity, GpuResources gpus)
    : capacity_(std::move(capacity)), gpus_(std::move(gpus)) {
  for (const QueueSpec& spec : table.queues()) {
    if (index_.contains(spec.name)) {
      continue;
    }
    index_.emplace(spec.name, accounts_.size());
    accounts_.push_back(QueueAccount{spec, true, {}, 0, table.IsLeaf(spec.name)});
  }
  parent_.assign(accounts_.size(), kTop);
  children_.resize(accounts_.size());
  for (size_t i = 0; i < accounts_.size(); ++i) {
    auto it = index_.find(accounts_[i].spec.parent);
    if (!accounts_[i].spec.parent.empty() && it != index_.end()) {
      parent_[i] = it->second;
      children_[it->second].push_back(i);
    }
  }
}

NodeQueueUsage SumQueueUsage(const NodeState& node, const PolicyConfig& policy) {
  NodeQueueUsage usage;
  size_t last = 0;  // pods of one queue tend to come together
  for (const PodInfo* pod : node.pods) {
    if (!IsManagedPod(*pod, policy)) {
      usage.unmanaged += pod->requests;
      continue;
    }
    const std::string_view queue = QueueOfPod(*pod);
    if (last >= usage.managed.size() || usage.managed[last].queue != queue) {
      last = 0;
      while (last < usage.managed.size() && usage.managed[last].queue != queue) {
        ++last;
      }
      if (last == usage.managed.size()) {
        usage.managed.push_back({std::string(queue), {}, 0});
      }
    }
    usage.managed[last].requests += pod->requests;
    ++usage.managed[last].pods;
  }
  return usage;
}

const NodeQueueUsage& QueueUsageMemo::For(const Snapshot& snapshot, uint32_t slot,
                                          const PolicyConfig& policy) {
  if (policy.scheduler_name != scheduler_name_ || snapshot.identity() != snapshot_identity_) {
    entries_.clear();
    scheduler_name_ = policy.scheduler_name;
    snapshot_identity_ = snapshot.identity();
  }
  const NodeState& node = snapshot.slots()[slot];
  if (slot >= entries_.size()) {
    entries_.resize(slot + 1);
  }
  Entry& entry = entries_[slot];
  if (entry.pods_version != node.pods_version) {
    entry.usage = SumQueueUsage(node, policy);
    entry.pods_version = node.pods_version;
  }
  return entry.usage;
}

FairShare FairShare::FromSnapshot(const Snapshot& snapshot, const QueueTable& table,
                                  const PolicyConfig& policy, GpuResources gpus,
                                  QueueUsageMemo* memo) {
  ResourceList capacity;
  // Usage is summed per node and queue first, and added once per queue: every
  // cycle reads every node, so no per-pod lookup of the queue's account and its
  // ancestors.
  struct QueueUsage {
    std::string queue;  // a copy: the memo's entries may move
    ResourceList requests;
    int64_t pods = 0;
  };
  std::vector<QueueUsage> usage;
  NodeQueueUsage unmemoized;
  const std::vector<NodeState>& slots = snapshot.slots();
  for (uint32_t slot = 0; slot < slots.size(); ++slot) {
    const NodeState& node = slots[slot];
    const bool schedulable = node.schedulable_slot();
    if (!schedulable && !node.in_use) {
      continue;
    }
    const NodeQueueUsage* on_node = nullptr;
    if (memo != nullptr) {
      on_node = &memo->For(snapshot, slot, policy);
    } else {
      unmemoized = SumQueueUsage(node, policy);
      on_node = &unmemoized;
    }
    if (schedulable) {
      capacity += node.info.allocatable;
      capacity -= on_node->unmanaged;
    }
    if (!node.in_use) {
      continue;
    }
    for (const NodeQueueUsage::Queue& queue : on_node->managed) {
      auto it = std::find_if(usage.begin(), usage.end(),
                             [&](const QueueUsage& seen) { return seen.queue == queue.queue; });
      if (it == usage.end()) {
        usage.push_back({queue.queue, {}, 0});
        it = usage.end() - 1;
      }
      it->requests += queue.requests;
      it->pods += queue.pods;
    }
  }
  FairShare share(table, std::move(capacity), std::move(gpus));
  for (const QueueUsage& queue : usage) {
    share.Add(queue.queue, queue.requests, queue.pods);
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
  parent_.push_back(kTop);
  children_.emplace_back();
  return accounts_.back();
}

const QueueAccount* FairShare::Find(std::string_view queue) const {
  auto it = index_.find(queue);
  return it == index_.end() ? nullptr : &accounts_[it->second];
}

void FairShare::Add(std::string_view queue, const ResourceList& amount, int64_t pods) {
  Account(queue);
  for (size_t at = index_.find(queue)->second; at != kTop; at = parent_[at]) {
    accounts_[at].used += amount;
    accounts_[at].pods += pods;
  }
}

void FairShare::Remove(std::string_view queue, const ResourceList& amount, int64_t pods) {
  Account(queue);
  for (size_t at = index_.find(queue)->second; at != kTop; at = parent_[at]) {
    accounts_[at].used -= amount;
    accounts_[at].pods -= pods;
  }
}

const QueueAccount* FairShare::Parent(const QueueAccount& account) const {
  auto it = index_.find(account.spec.name);
  if (it == index_.end() || parent_[it->second] == kTop) {
    return nullptr;
  }
  return &accounts_[parent_[it->second]];
}

std::vector<const QueueAccount*> FairShare::Path(std::string_view queue) const {
  std::vector<const QueueAccount*> path;
  auto it = index_.find(queue);
  if (it == index_.end()) {
    return path;
  }
  for (size_t at = it->second; at != kTop; at = parent_[at]) {
    path.push_back(&accounts_[at]);
  }
  return path;
}

const QueueAccount* FairShare::FirstOverMax(std::string_view queue,
                                            const ResourceList& extra) const {
  for (const QueueAccount* account : Path(queue)) {
    if (!account->spec.max.FirstExceeded(account->used + extra).empty()) {
      return account;
    }
  }
  return nullptr;
}

std::pair<const QueueAccount*, const QueueAccount*> FairShare::Parting(std::string_view a,
                                                                       std::string_view b) const {
  std::vector<const QueueAccount*> path_a = Path(a);
  std::vector<const QueueAccount*> path_b = Path(b);
  // Walk down from the top while the paths agree.
  auto it_a = path_a.rbegin();
  auto it_b = path_b.rbegin();
  while (it_a != path_a.rend() && it_b != path_b.rend() && *it_a == *it_b) {
    ++it_a;
    ++it_b;
  }
  if (it_a == path_a.rend() || it_b == path_b.rend()) {
    return {nullptr, nullptr};
  }
  return {*it_a, *it_b};
}

int32_t FairShare::Distance(std::string_view from, std::string_view to) const {
  std::vector<const QueueAccount*> path_from = Path(from);
  std::vector<const QueueAccount*> path_to = Path(to);
  for (size_t i = 0; i < path_from.size(); ++i) {
    if (std::find(path_to.begin(), path_to.end(), path_from[i]) != path_to.end()) {
      return static_cast<int32_t>(i);
    }
  }
  return static_cast<int32_t>(path_from.size());
}

std::string_view FairShare::NextQueue(const std::vector<std::string_view>& queues) const {
  // Mark the candidates and everything above them, then descend from the top.
  std::vector<uint8_t> active(accounts_.size(), 0);
  std::vector<uint8_t> candidate(accounts_.size(), 0);
  for (std::string_view queue : queues) {
    auto it = index_.find(queue);
    if (it == index_.end()) {
      continue;
    }
    candidate[it->second] = 1;
    for (size_t at = it->second; at != kTop && active[at] == 0; at = parent_[at]) {
      active[at] = 1;
    }
  }
  size_t chosen = kTop;
  for (size_t i = 0; i < accounts_.size(); ++i) {
    if (active[i] != 0 && parent_[i] == kTop &&
        (chosen == kTop || GoesFirst(accounts_[i], accounts_[chosen]))) {
      chosen = i;
    }
  }
  while (chosen != kTop) {
    size_t below = kTop;
    for (size_t child : children_[chosen]) {
      if (active[child] != 0 && (below == kTop || GoesFirst(accounts_[child], accounts_[below]))) {
        below = child;
      }
    }
    if (below == kTop) {
      break;
    }
    chosen = below;
  }
  return chosen == kTop || candidate[chosen] == 0 ? std::string_view{}
                                                  : std::string_view(accounts_[chosen].spec.name);
}

double FairShare::WeightedShareOf(const QueueAccount& account, const ResourceList& used) const {
  double weight = account.spec.weight > 0 ? account.spec.weight : 1.0;
  return DominantShare(used, capacity_, gpus_) / weight;
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
