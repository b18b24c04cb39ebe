#include <algorithm>
#include <map>
#include <numeric>

#include <hybridjob/scheduler/core/fair_targets.h>

namespace hybridjob::scheduler {
namespace {

// The dominant share of `amount` capped by the ceiling: per resource it
// names, and for a GPU resource, all weighted GPUs against it.
double CappedShare(ResourceList amount, const ResourceCeiling& max, const FairShare& share) {
  double cap = -1;
  for (const ScalarResource& limit : max.limits()) {
    if (const auto gpu = std::find_if(share.gpus().entries().begin(), share.gpus().entries().end(),
                                      [&](const GpuResource& g) { return g.name == limit.name; });
        gpu != share.gpus().entries().end()) {
      const auto capacity = static_cast<double>(share.gpus().MilliGpus(share.capacity()));
      if (capacity > 0) {
        const double of_limit = static_cast<double>(limit.amount * gpu->milli_weight) / capacity;
        cap = cap < 0 ? of_limit : std::min(cap, of_limit);
      }
    } else if (amount.Get(limit.name) > limit.amount) {
      amount.Set(limit.name, limit.amount);
    }
  }
  const double demand = DominantShare(amount, share.capacity(), share.gpus());
  return cap < 0 ? demand : std::min(demand, cap);
}

}  // namespace

std::vector<double> WaterFill(double available, const std::vector<ShareClaim>& claims) {
  std::vector<double> out(claims.size(), 0);
  if (claims.empty() || available <= 0) {
    return out;
  }
  double total_demand = 0;
  double total_guarantee = 0;
  for (const ShareClaim& claim : claims) {
    total_demand += std::max(0.0, claim.demand);
    total_guarantee += std::clamp(claim.guarantee, 0.0, std::max(0.0, claim.demand));
  }
  if (total_demand <= available) {
    for (size_t i = 0; i < claims.size(); ++i) {
      out[i] = std::max(0.0, claims[i].demand);
    }
    return out;
  }
  if (total_guarantee >= available) {
    for (size_t i = 0; i < claims.size(); ++i) {
      double guaranteed = std::clamp(claims[i].guarantee, 0.0, std::max(0.0, claims[i].demand));
      out[i] = guaranteed * available / total_guarantee;
    }
    return out;
  }
  auto at_level = [&claims](double level, std::vector<double>* shares) {
    double sum = 0;
    for (size_t i = 0; i < claims.size(); ++i) {
      const ShareClaim& claim = claims[i];
      double demand = std::max(0.0, claim.demand);
      double share = std::min(
          demand, std::max(std::min(claim.guarantee, demand), std::max(claim.weight, 0.0) * level));
      if (shares != nullptr) {
        (*shares)[i] = share;
      }
      sum += share;
    }
    return sum;
  };
  // The total is continuous and non-decreasing in the level: bisect.
  double low = 0;
  double high = 1;
  while (at_level(high, nullptr) < available && high < 1e12) {
    high *= 2;
  }
  for (int i = 0; i < 100; ++i) {
    double mid = (low + high) / 2;
    (at_level(mid, nullptr) < available ? low : high) = mid;
  }
  at_level(high, &out);
  return out;
}

double FairTargets::Queue(std::string_view name) const {
  auto it = queue.find(std::string(name));
  return it == queue.end() ? 0 : it->second;
}

double FairTargets::Group(std::string_view key) const {
  auto it = group.find(std::string(key));
  return it == group.end() ? 0 : it->second;
}

FairTargets ComputeFairTargets(const FairShare& share, const std::vector<GroupDemand>& groups,
                               bool per_group) {
  FairTargets out;
  const std::deque<QueueAccount>& accounts = share.accounts();
  std::map<std::string, size_t, std::less<>> index;
  for (size_t i = 0; i < accounts.size(); ++i) {
    index.emplace(accounts[i].spec.name, i);
  }
  // What each queue's groups still want, added up the tree.
  std::vector<ResourceList> wanted(accounts.size());
  std::map<std::string, std::vector<const GroupDemand*>> by_leaf;
  for (const GroupDemand& group : groups) {
    by_leaf[group.queue].push_back(&group);
    for (const QueueAccount* account : share.Path(group.queue)) {
      wanted[index.at(account->spec.name)] += group.wanted;
    }
  }
  std::vector<std::vector<size_t>> children(accounts.size());
  std::vector<size_t> top;
  for (size_t i = 0; i < accounts.size(); ++i) {
    const QueueAccount* parent = share.Parent(accounts[i]);
    if (parent == nullptr) {
      top.push_back(i);
    } else {
      children[index.at(parent->spec.name)].push_back(i);
    }
  }
  auto claim_of = [&](size_t i) {
    const QueueAccount& account = accounts[i];
    return ShareClaim{account.spec.weight,
                      DominantShare(account.spec.guaranteed, share.capacity(), share.gpus()),
                      CappedShare(account.used + wanted[i], account.spec.max, share)};
  };
  // Top-down, one level at a time.
  std::vector<std::pair<std::vector<size_t>, double>> levels{{top, 1.0}};
  while (!levels.empty()) {
    auto [siblings, available] = std::move(levels.back());
    levels.pop_back();
    std::vector<ShareClaim> claims;
    for (size_t i : siblings) {
      claims.push_back(claim_of(i));
    }
    std::vector<double> shares = WaterFill(available, claims);
    for (size_t k = 0; k < siblings.size(); ++k) {
      const QueueAccount& account = accounts[siblings[k]];
      out.queue[account.spec.name] = shares[k];
      if (!children[siblings[k]].empty()) {
        levels.emplace_back(children[siblings[k]], shares[k]);
      }
    }
  }
  if (!per_group) {
    return out;
  }
  // Within each leaf, its groups.
  for (const auto& [leaf, members] : by_leaf) {
    const QueueAccount* account = share.Find(leaf);
    if (account == nullptr) {
      continue;
    }
    ResourceList of_groups;
    std::vector<ShareClaim> claims;
    for (const GroupDemand* group : members) {
      of_groups += group->used;
      claims.push_back(ShareClaim{
          1.0, 0, DominantShare(group->used + group->wanted, share.capacity(), share.gpus())});
    }
    ResourceList others = account->used;
    others -= of_groups;
    double available =
        std::max(0.0, out.Queue(leaf) - DominantShare(others, share.capacity(), share.gpus()));
    std::vector<double> shares = WaterFill(available, claims);
    for (size_t k = 0; k < members.size(); ++k) {
      out.group[members[k]->key] = shares[k];
    }
  }
  return out;
}

}  // namespace hybridjob::scheduler
