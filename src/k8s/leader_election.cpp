#include <ctime>
#include <random>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/leader_election.h>

namespace hybridjob::k8s {
namespace {

using Clock = std::chrono::steady_clock;

// metav1.MicroTime: RFC 3339 with microseconds, UTC.
std::string MicroTimeNow() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t seconds = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[64];
  const size_t n = std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(buffer + n, sizeof(buffer) - n, ".%06lldZ", static_cast<long long>(micros));
  return buffer;
}

std::chrono::milliseconds Jittered(std::chrono::milliseconds base, double factor) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  const double extra = std::uniform_real_distribution<double>(0.0, factor)(rng);
  return std::chrono::milliseconds(static_cast<int64_t>(base.count() * (1.0 + extra)));
}

}  // namespace

std::string DefaultLeaderIdentity() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  std::random_device random;
  return std::string(host) + "_" + std::to_string(random() % 1000000);
}

Status ValidateLeaderElectionConfig(const LeaderElectionConfig& config) {
  if (config.lease_name.empty() || config.lease_namespace.empty()) {
    return InvalidArgument("leader election: lease name and namespace are required");
  }
  if (config.identity.empty()) {
    return InvalidArgument("leader election: identity is required");
  }
  if (config.retry_period.count() <= 0) {
    return InvalidArgument("leader election: retryPeriod must be positive");
  }
  if (config.renew_deadline <= config.retry_period) {
    return InvalidArgument("leader election: renewDeadline must be longer than retryPeriod");
  }
  if (config.lease_duration <= config.renew_deadline) {
    return InvalidArgument("leader election: leaseDuration must be longer than renewDeadline");
  }
  return Status::Ok();
}

LeaderElector::LeaderElector(ApiClient& client, LeaderElectionConfig config)
    : client_(client), config_(std::move(config)) {}

LeaderElector::~LeaderElector() {
  Stop();
}

void LeaderElector::Start() {
  MutexLock lock(mu_);
  if (thread_.joinable()) {
    return;
  }
  stopping_ = false;
  thread_ = std::thread([this] { Run(); });
}

void LeaderElector::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) {
    thread_.join();
  }
}

std::string LeaderElector::ObservedLeader() const {
  MutexLock lock(mu_);
  return observed_holder_;
}

bool LeaderElector::SleepUnlessStopped(std::chrono::milliseconds duration) {
  MutexLock lock(mu_);
  return !lock.WaitFor(cv_, duration, [this]() HJ_REQUIRES(mu_) { return stopping_; });
}

void LeaderElector::SetLeading(bool leading) {
  if (leading_.exchange(leading) == leading) {
    return;
  }
  if (leading && config_.on_started_leading) {
    config_.on_started_leading();
  } else if (!leading && config_.on_stopped_leading) {
    config_.on_stopped_leading();
  }
}

