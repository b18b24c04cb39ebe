#include <hybridjob/scheduler/config.h>

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include <hybridjob/common/duration.h>

namespace hybridjob::scheduler {
namespace {

// Reads typed scalars from a YAML map, remembering which keys were used so
// unknown ones can be refused.
class FieldReader {
 public:
  FieldReader(const YAML::Node& node, std::string path) : node_(node), path_(std::move(path)) {}

  std::string Path(const std::string& key) const {
    return path_.empty() ? key : path_ + "." + key;
  }

  template <typename T>
  Status Read(const std::string& key, T* target) {
    known_.insert(key);
    const YAML::Node value = node_[key];
    if (!value || value.IsNull()) {
      return Status::Ok();
    }
    if (!value.IsScalar()) {
      return InvalidArgument(Path(key) + ": expected a single value");
    }
    try {
      *target = value.as<T>();
    } catch (const YAML::Exception&) {
      return InvalidArgument(Path(key) + ": \"" + value.Scalar() + "\" is not a valid " +
                             TypeName<T>());
    }
    return Status::Ok();
  }

  Status ReadDuration(const std::string& key, std::chrono::milliseconds* target) {
    std::string text;
    if (Status s = Read(key, &text); !s.ok() || text.empty()) {
      return s;
    }
    auto parsed = ParseDuration(text);
    if (!parsed) {
      return InvalidArgument(Path(key) + ": " + parsed.status().message());
    }
    *target = *parsed;
    return Status::Ok();
  }

  Status ReadStringList(const std::string& key, std::vector<std::string>* target) {
    known_.insert(key);
    const YAML::Node value = node_[key];
    if (!value || value.IsNull()) {
      return Status::Ok();
    }
    if (!value.IsSequence()) {
      return InvalidArgument(Path(key) + ": expected a list");
    }
    target->clear();
    for (const auto& item : value) {
      if (!item.IsScalar() || item.Scalar().empty()) {
        return InvalidArgument(Path(key) + ": every entry must be a non-empty string");
      }
      target->push_back(item.Scalar());
    }
    return Status::Ok();
  }

  YAML::Node Child(const std::string& key) {
    known_.insert(key);
    return node_[key];
  }

  Status RejectUnknown() const {
    for (const auto& entry : node_) {
      const std::string key = entry.first.as<std::string>();
      if (!known_.contains(key)) {
        return InvalidArgument(Path(key) + ": unknown field");
      }
    }
    return Status::Ok();
  }

 private:
  template <typename T>
  static const char* TypeName() {
    if constexpr (std::is_same_v<T, bool>) {
      return "boolean";
    } else if constexpr (std::is_integral_v<T>) {
      return "integer";
    } else if constexpr (std::is_floating_point_v<T>) {
      return "number";
    } else {
      return "string";
    }
  }

  const YAML::Node& node_;
  std::string path_;
  std::set<std::string> known_;
};

#define HJ_RETURN_IF_ERROR(expr)  \
  do {                            \
    ::hybridjob::Status _s = (expr); \
    if (!_s.ok()) return _s;      \
  } while (false)

Status ParseLeaderElection(const YAML::Node& node, LeaderElectionSettings* out) {
  if (!node || node.IsNull()) {
    return Status::Ok();
  }
  if (!node.IsMap()) {
    return InvalidArgument("leaderElection: expected a map");
  }
  FieldReader reader(node, "leaderElection");
  HJ_RETURN_IF_ERROR(reader.Read("enabled", &out->enabled));
  HJ_RETURN_IF_ERROR(reader.Read("leaseName", &out->lease_name));
  HJ_RETURN_IF_ERROR(reader.Read("leaseNamespace", &out->lease_namespace));
  HJ_RETURN_IF_ERROR(reader.ReadDuration("leaseDuration", &out->lease_duration));
  HJ_RETURN_IF_ERROR(reader.ReadDuration("renewDeadline", &out->renew_deadline));
  HJ_RETURN_IF_ERROR(reader.ReadDuration("retryPeriod", &out->retry_period));
  HJ_RETURN_IF_ERROR(reader.RejectUnknown());
  if (out->enabled) {
    if (out->lease_name.empty() || out->lease_namespace.empty()) {
      return InvalidArgument("leaderElection: leaseName and leaseNamespace are required");
    }
    if (!(out->lease_duration > out->renew_deadline && out->renew_deadline > out->retry_period &&
          out->retry_period.count() > 0)) {
      return InvalidArgument(
          "leaderElection: need leaseDuration > renewDeadline > retryPeriod > 0");
    }
  }
  return Status::Ok();
}

Status ValidateAddress(const std::string& field, const std::string& address) {
  if (address.empty() || address == "0") {
    return Status::Ok();  // disabled
  }
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgument(field + ": \"" + address + "\" must be host:port");
  }
  const std::string port = address.substr(colon + 1);
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port) > 65535) {
    return InvalidArgument(field + ": \"" + address + "\" has no valid port");
  }
  return Status::Ok();
}

