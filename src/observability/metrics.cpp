#include <charconv>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include <hybridjob/observability/metrics.h>

namespace hybridjob::observability {
namespace {

void AtomicAdd(std::atomic<double>& target, double amount) {
  double current = target.load();
  while (!target.compare_exchange_weak(current, current + amount)) {
  }
}

std::string FormatValue(double value) {
  if (std::isinf(value)) {
    return value > 0 ? "+Inf" : "-Inf";
  }
  if (std::isnan(value)) {
    return "NaN";
  }
  // Shortest text that reads back as the same double: 0.004, not 0.0040000000000000001.
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  if (ec != std::errc()) {
    return "NaN";
  }
  return std::string(buffer, end);
}

std::string RenderLabels(const Labels& labels, const std::string& extra_key = "",
                         const std::string& extra_value = "") {
  if (labels.empty() && extra_key.empty()) {
    return "";
  }
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : labels) {
    out += (first ? "" : ",") + key + "=\"" + EscapeLabelValue(value) + "\"";
    first = false;
  }
  if (!extra_key.empty()) {
    out += (first ? "" : ",") + extra_key + "=\"" + extra_value + "\"";
  }
  return out + "}";
}

}  // namespace

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void Counter::Inc(double amount) {
  if (amount > 0) {
    AtomicAdd(value_, amount);
  }
}

double Counter::Value() const {
  return value_.load();
}

void Gauge::Add(double amount) {
  AtomicAdd(value_, amount);
}

Histogram::Histogram(std::vector<double> upper_bounds)
    : upper_bounds_(std::move(upper_bounds)), counts_(upper_bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  MutexLock lock(mu_);
  size_t bucket = 0;
  while (bucket < upper_bounds_.size() && value > upper_bounds_[bucket]) {
    ++bucket;
  }
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

Histogram::Snapshot Histogram::Read() const {
  MutexLock lock(mu_);
  Snapshot snapshot;
  snapshot.upper_bounds = upper_bounds_;
  uint64_t running = 0;
  for (uint64_t c : counts_) {
    running += c;
    snapshot.cumulative.push_back(running);
  }
  snapshot.sum = sum_;
  snapshot.count = count_;
  return snapshot;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> buckets;
  double bound = start;
  for (int i = 0; i < count; ++i) {
    buckets.push_back(bound);
    bound *= factor;
  }
  return buckets;
}

std::vector<double> LatencyBuckets() {
  return ExponentialBuckets(0.001, 2, 15);
}

Registry::Family& Registry::FamilyFor(const std::string& name, const std::string& help, Type type) {
  auto [it, inserted] = families_.try_emplace(name);
  if (inserted) {
    it->second.type = type;
    it->second.help = help;
  } else if (it->second.type != type) {
    throw std::logic_error("metric " + name + " registered with two types");
  }
  return it->second;
}

Counter& Registry::GetCounter(const std::string& name, const std::string& help,
                              const Labels& labels) {
  MutexLock lock(mu_);
  auto& slot = FamilyFor(name, help, Type::kCounter).counters[labels];
  if (!slot) {
    slot = std::make_unique<Counter>();
  }
  return *slot;
}

Gauge& Registry::GetGauge(const std::string& name, const std::string& help, const Labels& labels) {
  MutexLock lock(mu_);
  auto& slot = FamilyFor(name, help, Type::kGauge).gauges[labels];
  if (!slot) {
    slot = std::make_unique<Gauge>();
  }
  return *slot;
}

Histogram& Registry::GetHistogram(const std::string& name, const std::string& help,
                                  const std::vector<double>& buckets, const Labels& labels) {
  MutexLock lock(mu_);
  auto& slot = FamilyFor(name, help, Type::kHistogram).histograms[labels];
  if (!slot) {
    slot = std::make_unique<Histogram>(buckets);
  }
  return *slot;
}

void Registry::AddCollector(std::function<void(Registry&)> collector) {
  MutexLock lock(mu_);
  collectors_.push_back(std::move(collector));
}

std::string Registry::Render() {
  std::vector<std::function<void(Registry&)>> collectors;
  {
    MutexLock lock(mu_);
    collectors = collectors_;
  }
  for (const auto& collector : collectors) {
    collector(*this);
  }
  MutexLock lock(mu_);
  std::ostringstream out;
  for (const auto& [name, family] : families_) {
    out << "# HELP " << name << " " << family.help << "\n";
    switch (family.type) {
      case Type::kCounter:
        out << "# TYPE " << name << " counter\n";
        for (const auto& [labels, counter] : family.counters) {
          out << name << RenderLabels(labels) << " " << FormatValue(counter->Value()) << "\n";
        }
        break;
      case Type::kGauge:
        out << "# TYPE " << name << " gauge\n";
        for (const auto& [labels, gauge] : family.gauges) {
          out << name << RenderLabels(labels) << " " << FormatValue(gauge->Value()) << "\n";
        }
        break;
      case Type::kHistogram:
        out << "# TYPE " << name << " histogram\n";
        for (const auto& [labels, histogram] : family.histograms) {
          const auto snapshot = histogram->Read();
          for (size_t i = 0; i < snapshot.cumulative.size(); ++i) {
            const std::string le =
                i < snapshot.upper_bounds.size() ? FormatValue(snapshot.upper_bounds[i]) : "+Inf";
            out << name << "_bucket" << RenderLabels(labels, "le", le) << " "
                << snapshot.cumulative[i] << "\n";
          }
          out << name << "_sum" << RenderLabels(labels) << " " << FormatValue(snapshot.sum) << "\n";
          out << name << "_count" << RenderLabels(labels) << " " << snapshot.count << "\n";
        }
        break;
    }
  }
  return out.str();
}

}  // namespace hybridjob::observability
