// Prometheus metrics: counters, gauges and histograms with labels, rendered in
// the text exposition format (version 0.0.4). Thread-safe; pure (no I/O).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <hybridjob/common/mutex.h>

namespace hybridjob::observability {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Inc(double amount = 1.0);
  double Value() const;

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void Set(double value) { value_.store(value); }
  void Add(double amount);
  double Value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double value);
  // Cumulative counts per bound (the last is +Inf), sum and count.
  struct Snapshot {
    std::vector<double> upper_bounds;
    std::vector<uint64_t> cumulative;
    double sum = 0;
    uint64_t count = 0;
  };
  Snapshot Read() const;

 private:
  mutable Mutex mu_;
  std::vector<double> upper_bounds_;                 // fixed at construction
  std::vector<uint64_t> counts_ HJ_GUARDED_BY(mu_);  // per bucket, not cumulative; last = +Inf
  double sum_ HJ_GUARDED_BY(mu_) = 0;
  uint64_t count_ HJ_GUARDED_BY(mu_) = 0;
};

// Bucket layouts.
std::vector<double> ExponentialBuckets(double start, double factor, int count);
// 1 ms .. ~30 s: request and reconcile latencies.
std::vector<double> LatencyBuckets();

class Registry {
 public:
  // Returns the series, creating it (and its family) on first use. A name is
  // one type only; help is taken from the first registration.
  Counter& GetCounter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge& GetGauge(const std::string& name, const std::string& help, const Labels& labels = {});
  Histogram& GetHistogram(const std::string& name, const std::string& help,
                          const std::vector<double>& buckets, const Labels& labels = {});

  // Called before every render: set gauges computed on demand.
  void AddCollector(std::function<void(Registry&)> collector);

  std::string Render();

 private:
  enum class Type { kCounter, kGauge, kHistogram };
  struct Family {
    Type type;
    std::string help;
    std::map<Labels, std::unique_ptr<Counter>> counters;
    std::map<Labels, std::unique_ptr<Gauge>> gauges;
    std::map<Labels, std::unique_ptr<Histogram>> histograms;
  };
  Family& FamilyFor(const std::string& name, const std::string& help, Type type) HJ_REQUIRES(mu_);

  Mutex mu_;
  std::map<std::string, Family> families_ HJ_GUARDED_BY(mu_);
  std::vector<std::function<void(Registry&)>> collectors_ HJ_GUARDED_BY(mu_);
};

// Escapes a label value for the exposition format.
std::string EscapeLabelValue(const std::string& value);

}  // namespace hybridjob::observability
