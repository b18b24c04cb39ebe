// Test support for controller integration tests: the HybridJob CRD on the
// shared local cluster.
#pragma once

#include <chrono>

#include <hybridjob/common/status.h>
#include <hybridjob/k8s/api_client.h>

namespace hybridjob::testing {

// Creates the HybridJob CRD from crds/ (an existing one is kept) and waits
// until it is established and its resource is served.
Status EnsureHybridJobCrd(k8s::ApiClient& client,
                          std::chrono::milliseconds timeout = std::chrono::seconds(60));

}  // namespace hybridjob::testing
