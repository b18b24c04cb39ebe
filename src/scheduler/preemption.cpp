#include <algorithm>

#include <hybridjob/scheduler/preemption.h>

namespace hybridjob::scheduler {

std::vector<VictimUnit> PreemptionCandidates(const RunningGroups& running, const FairShare& share,
                                             std::string_view waiting_key, int32_t priority) {
  const std::vector<RunningGroup>& groups = running.groups();
  std::vector<size_t> lower;
  for (size_t g = 0; g < groups.size(); ++g) {
    const RunningGroup& group = groups[g];
    if (group.priority < priority && !group.placed_this_cycle && !group.shielded &&
        !group.members.empty() && group.Key() != waiting_key) {
      lower.push_back(g);
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
    double share_a = share.WeightedShare(ga.queue);
    double share_b = share.WeightedShare(gb.queue);
    if (share_a != share_b) {
      return share_a > share_b;
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
