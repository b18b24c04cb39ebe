// What the scheduler's informers saw, as typed changes for the scheduling
// loop: reflector threads parse objects into deltas and queue them
// (delta_feed.h); only the loop applies them, to the SchedulerCache it owns.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include <hybridjob/scheduler/core/tenancy.h>
#include <hybridjob/scheduler/core/volumes.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {

// An object added or changed.
template <class T>
struct Upsert {
  T object;
};
// An object gone; namespace_name is empty for cluster-scoped kinds.
template <class T>
struct Removal {
  std::string namespace_name;
  std::string name;
};
// Every object of the kind after a (re)list: those not in it are gone.
template <class T>
struct Relist {
  std::vector<T> objects;
};

using Delta =
    std::variant<Upsert<NodeInfo>, Removal<NodeInfo>, Relist<NodeInfo>, Upsert<PodInfo>,
                 Removal<PodInfo>, Relist<PodInfo>, Upsert<TrustedJob>, Removal<TrustedJob>,
                 Relist<TrustedJob>, Upsert<NamespaceInfo>, Removal<NamespaceInfo>,
                 Relist<NamespaceInfo>, Upsert<PriorityClassInfo>, Removal<PriorityClassInfo>,
                 Relist<PriorityClassInfo>, Upsert<ClaimInfo>, Removal<ClaimInfo>,
                 Relist<ClaimInfo>, Upsert<VolumeInfo>, Removal<VolumeInfo>, Relist<VolumeInfo>,
                 Upsert<StorageClassInfo>, Removal<StorageClassInfo>, Relist<StorageClassInfo>>;

}  // namespace hybridjob::scheduler
