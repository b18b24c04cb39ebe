#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <hybridjob/scheduler/core/cluster_view.h>
#include <hybridjob/scheduler/core/fair_targets.h>

namespace hybridjob::scheduler {

using nlohmann::json;

GpuMap BuildGpuMap(const Snapshot& snapshot, const GpuResources& gpus,
                   const std::vector<std::string>& levels) {
  GpuMap map;
  map.levels = levels;
  std::map<std::tuple<size_t, std::string>, DomainView> domains;
  for (const NodeState& node : snapshot.slots()) {
    if (!node.schedulable_slot()) {
      continue;
    }
    NodeView view;
    view.name = node.info.name;
    view.ready = node.info.ready;
    view.schedulable = !node.info.unschedulable;
    view.milli_gpus = gpus.MilliGpus(node.info.allocatable);
    view.used_milli_gpus = gpus.MilliGpus(node.requested);
    std::map<std::string, int64_t> held;
    for (const PodInfo* pod : node.pods) {
      const int64_t milli = gpus.MilliGpus(pod->requests);
      if (milli > 0) {
        held[pod->namespace_name + "/" + (pod->job_name.empty() ? pod->name : pod->job_name)] +=
            milli;
      }
    }
    for (const auto& [job, milli] : held) {
      view.holders.push_back(GpuHolder{job, milli});
    }
    std::stable_sort(
        view.holders.begin(), view.holders.end(),
        [](const GpuHolder& a, const GpuHolder& b) { return a.milli_gpus > b.milli_gpus; });
    const int64_t free = view.ready && view.schedulable
                             ? std::max<int64_t>(view.milli_gpus - view.used_milli_gpus, 0)
                             : 0;
    map.milli_gpus += view.milli_gpus;
    map.used_milli_gpus += view.used_milli_gpus;
    map.largest_free = std::max(map.largest_free, free);
    if (view.used_milli_gpus > 0) {
      map.fragmented_free += free;
    }
    for (size_t level = 0; level < levels.size(); ++level) {
      const std::string* value = node.info.labels.Find(levels[level]);
      view.domains.push_back(value != nullptr ? *value : "");
      if (value == nullptr) {
        continue;
      }
      DomainView& domain = domains[{level, *value}];
      domain.level = levels[level];
      domain.value = *value;
      ++domain.nodes;
      domain.milli_gpus += view.milli_gpus;
      domain.used_milli_gpus += view.used_milli_gpus;
      domain.largest_free = std::max(domain.largest_free, free);
    }
    map.nodes.push_back(std::move(view));
  }
  std::sort(map.nodes.begin(), map.nodes.end(), [](const NodeView& a, const NodeView& b) {
    return std::tie(a.domains, a.name) < std::tie(b.domains, b.name);
  });
  for (auto& [key, domain] : domains) {
    map.domains.push_back(std::move(domain));
  }
  return map;
}

std::vector<QueueView> BuildQueueViews(const FairShare& share,
                                       const std::vector<const PodInfo*>& pending) {
  std::map<std::string, GroupDemand, std::less<>> wanted;
  for (const PodInfo* pod : pending) {
    std::string queue(QueueOfPod(*pod));
    GroupDemand& demand = wanted[queue];
    demand.key = queue;
    demand.queue = queue;
    demand.wanted += pod->requests;
  }
  std::vector<GroupDemand> demands;
  for (auto& [queue, demand] : wanted) {
    if (share.Find(queue) != nullptr) {
      demands.push_back(std::move(demand));
    }
  }
  const FairTargets targets = ComputeFairTargets(share, demands, /*per_group=*/false);
  const auto capacity_gpus = static_cast<double>(share.gpus().MilliGpus(share.capacity()));
  std::vector<QueueView> views;
  for (const QueueAccount& account : share.accounts()) {
    QueueView view;
    view.name = account.spec.name;
    view.parent = account.spec.parent;
    view.leaf = account.leaf;
    view.configured = account.configured;
    view.order = std::string(QueueOrderName(account.spec.order));
    view.weight = account.spec.weight;
    view.guaranteed = account.spec.guaranteed;
    view.max = account.spec.max;
    view.used = account.used;
    view.pods = account.pods;
    view.fair_share = targets.Queue(account.spec.name);
    view.fair_milli_gpus = std::llround(view.fair_share * capacity_gpus);
    views.push_back(std::move(view));
  }
  std::sort(views.begin(), views.end(),
            [](const QueueView& a, const QueueView& b) { return a.name < b.name; });
  return views;
}

void AddServed(std::vector<QueueView>& queues, const std::string& queue, ServedJob job) {
  auto it = std::find_if(queues.begin(), queues.end(),
                         [&queue](const QueueView& view) { return view.name == queue; });
  if (it == queues.end()) {
    return;
  }
  auto rank = [](const ServedJob& served) {
    return std::make_tuple(served.level, served.gpu_seconds, served.namespace_name, served.name);
  };
  auto at = std::upper_bound(it->served.begin(), it->served.end(), job,
                             [&rank](const ServedJob& a, const ServedJob& b) {
                               return rank(a) < rank(b);
                             });
  it->served.insert(at, std::move(job));
}

void AddWaiting(std::vector<QueueView>& queues, const std::string& queue, WaitingJob job) {
  auto it = std::find_if(queues.begin(), queues.end(),
                         [&queue](const QueueView& view) { return view.name == queue; });
  if (it == queues.end()) {
    QueueView unknown;
    unknown.name = queue;
    unknown.configured = false;
    it = queues.insert(
        std::upper_bound(queues.begin(), queues.end(), unknown,
                         [](const QueueView& a, const QueueView& b) { return a.name < b.name; }),
        std::move(unknown));
  }
  auto rank = [](const WaitingJob& waiting) {
    return std::make_tuple(waiting.position == 0, waiting.position, waiting.namespace_name,
                           waiting.name);
  };
  it->waiting.insert(
      std::upper_bound(it->waiting.begin(), it->waiting.end(), job,
                       [&](const WaitingJob& a, const WaitingJob& b) { return rank(a) < rank(b); }),
      std::move(job));
}

std::vector<RunningJob> BuildRunningJobs(const Snapshot& snapshot, const GpuResources& gpus) {
  std::map<std::pair<std::string, std::string>, RunningJob> jobs;
  for (const NodeState& node : snapshot.slots()) {
    if (!node.in_use) {
      continue;
    }
    for (const PodInfo* pod : node.pods) {
      if (pod->job_name.empty()) {
        continue;
      }
      RunningJob& job = jobs[{pod->namespace_name, pod->job_name}];
      job.namespace_name = pod->namespace_name;
      job.name = pod->job_name;
      job.queue = std::string(QueueOfPod(*pod));
      ++job.members;
      job.milli_gpus += gpus.MilliGpus(pod->requests);
    }
  }
  std::vector<RunningJob> out;
  for (auto& [key, job] : jobs) {
    out.push_back(std::move(job));
  }
  return out;
}

json ResourcesJson(const ResourceList& list) {
  json out = json::object();
  if (list.milli_cpu != 0) {
    out["cpu"] = std::to_string(list.milli_cpu) + "m";
  }
  if (list.memory != 0) {
    out["memory"] = std::to_string(list.memory);
  }
  if (list.ephemeral_storage != 0) {
    out["ephemeral-storage"] = std::to_string(list.ephemeral_storage);
  }
  for (const auto& scalar : list.scalars()) {
    if (scalar.amount != 0) {
      out[scalar.name] = std::to_string(scalar.amount);
    }
  }
  return out;
}

json ToJson(const GpuMap& map) {
  json out = {{"levels", map.levels},
              {"gpus", FormatMilliGpus(map.milli_gpus)},
              {"usedGpus", FormatMilliGpus(map.used_milli_gpus)},
              {"freeGpusInPieces", FormatMilliGpus(map.fragmented_free)},
              {"largestFreeOnANode", FormatMilliGpus(map.largest_free)},
              {"nodes", json::array()},
              {"domains", json::array()}};
  for (const NodeView& node : map.nodes) {
    json row = {{"name", node.name},
                {"ready", node.ready},
                {"schedulable", node.schedulable},
                {"gpus", FormatMilliGpus(node.milli_gpus)},
                {"usedGpus", FormatMilliGpus(node.used_milli_gpus)},
                {"jobs", json::array()}};
    json domains = json::object();
    for (size_t i = 0; i < map.levels.size() && i < node.domains.size(); ++i) {
      domains[map.levels[i]] = node.domains[i];
    }
    row["domains"] = std::move(domains);
    for (const GpuHolder& holder : node.holders) {
      row["jobs"].push_back({{"job", holder.job}, {"gpus", FormatMilliGpus(holder.milli_gpus)}});
    }
    out["nodes"].push_back(std::move(row));
  }
  for (const DomainView& domain : map.domains) {
    out["domains"].push_back({{"level", domain.level},
                              {"value", domain.value},
                              {"nodes", domain.nodes},
                              {"gpus", FormatMilliGpus(domain.milli_gpus)},
                              {"usedGpus", FormatMilliGpus(domain.used_milli_gpus)},
                              {"largestFreeOnANode", FormatMilliGpus(domain.largest_free)}});
  }
  return out;
}

json ToJson(const WaitingJob& job) {
  json out = {{"namespace", job.namespace_name}, {"name", job.name}, {"reason", job.reason}};
  if (job.position > 0) {
    out["position"] = job.position;
  }
  if (!job.message.empty()) {
    out["message"] = job.message;
  }
  return out;
}

json ToJson(const QueueView& queue, const GpuResources& gpus) {
  json max = json::object();
  for (const auto& limit : queue.max.limits()) {
    ResourceList one;
    one.Set(limit.name, limit.amount);
    max.update(ResourcesJson(one));
  }
  json row = {{"name", queue.name},
              {"leaf", queue.leaf},
              {"configured", queue.configured},
              {"order", queue.order},
              {"weight", queue.weight},
              {"guaranteed", ResourcesJson(queue.guaranteed)},
              {"used", ResourcesJson(queue.used)},
              {"max", max},
              {"gpusUsed", FormatMilliGpus(gpus.MilliGpus(queue.used))},
              {"gpusGuaranteed", FormatMilliGpus(gpus.MilliGpus(queue.guaranteed))},
              {"fairShare", std::round(queue.fair_share * 1e4) / 1e4},
              {"gpusFair", FormatMilliGpus(queue.fair_milli_gpus)},
              {"pods", queue.pods},
              {"waiting", json::array()}};
  ResourceList ceiling;
  bool gpu_ceiling = false;
  for (const auto& limit : queue.max.limits()) {
    if (gpus.Contains(limit.name)) {
      ceiling.Set(limit.name, limit.amount);
      gpu_ceiling = true;
    }
  }
  if (gpu_ceiling) {
    row["gpusMax"] = FormatMilliGpus(gpus.MilliGpus(ceiling));
  }
  if (!queue.parent.empty()) {
    row["parent"] = queue.parent;
  }
  for (const WaitingJob& job : queue.waiting) {
    row["waiting"].push_back(ToJson(job));
  }
  if (!queue.served.empty()) {
    row["attainedService"] = json::array();
    for (const ServedJob& job : queue.served) {
      row["attainedService"].push_back({{"namespace", job.namespace_name},
                                        {"name", job.name},
                                        {"gpuSeconds", job.gpu_seconds},
                                        {"level", job.level}});
    }
  }
  return row;
}

json ToJson(const RunningJob& job) {
  return {{"namespace", job.namespace_name},
          {"name", job.name},
          {"queue", job.queue},
          {"members", job.members},
          {"gpus", FormatMilliGpus(job.milli_gpus)}};
}

}  // namespace hybridjob::scheduler
