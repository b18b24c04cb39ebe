#include <algorithm>
#include <cmath>
#include <set>

#include <hybridjob/common/quantity.h>
#include <hybridjob/scheduler/queues.h>

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

}  // namespace

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
  }
  return Status::Ok();
}

Status ValidatePolicyConfig(const PolicyConfig& config) {
  if (Status status = ValidateQueues(config.queues); !status.ok()) {
    return status;
  }
  if (config.reclaim.max_groups_per_cycle < 0) {
    return InvalidArgument("reclaim.maxGroupsPerCycle: must not be negative");
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
  return Status::Ok();
}

QueueTable::QueueTable(const std::vector<QueueSpec>& queues) : queues_(queues) {
  bool has_default = std::any_of(queues_.begin(), queues_.end(), [](const QueueSpec& queue) {
    return queue.name == kDefaultQueueName;
  });
  if (!has_default) {
    QueueSpec fallback;
    fallback.name = std::string(kDefaultQueueName);
    queues_.push_back(std::move(fallback));
  }
  for (size_t i = 0; i < queues_.size(); ++i) {
    index_.emplace(queues_[i].name, i);  // the first of duplicate names wins
  }
}

const QueueSpec* QueueTable::Find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &queues_[it->second];
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
  if (pod.group_spec.has_value() && !pod.group_spec->queue.empty()) {
    return pod.group_spec->queue;
  }
  return kDefaultQueueName;
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
  return std::all_of(group.spec.roles.begin(), group.spec.roles.end(), [&](const RoleSpec& role) {
    return BoundInRole(group, role.name) >= role.min_replicas;
  });
}

std::vector<int32_t> StartingMinimums(const PodGroup& group) {
  std::vector<int32_t> minimums;
  bool any = !group.bound.empty();
  for (const RoleSpec& role : group.spec.roles) {
    minimums.push_back(role.min_replicas);
    any |= role.min_replicas > 0;
  }
  if (any) {
    return minimums;
  }
  const RoleSpec* first = nullptr;
  size_t first_index = 0;
  for (size_t i = 0; i < group.spec.roles.size(); ++i) {
    const RoleSpec& role = group.spec.roles[i];
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
    RoleSpec& role = copy.spec.roles[i];
    role.min_replicas = minimums[i];
    role.max_replicas = std::max(minimums[i], BoundInRole(group, role.name));
  }
  return copy;
}

std::vector<const PodInfo*> MinimumMembers(const PodGroup& group) {
  std::vector<int32_t> minimums = StartingMinimums(group);
  std::vector<const PodInfo*> out;
  std::vector<const PodInfo*> members;
  for (size_t i = 0; i < group.spec.roles.size(); ++i) {
    const RoleSpec& role = group.spec.roles[i];
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
