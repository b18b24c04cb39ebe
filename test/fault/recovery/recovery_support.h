// What the recovery fault tests share: HybridJobs built as objects, and the
// end-state checks (no duplicate members, no orphaned children, no node given
// more GPUs than it has), each returning a description of what is wrong, or
// an empty string when all is well.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/k8s/api_client.h>

namespace hybridjob::testing {

struct WorkerJobSpec {
  int workers = 2;
  int gpus = 0;                 // per member
  std::string duration = "3s";  // simulated run time of each member
  bool with_volume = false;     // a PVC the job creates
  std::string restart_policy = "OnFailure";
};

// A generic HybridJob whose one role, "worker", has min = max = workers.
nlohmann::json WorkerJob(const std::string& name, const WorkerJobSpec& spec);

// Creates a job, retrying while the API server is unreachable (a restart);
// an AlreadyExists after a retry counts as created.
Status CreateJobRetrying(k8s::ApiClient& client, const std::string& ns, const nlohmann::json& job,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60));

// Member pods by job name, from one list of the namespace.
std::map<std::string, std::vector<nlohmann::json>> PodsByJob(k8s::ApiClient& client,
                                                             const std::string& ns);
// Phase by job name, from one list of the namespace.
std::map<std::string, std::string> JobPhases(k8s::ApiClient& client, const std::string& ns);

bool Terminating(const nlohmann::json& object);
std::string NodeOf(const nlohmann::json& pod);

// Role/index slots of a job held by more than one live (not terminating) pod.
std::string DuplicateMembers(const std::string& job, const std::vector<nlohmann::json>& pods);
// Objects of `resource` in ns whose controlling owner is not an existing
// HybridJob (by uid), or that have no owner at all.
std::string OrphanedChildren(k8s::ApiClient& client, const std::string& ns,
                             const k8s::Resource& resource);
// Nodes whose live bound pods request more GPUs than the node has: what two
// schedulers binding at once, or a bind repeated after a crash, would cause.
std::string OvercommittedNodes(k8s::ApiClient& client);

// Bound members of a job, counted from its pods.
int BoundMembers(const std::vector<nlohmann::json>& pods);

}  // namespace hybridjob::testing
