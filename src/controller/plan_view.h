// The planner's state for one pass, split in two: what it reads (the job and
// what was observed, indexed once) and what it writes (the plan being built).
// Every stage of planning (plan_stages.h) is a free function of the two.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/api/time.h>
#include <hybridjob/api/types.h>
#include <hybridjob/controller/actions.h>
#include <hybridjob/controller/cluster_spec.h>
#include <hybridjob/controller/observed.h>
#include <hybridjob/controller/options.h>

namespace hybridjob::controller::plan {

using MemberKey = std::pair<std::string, int32_t>;  // role, index

// How the job ends in this pass.
struct Terminal {
  api::JobPhase phase;
  std::string reason;
  std::string message;
};

// A member whose pod this pass deletes so that it is recreated.
struct Restart {
  const ObservedPod* pod;
  std::string role;
  std::string description;  // what ended it, or what took it away
};

// The job and its children as this pass sees them; never changes once built.
// It refers to `observed` and `options`, which must outlive it.
struct PlanView {
  // Defaults applied; status.run is the run this pass plans (the first
  // pass's: spec.runPolicy.rerun), as the children it builds are labelled.
  api::HybridJob job;
  const Observed& observed;
  api::HybridJobStatus old_status;  // as read, before this pass
  // Our member pods by (role, index): controlled by the job and named for
  // their index. They point into observed.pods.
  std::map<MemberKey, const ObservedPod*> own;
  // Member pods of ours from another run (a re-run's predecessors), named
  // for theirs: never counted; the ended ones of kept runs stay
  // (spec.runHistoryLimit), the others are deleted.
  std::vector<const ObservedPod*> stale;
  // Edits of the spec this run does not take (api/spec_edits.h); job.spec is
  // the spec it goes on with.
  std::vector<std::string> ignored_edits;
  std::set<MemberKey> evicted_gone;   // members deleted while marked for disruption
  std::set<std::string> taken_names;  // every pod of the job's name, ours or not
  // Members whose pod the API server refused to create and that still have
  // none, with its answer.
  std::map<MemberKey, const RefusedCreate*> refused;
  // While some are refused: the members the job goes on with before it has
  // a membership, per role its live pods at indices 0..k-1, when every role
  // reaches its minimum with them. Unset when nothing is refused, or while a
  // role stays below its minimum (the job waits for the API server to admit
  // more).
  std::optional<Membership> refusal_limit;
  api::TimePoint now;
  std::string now_text;
  const PlannerOptions& options;

  const ObservedPod* Own(const std::string& role, int32_t index) const;
  // A live pod of ours: present and not on its way out.
  const ObservedPod* Live(const std::string& role, int32_t index) const;
  bool OwnedByJob(const nlohmann::json& object) const;
  // Whether a child with this controller uid is the job's.
  bool OwnedByJobUid(const std::string& controller_uid) const;
  // Whether a child labelled for run `run` belongs to the run this pass plans.
  bool CurrentRun(int64_t run) const { return run == job.status.run; }
  bool CurrentRun(const nlohmann::json& object) const;
};

// The object of `objects` named `name`, or nullptr.
const nlohmann::json* FindByName(const std::vector<nlohmann::json>& objects,
                                 const std::string& name);

// Applies the job's defaults and indexes what was observed.
PlanView MakePlanView(api::HybridJob job, const Observed& observed, api::TimePoint now,
                      const PlannerOptions& options);

// The plan as the stages build it. Actions are gathered by kind; Assemble
// (plan_status.cpp) puts them in the order the reconciler applies them.
struct PlanBuilder {
  api::HybridJobStatus status;  // the status being built, starting from the old one
  std::vector<Action> support;  // PVCs, Services, the TensorBoard Deployment
  std::optional<Action> config_map_action;
  std::optional<nlohmann::json> run_revision;  // to create before anything else
  std::vector<DeletePod> deletes;
  std::vector<PatchPodGroupSpec> patches;
  std::vector<nlohmann::json> creates;  // member pods
  bool delete_job = false;
  std::optional<std::chrono::seconds> requeue;

  // What this pass does to members, for the status and the Events that
  // report it.
  std::vector<Restart> restarts;
  std::vector<Restart> replacements;  // members the cluster took away, replaced as they were
  std::string gang_replaced;          // why the whole gang is re-placed, if it is
  std::map<std::string, int32_t> restarted_per_role;
  int32_t surplus_deleted = 0;
  std::vector<std::string> membership_events;
  // What the Created condition counts, once it holds: its Event reports it.
  CreatedMembers created_members;
  std::string membership_restart;  // why every member restarts, if it does

  // Reconcile again after `delay` at the latest (and not before 1s).
  void Requeue(std::chrono::seconds delay);
  // Names of the pods this pass deletes.
  std::set<std::string> DeletedNames() const;
  // A finished job only waits for its TTL: what an active pass asked for is
  // dropped; what it reports about its members stays.
  void DropActiveWork();
};

// An empty plan whose status starts as the old one, at the job's generation.
PlanBuilder StartPlan(const PlanView& view);

inline bool IsMember(const std::optional<Membership>& membership, const std::string& role,
                     int32_t index) {
  return membership && index < membership->Count(role);
}

}  // namespace hybridjob::controller::plan
