// What the recovery fault tests share: HybridJobs built as objects, and the
// end-state checks (no duplicate members, no orphaned children, no node given
// more GPUs than it has), each returning a description of what is wrong, or
// an empty string when all is well.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <set>
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

// Polls every 500 ms, calling `each_poll` and then reading the job phases,
// until `jobs` jobs are in one of `end_phases` or `timeout` passes. Returns
// the phases last read.
std::map<std::string, std::string> PollJobPhasesUntil(k8s::ApiClient& client, const std::string& ns,
                                                      int jobs,
                                                      const std::set<std::string>& end_phases,
                                                      std::chrono::seconds timeout,
                                                      const std::function<void()>& each_poll);

// Test assertions (call through ASSERT_NO_FATAL_FAILURE): exactly `jobs`
// phases, every one Succeeded.
void ExpectAllSucceeded(const std::map<std::string, std::string>& phases, size_t jobs);
// Jobs job-0 .. job-<jobs-1> in ns each kept exactly `workers` member pods,
// no slot twice, all Succeeded.
void ExpectEachJobWhole(k8s::ApiClient& client, const std::string& ns, int jobs, int workers);

}  // namespace hybridjob::testing
