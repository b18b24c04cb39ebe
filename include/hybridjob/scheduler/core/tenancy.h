// Tenancy and trust: what a pod may claim. Labels, annotations, ownerReferences
// and priorities are written by whoever creates the pod, so the scheduler
// checks each claim against objects a job's owner cannot forge from a pod:
//  - group membership: the pod must be controlled by the HybridJob its
//    job-name label names (ownerReference with controller: true and the job's
//    uid), carry that job's member name for its role and index, and its
//    group-spec annotation may only ask for less than the job allows (the
//    controller lowers minimums and the schedule timeout once members have
//    succeeded);
//  - queue: the job's spec.queue, else its namespace's default queue (label
//    or annotation batch.hybridjob.io/default-queue, else `default`); the
//    policy cycle then checks that the namespace may use it;
//  - priority: the value and preemptionPolicy of the pod's PriorityClass (the
//    cluster's globalDefault class when it names none), never spec.priority.
// Pure data and functions; the scheduler's cache feeds the directory from
// informers and resolves every pod it holds. docs/security.md has the model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/api/member_signature.h>
#include <hybridjob/common/status.h>
#include <hybridjob/scheduler/core/snapshot.h>
#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {

// Label or annotation on a namespace: the queue of its jobs that name none.
inline constexpr std::string_view kDefaultQueueKey = "batch.hybridjob.io/default-queue";

// A HybridJob as far as its members' trust needs it.
struct TrustedJob {
  std::string namespace_name;
  std::string name;
  std::string uid;
  // Roles with their minimum, effective maximum and priority; queue as the
  // job names it (empty: the namespace's default queue); schedule timeout.
  GroupSpec spec;
  // Its status says it ended or is suspended: its pods go for good.
  bool ended = false;
  // status.attainedService.gpuSeconds: what the scheduler persisted.
  std::optional<int64_t> attained_gpu_seconds;

  friend bool operator==(const TrustedJob&, const TrustedJob&) = default;
};

// From a HybridJob object as the API server serves it.
Result<TrustedJob> ParseTrustedJob(const nlohmann::json& object);

struct NamespaceInfo {
  std::string name;
  LabelMap labels;
  std::string default_queue;  // from kDefaultQueueKey (label first); empty when unset

  friend bool operator==(const NamespaceInfo&, const NamespaceInfo&) = default;
};

Result<NamespaceInfo> ParseNamespaceInfo(const nlohmann::json& object);

struct PriorityClassInfo {
  std::string name;
  int32_t value = 0;
  bool preempts = true;  // preemptionPolicy other than Never
  bool global_default = false;

  friend bool operator==(const PriorityClassInfo&, const PriorityClassInfo&) = default;
};

Result<PriorityClassInfo> ParsePriorityClassInfo(const nlohmann::json& object);

// The objects pods are checked against. Each mutation returns whether it
// changed anything a pod's resolution reads.
class TenancyDirectory {
 public:
  // The keys member signatures are checked with; none: not checked.
  void SetMemberKeys(api::MemberKeys keys) { member_keys_ = std::move(keys); }
  const api::MemberKeys& member_keys() const { return member_keys_; }

  bool UpsertJob(TrustedJob job);
  bool RemoveJob(std::string_view namespace_name, std::string_view name);
  bool UpsertNamespace(NamespaceInfo info);
  bool RemoveNamespace(std::string_view name);
  bool UpsertPriorityClass(PriorityClassInfo info);
  bool RemovePriorityClass(std::string_view name);
  // Everything of one kind, after a (re)list: what is not in it is gone.
  bool ReplaceJobs(std::vector<TrustedJob> jobs);
  bool ReplaceNamespaces(std::vector<NamespaceInfo> namespaces);
  bool ReplacePriorityClasses(std::vector<PriorityClassInfo> classes);

  const TrustedJob* FindJob(std::string_view namespace_name, std::string_view name) const;
  const NamespaceInfo* FindNamespace(std::string_view name) const;
  const PriorityClassInfo* FindPriorityClass(std::string_view name) const;
  // The globalDefault class (the one with the highest value if several are).
  const PriorityClassInfo* GlobalDefaultPriorityClass() const;
  // The namespace's default queue, else `default`.
  std::string DefaultQueue(std::string_view namespace_name) const;

  const std::unordered_map<std::string, TrustedJob, StringHash, std::equal_to<>>& jobs() const {
    return jobs_;
  }

 private:
  std::unordered_map<std::string, TrustedJob, StringHash, std::equal_to<>> jobs_;  // by PodKey
  std::unordered_map<std::string, NamespaceInfo, StringHash, std::equal_to<>> namespaces_;
  std::unordered_map<std::string, PriorityClassInfo, StringHash, std::equal_to<>> classes_;
  api::MemberKeys member_keys_;
};

// What ResolvePod decided about a pod's claim to a job's membership.
enum class Membership : uint8_t {
  kNone,         // the pod claims no job
  kTrusted,      // a member of its job
  kAwaitingJob,  // the job is not known yet: the pod is not planned until it is
  kUntrusted,    // the claim does not hold: never a member (untrusted_reason)
};

// The group spec a trusted member is planned with: the job's roles, priorities
// and queue, with the annotation's minimums, maximums and schedule timeout
// where they ask for less (absent or refused annotation: the job's own).
GroupSpec EffectiveGroupSpec(const TrustedJob& job, const std::optional<GroupSpec>& annotation);

// Sets the pod's membership (job_name, group_spec, untrusted_reason,
// awaiting_job), queue, priority, preempts and namespace_labels from its own
// claims (labels, annotation, controller, priorityClassName) and the
// directory. Idempotent: reads only what ParsePod reads from the object.
// Returns whether any field it sets changed. `nonces` records which pod used
// each member signature's nonce (the cache keeps one for all pods); without
// it, a signature is not checked for reuse.
bool ResolvePod(PodInfo& pod, const TenancyDirectory& directory,
                api::MemberNonceLedger* nonces = nullptr);
Membership MembershipOf(const PodInfo& pod);

}  // namespace hybridjob::scheduler
