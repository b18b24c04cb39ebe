#include <algorithm>
#include <cmath>
#include <set>

#include <hybridjob/common/quantity.h>
#include <hybridjob/scheduler/core/queues.h>

namespace hybridjob::scheduler {
namespace {

std::string QueuePath(size_t index) {
  return "queues[" + std::to_string(index) + "]";
}

std::string FormatAmount(std::string_view name, int64_t amount) {
  if (name == kResourceCpu) {
    return FormatMilliQuantity(amount);
  }
  if (name == kResourceMemory || name == kResourceEphemeralStorage) {
    return FormatBinaryQuantity(amount);
  }
  return std::to_string(amount);
}

// The position of the queue named `name`, or queues.size() when none is.
size_t IndexOf(const std::vector<QueueSpec>& queues, std::string_view name) {
  for (size_t i = 0; i < queues.size(); ++i) {
    if (queues[i].name == name) {
      return i;
    }
  }
  return queues.size();
}

// The tree checks of ValidateQueues, on a list whose names are unique.
Status ValidateTree(const std::vector<QueueSpec>& queues) {
  const size_t count = queues.size();
  std::vector<size_t> parent(count, count);  // count: top level
  for (size_t i = 0; i < count; ++i) {
    const QueueSpec& queue = queues[i];
    if (queue.parent.empty()) {
      continue;
    }
    const std::string path = QueuePath(i) + ".parent";
    // Groups without a queue and pods outside any group run in `default`: it
    // must stay a leaf, and a top-level one so nothing above can refuse them.
    if (queue.parent == api::kDefaultQueue) {
      return InvalidArgument(path +
                             ": queue \"default\" cannot have child queues: groups "
                             "without a queue and pods outside any group run in it");
    }
    if (queue.name == api::kDefaultQueue) {
      return InvalidArgument(path + ": queue \"default\" stays at the top level");
    }
    parent[i] = IndexOf(queues, queue.parent);
    if (parent[i] == count) {
      return InvalidArgument(path + ": no queue named \"" + queue.parent + "\"");
    }
  }
  for (size_t i = 0; i < count; ++i) {
    size_t at = parent[i];
    for (size_t steps = 0; at != count && steps < count; ++steps) {
      if (at == i) {
        return InvalidArgument(QueuePath(i) + ".parent: \"" + queues[i].name +
                               "\" is its own ancestor");
      }
      at = parent[at];
    }
  }
  // Groups run only in leaves: an order set on a parent would order nothing.
  for (size_t i = 0; i < count; ++i) {
    if (parent[i] != count && queues[parent[i]].order != QueueOrder::kBestEffortFifo) {
      const size_t p = parent[i];
      return InvalidArgument(QueuePath(p) + ".order: queue \"" + queues[p].name +
                             "\" has child queues and no groups of its own; set " +
                             std::string(QueueOrderName(queues[p].order)) + " on its children");
    }
  }
  // A parent's guarantee is what its children share: it must hold theirs.
  for (size_t p = 0; p < count; ++p) {
    Status short_of_children = Status::Ok();
    ForEachResource(queues[p].guaranteed, [&](std::string_view name, int64_t amount) {
      if (!short_of_children.ok() || amount <= 0) {
        return;
      }
      int64_t children = 0;
      std::string listed;
      for (size_t c = 0; c < count; ++c) {
        int64_t child = queues[c].guaranteed.Get(name);
        if (parent[c] == p && child > 0) {
          children += child;
          listed += (listed.empty() ? "" : ", ") + queues[c].name + " " + FormatAmount(name, child);
        }
      }
      if (children > amount) {
        short_of_children = InvalidArgument(
            QueuePath(p) + ": guaranteed " + std::string(name) + " " + FormatAmount(name, amount) +
            " of queue \"" + queues[p].name + "\" is less than its children are guaranteed, " +
            FormatAmount(name, children) + " (" + listed + ")");
      }
    });
    if (!short_of_children.ok()) {
      return short_of_children;
    }
  }
  // A guarantee above an ancestor's ceiling could never be used.
  for (size_t i = 0; i < count; ++i) {
    bool direct = true;
    for (size_t a = parent[i]; a != count; a = parent[a], direct = false) {
      for (const ScalarResource& limit : queues[a].max.limits()) {
        int64_t guaranteed = queues[i].guaranteed.Get(limit.name);
        if (guaranteed > limit.amount) {
          return InvalidArgument(QueuePath(i) + ": guaranteed " + limit.name + " " +
                                 FormatAmount(limit.name, guaranteed) + " exceeds max " +
                                 FormatAmount(limit.name, limit.amount) + " of its " +
                                 (direct ? "parent" : "ancestor") + " \"" + queues[a].name + "\"");
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

bool IsNamespaceName(std::string_view name) {
  if (name.empty() || name.size() > 63) {
    return false;
  }
  auto alphanumeric = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  for (char c : name) {
    if (!alphanumeric(c) && c != '-') {
      return false;
    }
  }
  return alphanumeric(name.front()) && alphanumeric(name.back());
}

void ResourceCeiling::Set(std::string_view name, int64_t amount) {
  auto it = std::lower_bound(
      limits_.begin(), limits_.end(), name,
      [](const ScalarResource& limit, std::string_view key) { return limit.name < key; });
  if (it != limits_.end() && it->name == name) {
    it->amount = amount;
  } else {
    limits_.insert(it, ScalarResource{std::string(name), amount});
  }
}

std::optional<int64_t> ResourceCeiling::Limit(std::string_view name) const {
  for (const ScalarResource& limit : limits_) {
    if (limit.name == name) {
      return limit.amount;
    }
  }
  return std::nullopt;
}

std::string_view ResourceCeiling::FirstExceeded(const ResourceList& usage) const {
  for (const ScalarResource& limit : limits_) {
    if (usage.Get(limit.name) > limit.amount) {
      return limit.name;
    }
  }
  return {};
}

std::string ResourceCeiling::ToString() const {
  if (limits_.empty()) {
    return "unlimited";
  }
  std::string out;
  for (const ScalarResource& limit : limits_) {
    if (!out.empty()) {
      out += ' ';
    }
    out += limit.name + "=" + FormatAmount(limit.name, limit.amount);
  }
  return out;
}

bool QueueSpec::AdmitsNamespace(std::string_view namespace_name,
                                const LabelMap& namespace_labels) const {
  if (namespaces.empty() && !namespace_selector.has_value()) {
    return true;
  }
  if (std::find(namespaces.begin(), namespaces.end(), namespace_name) != namespaces.end()) {
    return true;
  }
  return namespace_selector.has_value() && namespace_selector->Matches(namespace_labels);
}

std::string_view QueueOrderName(QueueOrder order) {
  switch (order) {
    case QueueOrder::kBestEffortFifo:
      return "BestEffortFIFO";
    case QueueOrder::kStrictFifo:
      return "StrictFIFO";
    case QueueOrder::kAttainedService:
      return "AttainedService";
  }
  return "Unknown";
}

Result<QueueOrder> ParseQueueOrder(std::string_view name) {
  for (QueueOrder order :
       {QueueOrder::kBestEffortFifo, QueueOrder::kStrictFifo, QueueOrder::kAttainedService}) {
    if (name == QueueOrderName(order)) {
      return order;
    }
  }
  return InvalidArgument("\"" + std::string(name) +
                         "\" is not BestEffortFIFO, StrictFIFO or AttainedService");
}

Status ValidateQueues(const std::vector<QueueSpec>& queues) {
  std::set<std::string, std::less<>> names;
  for (size_t i = 0; i < queues.size(); ++i) {
    const QueueSpec& queue = queues[i];
    const std::string path = QueuePath(i);
    if (queue.name.empty()) {
      return InvalidArgument(path + ".name: required");
    }
    if (!names.insert(queue.name).second) {
      return InvalidArgument(path + ".name: duplicate queue \"" + queue.name + "\"");
    }
    if (!std::isfinite(queue.weight) || queue.weight <= 0) {
      return InvalidArgument(path + ".weight: must be positive");
    }
    Status negative = Status::Ok();
    ForEachResource(queue.guaranteed, [&](std::string_view name, int64_t amount) {
      if (amount < 0 && negative.ok()) {
        negative =
            InvalidArgument(path + ".guaranteed." + std::string(name) + ": must not be negative");
      }
    });
    if (!negative.ok()) {
      return negative;
    }
    for (const ScalarResource& limit : queue.max.limits()) {
      if (limit.amount < 0) {
        return InvalidArgument(path + ".max." + limit.name + ": must not be negative");
      }
      int64_t guaranteed = queue.guaranteed.Get(limit.name);
      if (guaranteed > limit.amount) {
        return InvalidArgument(path + ": guaranteed " + limit.name + " " +
                               FormatAmount(limit.name, guaranteed) + " exceeds max " +
                               FormatAmount(limit.name, limit.amount));
      }
    }
    for (size_t k = 0; k < queue.namespaces.size(); ++k) {
      if (!IsNamespaceName(queue.namespaces[k])) {
        return InvalidArgument(path + ".namespaces[" + std::to_string(k) + "]: \"" +
                               queue.namespaces[k] +
                               "\" is not a valid namespace name (lowercase letters, digits and "
                               "'-', starting and ending with a letter or digit, at most 63)");
      }
    }
  }
  return ValidateTree(queues);
}

Status ValidatePolicyConfig(const PolicyConfig& config) {
  if (Status status = ValidateQueues(config.queues); !status.ok()) {
    return status;
  }
  if (config.reclaim.max_groups_per_cycle < 0) {
    return InvalidArgument("reclaim.maxGroupsPerCycle: must not be negative");
  }
  if (!(config.reclaim.share_tolerance >= 0 && config.reclaim.share_tolerance < 1)) {
    return InvalidArgument("reclaim.shareTolerance: must be at least 0 and below 1");
  }
  if (config.reclaim.min_resize_interval_seconds < 0) {
    return InvalidArgument("reclaim.minResizeIntervalSeconds: must not be negative");
  }
  if (config.starvation.max_wait_seconds < 0) {
    return InvalidArgument("starvation.maxWaitSeconds: must not be negative");
  }
  if (config.starvation.max_reserved_groups < 0) {
    return InvalidArgument("starvation.maxReservedGroups: must not be negative");
  }
  if (config.reservation_forget_after_seconds < 0) {
    return InvalidArgument("reservationForgetAfterSeconds: must not be negative");
  }
  if (config.eviction_timeout_seconds < 0) {
    return InvalidArgument("evictionTimeoutSeconds: must not be negative");
  }
  if (config.refused_eviction_backoff_seconds < 0) {
    return InvalidArgument("refusedEvictionBackoffSeconds: must not be negative");
  }
  if (config.refused_eviction_backoff_max_seconds < config.refused_eviction_backoff_seconds) {
    return InvalidArgument(
        "refusedEvictionBackoffMaxSeconds: must not be less than refusedEvictionBackoffSeconds");
  }
  return ValidateAttainedService(config.attained_service, "attainedService");
}

bool OrdersByService(const PolicyConfig& config) {
  return std::any_of(config.queues.begin(), config.queues.end(), [](const QueueSpec& queue) {
    return queue.order == QueueOrder::kAttainedService;
  });
}

QueueTable::QueueTable(const std::vector<QueueSpec>& queues) : queues_(queues) {
  bool has_default = std::any_of(queues_.begin(), queues_.end(), [](const QueueSpec& queue) {
    return queue.name == api::kDefaultQueue;
  });
  if (!has_default) {
    QueueSpec fallback;
    fallback.name = std::string(api::kDefaultQueue);
    queues_.push_back(std::move(fallback));
  }
  for (size_t i = 0; i < queues_.size(); ++i) {
    index_.emplace(queues_[i].name, i);  // the first of duplicate names wins
  }
  // Keep the table a forest whatever it was given: a parent naming no queue
  // (or itself) is dropped, then the link of the first queue found on a cycle.
  for (QueueSpec& queue : queues_) {
    if (!queue.parent.empty() && (queue.parent == queue.name || !index_.contains(queue.parent))) {
      queue.parent.clear();
    }
  }
  for (size_t i = 0; i < queues_.size(); ++i) {
    std::string_view at = queues_[i].parent;
    for (size_t steps = 0; !at.empty() && steps < queues_.size(); ++steps) {
      const QueueSpec& above = queues_[index_.find(at)->second];
      if (&above == &queues_[i]) {
        queues_[i].parent.clear();
        break;
      }
      at = above.parent;
    }
  }
  children_.resize(queues_.size());
  for (const QueueSpec& queue : queues_) {
    if (!queue.parent.empty()) {
      has_tree_ = true;
      children_[index_.find(queue.parent)->second].push_back(queue.name);
    }
  }
  for (std::vector<std::string>& children : children_) {
    std::sort(children.begin(), children.end());
  }
  // A child's guarantee counts inside its parent's: a parent is guaranteed at
  // least what its children are together, also on resources it does not name
  // (ValidateQueues refuses a parent naming less). Deepest queues first, so a
  // queue's own sum is complete before it is added to its parent's.
  std::vector<size_t> order(queues_.size());
  std::vector<int32_t> depth(queues_.size());
  for (size_t i = 0; i < queues_.size(); ++i) {
    order[i] = i;
    depth[i] = Depth(queues_[i].name);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&depth](size_t a, size_t b) { return depth[a] > depth[b]; });
  std::vector<ResourceList> children_sum(queues_.size());
  for (size_t i : order) {
    QueueSpec& queue = queues_[i];
    ForEachResource(children_sum[i], [&queue](std::string_view name, int64_t amount) {
      if (queue.guaranteed.Get(name) < amount) {
        queue.guaranteed.Set(name, amount);
      }
    });
    if (!queue.parent.empty()) {
      children_sum[index_.find(queue.parent)->second] += queue.guaranteed;
    }
  }
}

const QueueSpec* QueueTable::Find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &queues_[it->second];
}

const QueueSpec* QueueTable::Parent(std::string_view queue) const {
  const QueueSpec* spec = Find(queue);
  return spec == nullptr || spec->parent.empty() ? nullptr : Find(spec->parent);
}

const std::vector<std::string>& QueueTable::Children(std::string_view queue) const {
  static const std::vector<std::string> kNone;
  auto it = index_.find(queue);
  return it == index_.end() ? kNone : children_[it->second];
}

bool QueueTable::IsLeaf(std::string_view queue) const {
  return Children(queue).empty();
}

std::vector<std::string> QueueTable::Ancestors(std::string_view queue) const {
  std::vector<std::string> out;
  for (const QueueSpec* above = Parent(queue); above != nullptr; above = Parent(above->name)) {
    out.push_back(above->name);
  }
  return out;
}

int32_t QueueTable::Depth(std::string_view queue) const {
  int32_t depth = 0;
  for (const QueueSpec* above = Parent(queue); above != nullptr; above = Parent(above->name)) {
    ++depth;
  }
  return depth;
}

const QueueSpec* QueueTable::RefusesNamespace(std::string_view queue,
                                              std::string_view namespace_name,
                                              const LabelMap& namespace_labels) const {
  for (const QueueSpec* at = Find(queue); at != nullptr; at = Parent(at->name)) {
    if (!at->AdmitsNamespace(namespace_name, namespace_labels)) {
      return at;
    }
  }
  return nullptr;
}

bool QueueTable::AdmitsNamespace(std::string_view queue, std::string_view namespace_name,
                                 const LabelMap& namespace_labels) const {
  return Find(queue) != nullptr &&
         RefusesNamespace(queue, namespace_name, namespace_labels) == nullptr;
}

std::string QueueTable::Names() const {
  std::vector<std::string> names;
  for (const QueueSpec& queue : queues_) {
    names.push_back(queue.name);
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (const std::string& name : names) {
    if (!out.empty()) {
      out += ", ";
    }
    out += name;
  }
  return out;
}

std::string_view QueueOfPod(const PodInfo& pod) {
  if (!pod.queue.empty()) {
    return pod.queue;  // resolved (tenancy.h)
  }
  if (pod.group_spec.has_value() && !pod.group_spec->queue.empty()) {
    return pod.group_spec->queue;
  }
  return api::kDefaultQueue;
}

bool IsManagedPod(const PodInfo& pod, const PolicyConfig& policy) {
  return policy.scheduler_name.empty() || pod.scheduler_name == policy.scheduler_name;
}

std::string GroupKey(const PodGroup& group) {
  std::string key = PodKey(group.namespace_name, group.name);
  if (!group.pending.empty() && group.pending.front()->job_name.empty()) {
    key += "|pod";  // a pod outside any group, as BuildGroups keys it
  }
  return key;
}

int32_t BoundInRole(const PodGroup& group, std::string_view role) {
  int32_t count = 0;
  for (const PodInfo* pod : group.bound) {
    if (pod->role == role) {
      ++count;
    }
  }
  return count;
}

bool ReachedMinimum(const PodGroup& group) {
  if (group.bound.empty()) {
    return false;
  }
  return std::all_of(group.spec.roles.begin(), group.spec.roles.end(), [&](const GroupRole& role) {
    return BoundInRole(group, role.name) >= role.min_replicas;
  });
}

std::vector<int32_t> StartingMinimums(const PodGroup& group) {
  std::vector<int32_t> minimums;
  bool any = !group.bound.empty();
  for (const GroupRole& role : group.spec.roles) {
    minimums.push_back(role.min_replicas);
    any |= role.min_replicas > 0;
  }
  if (any) {
    return minimums;
  }
  const GroupRole* first = nullptr;
  size_t first_index = 0;
  for (size_t i = 0; i < group.spec.roles.size(); ++i) {
    const GroupRole& role = group.spec.roles[i];
    bool has_pending = std::any_of(group.pending.begin(), group.pending.end(),
                                   [&](const PodInfo* pod) { return pod->role == role.name; });
    if (role.max_replicas > 0 && has_pending &&
        (first == nullptr || role.priority > first->priority)) {
      first = &role;
      first_index = i;
    }
  }
  if (first != nullptr) {
    minimums[first_index] = 1;
  }
  return minimums;
}

PodGroup AtMinimum(const PodGroup& group) {
  std::vector<int32_t> minimums = StartingMinimums(group);
  PodGroup copy = group;
  for (size_t i = 0; i < copy.spec.roles.size(); ++i) {
    copy.spec.roles[i].min_replicas = minimums[i];
  }
  // Capping each maximum at the minimum instead would cut the indices too: a
  // replacement above a member that succeeded would never be placed.
  copy.pending = MinimumMembers(group);
  return copy;
}

std::vector<const PodInfo*> MinimumMembers(const PodGroup& group) {
  std::vector<int32_t> minimums = StartingMinimums(group);
  std::vector<const PodInfo*> out;
  std::vector<const PodInfo*> members;
  for (size_t i = 0; i < group.spec.roles.size(); ++i) {
    const GroupRole& role = group.spec.roles[i];
    int32_t lacking = minimums[i] - BoundInRole(group, role.name);
    if (lacking <= 0) {
      continue;
    }
    members.clear();
    for (const PodInfo* pod : group.pending) {
      if (pod->role == role.name) {
        members.push_back(pod);
      }
    }
    std::sort(members.begin(), members.end(), [](const PodInfo* a, const PodInfo* b) {
      return a->index != b->index ? a->index < b->index : a->name < b->name;
    });
    for (size_t k = 0; k < members.size() && static_cast<int32_t>(k) < lacking; ++k) {
      out.push_back(members[k]);
    }
  }
  return out;
}

ResourceList MinimumRequest(const PodGroup& group) {
  ResourceList total;
  for (const PodInfo* pod : MinimumMembers(group)) {
    total += pod->requests;
  }
  return total;
}

ResourceList PlanRequest(const GroupPlan& plan) {
  ResourceList total;
  for (const Assignment& assignment : plan.assignments) {
    total += assignment.pod->requests;
  }
  return total;
}

bool KeepsGuarantee(const ResourceList& usage_after, const ResourceList& removed,
                    const ResourceList& guaranteed) {
  bool keeps = true;
  ForEachResource(removed, [&](std::string_view name, int64_t amount) {
    if (amount > 0 && guaranteed.Get(name) > 0 && usage_after.Get(name) < guaranteed.Get(name)) {
      keeps = false;
    }
  });
  return keeps;
}

bool WithinGuarantee(const ResourceList& usage, const ResourceList& request,
                     const ResourceList& guaranteed) {
  bool any = false;
  bool within = true;
  ForEachResource(request, [&](std::string_view name, int64_t amount) {
    int64_t entitled = guaranteed.Get(name);
    if (amount <= 0 || entitled <= 0) {
      return;
    }
    any = true;
    if (usage.Get(name) > entitled) {
      within = false;
    }
  });
  return any && within;
}

}  // namespace hybridjob::scheduler
