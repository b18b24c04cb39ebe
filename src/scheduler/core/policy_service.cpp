// Attained service in the policy cycle: the ledger carried from one cycle to
// the next, each group's level, and the order of AttainedService queues.
#include <algorithm>

#include <hybridjob/scheduler/core/gpu_resources.h>

#include "policy_stages.h"

namespace hybridjob::scheduler::policy_stages {

using std::chrono::seconds;

bool OrderedByService(const CycleInput& input, std::string_view queue) {
  const QueueSpec* spec = input.table.Find(queue);
  return spec != nullptr && spec->order == QueueOrder::kAttainedService;
}

void CarryOverService(const CycleInput& input, const PolicyState& previous, CycleState& state) {
  if (!OrdersByService(input.policy)) {
    return;  // nothing is ordered by service: the ledger is not kept
  }
  state.service_on = true;
  state.service_thresholds = ServiceThresholds(input.policy.attained_service);
  state.service = previous.service;
  AccountService(state.service, input.now);
  for (size_t i = 0; i < state.service.size(); ++i) {
    state.service_index.emplace(state.service[i].Key(), i);
  }
}

void LevelEntries(const CycleInput& input, CycleState& state) {
  if (!state.service_on) {
    return;
  }
  const int64_t promote_after = input.policy.attained_service.promote_after_seconds;
  for (Entry& entry : state.entries) {
    if (entry.lone || !OrderedByService(input, entry.queue)) {
      continue;
    }
    auto [it, added] = state.service_index.emplace(entry.key, state.service.size());
    if (added) {
      ServiceRecord record;
      record.namespace_name = entry.group.namespace_name;
      record.name = entry.group.name;
      record.queue = entry.queue;
      record.at = input.now;
      record.last_held = std::min(entry.group.creation_time, input.now);
      state.service.push_back(std::move(record));
    }
    ServiceRecord& record = state.service[it->second];
    record.queue = entry.queue;
    entry.service_level = ServiceLevel(record.gpu_seconds, state.service_thresholds);
    // Starvation guard: waited long enough to start, or to run again.
    if (promote_after > 0 && record.milli_gpus == 0 &&
        input.now - record.last_held >= seconds{promote_after}) {
      entry.service_level = 0;
    }
  }
}

void OrderLine(const CycleInput& input, const CycleState& state, std::vector<size_t>& line) {
  if (line.empty() || !OrderedByService(input, state.entries[line.front()].queue)) {
    return;
  }
  std::stable_sort(line.begin(), line.end(), [&state](size_t a, size_t b) {
    const Entry& ea = state.entries[a];
    const Entry& eb = state.entries[b];
    if (ea.group.priority != eb.group.priority) {
      return ea.group.priority > eb.group.priority;
    }
    return ea.service_level < eb.service_level;
  });
}

int32_t RunningServiceLevel(const CycleInput& input, const CycleState& state,
                            const RunningGroup& group) {
  if (!state.service_on || group.single_pod || !OrderedByService(input, group.queue)) {
    return -1;
  }
  auto it = state.service_index.find(group.Key());
  const double served = it == state.service_index.end() ? 0 : state.service[it->second].gpu_seconds;
  return ServiceLevel(served, state.service_thresholds);
}

std::vector<ServiceRecord> SettleService(const CycleInput& input, CycleState& state) {
  if (!state.service_on) {
    return {};
  }
  // Running groups never seen waiting (bound before a restart that lost
  // their records) start counting when the cycle looked at them.
  if (state.running.has_value()) {
    for (const RunningGroup& group : state.running->groups()) {
      if (group.service_level >= 0 && !state.service_index.contains(group.Key())) {
        ServiceRecord record;
        record.namespace_name = group.namespace_name;
        record.name = group.name;
        record.queue = group.queue;
        record.at = input.now;
        record.last_held = input.now;
        state.service_index.emplace(group.Key(), state.service.size());
        state.service.push_back(std::move(record));
      }
    }
  }
  std::vector<ServiceRecord> records = std::move(state.service);
  std::unordered_set<std::string_view> seen;
  for (const Entry& entry : state.entries) {
    seen.insert(entry.key);
  }
  RefreshService(records, state.snapshot, input.planner.gpu_resources, input.now);
  std::erase_if(records, [&](const ServiceRecord& record) {
    return record.milli_gpus == 0 && !seen.contains(record.Key()) &&
           input.now - record.last_held >= seconds{kServiceForgetAfterSeconds};
  });
  std::sort(records.begin(), records.end(), [](const ServiceRecord& a, const ServiceRecord& b) {
    return a.namespace_name != b.namespace_name ? a.namespace_name < b.namespace_name
                                                : a.name < b.name;
  });
  return records;
}

}  // namespace hybridjob::scheduler::policy_stages
