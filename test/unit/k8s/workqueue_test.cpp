#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <hybridjob/k8s/rate_limiter.h>
#include <hybridjob/k8s/workqueue.h>

namespace hybridjob::k8s {
namespace {

using namespace std::chrono_literals;

TEST(TokenBucketTest, BurstThenRate) {
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  TokenBucket bucket(10, 3, t0);
  EXPECT_EQ(bucket.Reserve(t0), Duration::zero());
  EXPECT_EQ(bucket.Reserve(t0), Duration::zero());
  EXPECT_EQ(bucket.Reserve(t0), Duration::zero());
  // Burst spent: the 4th waits one token (100 ms), the 5th two.
  EXPECT_NEAR(std::chrono::duration<double>(bucket.Reserve(t0)).count(), 0.1, 1e-6);
  EXPECT_NEAR(std::chrono::duration<double>(bucket.Reserve(t0)).count(), 0.2, 1e-6);
  // After a second, refilled but never beyond the burst.
  EXPECT_NEAR(bucket.Tokens(t0 + 10s), 3.0, 1e-6);
}

TEST(TokenBucketTest, RefillIsProportionalToElapsedTime) {
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  TokenBucket bucket(4, 1, t0);
  EXPECT_EQ(bucket.Reserve(t0), Duration::zero());
  EXPECT_NEAR(bucket.Tokens(t0 + 125ms), 0.5, 1e-6);
  EXPECT_EQ(bucket.Reserve(t0 + 250ms), Duration::zero());
}

TEST(TokenBucketTest, TinyRateWaitsLongInsteadOfOverflowing) {
  // One token per 1e300 s: the wait does not fit a Duration. Converting it
  // unclamped overflowed (undefined; in practice a negative wait, so no wait).
  const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
  TokenBucket bucket(1e-300, 1, t0);
  EXPECT_EQ(bucket.Reserve(t0), Duration::zero());
  EXPECT_GE(bucket.Reserve(t0), Duration(24h * 365));
}

TEST(ItemExponentialBackoffTest, DoublesPerItemUpToCap) {
  ItemExponentialBackoff backoff(5ms, 1000s);
  EXPECT_EQ(backoff.When("a"), Duration(5ms));
  EXPECT_EQ(backoff.When("a"), Duration(10ms));
  EXPECT_EQ(backoff.When("a"), Duration(20ms));
  EXPECT_EQ(backoff.When("b"), Duration(5ms));  // independent per item
  EXPECT_EQ(backoff.NumRequeues("a"), 3);
  for (int i = 0; i < 100; ++i) {
    (void)backoff.When("a");
  }
  EXPECT_EQ(backoff.When("a"), Duration(1000s));
  backoff.Forget("a");
  EXPECT_EQ(backoff.NumRequeues("a"), 0);
  EXPECT_EQ(backoff.When("a"), Duration(5ms));
}

TEST(WorkqueueRateLimiterTest, OverallBucketLimitsManyDistinctItems) {
  WorkqueueRateLimiter limiter(5ms, 1000s, /*qps=*/10, /*burst=*/2);
  const auto now = std::chrono::steady_clock::now();
  EXPECT_EQ(limiter.When("a", now), Duration(5ms));
  EXPECT_EQ(limiter.When("b", now), Duration(5ms));
  // Burst used up: the bucket's wait now dominates the 5 ms item backoff.
  EXPECT_GE(limiter.When("c", now), Duration(90ms));
}

TEST(WorkQueueTest, DeduplicatesDirtyKeys) {
  WorkQueue queue;
  queue.Add("a");
  queue.Add("a");
  queue.Add("b");
  EXPECT_EQ(queue.Len(), 2u);
  EXPECT_EQ(queue.Get(), "a");
  EXPECT_EQ(queue.Get(), "b");
  EXPECT_EQ(queue.Len(), 0u);
}

TEST(WorkQueueTest, KeyAddedWhileProcessingIsReplayedAfterDone) {
  WorkQueue queue;
  queue.Add("a");
  auto key = queue.Get();
  ASSERT_EQ(key, "a");
  queue.Add("a");
  queue.Add("a");
  EXPECT_EQ(queue.Len(), 0u) << "must not be handed out while being processed";
  queue.Done("a");
  EXPECT_EQ(queue.Len(), 1u);
  EXPECT_EQ(queue.Get(), "a");
  queue.Done("a");
  EXPECT_EQ(queue.Len(), 0u);
}

// Every key, ready or delayed, in the order the queue hands them out.
std::vector<std::string> Drain(WorkQueue& queue) {
  std::vector<std::string> order;
  while (queue.Len() + queue.DelayedLen() > 0) {
    order.push_back(*queue.Get());
  }
  return order;
}

TEST(WorkQueueTest, UrgentKeysGoFirstEachLaneInOrder) {
  WorkQueue queue;
  queue.Add("n1");
  queue.AddUrgent("u1");
  queue.Add("n2");
  queue.AddUrgent("u2");
  EXPECT_EQ(queue.Len(), 4u);
  const std::vector<std::string> order = Drain(queue);
  EXPECT_EQ(order, (std::vector<std::string>{"u1", "u2", "n1", "n2"}));
}

TEST(WorkQueueTest, AStreamOfUrgentKeysLetsAPlainKeyThroughEveryEighthHandOut) {
  WorkQueue queue;
  queue.Add("n1");
  queue.Add("n2");
  for (int i = 1; i <= 10; ++i) {
    queue.AddUrgent("u" + std::to_string(i));
  }
  const std::vector<std::string> order = Drain(queue);
  EXPECT_EQ(order, (std::vector<std::string>{"u1", "u2", "u3", "u4", "u5", "u6", "u7", "n1", "u8",
                                             "u9", "u10", "n2"}));
  static_assert(WorkQueue::kUrgentRun == 8);
}

TEST(WorkQueueTest, UrgentKeysHandedOutWhileNoPlainKeyWaitedDoNotCountTowardsItsTurn) {
  WorkQueue queue;
  for (int i = 1; i <= 20; ++i) {
    queue.AddUrgent("u" + std::to_string(i));
  }
  for (int i = 1; i <= 6; ++i) {
    ASSERT_EQ(queue.Get(), "u" + std::to_string(i));
  }
  queue.Add("n1");
  std::vector<std::string> expected;
  for (int i = 7; i <= 13; ++i) {
    expected.push_back("u" + std::to_string(i));
  }
  expected.push_back("n1");
  for (int i = 14; i <= 20; ++i) {
    expected.push_back("u" + std::to_string(i));
  }
  EXPECT_EQ(Drain(queue), expected);
}

TEST(WorkQueueTest, AnUrgentAddMovesAQueuedKeyUpOnceAndAPlainAddLeavesItThere) {
  WorkQueue queue;
  queue.Add("a");
  queue.Add("b");
  queue.Add("c");
  queue.AddUrgent("c");
  queue.AddUrgent("c");
  queue.Add("c");  // already urgent: stays
  queue.AddUrgent("x");
  EXPECT_EQ(queue.Len(), 4u) << "each key once";
  const std::vector<std::string> order = Drain(queue);
  EXPECT_EQ(order, (std::vector<std::string>{"c", "x", "a", "b"}));
}

TEST(WorkQueueTest, AKeyAddedUrgentlyWhileProcessedComesBackUrgentAfterDone) {
  WorkQueue queue;
  queue.Add("a");
  ASSERT_EQ(queue.Get(), "a");
  queue.Add("b");
  queue.Add("a");
  queue.AddUrgent("a");
  EXPECT_EQ(queue.Len(), 1u) << "a must not be handed out while being processed";
  queue.Done("a");
  EXPECT_EQ(queue.Get(), "a") << "ahead of b, added before it";
  queue.Done("a");
  EXPECT_EQ(queue.Get(), "b");
  queue.Done("b");

  // Only the add during that processing counted: the next replay is plain.
  queue.Add("c");
  ASSERT_EQ(queue.Get(), "c");
  queue.Add("c");
  queue.Add("d");
  queue.Done("c");
  EXPECT_EQ(queue.Get(), "d");
  EXPECT_EQ(queue.Get(), "c");
}

// A job whose reconcile had to wait (its own writes not yet in the caches)
// must not then queue behind every job added while it waited.
TEST(WorkQueueTest, ADelayedKeyComesDueAheadOfPlainAdds) {
  WorkQueue queue;
  queue.AddAfter("recheck", 20ms);
  queue.Add("n1");
  queue.Add("n2");
  std::this_thread::sleep_for(40ms);
  queue.Add("n3");
  const std::vector<std::string> order = Drain(queue);
  EXPECT_EQ(order, (std::vector<std::string>{"recheck", "n1", "n2", "n3"}));
}

TEST(WorkQueueTest, UrgentAddsStillWaitForAServersPause) {
  auto limiter = std::make_unique<WorkqueueRateLimiter>(1ms, 1s, 1000, 1000);
  WorkQueue queue(std::move(limiter));
  queue.Add("k");
  ASSERT_EQ(queue.Get(), "k");
  const auto start = std::chrono::steady_clock::now();
  queue.AddRateLimited("k", 300ms);
  queue.AddUrgent("k");
  queue.Done("k");
  queue.AddUrgent("k");
  queue.Add("other");
  EXPECT_EQ(queue.Len(), 1u);
  EXPECT_EQ(queue.Get(), "other");
  queue.Done("other");
  EXPECT_EQ(queue.Get(), "k");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
}

TEST(WorkQueueTest, NoKeyIsProcessedByTwoWorkersAtOnce) {
  WorkQueue queue;
  std::mutex mu;
  std::set<std::string> in_progress;
  std::atomic<int> overlaps{0};
  std::atomic<int> processed{0};
  std::vector<std::thread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = queue.Get()) {
        {
          std::lock_guard lock(mu);
          if (!in_progress.insert(*key).second) {
            ++overlaps;
          }
        }
        std::this_thread::sleep_for(100us);
        {
          std::lock_guard lock(mu);
          in_progress.erase(*key);
        }
        ++processed;
        queue.Done(*key);
      }
    });
  }
  for (int i = 0; i < 2000; ++i) {
    queue.Add("key-" + std::to_string(i % 5));
    if (i % 50 == 0) {
      std::this_thread::sleep_for(200us);
    }
  }
  ASSERT_TRUE([&] {
    for (int i = 0; i < 1000; ++i) {
      if (queue.Len() == 0) {
        return true;
      }
      std::this_thread::sleep_for(1ms);
    }
    return false;
  }());
  std::this_thread::sleep_for(5ms);
  queue.ShutDown();
  for (auto& t : workers) {
    t.join();
  }
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_GE(processed.load(), 5);
  EXPECT_LT(processed.load(), 2000) << "dedupe should have collapsed repeated adds";
}

