#include <algorithm>
#include <string>
#include <unordered_map>

#include <hybridjob/scheduler/core/preemption.h>

namespace hybridjob::scheduler {

std::vector<VictimUnit> PreemptionCandidates(const RunningGroups& running, const FairShare& share,
                                             std::string_view waiting_key, int32_t priority,
                                             std::string_view waiting_queue) {
  const std::vector<RunningGroup>& groups = running.groups();
  std::vector<size_t> lower;
  for (size_t g = 0; g < groups.size(); ++g) {
    const RunningGroup& group = groups[g];
    if (group.priority < priority && !group.placed_this_cycle && !group.shielded &&
        !group.members.empty() && group.Key() != waiting_key) {
      lower.push_back(g);
    }
  }

  // Per victim queue: its distance from the waiting queue and the weighted
  // shares down its path, so the sort compares without lookups.
  struct QueueRank {
    int32_t distance = 1;
    std::vector<const QueueAccount*> path;  // top-level queue first
    std::vector<double> shares;             // along `path`; never empty
  };
  std::unordered_map<std::string, QueueRank> ranks;
  for (size_t g : lower) {
    auto [it, inserted] = ranks.try_emplace(groups[g].queue);
    if (!inserted) {
      continue;
    }
    QueueRank& rank = it->second;
    if (!waiting_queue.empty()) {
      // Its own queue counts with its siblings.
      rank.distance = std::max(1, share.Distance(waiting_queue, groups[g].queue));
    }
    rank.path = share.Path(groups[g].queue);
    std::reverse(rank.path.begin(), rank.path.end());
    for (const QueueAccount* account : rank.path) {
      rank.shares.push_back(share.WeightedShare(*account));
    }
    if (rank.shares.empty()) {
      rank.path.push_back(nullptr);
      rank.shares.push_back(share.WeightedShare(groups[g].queue));
    }
  }

  std::vector<VictimUnit> elastic;
  for (size_t g : lower) {
    std::vector<VictimUnit> units = ElasticUnits(running, g, EvictionCause::kPreemption);
    std::move(units.begin(), units.end(), std::back_inserter(elastic));
  }
  std::stable_sort(elastic.begin(), elastic.end(), [&](const VictimUnit& a, const VictimUnit& b) {
    const RunningGroup& ga = groups[a.group];
    const RunningGroup& gb = groups[b.group];
    if (ga.priority != gb.priority) {
      return ga.priority < gb.priority;
    }
    if (ga.queue != gb.queue) {
      const QueueRank& rank_a = ranks.at(ga.queue);
      const QueueRank& rank_b = ranks.at(gb.queue);
      if (rank_a.distance != rank_b.distance) {
        return rank_a.distance < rank_b.distance;
      }
      // Furthest over its share first, compared where the two paths part.
      size_t level = 0;
      while (level + 1 < rank_a.shares.size() && level + 1 < rank_b.shares.size() &&
             rank_a.path[level] == rank_b.path[level]) {
        ++level;
      }
      double share_a = rank_a.shares[std::min(level, rank_a.shares.size() - 1)];
      double share_b = rank_b.shares[std::min(level, rank_b.shares.size() - 1)];
      if (share_a != share_b) {
        return share_a > share_b;
      }
    }
    int32_t role_a = ga.roles[static_cast<size_t>(a.role)].priority;
    int32_t role_b = gb.roles[static_cast<size_t>(b.role)].priority;
    if (role_a != role_b) {
      return role_a < role_b;
    }
    if (a.pods.front()->index != b.pods.front()->index) {
      return a.pods.front()->index > b.pods.front()->index;
    }
    return a.group < b.group;
  });

  std::stable_sort(lower.begin(), lower.end(), [&](size_t a, size_t b) {
    const RunningGroup& ga = groups[a];
    const RunningGroup& gb = groups[b];
    if (ga.priority != gb.priority) {
      return ga.priority < gb.priority;
    }
    if (ga.creation_time != gb.creation_time) {
      return ga.creation_time > gb.creation_time;  // the youngest loses the least work
    }
    return ga.Key() < gb.Key();
  });
  std::vector<VictimUnit> out = std::move(elastic);
  for (size_t g : lower) {
    const RunningGroup& group = groups[g];
    out.push_back(VictimUnit{g, -1, group.members, group.Requests(), EvictionCause::kPreemption});
  }
  return out;
}

}  // namespace hybridjob::scheduler
