#include <algorithm>
#include <cmath>
#include <thread>

#include <hybridjob/common/backoff.h>
#include <hybridjob/k8s/rate_limiter.h>

namespace hybridjob::k8s {
namespace {

constexpr double kMaxWaitSeconds = 365.0 * 24 * 3600;

}  // namespace

TokenBucket::TokenBucket(double qps, int burst, SteadyTime now)
    : qps_(qps), burst_(std::max(burst, 1)), tokens_(std::max(burst, 1)), last_(now) {}

void TokenBucket::Advance(SteadyTime now) {
  if (now <= last_) {
    return;
  }
  const double elapsed = std::chrono::duration<double>(now - last_).count();
  tokens_ = std::min(static_cast<double>(burst_), tokens_ + elapsed * qps_);
  last_ = now;
}

double TokenBucket::Tokens(SteadyTime now) const {
  TokenBucket copy = *this;
  copy.Advance(now);
  return copy.tokens_;
}

Duration TokenBucket::Reserve(SteadyTime now) {
  Advance(now);
  tokens_ -= 1.0;
  if (tokens_ >= 0.0 || qps_ <= 0.0) {
    return Duration::zero();
  }
  // A tiny rate makes the wait astronomically long; converting that to an
  // integer Duration would overflow. A year is as good as forever here.
  const double wait_seconds = std::min(-tokens_ / qps_, kMaxWaitSeconds);
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(wait_seconds));
}

BlockingRateLimiter::BlockingRateLimiter(double qps, int burst)
    : bucket_(qps, burst, std::chrono::steady_clock::now()), enabled_(qps > 0) {}

void BlockingRateLimiter::Wait() {
  if (!enabled_) {
    return;
  }
  Duration delay;
  {
    MutexLock lock(mu_);
    delay = bucket_.Reserve(std::chrono::steady_clock::now());
  }
  if (delay > Duration::zero()) {
    std::this_thread::sleep_for(delay);
  }
}

Duration ItemExponentialBackoff::When(const std::string& item) {
  int& failures = failures_[item];
  const Duration delay = ExponentialBackoff(base_, cap_, failures);
  failures = std::min(failures + 1, 64);  // the delay is at its cap long before
  return delay;
}

int ItemExponentialBackoff::NumRequeues(const std::string& item) const {
  auto it = failures_.find(item);
  return it == failures_.end() ? 0 : it->second;
}

WorkqueueRateLimiter::WorkqueueRateLimiter(Duration base, Duration cap, double qps, int burst)
    : backoff_(base, cap), bucket_(qps, burst, std::chrono::steady_clock::now()) {}

Duration WorkqueueRateLimiter::When(const std::string& item, SteadyTime now) {
  return std::max(backoff_.When(item), bucket_.Reserve(now));
}

}  // namespace hybridjob::k8s