TEST(WorkQueueTest, AddAfterDelaysAndKeepsEarliest) {
  WorkQueue queue;
  const auto start = std::chrono::steady_clock::now();
  queue.AddAfter("late", 10s);
  queue.AddAfter("late", 30ms);  // earlier wins
  queue.AddAfter("late", 20s);   // later is ignored
  EXPECT_EQ(queue.Len(), 0u);
  EXPECT_EQ(queue.DelayedLen(), 1u);
  auto key = queue.Get();
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(key, "late");
  EXPECT_GE(waited, 30ms);
  EXPECT_LT(waited, 5s);
}

// Several workers waiting for delayed keys: the first to wake promotes them
// all; the others must not read the entries it freed (AddressSanitizer).
TEST(WorkQueueTest, WorkersWaitingForDelayedKeysAllGetOne) {
  for (int round = 0; round < 20; ++round) {
    WorkQueue queue;
    std::atomic<int> got{0};
    std::vector<std::thread> workers;
    for (int i = 0; i < 4; ++i) {
      workers.emplace_back([&] {
        if (auto key = queue.Get()) {
          ++got;
          queue.Done(*key);
        }
      });
    }
    for (int i = 0; i < 4; ++i) {
      queue.AddAfter("key-" + std::to_string(i), 2ms);
    }
    for (int spin = 0; spin < 2000 && got.load() < 4; ++spin) {
      std::this_thread::sleep_for(1ms);
    }
    EXPECT_EQ(got.load(), 4) << "round " << round;
    queue.ShutDown();
    for (auto& worker : workers) {
      worker.join();
    }
  }
}

