#include <random>

#include <spdlog/spdlog.h>

#include <hybridjob/common/backoff.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/object_meta.h>
#include <hybridjob/k8s/reflector.h>

namespace hybridjob::k8s {
namespace {

// A failure count at which ExponentialBackoff is at its cap for any sane
// initial/max pair (2^64 times the initial back-off); counting stops there.
constexpr int kFailuresAtLongestBackoff = 64;

double Jitter() {
  static thread_local std::mt19937 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
}

}  // namespace

// Says why listing or watching fails — once per distinct error, and again at
// most every 30 s while it persists — so a missing RBAC verb or an unreachable
// server is visible in the log, not only in metrics.
void Reflector::ReportError(std::string_view what, const Status& status) {
  const auto now = std::chrono::steady_clock::now();
  std::string message =
      std::string(what) + " " + options_.resource.plural + ": " + status.ToString();
  {
    MutexLock lock(mu_);
    if (message == last_error_ && now - last_error_logged_ < std::chrono::seconds(30)) {
      return;
    }
    last_error_ = message;
    last_error_logged_ = now;
  }
  if (status.code() == StatusCode::kForbidden || status.code() == StatusCode::kUnauthorized) {
    spdlog::error("{} (check RBAC)", message);
  } else {
    spdlog::warn("{}", message);
  }
}

Reflector::Reflector(ApiClient& client, ReflectorOptions options, ReflectorSink& sink)
    : client_(client), options_(std::move(options)), sink_(sink) {}

std::string Reflector::LastResourceVersion() const {
  MutexLock lock(mu_);
  return last_resource_version_;
}

void Reflector::Stop() {
  MutexLock lock(mu_);
  stopped_ = true;
  if (active_watch_ != nullptr) {
    active_watch_->Cancel();
  }
  stop_cv_.notify_all();
}

bool Reflector::Backoff() {
  MutexLock lock(mu_);
  const Duration backoff =
      ExponentialBackoff(options_.initial_backoff, options_.max_backoff, failures_);
  failures_ = std::min(failures_ + 1, kFailuresAtLongestBackoff);
  // Full jitter on top of half the backoff keeps retries spread but bounded.
  const auto delay = std::chrono::duration_cast<Duration>(backoff * (0.5 + 0.5 * Jitter()));
  return !lock.WaitFor(stop_cv_, delay, [this] { return stopped_.load(); });
}

void Reflector::ResetBackoff() {
  MutexLock lock(mu_);
  failures_ = 0;
}

bool Reflector::ListAndReplace() {
  ListOptions list_options;
  list_options.label_selector = options_.label_selector;
  list_options.field_selector = options_.field_selector;
  auto list = ListAll(client_, options_.resource, options_.namespace_name, list_options,
                      options_.page_size);
  ++stats_.lists;
  if (!list) {
    if (options_.absent_collection_is_empty && IsNotFound(list.status())) {
      if (!absent_reported_) {
        sink_.Replace({}, "");
        absent_reported_ = true;
      }
      failures_ = kFailuresAtLongestBackoff;  // poll for the collection at the longest back-off
      return false;
    }
    ++stats_.errors;
    ReportError("list", list.status());
    return false;
  }
  absent_reported_ = false;
  {
    MutexLock lock(mu_);
    last_resource_version_ = list->resource_version;
  }
  sink_.Replace(std::move(list->items), list->resource_version);
  return true;
}

Reflector::WatchEnd Reflector::WatchOnce() {
  WatchOptions watch_options;
  watch_options.resource_version = LastResourceVersion();
  watch_options.label_selector = options_.label_selector;
  watch_options.field_selector = options_.field_selector;
  watch_options.allow_bookmarks = true;
  const auto min_timeout = options_.min_watch_timeout.count();
  watch_options.timeout =
      std::chrono::seconds(min_timeout + static_cast<int64_t>(Jitter() * min_timeout));

  auto opened = client_.Watch(options_.resource, options_.namespace_name, watch_options);
  ++stats_.watches;
  if (!opened) {
    ++stats_.errors;
    ReportError("watch", opened.status());
    if (IsGone(opened.status())) {
      return WatchEnd::kRelist;
    }
    return Backoff() ? WatchEnd::kRewatch : WatchEnd::kStopped;
  }
  std::unique_ptr<WatchStream> stream = std::move(*opened);
  {
    MutexLock lock(mu_);
    if (stopped_) {
      return WatchEnd::kStopped;
    }
    active_watch_ = stream.get();
  }
  auto detach = [this] {
    MutexLock lock(mu_);
    active_watch_ = nullptr;
  };
  bool received_any = false;
  while (true) {
    auto next = stream->Next();
    if (!next) {
      detach();
      if (Stopped()) {
        return WatchEnd::kStopped;
      }
      ++stats_.errors;
      // A stream that delivered events was healthy: resume at once.
      if (received_any) {
        ResetBackoff();
        return WatchEnd::kRewatch;
      }
      return Backoff() ? WatchEnd::kRewatch : WatchEnd::kStopped;
    }
    if (!next->has_value()) {
      detach();  // the server ended the watch (timeoutSeconds): resume
      ResetBackoff();
      return Stopped() ? WatchEnd::kStopped : WatchEnd::kRewatch;
    }
    WatchEvent& event = **next;
    if (event.type == WatchEventType::kError) {
      detach();
      ++stats_.errors;
      if (IsGone(event.error)) {
        return WatchEnd::kRelist;
      }
      return Backoff() ? WatchEnd::kRewatch : WatchEnd::kStopped;
    }
    received_any = true;
    // The version moves before the sink sees the event, so whoever observes
    // the sink's state reads a LastResourceVersion at least that new.
    if (const std::string rv = ResourceVersionOf(event.object); !rv.empty()) {
      MutexLock lock(mu_);
      last_resource_version_ = rv;
    }
    if (event.type != WatchEventType::kBookmark) {
      ++stats_.events;
      sink_.Apply(event.type, std::move(event.object));
    }
  }
}

void Reflector::Run() {
  while (!Stopped()) {
    if (!ListAndReplace()) {
      if (!Backoff()) {
        return;
      }
      continue;
    }
    ResetBackoff();
    while (true) {
      const WatchEnd end = WatchOnce();
      if (end == WatchEnd::kStopped || Stopped()) {
        return;
      }
      if (end == WatchEnd::kRelist) {
        ++stats_.relists_after_gone;
        break;
      }
    }
  }
}

}  // namespace hybridjob::k8s
