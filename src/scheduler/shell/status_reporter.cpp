#include <algorithm>
#include <utility>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <hybridjob/api/time.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/scheduler/objects/objects.h>
#include <hybridjob/scheduler/shell/status_reporter.h>

namespace hybridjob::scheduler {
namespace {

// A write that keeps failing is given up after this many tries: the next
// cycle that has something to say queues it again.
constexpr int kMaxTries = 5;

}  // namespace

bool StandingNeedsWrite(const StandingWritten* last, const api::QueueStanding& standing,
                        std::string_view pod, std::chrono::steady_clock::time_point now,
                        std::chrono::steady_clock::duration refresh) {
  if (last == nullptr || last->pod != pod || last->standing.reason != standing.reason ||
      last->standing.name != standing.name) {
    return true;
  }
  return last->standing.position != standing.position && now - last->at >= refresh;
}

PodConditionWrite GangWaitingCondition(const api::QueueStanding& standing) {
  return {std::string(api::kGangWaitingCondition), true, standing.reason,
          api::FormatStanding(standing)};
}

PodConditionWrite GangPlacedCondition() {
  return {std::string(api::kGangWaitingCondition), false, "Placed", "the gang was placed"};
}

Status PatchPodConditions(k8s::ApiClient& client, const std::string& namespace_name,
                          const std::string& name,
                          const std::vector<PodConditionWrite>& conditions) {
  nlohmann::json list = nlohmann::json::array();
  const std::string now =
      api::FormatTime(std::chrono::time_point_cast<std::chrono::seconds>(api::Clock::now()));
  for (const PodConditionWrite& condition : conditions) {
    list.push_back({{"type", condition.type},
                    {"status", condition.value ? "True" : "False"},
                    {"reason", condition.reason},
                    {"message", condition.message},
                    {"lastTransitionTime", now}});
  }
  const nlohmann::json patch = {{"status", {{"conditions", std::move(list)}}}};
  k8s::PatchOptions options;
  options.subresource = "status";
  auto patched = client.Patch(k8s::resources::Pods(), namespace_name, name,
                              k8s::PatchType::kStrategicMerge, patch.dump(), options);
  if (!patched && !k8s::IsNotFound(patched.status()) && !conditions.empty()) {
    spdlog::warn("pod {}/{}: could not set {} ({}): {}", namespace_name, name,
                 conditions.front().type, conditions.front().reason, patched.status().ToString());
  }
  return patched.status();
}

PodStatusReporter::PodStatusReporter(k8s::ApiClient& client, int workers) : client_(client) {
  for (int i = 0; i < std::max(1, workers); ++i) {
    workers_.emplace_back([this] { Work(); });
  }
}

PodStatusReporter::~PodStatusReporter() {
  Stop();
}

void PodStatusReporter::Merge(std::vector<PodConditionWrite>& into,
                              std::vector<PodConditionWrite> newer) {
  for (PodConditionWrite& condition : newer) {
    auto same_type = std::find_if(into.begin(), into.end(), [&](const PodConditionWrite& old) {
      return old.type == condition.type;
    });
    if (same_type != into.end()) {
      *same_type = std::move(condition);
    } else {
      into.push_back(std::move(condition));
    }
  }
}

void PodStatusReporter::Mark(const std::string& namespace_name, const std::string& name,
                             std::vector<PodConditionWrite> conditions) {
  const std::string key = PodKey(namespace_name, name);
  {
    MutexLock lock(mu_);
    Queued& queued = queued_[key];
    queued.namespace_name = namespace_name;
    queued.name = name;
    Merge(queued.conditions, std::move(conditions));
  }
  queue_.Add(key);
}

void PodStatusReporter::Work() {
  while (std::optional<std::string> key = queue_.Get()) {
    Queued taken;
    {
      MutexLock lock(mu_);
      auto it = queued_.find(*key);
      if (it != queued_.end()) {
        taken = std::move(it->second);
        queued_.erase(it);
      }
    }
    if (taken.conditions.empty()) {
      queue_.Done(*key);
      continue;
    }
    Status status = PatchPodConditions(client_, taken.namespace_name, taken.name, taken.conditions);
    if (status.ok() || k8s::IsNotFound(status)) {
      ++written_;
      queue_.Forget(*key);
    } else if (stopping_.load() || queue_.NumRequeues(*key) + 1 >= kMaxTries) {
      ++given_up_;
      queue_.Forget(*key);
    } else {
      // Back in the queue, under anything newer queued meanwhile.
      {
        MutexLock lock(mu_);
        auto [it, inserted] = queued_.try_emplace(*key);
        std::vector<PodConditionWrite> newer = std::move(it->second.conditions);
        it->second.namespace_name = taken.namespace_name;
        it->second.name = taken.name;
        it->second.conditions = std::move(taken.conditions);
        Merge(it->second.conditions, std::move(newer));
      }
      queue_.AddRateLimited(*key);
    }
    queue_.Done(*key);
  }
}

void PodStatusReporter::Stop() {
  stopping_ = true;
  queue_.ShutDown();
  for (std::thread& worker : workers_) {
    worker.join();
  }
  workers_.clear();
}

}  // namespace hybridjob::scheduler
