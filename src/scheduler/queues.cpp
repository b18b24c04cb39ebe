#include <algorithm>
#include <cmath>
#include <set>

#include <hybridjob/common/quantity.h>
#include <hybridjob/scheduler/queues.h>

namespace hybridjob::scheduler {
namespace {

std::string QueuePath(size_t index) { return "queues[" + std::to_string(index) + "]"; }

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
        negative = InvalidArgument(path + ".guaranteed." + std::string(name) + ": must not be negative");
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

std::string GroupKey(const PodGroup& group) { return PodKey(group.namespace_name, group.name); }

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

PodGroup AtMinimum(const PodGroup& group) {
  PodGroup copy = group;
  for (RoleSpec& role : copy.spec.roles) {
    role.max_replicas = std::max(role.min_replicas, BoundInRole(group, role.name));
  }
  return copy;
}

ResourceList MinimumRequest(const PodGroup& group) {
  ResourceList total;
  std::vector<const PodInfo*> members;
  for (const RoleSpec& role : group.spec.roles) {
    int32_t lacking = role.min_replicas - BoundInRole(group, role.name);
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
    for (size_t i = 0; i < members.size() && static_cast<int32_t>(i) < lacking; ++i) {
      total += members[i]->requests;
    }
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
