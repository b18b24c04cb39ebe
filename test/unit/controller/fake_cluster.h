// Test support: an in-memory stand-in for the API server, the gang scheduler
// and the kubelet, enough to run plans the way the reconciler will.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <hybridjob/api/json.h>
#include <hybridjob/api/labels.h>
#include <hybridjob/api/spec_edits.h>
#include <hybridjob/api/time.h>
#include <hybridjob/api/waiting.h>
#include <hybridjob/controller/children.h>
#include <hybridjob/controller/departed.h>
#include <hybridjob/controller/planner.h>
#include <hybridjob/controller/refused_creates.h>

namespace hybridjob::controller::testing {

using nlohmann::json;

inline api::TimePoint T0() {
  return std::chrono::sys_days(std::chrono::year(2024) / 5 / 1) + std::chrono::hours(12);
}

template <typename T>
std::vector<T> ActionsOf(const Plan& plan) {
  std::vector<T> out;
  for (const Action& action : plan.actions) {
    if (const T* typed = std::get_if<T>(&action)) {
      out.push_back(*typed);
    }
  }
  return out;
}

inline std::vector<std::string> CreatedPods(const Plan& plan) {
  std::vector<std::string> names;
  for (const CreatePod& create : ActionsOf<CreatePod>(plan)) {
    names.push_back(create.pod["metadata"]["name"].get<std::string>());
  }
  return names;
}

inline std::vector<std::string> DeletedPods(const Plan& plan) {
  std::vector<std::string> names;
  for (const DeletePod& removal : ActionsOf<DeletePod>(plan)) {
    names.push_back(removal.name);
  }
  return names;
}

inline std::vector<std::string> EventReasons(const Plan& plan) {
  std::vector<std::string> reasons;
  for (const RecordEvent& event : ActionsOf<RecordEvent>(plan)) {
    reasons.push_back(event.reason);
  }
  return reasons;
}

// Position of the first action of type T, or -1.
template <typename T>
int IndexOf(const Plan& plan) {
  for (size_t i = 0; i < plan.actions.size(); ++i) {
    if (std::holds_alternative<T>(plan.actions[i])) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

inline std::string Describe(const Plan& plan) {
  std::string out;
  for (const Action& action : plan.actions) {
    out += "  " + controller::Describe(action) + "\n";
  }
  return out;
}

class FakeCluster {
 public:
  explicit FakeCluster(json job, PlannerOptions options = {})
      : job_(std::move(job)), options_(std::move(options)) {}

  Observed Observe() const {
    Observed observed;
    for (const auto& [name, pod] : pods_) {
      observed.pods.push_back(ObservePod(pod));
    }
    for (const auto& [name, object] : services_) {
      observed.services.push_back(object);
    }
    for (const auto& [name, object] : config_maps_) {
      observed.config_maps.push_back(object);
    }
    for (const auto& [name, object] : claims_) {
      observed.claims.push_back(object);
    }
    for (const auto& [name, object] : deployments_) {
      observed.deployments.push_back(object);
    }
    observed.departed = departed_->For("job", observed.pods, DepartedMembers::Clock::time_point{});
    observed.refused = refused_->For("job", job_["metadata"].value("uid", ""));
    // As the shell: the run's revision, read only when the job needs it.
    if (Result<api::HybridJob> job = api::ParseHybridJob(job_);
        job.ok() && api::NeedsStartedSpec(*job)) {
      auto revision = revisions_.find(job->status.run_spec->revision);
      Result<api::HybridJobSpec> started = revision == revisions_.end()
                                               ? Result<api::HybridJobSpec>(NotFound("no revision"))
                                               : StartedSpecOf(revision->second, *job);
      if (started.ok()) {
        observed.run_spec = std::move(*started);
      } else {
        observed.run_spec_lost = true;
      }
    }
    return observed;
  }

  controller::Plan Reconcile(api::TimePoint now) const {
    return PlanJob(job_, Observe(), now, options_);
  }

  // As the reconciler: in order, stopping at the first refused create; the
  // Created Event that follows the creates is recorded all the same,
  // counting those that took.
  void Apply(const controller::Plan& plan) {
    std::set<std::string> created;
    auto record_created = [&](const RecordEvent& planned) {
      if (std::optional<RecordEvent> event = CreatedEventOnceApplied(planned, created)) {
        events_.push_back(*event);
      }
    };
    for (size_t i = 0; i < plan.actions.size(); ++i) {
      const Action& action = plan.actions[i];
      if (const CreatePod* create = std::get_if<CreatePod>(&action); create && Refuses(*create)) {
        for (size_t rest = i + 1; rest < plan.actions.size(); ++rest) {
          if (const auto* event = std::get_if<RecordEvent>(&plan.actions[rest]);
              event != nullptr && event->created) {
            record_created(*event);
          }
        }
        return;
      }
      if (const auto* event = std::get_if<RecordEvent>(&action);
          event != nullptr && event->created) {
        record_created(*event);
        continue;
      }
      if (const CreatePod* create = std::get_if<CreatePod>(&action)) {
        created.insert(NameOf(create->pod));
      }
      std::visit([this](const auto& a) { ApplyOne(a); }, action);
    }
  }

  // A ResourceQuota on the namespace's pod count: creates beyond it are
  // refused, and the controller remembers the refusal as its shell does.
  void SetPodQuota(size_t pods) { pod_quota_ = pods; }

  // Plan and apply once, for a pass that leaves work to the next one on
  // purpose (a re-run records the finished run and deletes its pods; the
  // next pass, once they are gone, starts the new run).
  controller::Plan StepOnce(api::TimePoint now) {
    controller::Plan plan = Reconcile(now);
    Apply(plan);
    return plan;
  }

  // Plan, apply, and check that planning again on the result asks for nothing.
  controller::Plan Step(api::TimePoint now) {
    controller::Plan plan = Reconcile(now);
    Apply(plan);
    controller::Plan again = Reconcile(now);
    EXPECT_TRUE(again.actions.empty()) << "planning again asked for:\n" << testing::Describe(again);
    return plan;
  }

  // --- the scheduler and the kubelet ---------------------------------------

  void Bind(const std::string& name, const std::string& node = "node-1") {
    PodRef(name)["spec"]["nodeName"] = node;
  }

  void MarkSurplus(const std::string& name) {
    PodRef(name)["status"]["conditions"] = {{{"type", "PodScheduled"},
                                             {"status", "False"},
                                             {"reason", "GangSurplus"},
                                             {"message", "left out of the placement"}}};
  }

  // The gang scheduler's mark before it evicts a member (reclaim,
  // preemption), and the DisruptionTarget condition as a 1.26+ Eviction API
  // handler leaves it after the eviction (its reason overwritten).
  void MarkReclaimed(const std::string& name) {
    PodRef(name)["status"]["conditions"] = {{{"type", "batch.hybridjob.io/GangEviction"},
                                             {"status", "True"},
                                             {"reason", "Reclaimed"},
                                             {"message", "making room for team-a/other"}},
                                            {{"type", "DisruptionTarget"},
                                             {"status", "True"},
                                             {"reason", "EvictionByEvictionAPI"},
                                             {"message", "Eviction API: evicting"}}};
  }

  // DisruptionTarget as a 1.26+ cluster component writes it when something
  // other than the gang scheduler takes the pod (a drain: EvictionByEvictionAPI,
  // the taint manager: DeletionByTaintManager, the kubelet: TerminationByKubelet).
  void MarkDisruptedBy(const std::string& name, const std::string& reason) {
    PodRef(name)["status"]["conditions"] = {{{"type", "DisruptionTarget"},
                                             {"status", "True"},
                                             {"reason", reason},
                                             {"message", "taken by the cluster"}}};
  }

  // What a kubelet writes when its admission refuses a bound pod: no
  // container ever ran.
  void RefuseAdmission(const std::string& name, const std::string& reason) {
    json& pod = PodRef(name);
    pod["status"]["phase"] = "Failed";
    pod["status"]["reason"] = reason;
    pod["status"]["message"] = "Pod was rejected: Node didn't have enough resource";
  }

  void MarkWaiting(const std::string& name, const std::string& reason, const std::string& message) {
    PodRef(name)["status"]["conditions"] = {
        {{"type", "PodScheduled"}, {"status", "False"}, {"reason", reason}, {"message", message}}};
  }

  // The scheduler's GangWaiting condition on the member that carries a
  // waiting gang's standing (api/waiting.h), beside its PodScheduled one.
  void MarkStanding(const std::string& name, const api::QueueStanding& standing,
                    const std::string& at) {
    PodRef(name)["status"]["conditions"].push_back(
        {{"type", std::string(api::kGangWaitingCondition)},
         {"status", "True"},
         {"reason", standing.reason},
         {"message", api::FormatStanding(standing)},
         {"lastTransitionTime", at}});
  }

  void Run(const std::string& name) { PodRef(name)["status"]["phase"] = "Running"; }

  void Exit(const std::string& name, int exit_code) {
    json& pod = PodRef(name);
    pod["status"]["phase"] = exit_code == 0 ? "Succeeded" : "Failed";
    pod["status"]["containerStatuses"] = {
        {{"name", "main"}, {"state", {{"terminated", {{"exitCode", exit_code}}}}}}};
  }

  void MarkTerminating(const std::string& name) {
    PodRef(name)["metadata"]["deletionTimestamp"] = "2024-05-01T11:00:00Z";
  }

  // --- inspection ----------------------------------------------------------

  bool HasPod(const std::string& name) const { return pods_.count(name) != 0; }
  const json& Pod(const std::string& name) const { return pods_.at(name); }
  json& PodRef(const std::string& name) {
    EXPECT_TRUE(HasPod(name)) << name;
    return pods_[name];
  }
  std::vector<std::string> PodNames() const {
    std::vector<std::string> names;
    for (const auto& entry : pods_) {
      names.push_back(entry.first);
    }
    return names;
  }
  void AddPod(json pod) {
    std::string name = pod["metadata"]["name"].get<std::string>();
    pods_[name] = std::move(pod);
  }
  void RemovePod(const std::string& name) { pods_.erase(name); }
  // The pod was evicted and is gone before the controller looks again: the
  // controller keeps its last state, marked for disruption.
  void EvictAndRemove(const std::string& name) {
    MarkReclaimed(name);
    departed_->PodDeleted("job", ObservePod(PodRef(name)), DepartedMembers::Clock::time_point{});
    pods_.erase(name);
  }

  const json* ConfigMap(const std::string& name) const {
    auto it = config_maps_.find(name);
    return it == config_maps_.end() ? nullptr : &it->second;
  }
  json& ConfigMapRef(const std::string& name) { return config_maps_.at(name); }
  // Secrets the plans created (the controller itself never reads them).
  const std::map<std::string, json>& Secrets() const { return secrets_; }
  void RemoveConfigMap(const std::string& name) { config_maps_.erase(name); }
  const std::map<std::string, json>& Services() const { return services_; }
  std::map<std::string, json>& Revisions() { return revisions_; }
  const std::map<std::string, json>& Claims() const { return claims_; }
  const std::map<std::string, json>& Deployments() const { return deployments_; }

  json& Job() { return job_; }
  api::HybridJobStatus Status() const {
    return job_.contains("status") ? api::ParseHybridJobStatus(job_["status"])
                                   : api::HybridJobStatus{};
  }
  bool JobDeleted() const { return job_deleted_; }
  const std::vector<RecordEvent>& Events() const { return events_; }
  // Pods ever created, by name: a crash loop must not leave more than one.
  int CreateCount(const std::string& name) const {
    auto it = creates_.find(name);
    return it == creates_.end() ? 0 : it->second;
  }

 private:
  json WithIdentity(json object) {
    object["metadata"]["uid"] = "uid-" + std::to_string(++next_uid_);
    object["metadata"]["resourceVersion"] = std::to_string(next_uid_);
    return object;
  }

  static std::string NameOf(const json& object) {
    return object["metadata"]["name"].get<std::string>();
  }

  void Store(std::map<std::string, json>& store, const json& object) {
    const std::string name = NameOf(object);
    if (store.count(name) == 0) {  // otherwise AlreadyExists, which is success
      store[name] = WithIdentity(object);
    }
  }

  bool Refuses(const CreatePod& create) {
    const std::string name = NameOf(create.pod);
    if (!pod_quota_ || pods_.count(name) != 0 || pods_.size() < *pod_quota_) {
      refused_->Created("job", name);
      return false;
    }
    const ObservedPod pod = ObservePod(create.pod);
    refused_->Refused(
        "job", job_["metadata"].value("uid", ""),
        {name, pod.role, pod.index,
         "pods \"" + name +
             "\" is forbidden: exceeded quota: pods, requested: pods=1, "
             "used: pods=" +
             std::to_string(pods_.size()) + ", limited: pods=" + std::to_string(*pod_quota_)});
    return true;
  }

  void ApplyOne(const UpdateStatus& update) { job_["status"] = api::ToJson(update.status); }
  void ApplyOne(const RecordEvent& event) { events_.push_back(event); }
  void ApplyOne(const CreatePod& create) {
    const std::string name = NameOf(create.pod);
    ASSERT_EQ(pods_.count(name), 0u) << "the planner created " << name << " while it exists";
    ++creates_[name];
    Store(pods_, create.pod);
  }
  void ApplyOne(const DeletePod& removal) {
    auto it = pods_.find(removal.name);
    if (it != pods_.end() &&
        (removal.uid.empty() || it->second["metadata"].value("uid", "") == removal.uid)) {
      pods_.erase(it);
    }
  }
  void ApplyOne(const PatchPodGroupSpec& patch) {
    auto it = pods_.find(patch.name);
    if (it != pods_.end() && it->second["metadata"].value("uid", "") == patch.uid) {
      it->second["metadata"]["annotations"][std::string(api::kGroupSpecAnnotation)] =
          patch.group_spec;
    }
  }
  void ApplyOne(const CreateService& create) { Store(services_, create.service); }
  void ApplyOne(const CreateRunRevision& create) {
    revisions_.try_emplace(NameOf(create.revision), create.revision);
  }
  void ApplyOne(const DeleteRunRevision& removal) { revisions_.erase(removal.name); }
  void ApplyOne(const CreateConfigMap& create) { Store(config_maps_, create.config_map); }
  void ApplyOne(const CreateSshKeySecret& create) { Store(secrets_, create.secret); }
  void ApplyOne(const UpdateConfigMap& update) {
    const std::string name = NameOf(update.config_map);
    ASSERT_EQ(config_maps_.count(name), 1u);
    ASSERT_EQ(config_maps_[name]["metadata"]["resourceVersion"],
              update.config_map["metadata"]["resourceVersion"]);
    config_maps_[name] = WithIdentity(update.config_map);
  }
  void ApplyOne(const DeleteConfigMap& removal) {
    auto it = config_maps_.find(removal.name);
    if (it != config_maps_.end() && it->second["metadata"].value("uid", "") == removal.uid) {
      config_maps_.erase(it);
    }
  }
  void ApplyOne(const CreatePVC& create) { Store(claims_, create.claim); }
  void ApplyOne(const CreateDeployment& create) { Store(deployments_, create.deployment); }
  void ApplyOne(const DeleteJob&) { job_deleted_ = true; }

  json job_;
  PlannerOptions options_;
  std::map<std::string, json> pods_;
  std::unique_ptr<DepartedMembers> departed_ = std::make_unique<DepartedMembers>();
  std::unique_ptr<RefusedCreates> refused_ = std::make_unique<RefusedCreates>();
  std::optional<size_t> pod_quota_;
  std::map<std::string, json> services_;
  std::map<std::string, json> config_maps_;
  std::map<std::string, json> secrets_;
  std::map<std::string, json> claims_;
  std::map<std::string, json> deployments_;
  std::map<std::string, json> revisions_;  // ControllerRevisions by name
  std::vector<RecordEvent> events_;
  std::map<std::string, int> creates_;
  bool job_deleted_ = false;
  int next_uid_ = 0;
};

}  // namespace hybridjob::controller::testing
