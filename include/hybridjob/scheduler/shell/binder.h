// The scheduler's bind workers. A placed gang's members are bound a few at a
// time. When every bind took, its left-out members are marked GangSurplus;
// when one failed, a new gang is undone (what bound is deleted, so its
// controller recreates it unbound) and a growing one keeps what bound. What
// the loop must learn comes back to it as a BindOutcome.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <hybridjob/common/mutex.h>
#include <hybridjob/common/status.h>
#include <hybridjob/k8s/api_client.h>
#include <hybridjob/k8s/event_recorder.h>
#include <hybridjob/scheduler/shell/shell.h>
#include <hybridjob/scheduler/shell/status_reporter.h>

namespace hybridjob::scheduler {

// Binds one pod to a node (pods/binding), with annotations the API server
// copies onto the pod. Replaceable for fault-injection tests of the rollback
// path; the default is k8s::BindPod.
using BindAnnotations = std::map<std::string, std::string>;
using BindFunction = std::function<Status(
    k8s::ApiClient& client, const std::string& ns, const std::string& pod, const std::string& uid,
    const std::string& node, const BindAnnotations& annotations)>;

// Observes each placed group from its first member's creation to its last bind.
using GangLatencyObserver = std::function<void(std::chrono::duration<double> latency)>;

// Whether a failed bind may still have bound the pod, so that rolling its
// gang back must delete it too. Only an answer from the API server that
// refused the binding proves it did not take; a lost connection (the client
// may have sent the request before it broke), a timeout or a server error
// does not, and 409 Conflict may say the pod is already on a node (the pod
// read back tells).
bool BindMayHaveTaken(const Status& bind_status);

// A placed gang, as the loop hands it over.
struct GangBind {
  std::string key;  // GroupKey
  std::string namespace_name;
  std::string group_name;
  std::string summary;    // "ps 1 (min 1, max 1), worker 3 (min 2, max 4)"
  std::string placement;  // GroupPlan::placement: set on each member as kPlacementAnnotation
  bool grows = false;     // a running group given more members
  std::vector<PodRef> members;
  std::vector<PodRef> surplus;  // left out of the placement
  Timestamp creation_time{};
};

// The Scheduled Event of one bound member, as kube-scheduler records one
// for every pod it binds ("Successfully assigned ns/pod to node"), naming
// its gang: "(gang tf placed: ps 1 (min 1, max 1), worker 3 (min 2, max 4))",
// or "(gang tf grew: ...)".
std::string ScheduledMessage(const GangBind& gang, const PodRef& member);

// A rolled-back gang is not planned again until the members the rollback
// deleted are gone from the loop's cache (or `until` passes): until then the
// cache still shows them bound, and a cycle would take the gang for a
// running one and bind the refused members beside them, a partial gang.
struct RollbackHold {
  std::vector<PodRef> deleted;
  std::chrono::steady_clock::time_point until;
};

// What a gang bind that failed tells the loop, which owns what it changes.
struct BindOutcome {
  std::string key;                            // the gang's
  std::vector<std::string> released_surplus;  // pod keys: candidates again
  std::optional<RollbackHold> hold;
  std::vector<PodRef> failed;  // to forget: pending again
};

class GangBinder {
 public:
  using OutcomeSink = std::function<void(BindOutcome)>;

  GangBinder(k8s::ApiClient& client, BindFunction bind, k8s::EventRecorder& events,
             PodStatusReporter& reporter, SchedulerStats& stats, OutcomeSink outcomes);
  ~GangBinder();
  GangBinder(const GangBinder&) = delete;
  GangBinder& operator=(const GangBinder&) = delete;

  void Start(int workers);
  // Binds what is queued, then ends the workers.
  void Stop();
  void Submit(GangBind gang);
  void SetLatencyObserver(GangLatencyObserver observer);

 private:
  struct Progress;
  struct Task {
    std::shared_ptr<Progress> gang;
    PodRef member;
  };

  void Work();
  // Run by the gang's last worker, after every other worker's last write to
  // the gang's results (the atomic countdown orders them): the results are no
  // longer shared, so they are read without the gang's mutex.
  void Finish(const Progress& gang) HJ_NO_THREAD_SAFETY_ANALYSIS;
  std::optional<RollbackHold> RollBack(const Progress& gang) HJ_NO_THREAD_SAFETY_ANALYSIS;

  k8s::ApiClient& client_;
  BindFunction bind_;
  k8s::EventRecorder& events_;
  PodStatusReporter& reporter_;
  SchedulerStats& stats_;
  OutcomeSink outcomes_;

  Mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_ HJ_GUARDED_BY(mu_);
  bool stopping_ HJ_GUARDED_BY(mu_) = false;
  GangLatencyObserver latency_observer_ HJ_GUARDED_BY(mu_);
  std::vector<std::thread> workers_;
};

}  // namespace hybridjob::scheduler
