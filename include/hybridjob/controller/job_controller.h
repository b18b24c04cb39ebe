// hybridjob-controller's shell: informers on HybridJobs and their children, a
// rate-limited workqueue of job keys, and workers that reconcile one job at a
// time by applying the pure planner's actions (planner.h) through the API.
// A job is not planned again until the caches show the controller's own last
// writes to it (expectations.h). A plan's pod creates (or deletes) go out
// concurrently; its other actions one by one, in order.
#pragma once

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <hybridjob/api/member_signature.h>
#include <hybridjob/common/mutex.h>
#include <hybridjob/controller/actions.h>
#include <hybridjob/controller/departed.h>
#include <hybridjob/controller/expectations.h>
#include <hybridjob/controller/observed.h>
#include <hybridjob/controller/options.h>
#include <hybridjob/controller/references.h>
#include <hybridjob/controller/refused_creates.h>
#include <hybridjob/controller/status_batch.h>
#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/event_recorder.h>
#include <hybridjob/k8s/informer.h>
#include <hybridjob/k8s/workqueue.h>

namespace hybridjob::controller {

struct ControllerOptions {
  std::string namespace_name;  // "" = every namespace
  int workers = 4;
  PlannerOptions planner;
  std::string field_manager = "hybridjob-controller";
  // How long a job waits for the caches to show the controller's own writes
  // (see expectations.h) before it is planned anyway.
  std::chrono::milliseconds expectations_timeout{std::chrono::seconds(30)};
  // How long a status that only reports progress may wait to go out with the
  // next change (status_batch.h); 0 writes every change at once.
  std::chrono::milliseconds status_batch_period{std::chrono::seconds(1)};
  // Each member pod is signed with the first key (api/member_signature.h) as
  // it is created, so the gang-scheduler can tell it from a forged one; none:
  // members are not signed.
  api::MemberKeys member_keys;
};

struct ControllerStats {
  std::atomic<uint64_t> reconciles{0};
  std::atomic<uint64_t> reconcile_errors{0};
  std::atomic<uint64_t> actions_applied{0};
  std::atomic<uint64_t> conflicts{0};
  // Reconciles put off because the caches had not yet shown the controller's
  // own writes, and expectations given up on after the timeout.
  std::atomic<uint64_t> expectation_waits{0};
  std::atomic<uint64_t> expectations_expired{0};
  // Passes whose status change waited to be written with a later one.
  std::atomic<uint64_t> status_writes_batched{0};
};

// Observes each reconcile: job key, outcome (ok or not) and duration.
using ReconcileObserver =
    std::function<void(bool ok, std::chrono::steady_clock::duration duration)>;

// A pod in the controller's cache: the planner's view plus its namespace.
struct CachedPod {
  std::string namespace_name;
  ObservedPod pod;
};

class JobController {
 public:
  JobController(k8s::ApiClient& client, ControllerOptions options,
                k8s::WorkQueueObserver queue_observer = {});
  ~JobController();
  JobController(const JobController&) = delete;
  JobController& operator=(const JobController&) = delete;

  void Start();  // informers; caches stay warm while not leading
  // Workers reconcile from here on (on becoming the leader). A controller that
  // loses leadership exits, as Kubernetes controllers do, rather than pausing.
  void StartWorkers();
  void Stop();

  bool WaitForCacheSync(std::chrono::milliseconds timeout);
  const ControllerStats& stats() const { return stats_; }
  void SetReconcileObserver(ReconcileObserver observer) {
    reconcile_observer_ = std::move(observer);
  }
  // Jobs in the cache by phase ("" for not yet set), for metrics.
  std::vector<std::pair<std::string, int>> JobsByPhase() const;
  size_t QueueDepth() const;