bool LeaderElector::TryAcquireOrRenew() {
  const std::string now = MicroTimeNow();
  const int lease_seconds = static_cast<int>(std::max<int64_t>(
      1, std::chrono::duration_cast<std::chrono::seconds>(config_.lease_duration).count()));
  auto current = client_.Get(resources::Leases(), config_.lease_namespace, config_.lease_name);
  if (!current) {
    if (!IsNotFound(current.status())) {
      LogFailure("read", current.status());
      return false;
    }
    nlohmann::json lease = {
        {"apiVersion", "coordination.k8s.io/v1"},
        {"kind", "Lease"},
        {"metadata", {{"name", config_.lease_name}, {"namespace", config_.lease_namespace}}},
        {"spec",
         {{"holderIdentity", config_.identity},
          {"leaseDurationSeconds", lease_seconds},
          {"acquireTime", now},
          {"renewTime", now},
          {"leaseTransitions", 0}}}};
    auto created = client_.Create(resources::Leases(), config_.lease_namespace, lease);
    if (!created) {
      LogFailure("create", created.status());
      return false;
    }
    MutexLock lock(mu_);
    observed_holder_ = config_.identity;
    observed_renew_time_ = now;
    observed_at_ = Clock::now();
    return true;
  }

  nlohmann::json lease = std::move(*current);
  nlohmann::json& spec = lease["spec"];
  if (!spec.is_object()) {
    spec = nlohmann::json::object();
  }
  const std::string holder = spec.value("holderIdentity", "");
  const std::string renew_time = spec.value("renewTime", "");
  const int held_seconds = spec.value("leaseDurationSeconds", lease_seconds);
  {
    MutexLock lock(mu_);
    if (holder != observed_holder_ || renew_time != observed_renew_time_) {
      observed_holder_ = holder;
      observed_renew_time_ = renew_time;
      observed_at_ = Clock::now();
    }
    const bool held_by_other = !holder.empty() && holder != config_.identity;
    if (held_by_other && observed_at_ + std::chrono::seconds(held_seconds) > Clock::now()) {
      return false;
    }
  }
  if (holder != config_.identity) {
    spec["acquireTime"] = now;
    spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
  }
  spec["holderIdentity"] = config_.identity;
  spec["leaseDurationSeconds"] = lease_seconds;
  spec["renewTime"] = now;
  // The write carries the resourceVersion we read: a rival's concurrent write
  // makes it a Conflict, never two leaders.
  auto updated = client_.Update(resources::Leases(), lease);
  if (!updated) {
    if (!IsConflict(updated.status())) {  // a rival won this round: normal
      LogFailure("update", updated.status());
    }
    return false;
  }
  MutexLock lock(mu_);
  observed_holder_ = config_.identity;
  observed_renew_time_ = now;
  observed_at_ = Clock::now();
  return true;
}

void LeaderElector::LogFailure(std::string_view verb, const Status& status) {
  const auto now = Clock::now();
  const std::string message = "leader election: cannot " + std::string(verb) + " Lease " +
                              config_.lease_namespace + "/" + config_.lease_name + ": " +
                              status.ToString();
  if (message == last_error_ && now - last_error_logged_ < std::chrono::seconds(30)) {
    return;
  }
  last_error_ = message;
  last_error_logged_ = now;
  spdlog::error("{}", message);
}

void LeaderElector::Release() {
  auto current = client_.Get(resources::Leases(), config_.lease_namespace, config_.lease_name);
  if (!current || (*current)["spec"].value("holderIdentity", "") != config_.identity) {
    return;
  }
  nlohmann::json lease = std::move(*current);
  lease["spec"]["holderIdentity"] = "";
  lease["spec"]["leaseDurationSeconds"] = 1;
  lease["spec"]["renewTime"] = MicroTimeNow();
  (void)client_.Update(resources::Leases(), lease);
}

void LeaderElector::Run() {
  std::string last_reported_leader;
  auto report_leader = [&] {
    const std::string leader = ObservedLeader();
    if (leader != last_reported_leader && !leader.empty()) {
      last_reported_leader = leader;
      if (config_.on_new_leader) {
        config_.on_new_leader(leader);
      }
    }
  };
  while (true) {
    // Campaign.
    while (!TryAcquireOrRenew()) {
      report_leader();
      if (!SleepUnlessStopped(Jittered(config_.retry_period, 0.2))) {
        return;
      }
    }
    report_leader();
    SetLeading(true);
    // Renew until a renewal fails for longer than the renew deadline.
    auto last_renew = Clock::now();
    bool stopped = false;
    while (true) {
      if (!SleepUnlessStopped(config_.retry_period)) {
        stopped = true;
        break;
      }
      if (TryAcquireOrRenew()) {
        last_renew = Clock::now();
      } else if (Clock::now() - last_renew > config_.renew_deadline) {
        break;
      }
    }
    SetLeading(false);
    if (stopped) {
      if (config_.release_on_stop) {
        Release();
      }
      return;
    }
  }
}

}  // namespace hybridjob::k8s