TEST(WorkQueueTest, RateLimitedAddsBackOffAndForgetResets) {
  auto limiter = std::make_unique<WorkqueueRateLimiter>(20ms, 1s, 1000, 1000);
  WorkQueue queue(std::move(limiter));
  queue.AddRateLimited("k");
  queue.AddRateLimited("k");
  EXPECT_EQ(queue.NumRequeues("k"), 2);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(queue.Get(), "k");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 15ms);
  queue.Done("k");
  queue.Forget("k");
  EXPECT_EQ(queue.NumRequeues("k"), 0);
}

// A server's Retry-After outranks a shorter back-off, and still counts as a
// retry for the key's next back-off.
TEST(WorkQueueTest, RateLimitedAddWaitsAtLeastWhatTheServerAsked) {
  auto limiter = std::make_unique<WorkqueueRateLimiter>(1ms, 1s, 1000, 1000);
  WorkQueue queue(std::move(limiter));
  const auto start = std::chrono::steady_clock::now();
  queue.AddRateLimited("k", 200ms);
  EXPECT_EQ(queue.NumRequeues("k"), 1);
  EXPECT_EQ(queue.Len(), 0u);
  EXPECT_EQ(queue.DelayedLen(), 1u);
  EXPECT_EQ(queue.Get(), "k");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 200ms);
  queue.Done("k");
}

