// Rate limiters, pure in time: callers pass `now`, so tests need no sleeping.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>

#include <hybridjob/common/mutex.h>

namespace hybridjob::k8s {

using SteadyTime = std::chrono::steady_clock::time_point;
using Duration = std::chrono::steady_clock::duration;

// Token bucket: `burst` tokens, refilled at `qps` per second. Reserve takes one
// token and returns how long the caller must wait before using it (zero when a
// token was available), so waiting callers are served in order.
class TokenBucket {
 public:
  TokenBucket(double qps, int burst, SteadyTime now);

  Duration Reserve(SteadyTime now);
  // Tokens available at `now` (may be negative while reservations are pending).
  double Tokens(SteadyTime now) const;

  double qps() const { return qps_; }
  int burst() const { return burst_; }

 private:
  void Advance(SteadyTime now);

  double qps_;
  int burst_;
  double tokens_;
  SteadyTime last_;
};

// Thread-safe blocking wrapper for a client's requests: Wait() sleeps until a
// token is available. qps <= 0 disables limiting.
class BlockingRateLimiter {
 public:
  BlockingRateLimiter(double qps, int burst);
  void Wait();

 private:
  Mutex mu_;
  TokenBucket bucket_ HJ_GUARDED_BY(mu_);
  const bool enabled_;
};

// Per-item exponential backoff: base * 2^failures, capped (client-go's
// ItemExponentialFailureRateLimiter).
class ItemExponentialBackoff {
 public:
  ItemExponentialBackoff(Duration base, Duration cap) : base_(base), cap_(cap) {}
  Duration When(const std::string& item);
  void Forget(const std::string& item) { failures_.erase(item); }
  int NumRequeues(const std::string& item) const;

 private:
  Duration base_;
  Duration cap_;
  std::unordered_map<std::string, int> failures_;
};

// The workqueue's default: the larger of per-item backoff (5 ms .. 1000 s) and
// an overall token bucket (10 qps, burst 100), as in client-go.
class WorkqueueRateLimiter {
 public:
  WorkqueueRateLimiter(Duration base = std::chrono::milliseconds(5),
                       Duration cap = std::chrono::seconds(1000), double qps = 10, int burst = 100);
  Duration When(const std::string& item, SteadyTime now);
  void Forget(const std::string& item) { backoff_.Forget(item); }
  int NumRequeues(const std::string& item) const { return backoff_.NumRequeues(item); }

 private:
  ItemExponentialBackoff backoff_;
  TokenBucket bucket_;
};

}  // namespace hybridjob::k8s