 private:
  void Worker();
  // Applies the plan for one job key; Ok, or why it must be retried.
  Status Reconcile(const std::string& key);
  // The pod with the member signature of options_.member_keys, if any.
  nlohmann::json SignedMember(const nlohmann::json& job, const nlohmann::json& pod) const;
  Status Apply(const std::string& key, const nlohmann::json& job, const Action& action);
  // Takes the plan's status write out when it only reports progress and is
  // not yet due (status_batch.h), or puts a due one in; how long until the
  // status still pending is due, if one is.
  std::optional<PendingStatusWrites::Clock::duration> BatchStatusWrite(const std::string& key,
                                                                       const nlohmann::json& job,
                                                                       Plan& plan);
  // Applies actions [begin, end): pod writes concurrently, the rest singly.
  // The pods it created are added to *created_pods.
  Status ApplyRun(const std::string& key, const nlohmann::json& job,
                  const std::vector<Action>& actions, size_t begin, size_t end,
                  std::set<std::string>* created_pods);
  // A Created Event that follows the pass's creates (RecordEvent::created),
  // counting those that took.
  void RecordCreatedEvent(const nlohmann::json& job, const RecordEvent& planned,
                          const std::set<std::string>& created_pods);
  // The job's required ConfigMaps (references.h) that do not exist, asked of
  // the API server until each was seen once for this job.
  std::vector<RequiredConfigMap> MissingConfigMaps(const std::string& key,
                                                   const nlohmann::json& job,
                                                   const Observed& observed);
  // observed.run_spec from the run's ControllerRevision when the job needs it
  // (api::NeedsStartedSpec), or run_spec_lost; an error to retry on.
  Status ReadStartedSpec(const std::string& key, const api::HybridJob& job, Observed& observed);
  // Creates a child other than a pod and expects the cache to show it.
  Status CreateChild(const std::string& key, Expectations::ChildKind kind,
                     const k8s::Resource& resource, const std::string& ns,
                     const nlohmann::json& object, const k8s::WriteOptions& write);
  // Creates an MPI job's SSH key Secret with a fresh key pair, once per job
  // (uid) in this process.
  Status CreateSshKeySecretOnce(const std::string& key, const nlohmann::json& job,
                                nlohmann::json secret, const k8s::WriteOptions& write);

  k8s::ApiClient& client_;
  ControllerOptions options_;
  ControllerStats stats_;
  ReconcileObserver reconcile_observer_;
  Expectations expectations_;
  DepartedMembers departed_;
  RefusedCreates refused_;
  PendingStatusWrites pending_statuses_;
  std::unique_ptr<k8s::WorkQueue> queue_;
  std::unique_ptr<k8s::EventRecorder> events_;
  std::unique_ptr<k8s::Informer<nlohmann::json>> jobs_;
  std::unique_ptr<k8s::Informer<CachedPod>> pods_;
  std::unique_ptr<k8s::Informer<nlohmann::json>> services_;
  std::unique_ptr<k8s::Informer<nlohmann::json>> config_maps_;
  std::unique_ptr<k8s::Informer<nlohmann::json>> claims_;
  std::unique_ptr<k8s::Informer<nlohmann::json>> deployments_;

  Mutex mu_;
  bool active_ HJ_GUARDED_BY(mu_) = false;
  bool stopping_ HJ_GUARDED_BY(mu_) = false;
  // Job key -> uid of the job whose required ConfigMaps were all seen.
  std::map<std::string, std::string> config_maps_found_ HJ_GUARDED_BY(mu_);
  // Job key -> uid of the MPI job whose SSH Secret exists.
  std::map<std::string, std::string> ssh_secrets_made_ HJ_GUARDED_BY(mu_);
  // Job key -> the spec its run started with, as its revision holds it.
  struct StartedSpec {
    std::string uid;
    std::string revision;
    api::HybridJobSpec spec;
  };
  std::map<std::string, StartedSpec> started_specs_ HJ_GUARDED_BY(mu_);
  std::atomic<bool> halting_{false};  // Stop() began: reconcile nothing more
  std::vector<std::thread> workers_;
};

}  // namespace hybridjob::controller
