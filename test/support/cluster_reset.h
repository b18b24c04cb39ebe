// A control plane that the tests of one binary share, one test after another:
// what the cluster held when it came up is recorded once (the baseline), and
// before each later test everything else is deleted, so each test starts on
// a cluster as empty as a fresh one, without paying for a fresh one.
#pragma once

#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>
#include <hybridjob/k8s/api_client.h>

namespace hybridjob::testing {

// The resources of one discovery document (GET /api/v1 or /apis/<group>/<v>)
// that can be listed and deleted: no subresources, and not the API's own
// definitions (CustomResourceDefinitions, APIServices), which every test of
// a binary applies alike and whose deletion would take their objects along.
std::vector<k8s::Resource> DeletableResources(const nlohmann::json& resource_list);

// Every listable, deletable resource the server serves, by discovery (each
// group's preferred version).
Result<std::vector<k8s::Resource>> DiscoverDeletableResources(k8s::ApiClient& client);

// The uids of every object of every deletable resource: what the cluster
// holds now.
Result<std::set<std::string>> ObjectUids(k8s::ApiClient& client);

// Deletes every object whose uid is not in `baseline` (at once, without
// grace, finalizers cleared: no kubelet or controller of the test is left to
// act on them) and waits until they are gone, namespaces included. Events
// are deleted but not waited for. An error names what was left.
Status DeleteAllBut(k8s::ApiClient& client, const std::set<std::string>& baseline,
                    std::chrono::seconds timeout = std::chrono::seconds(90));

}  // namespace hybridjob::testing
