#include <algorithm>
#include <iterator>

#include <hybridjob/k8s/workqueue.h>

namespace hybridjob::k8s {

WorkQueue::WorkQueue(std::unique_ptr<WorkqueueRateLimiter> limiter, WorkQueueObserver observer)
    : limiter_(limiter ? std::move(limiter) : std::make_unique<WorkqueueRateLimiter>()),
      observer_(std::move(observer)) {}

WorkQueue::~WorkQueue() {
  ShutDown();
}

void WorkQueue::NotifyDepth(size_t depth) {
  if (observer_.on_depth) {
    observer_.on_depth(depth);
  }
}

void WorkQueue::PushLocked(const std::string& key, Lane lane) {
  std::list<std::string>& list = lane == Lane::kUrgent ? urgent_ : normal_;
  list.push_back(key);
  queued_[key] = Queued{lane, std::prev(list.end())};
  cv_.notify_one();
}

void WorkQueue::AddLocked(const std::string& key, Time now, Lane lane) {
  if (shutting_down_) {
    return;
  }
  if (lane == Lane::kUrgent && processing_.contains(key)) {
    urgent_after_done_.insert(key);  // Done queues it, in this lane
  }
  if (dirty_.contains(key)) {
    // Already waiting: an urgent add moves it up.
    if (auto it = queued_.find(key);
        lane == Lane::kUrgent && it != queued_.end() && it->second.lane == Lane::kNormal) {
      normal_.erase(it->second.at);
      queued_.erase(it);
      PushLocked(key, Lane::kUrgent);
    }
    return;
  }
  dirty_.insert(key);
  added_at_.emplace(key, now);
  if (processing_.contains(key)) {
    return;  // queued again by Done
  }
  PushLocked(key, lane);
}

void WorkQueue::AddInLane(const std::string& key, Lane lane) {
  size_t depth;
  {
    MutexLock lock(mu_);
    const Time now = std::chrono::steady_clock::now();
    if (auto held = HeldUntilLocked(key, now)) {
      AddAtLocked(key, *held);
      return;
    }
    AddLocked(key, now, lane);
    depth = queued_.size();
  }
  NotifyDepth(depth);
}

void WorkQueue::Add(const std::string& key) {
  AddInLane(key, Lane::kNormal);
}

void WorkQueue::AddUrgent(const std::string& key) {
  AddInLane(key, Lane::kUrgent);
}

void WorkQueue::AddAfter(const std::string& key, Duration delay) {
  MutexLock lock(mu_);
  const Time now = std::chrono::steady_clock::now();
  Time ready = now + delay;
  if (auto held = HeldUntilLocked(key, now)) {
    ready = std::max(ready, *held);
  }
  if (ready <= now) {
    AddLocked(key, now);
    const size_t depth = queued_.size();
    lock.Unlock();
    NotifyDepth(depth);
    return;
  }
  AddAtLocked(key, ready);
}

void WorkQueue::AddAtLocked(const std::string& key, Time ready) {
  if (shutting_down_) {
    return;
  }
  if (auto it = delayed_index_.find(key); it != delayed_index_.end()) {
    if (it->second->first <= ready) {
      return;  // already due sooner
    }
    delayed_.erase(it->second);
    delayed_index_.erase(it);
  }
  delayed_index_[key] = delayed_.emplace(ready, key);
  // A waiter may be sleeping until a later time: let it recompute.
  cv_.notify_all();
}

std::optional<WorkQueue::Time> WorkQueue::HeldUntilLocked(const std::string& key, Time now) {
  auto it = hold_until_.find(key);
  if (it == hold_until_.end()) {
    return std::nullopt;
  }
  if (it->second <= now) {
    hold_until_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void WorkQueue::AddRateLimited(const std::string& key, Duration at_least) {
  Duration delay;
  {
    MutexLock lock(mu_);
    const Time now = std::chrono::steady_clock::now();
    delay = std::max(limiter_->When(key, now), at_least);
    if (at_least > Duration::zero()) {
      Time& hold = hold_until_[key];
      hold = std::max(hold, now + at_least);
    }
  }
  if (observer_.on_retry) {
    observer_.on_retry();
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  MutexLock lock(mu_);
  limiter_->Forget(key);
  hold_until_.erase(key);
}

int WorkQueue::NumRequeues(const std::string& key) {
  MutexLock lock(mu_);
  return limiter_->NumRequeues(key);
}

void WorkQueue::PromoteDueLocked(Time now) {
  while (!delayed_.empty() && delayed_.begin()->first <= now) {
    const std::string key = delayed_.begin()->second;
    delayed_index_.erase(key);
    delayed_.erase(delayed_.begin());
    if (auto held = HeldUntilLocked(key, now)) {
      AddAtLocked(key, *held);  // delayed before the server asked for a pause
    } else {
      // It waited its time already (an expectation recheck, a retry, a
      // timer): not again behind keys added since.
      AddLocked(key, now, Lane::kUrgent);
    }
  }
}

std::list<std::string>& WorkQueue::NextLaneLocked() {
  if (urgent_.empty() || normal_.empty()) {
    urgent_run_ = 0;
    return urgent_.empty() ? normal_ : urgent_;
  }
  if (++urgent_run_ < kUrgentRun) {
    return urgent_;
  }
  urgent_run_ = 0;  // the plain lane's turn
  return normal_;
}

std::optional<std::string> WorkQueue::Get() {
  std::string key;
  Duration waited{};
  size_t depth;
  {
    MutexLock lock(mu_);
    while (true) {
      PromoteDueLocked(std::chrono::steady_clock::now());
      if (!queued_.empty() || shutting_down_) {
        break;
      }
      if (delayed_.empty()) {
        lock.Wait(cv_);
      } else {
        // A copy: another worker may promote (and free) that entry while
        // this one waits, and wait_until reads the time again on waking.
        const Time due = delayed_.begin()->first;
        lock.WaitUntil(cv_, due);
      }
    }
    if (queued_.empty()) {
      return std::nullopt;  // shut down and drained
    }
    std::list<std::string>& lane = NextLaneLocked();
    key = std::move(lane.front());
    lane.pop_front();
    queued_.erase(key);
    processing_.insert(key);
    dirty_.erase(key);
    const Time now = std::chrono::steady_clock::now();
    if (auto it = added_at_.find(key); it != added_at_.end()) {
      waited = now - it->second;
      added_at_.erase(it);
    }
    started_at_[key] = now;
    depth = queued_.size();
  }
  if (observer_.on_queue_latency) {
    observer_.on_queue_latency(waited);
  }
  NotifyDepth(depth);
  return key;
}

void WorkQueue::Done(const std::string& key) {
  Duration worked{};
  {
    MutexLock lock(mu_);
    processing_.erase(key);
    const bool urgent = urgent_after_done_.erase(key) > 0;
    if (auto it = started_at_.find(key); it != started_at_.end()) {
      worked = std::chrono::steady_clock::now() - it->second;
      started_at_.erase(it);
    }
    if (dirty_.contains(key)) {
      if (auto held = HeldUntilLocked(key, std::chrono::steady_clock::now())) {
        // Added while it was being processed, but the server asked for a
        // pause: it comes back when the pause ends.
        dirty_.erase(key);
        added_at_.erase(key);
        AddAtLocked(key, *held);
      } else {
        PushLocked(key, urgent ? Lane::kUrgent : Lane::kNormal);
      }
    }
  }
  if (observer_.on_work_duration) {
    observer_.on_work_duration(worked);
  }
}

void WorkQueue::ShutDown() {
  MutexLock lock(mu_);
  shutting_down_ = true;
  delayed_.clear();
  delayed_index_.clear();
  hold_until_.clear();
  cv_.notify_all();
}

bool WorkQueue::ShuttingDown() {
  MutexLock lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() {
  MutexLock lock(mu_);
  return queued_.size();
}

size_t WorkQueue::DelayedLen() {
  MutexLock lock(mu_);
  return delayed_.size();
}

}  // namespace hybridjob::k8s
