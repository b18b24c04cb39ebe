// What-if edits of a snapshot, made with tentative placements so they undo
// exactly: "as if this pod were gone" (its requests released on its node) and
// "as if this node were full" (what is left of it taken). The planner then
// runs unchanged against the edited snapshot. Everything is rolled back when
// the scope ends; while it is open the snapshot's mutating calls fail.
//
// Both edits are accounting only: a released pod still counts for host ports
// and inter-pod (anti-)affinity (more cautious than reality, except for a pod
// with required affinity to the released one), and the placeholder pods carry
// no namespace or labels, so no selector of a real pod picks them. What-if
// plans decide evictions; nothing is bound on the strength of one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {

class WhatIf {
 public:
  explicit WhatIf(Snapshot& snapshot);
  ~WhatIf();
  WhatIf(const WhatIf&) = delete;
  WhatIf& operator=(const WhatIf&) = delete;

  // As if `pod`, bound or assumed in the snapshot, were gone. False (and
  // nothing done) when its node is not in the snapshot.
  bool Release(const PodInfo& pod);
  // As if everything left on the node were taken: no pod fits there.
  void Fill(uint32_t slot);

  // A point to roll back to; edits after it are undone by RollbackTo.
  size_t Mark() const;
  void RollbackTo(size_t mark);
  // Undoes every edit of this scope.
  void Rollback();

 private:
  Snapshot& snapshot_;
  size_t base_;
  // The placeholder pods the edits are made of; the snapshot keeps pointers
  // to them while they are placed. A deque keeps their addresses stable.
  std::deque<PodInfo> scratch_;
};

}  // namespace hybridjob::scheduler