// While a server's pause lasts, every other way of adding the key (an event's
// Add, a shorter AddAfter, a re-add by Done) waits for its end; Forget (a
// success) ends it.
TEST(WorkQueueTest, AServersPauseHoldsTheKeyAgainstOtherAdds) {
  auto limiter = std::make_unique<WorkqueueRateLimiter>(1ms, 1s, 1000, 1000);
  WorkQueue queue(std::move(limiter));
  queue.Add("k");
  ASSERT_EQ(queue.Get(), "k");
  const auto start = std::chrono::steady_clock::now();
  queue.Add("k");  // an event while it is processed: Done would re-add it
  queue.AddRateLimited("k", 300ms);
  queue.Done("k");
  queue.Add("k");
  queue.AddAfter("k", 1ms);
  queue.Add("other");
  EXPECT_EQ(queue.Len(), 1u);
  EXPECT_EQ(queue.Get(), "other");
  queue.Done("other");
  EXPECT_EQ(queue.Get(), "k");
  EXPECT_GE(std::chrono::steady_clock::now() - start, 300ms);
  queue.Done("k");
  EXPECT_EQ(queue.Len() + queue.DelayedLen(), 0u);

  queue.AddRateLimited("k", 10s);
  queue.Forget("k");
  queue.Add("k");
  EXPECT_EQ(queue.Len(), 1u);
}

TEST(WorkQueueTest, ShutDownWakesWaitersAndDrains) {
  WorkQueue queue;
  std::optional<std::string> got = "unset";
  std::thread waiter([&] { got = queue.Get(); });
  std::this_thread::sleep_for(20ms);
  queue.ShutDown();
  waiter.join();
  EXPECT_FALSE(got.has_value());

  WorkQueue draining;
  draining.Add("x");
  draining.AddAfter("never", 1h);
  draining.ShutDown();
  draining.Add("ignored");
  EXPECT_EQ(draining.Get(), "x");
  EXPECT_FALSE(draining.Get().has_value());
  EXPECT_TRUE(draining.ShuttingDown());
}

TEST(WorkQueueTest, ObserverSeesLatencyAndDepth) {
  std::atomic<int> latencies{0};
  std::atomic<int> works{0};
  std::atomic<size_t> max_depth{0};
  WorkQueueObserver observer;
  observer.on_queue_latency = [&](Duration) { ++latencies; };
  observer.on_work_duration = [&](Duration) { ++works; };
  observer.on_depth = [&](size_t d) {
    if (d > max_depth) {
      max_depth = d;
    }
  };
  WorkQueue queue(nullptr, observer);
  queue.Add("a");
  queue.Add("b");
  queue.Done(*queue.Get());
  EXPECT_EQ(latencies.load(), 1);
  EXPECT_EQ(works.load(), 1);
  EXPECT_EQ(max_depth.load(), 2u);
}

}  // namespace
}  // namespace hybridjob::k8s
