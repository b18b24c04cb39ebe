// Leader election on a coordination.k8s.io/v1 Lease, as client-go's: the
// holder renews every retry period; a candidate takes over once the lease has
// not been renewed for a lease duration, measured on its own clock from when
// it last saw the record change (so clock skew between hosts does not matter).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <hybridjob/common/mutex.h>
#include <hybridjob/k8s/api_client.h>

namespace hybridjob::k8s {

struct LeaderElectionConfig {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per process, e.g. hostname + random suffix
  std::chrono::milliseconds lease_duration{15000};
  std::chrono::milliseconds renew_deadline{10000};
  std::chrono::milliseconds retry_period{2000};
  // Give the lease up on Stop() so a standby takes over at once.
  bool release_on_stop = true;

  // Called on the elector's thread; keep them short (start or stop work
  // owned elsewhere).
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
  std::function<void(const std::string& leader)> on_new_leader;
};

// hostname_<random>: unique per process, readable in the Lease.
std::string DefaultLeaderIdentity();

// Checks durations: lease > renew deadline > retry period > 0.
Status ValidateLeaderElectionConfig(const LeaderElectionConfig& config);

class LeaderElector {
 public:
  LeaderElector(ApiClient& client, LeaderElectionConfig config);
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  void Start();
  // Stops campaigning; releases the lease if held and configured to.
  void Stop();

  bool IsLeader() const { return leading_.load(); }
  std::string ObservedLeader() const;

 private:
  void Run();
  // One attempt to acquire or renew; true when we hold the lease afterwards.
  bool TryAcquireOrRenew();
  void Release();
  bool SleepUnlessStopped(std::chrono::milliseconds duration);
  void SetLeading(bool leading);
  // Logged once per distinct error and then at most every 30 s (elector thread only).
  void LogFailure(std::string_view verb, const Status& status);

  ApiClient& client_;
  LeaderElectionConfig config_;
  std::atomic<bool> leading_{false};

  mutable Mutex mu_;
  std::condition_variable cv_;
  bool stopping_ HJ_GUARDED_BY(mu_) = false;
  std::thread thread_;

  // Last record seen and when (our clock).
  std::string observed_holder_ HJ_GUARDED_BY(mu_);
  std::string observed_renew_time_ HJ_GUARDED_BY(mu_);
  std::chrono::steady_clock::time_point observed_at_ HJ_GUARDED_BY(mu_){};
  std::string last_error_;
  std::chrono::steady_clock::time_point last_error_logged_{};
};

}  // namespace hybridjob::k8s
