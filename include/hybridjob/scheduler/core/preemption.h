// Priority preemption: a group that cannot reach its minimum may evict
// members of groups with a lower priority (pod priority, the highest of a
// group's members): elastic members first (lowest group priority, then in a
// queue tree the queue closest to the waiting one, then the queue furthest
// over its share, then the lowest role priority, then the highest index),
// then whole lower-priority gangs (lowest priority, then the most recently
// created, so the least work is lost). A gang is either shrunk to no less
// than its minimum or evicted whole, never left running below it. Guaranteed
// shares are protected exactly as in reclaim. The search itself is
// FindEvictions (reclaim.h); this only builds the candidates.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include <hybridjob/scheduler/core/fair_share.h>
#include <hybridjob/scheduler/core/reclaim.h>

namespace hybridjob::scheduler {

// Candidates for a waiting group of priority `priority` (key `waiting_key`,
// queue `waiting_queue`; empty: no tree distance), in preemption order;
// groups placed in this cycle are left out.
std::vector<VictimUnit> PreemptionCandidates(const RunningGroups& running, const FairShare& share,
                                             std::string_view waiting_key, int32_t priority,
                                             std::string_view waiting_queue = {});

}  // namespace hybridjob::scheduler
