// Fair-share targets: the share of the cluster each queue, and each group in
// a leaf queue, is entitled to given what everyone asks for now. The cluster
// (dominant share 1) is shared out top-down along the queue tree; at every
// level each child gets its guarantee first (capped by what its subtree
// asks for), then the rest by weight, water-filling: a child that asks for
// less than its weighted part keeps only what it asks for and the surplus
// goes to its siblings. Within a leaf queue its groups share the queue's
// target the same way, with weight 1 each.
//
// Shares are dominant shares (fair_share.h: GPUs weighted by their
// configured weights), so on a GPU cluster a target of 0.25 of 16 GPUs is 4
// GPUs. Across resources dominant shares do not add up exactly; a queue mixing
// cpu-bound and GPU-bound work gets an approximation of its DRF share.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <hybridjob/scheduler/core/fair_share.h>
#include <hybridjob/scheduler/objects/resources.h>

namespace hybridjob::scheduler {

// One child at one level of the water-filling.
struct ShareClaim {
  double weight = 1.0;
  double guarantee = 0;  // dominant share guaranteed
  double demand = 0;     // dominant share of what it uses and still asks for
};

// Shares `available` out: every claim gets min(demand, max(guarantee,
// weight * L)) for the one level L at which the total is `available`, or its
// demand when all demands fit. When even the guarantees (capped by demand)
// exceed `available`, they are scaled down alike.
std::vector<double> WaterFill(double available, const std::vector<ShareClaim>& claims);

// A group as the targets see it.
struct GroupDemand {
  std::string key;      // GroupKey
  std::string queue;    // its leaf queue
  ResourceList used;    // bound and assumed members, leaving ones left out
  ResourceList wanted;  // pending members it would still take
};

struct FairTargets {
  // By queue name (parents too) and by group key: the dominant share each is
  // entitled to.
  std::unordered_map<std::string, double> queue;
  std::unordered_map<std::string, double> group;

  double Queue(std::string_view name) const;
  double Group(std::string_view key) const;
};

// The targets for the usage in `share` (every queue's, by account) and the
// groups' demands. A queue's demand is its subtree's usage plus what its
// groups still want, capped by the dominant share of its max. Groups of a
// leaf queue share what the queue's target leaves after its pods outside
// `groups` (lone pods, say). Without `per_group`, only the queues' targets
// (the groups' `used` is not read).
FairTargets ComputeFairTargets(const FairShare& share, const std::vector<GroupDemand>& groups,
                               bool per_group = true);

}  // namespace hybridjob::scheduler