Result<SchedulerConfig> ParseRoot(const YAML::Node& root) {
  SchedulerConfig config;
  if (!root || root.IsNull()) {
    return config;  // an empty file means every default
  }
  if (!root.IsMap()) {
    return InvalidArgument("scheduler config: expected a YAML map at the top");
  }
  FieldReader reader(root, "");
  std::string scoring = "binpack";
  HJ_RETURN_IF_ERROR(reader.Read("schedulerName", &config.scheduler_name));
  HJ_RETURN_IF_ERROR(reader.ReadStringList("gpuResources", &config.gpu_resources));
  HJ_RETURN_IF_ERROR(reader.Read("scoring", &scoring));
  HJ_RETURN_IF_ERROR(reader.Read("percentageOfNodesToScore", &config.percentage_of_nodes_to_score));
  HJ_RETURN_IF_ERROR(reader.Read("gangBackoffSeconds", &config.gang_backoff_seconds));
  HJ_RETURN_IF_ERROR(reader.Read("clientQPS", &config.client_qps));
  HJ_RETURN_IF_ERROR(reader.Read("clientBurst", &config.client_burst));
  HJ_RETURN_IF_ERROR(reader.Read("bindConcurrency", &config.bind_concurrency));
  HJ_RETURN_IF_ERROR(reader.Read("metricsAddr", &config.metrics_addr));
  HJ_RETURN_IF_ERROR(reader.Read("healthAddr", &config.health_addr));
  HJ_RETURN_IF_ERROR(ParseLeaderElection(reader.Child("leaderElection"), &config.leader_election));
  HJ_RETURN_IF_ERROR(reader.RejectUnknown());

  if (config.scheduler_name.empty()) {
    return InvalidArgument("schedulerName: must not be empty");
  }
  if (scoring == "binpack") {
    config.scoring = PackingPolicy::kGpuBinPacking;
  } else if (scoring == "spread") {
    config.scoring = PackingPolicy::kSpread;
  } else {
    return InvalidArgument("scoring: \"" + scoring + "\" is not binpack or spread");
  }
  if (config.percentage_of_nodes_to_score < 0 || config.percentage_of_nodes_to_score > 100) {
    return InvalidArgument("percentageOfNodesToScore: must be between 0 and 100");
  }
  if (config.gang_backoff_seconds < 0 || config.gang_backoff_seconds > 3600) {
    return InvalidArgument("gangBackoffSeconds: must be between 0 and 3600");
  }
  if (config.client_qps < 0) {
    return InvalidArgument("clientQPS: must not be negative");
  }
  if (config.client_burst < 1) {
    return InvalidArgument("clientBurst: must be at least 1");
  }
  if (config.bind_concurrency < 1 || config.bind_concurrency > 1024) {
    return InvalidArgument("bindConcurrency: must be between 1 and 1024");
  }
  if (config.gpu_resources.empty()) {
    return InvalidArgument("gpuResources: name at least one resource");
  }
  HJ_RETURN_IF_ERROR(ValidateAddress("metricsAddr", config.metrics_addr));
  HJ_RETURN_IF_ERROR(ValidateAddress("healthAddr", config.health_addr));
  return config;
}

#undef HJ_RETURN_IF_ERROR

}  // namespace

Result<SchedulerConfig> ParseSchedulerConfig(std::string_view yaml_text) {
  try {
    return ParseRoot(YAML::Load(std::string(yaml_text)));
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("scheduler config: invalid YAML: ") + e.what());
  }
}

Result<SchedulerConfig> LoadSchedulerConfigFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return InvalidArgument("scheduler config: cannot read " + path);
  }
  std::ostringstream text;
  text << in.rdbuf();
  auto config = ParseSchedulerConfig(text.str());
  if (!config) {
    return InvalidArgument(path + ": " + config.status().message());
  }
  return config;
}

}  // namespace hybridjob::scheduler
