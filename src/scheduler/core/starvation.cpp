#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include <hybridjob/scheduler/core/predicates.h>
#include <hybridjob/scheduler/core/starvation.h>
#include <hybridjob/scheduler/core/topology.h>

namespace hybridjob::scheduler {
namespace {

bool Unavailable(const std::vector<uint8_t>& unavailable, uint32_t slot) {
  return slot < unavailable.size() && unavailable[slot] != 0;
}

}  // namespace

std::string_view ReservationCauseName(ReservationCause cause) {
  switch (cause) {
    case ReservationCause::kStarvation:
      return "Starvation";
    case ReservationCause::kEviction:
      return "Eviction";
  }
  return "Unknown";
}

ReservedSlots::ReservedSlots(const Snapshot& snapshot, const std::vector<Reservation>& reservations)
    : snapshot_(snapshot), holder_by_slot_(snapshot.slots().size(), -1) {
  for (const Reservation& reservation : reservations) {
    int32_t holder = static_cast<int32_t>(holders_.size());
    holders_.push_back(reservation.group_key);
    for (const std::string& node : reservation.nodes) {
      std::optional<uint32_t> slot = snapshot.FindNodeSlot(node);
      if (!slot.has_value() || holder_by_slot_[*slot] >= 0) {
        continue;  // a node gone, or held already (the earlier reservation keeps it)
      }
      holder_by_slot_[*slot] = holder;
      reserved_.push_back(*slot);
    }
  }
}

const std::string* ReservedSlots::Holder(uint32_t slot) const {
  if (slot >= holder_by_slot_.size() || holder_by_slot_[slot] < 0) {
    return nullptr;
  }
  return &holders_[static_cast<size_t>(holder_by_slot_[slot])];
}

std::vector<uint8_t> ReservedSlots::BlockedFor(std::string_view group_key) const {
  std::vector<uint8_t> blocked(holder_by_slot_.size(), 0);
  for (uint32_t slot : reserved_) {
    if (*Holder(slot) != group_key) {
      blocked[slot] = 1;
    }
  }
  return blocked;
}

size_t ReservedSlots::CountHeldForOthers(std::string_view group_key) const {
  size_t count = 0;
  for (uint32_t slot : reserved_) {
    if (*Holder(slot) != group_key) {
      ++count;
    }
  }
  return count;
}

void ReservedSlots::FillFor(WhatIf& what_if, std::string_view group_key) const {
  for (uint32_t slot : reserved_) {
    if (*Holder(slot) != group_key && slot < snapshot_.slots().size()) {
      what_if.Fill(slot);
    }
  }
}

ReservationChoice ChooseReservation(const Snapshot& snapshot, const PodGroup& group,
                                    const PolicyConfig& policy, const PlannerConfig& planner,
                                    const std::vector<uint8_t>& unavailable) {
  ReservationChoice choice;
  std::vector<const PodInfo*> members = MinimumMembers(group);
  if (members.empty()) {
    choice.possible = true;
    return choice;
  }
  const GpuResources& gpus = planner.gpu_resources;
  std::stable_sort(members.begin(), members.end(), [&](const PodInfo* a, const PodInfo* b) {
    int64_t gpu_a = gpus.MilliGpus(a->requests);
    int64_t gpu_b = gpus.MilliGpus(b->requests);
    if (gpu_a != gpu_b) {
      return gpu_a > gpu_b;
    }
    return a->requests.milli_cpu > b->requests.milli_cpu;
  });

  // What each usable node offers once this scheduler's pods are gone.
  struct Candidate {
    uint32_t slot = 0;
    int64_t free_gpus = 0;
    int64_t free_cpu = 0;
    ResourceList used;  // other schedulers' pods, then the members fitted here
    bool chosen = false;
  };
  std::vector<Candidate> candidates;
  const std::vector<NodeState>& slots = snapshot.slots();
  for (uint32_t slot = 0; slot < slots.size(); ++slot) {
    const NodeState& node = slots[slot];
    if (!node.schedulable_slot() || Unavailable(unavailable, slot)) {
      continue;
    }
    Candidate candidate;
    candidate.slot = slot;
    candidate.free_gpus = gpus.MilliGpus(node.info.allocatable) - gpus.MilliGpus(node.requested);
    candidate.free_cpu = node.info.allocatable.milli_cpu - node.requested.milli_cpu;
    for (const PodInfo* pod : node.pods) {
      if (!IsManagedPod(*pod, policy)) {
        candidate.used += pod->requests;
      }
    }
    candidates.push_back(std::move(candidate));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) {
                     if (a.free_gpus != b.free_gpus) {
                       return a.free_gpus > b.free_gpus;
                     }
                     return a.free_cpu > b.free_cpu;
                   });

