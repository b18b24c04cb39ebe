#include <algorithm>

#include <hybridjob/scheduler/core/fair_share.h>

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

namespace {

void AddQueueUsage(std::vector<NodeQueueUsage::Queue>& usage, const NodeQueueUsage::Queue& queue) {
  auto it = std::find_if(usage.begin(), usage.end(), [&](const NodeQueueUsage::Queue& seen) {
    return seen.queue == queue.queue;
  });
  if (it == usage.end()) {
    usage.push_back({queue.queue, {}, 0});
    it = usage.end() - 1;
  }
  it->requests += queue.requests;
  it->pods += queue.pods;
}

// One node's part of SumSnapshot; for slots in use only.
void AddNode(const NodeState& node, const NodeQueueUsage& on_node, SnapshotSums& sums) {
  if (node.schedulable_slot()) {
    sums.capacity += node.info.allocatable;
    sums.capacity -= on_node.unmanaged;
  }
  for (const NodeQueueUsage::Queue& queue : on_node.managed) {
    AddQueueUsage(sums.usage, queue);
  }
}

}  // namespace

SnapshotSums SumSnapshot(const Snapshot& snapshot, const PolicyConfig& policy) {
  SnapshotSums sums;
  for (const NodeState& node : snapshot.slots()) {
    if (node.in_use) {
      AddNode(node, SumQueueUsage(node, policy), sums);
    }
  }
  return sums;
}

const SnapshotSums& QueueUsageMemo::Sums(const Snapshot& snapshot, const PolicyConfig& policy) {
  if (policy.scheduler_name != scheduler_name_ || snapshot.identity() != snapshot_identity_) {
    entries_.clear();
    blocks_.clear();
    total_ = {};
    scheduler_name_ = policy.scheduler_name;
    snapshot_identity_ = snapshot.identity();
  }
  const std::vector<NodeState>& slots = snapshot.slots();
  const size_t block_count = (slots.size() + kBlockSlots - 1) / kBlockSlots;
  bool changed = false;
  if (blocks_.size() != block_count) {
    // The last block may have gained slots (a snapshot only ever adds them).
    if (!blocks_.empty()) {
      blocks_.back().summed = false;
    }
    blocks_.resize(block_count);
    changed = true;
  }
  entries_.resize(slots.size());
  for (size_t block = 0; block < block_count; ++block) {
    const size_t begin = block * kBlockSlots;
    const size_t end = std::min(slots.size(), begin + kBlockSlots);
    bool stale = !blocks_[block].summed;
    for (size_t slot = begin; slot < end && !stale; ++slot) {
      stale = slots[slot].pods_version != entries_[slot].pods_version ||
              slots[slot].node_version != entries_[slot].node_version;
    }
    if (!stale) {
      continue;
    }
    changed = true;
    SnapshotSums sums;
    for (size_t slot = begin; slot < end; ++slot) {
      const NodeState& node = slots[slot];
      Entry& entry = entries_[slot];
      if (entry.pods_version != node.pods_version || !blocks_[block].summed) {
        entry.usage = node.in_use ? SumQueueUsage(node, policy) : NodeQueueUsage{};
      }
      entry.pods_version = node.pods_version;
      entry.node_version = node.node_version;
      if (node.in_use) {
        AddNode(node, entry.usage, sums);
      }
    }
    blocks_[block] = {true, std::move(sums)};
  }
  if (changed) {
    total_ = {};
    for (const Block& block : blocks_) {
      total_.capacity += block.sums.capacity;
      for (const NodeQueueUsage::Queue& queue : block.sums.usage) {
        AddQueueUsage(total_.usage, queue);
      }
    }
  }
  return total_;
}

FairShare FairShare::FromSnapshot(const Snapshot& snapshot, const QueueTable& table,
                                  const PolicyConfig& policy, GpuResources gpus,
                                  QueueUsageMemo* memo) {
  SnapshotSums fresh;
  const SnapshotSums* sums = nullptr;
  if (memo != nullptr) {
    sums = &memo->Sums(snapshot, policy);
  } else {
    fresh = SumSnapshot(snapshot, policy);
    sums = &fresh;
  }
  FairShare share(table, sums->capacity, std::move(gpus));
  for (const NodeQueueUsage::Queue& queue : sums->usage) {
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
    if (!account->spec.max.FirstExceeded(AsGpuEquivalents(account->used + extra, gpus_)).empty()) {
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

bool FairShare::BelowGuarantee(const QueueAccount& account) const {
  bool below = false;
  const ResourceList used = AsGpuEquivalents(account.used, gpus_, /*round_up=*/false);
  ForEachResource(account.spec.guaranteed, [&](std::string_view name, int64_t amount) {
    if (amount > 0 && used.Get(name) < amount) {
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
