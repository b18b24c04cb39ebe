// What `kubectl logs` shows for a container of a pod the simulator only
// pretends to run (default mode, no --exec): no process runs, so there is no
// output; instead a few lines say so, what the container was given (image,
// command, the job's variables, where the cluster spec is mounted) and its
// lifecycle as simulated. Built on request from the SimPod the simulator
// keeps anyway, so it costs no memory per pod beyond a few decoded fields.
#pragma once

#include <string>
#include <string_view>

#include <hybridjob/common/status.h>
#include <hybridjob/sim/kubelet.h>

namespace hybridjob::sim {

// The synthetic log of `container` (a container or an init container of
// `pod`), or the kubelet's refusal: NotFound when the pod has no such
// container; BadRequest for `previous` (a simulated container never restarts)
// and for a container that has not started yet.
Result<std::string> SyntheticContainerLog(const SimPod& pod, std::string_view container,
                                          bool previous);

}  // namespace hybridjob::sim