  // Static filter verdicts per member shape (role), cached per candidate.
  std::vector<std::string> roles;
  std::vector<std::vector<int8_t>> verdicts;  // -1 unknown, 0 fails, 1 passes
  auto passes = [&](const PodInfo& pod, size_t candidate) {
    auto role =
        static_cast<size_t>(std::find(roles.begin(), roles.end(), pod.role) - roles.begin());
    if (role == roles.size()) {
      roles.push_back(pod.role);
      verdicts.emplace_back(candidates.size(), int8_t{-1});
    }
    int8_t& verdict = verdicts[role][candidate];
    if (verdict < 0) {
      verdict = RunStaticFilters(pod, slots[candidates[candidate].slot]).ok() ? 1 : 0;
    }
    return verdict == 1;
  };
  auto fits = [&](const PodInfo& pod, const Candidate& candidate) {
    return FirstInsufficientResource(pod.requests, candidate.used,
                                     slots[candidate.slot].info.allocatable)
        .empty();
  };

  // First fit of `pods` into the nodes `allowed` passes, the nodes chosen
  // already first; the member that fits nowhere, or nullptr.
  std::vector<size_t> chosen;
  auto fit_members = [&](const std::vector<const PodInfo*>& pods,
                         const std::function<bool(uint32_t)>& allowed) -> const PodInfo* {
    for (const PodInfo* pod : pods) {
      bool placed = false;
      for (size_t c : chosen) {
        if (allowed(candidates[c].slot) && passes(*pod, c) && fits(*pod, candidates[c])) {
          candidates[c].used += pod->requests;
          placed = true;
          break;
        }
      }
      for (size_t c = 0; !placed && c < candidates.size(); ++c) {
        if (candidates[c].chosen || !allowed(candidates[c].slot) || !passes(*pod, c) ||
            !fits(*pod, candidates[c])) {
          continue;
        }
        candidates[c].chosen = true;
        candidates[c].used += pod->requests;
        chosen.push_back(c);
        placed = true;
      }
      if (!placed) {
        return pod;
      }
    }
    return nullptr;
  };
  auto anywhere = [](uint32_t) { return true; };

  // A Required topology unit is reserved inside one domain, tried in the
  // order reclaim would clear them; the rest of the group anywhere.
  std::vector<const PodInfo*> rest = members;
  if (std::optional<ConfinedUnit> confined =
          ConfinedUnitOf(group, snapshot, planner.topology_levels, planner.gpu_resources)) {
    const TopologyLevelIndex level = BuildTopologyLevel(slots, confined->level_key);
    std::set<std::string, std::less<>> roles;
    for (size_t role : confined->unit.roles) {
      roles.insert(group.spec.roles[role].name);
    }
    std::vector<const PodInfo*> inside;
    for (const PodInfo* pod : members) {
      if (roles.contains(pod->role)) {
        inside.push_back(pod);
      }
    }
    std::erase_if(rest, [&](const PodInfo* pod) { return roles.contains(pod->role); });
    bool held = false;
    for (int32_t domain : DomainsToClear(level, slots, confined->demand, unavailable)) {
      const std::vector<Candidate> before = candidates;
      auto in_domain = [&](uint32_t slot) { return level.DomainOf(slot) == domain; };
      if (fit_members(inside, in_domain) == nullptr) {
        held = true;
        break;
      }
      candidates = before;
      chosen.clear();
    }
    if (!held) {
      choice.reason = "no single " + level.key + " domain holds " +
                      UnitName(confined->unit, group.spec) +
                      "'s minimum even with every pod of this scheduler gone";
      return choice;
    }
  }
  if (const PodInfo* pod = fit_members(rest, anywhere)) {
    choice.reason = "member " + pod->name + " (" + pod->requests.ToString() +
                    ") fits no node even with every pod of this scheduler gone";
    return choice;
  }
  choice.possible = true;
  for (size_t c : chosen) {
    choice.slots.push_back(candidates[c].slot);
  }
  std::sort(choice.slots.begin(), choice.slots.end());
  return choice;
}

}  // namespace hybridjob::scheduler
