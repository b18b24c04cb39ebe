#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <hybridjob/api/names.h>
#include <hybridjob/common/duration.h>
#include <hybridjob/common/quantity.h>
#include <hybridjob/scheduler/shell/config.h>

namespace hybridjob::scheduler {
namespace {

// Reads typed scalars from a YAML map, remembering which keys were used so
// unknown ones can be refused.
class FieldReader {
 public:
  FieldReader(const YAML::Node& node, std::string path) : node_(node), path_(std::move(path)) {}

  std::string Path(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

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

#define HJ_RETURN_IF_ERROR(expr)     \
  do {                               \
    ::hybridjob::Status _s = (expr); \
    if (!_s.ok())                    \
      return _s;                     \
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

// A map of resource name to quantity ("nvidia.com/gpu: 16", "cpu: 500m",
// "memory: 64Gi"); cpu is kept in millicores as everywhere else.
// `gpuResources`: a list of names, each weighing one GPU, or a map of name to
// weight (GPUs per unit), for MIG slices and other fractions of a GPU.
Status ParseGpuResources(const YAML::Node& node, GpuResources* out) {
  const std::string path = "gpuResources";
  if (!node || node.IsNull()) {
    return Status::Ok();
  }
  std::vector<std::pair<std::string, double>> weights;
  if (node.IsSequence()) {
    for (const auto& item : node) {
      if (!item.IsScalar() || item.Scalar().empty()) {
        return InvalidArgument(path + ": every entry must be a non-empty string");
      }
      weights.emplace_back(item.Scalar(), 1.0);
    }
  } else if (node.IsMap()) {
    for (const auto& entry : node) {
      const std::string name = entry.first.Scalar();
      const std::string text = entry.second.IsScalar() ? entry.second.Scalar() : "";
      char* end = nullptr;
      const double weight = text.empty() ? 0 : std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size()) {
        return InvalidArgument(path + "." + name + ": expected a number of GPUs per unit");
      }
      weights.emplace_back(name, weight);
    }
  } else {
    return InvalidArgument(path + ": expected a list of resource names or a map of name to weight");
  }
  Result<GpuResources> parsed = GpuResources::Make(weights, path);
  if (!parsed.ok()) {
    return parsed.status();
  }
  *out = std::move(parsed).value();
  return Status::Ok();
}

Status ParseResourceMap(const YAML::Node& node, const std::string& path,
                        std::vector<ScalarResource>* out) {
  out->clear();
  if (!node || node.IsNull()) {
    return Status::Ok();
  }
  if (!node.IsMap()) {
    return InvalidArgument(path + ": expected a map of resource name to quantity");
  }
  for (const auto& entry : node) {
    const std::string name = entry.first.as<std::string>();
    const std::string field = path + "." + name;
    if (name.empty()) {
      return InvalidArgument(path + ": resource names must not be empty");
    }
    if (!entry.second.IsScalar()) {
      return InvalidArgument(field + ": expected a quantity");
    }
    const std::string text = entry.second.Scalar();
    Result<int64_t> amount = name == "cpu" ? ParseQuantityMilli(text) : ParseQuantity(text);
    if (!amount.ok()) {
      return InvalidArgument(field + ": " + amount.status().message());
    }
    if (*amount < 0) {
      return InvalidArgument(field + ": must not be negative");
    }
    out->push_back(ScalarResource{name, *amount});
  }
  return Status::Ok();
}

// A YAML subtree as JSON with every scalar a string: for the parsers of
// Kubernetes shapes (label selectors), whose values are strings.
nlohmann::json YamlToJson(const YAML::Node& node) {
  if (node.IsMap()) {
    nlohmann::json out = nlohmann::json::object();
    for (const auto& entry : node) {
      out[entry.first.as<std::string>()] = YamlToJson(entry.second);
    }
    return out;
  }
  if (node.IsSequence()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& item : node) {
      out.push_back(YamlToJson(item));
    }
    return out;
  }
  if (node.IsScalar()) {
    return node.Scalar();
  }
  return nullptr;
}

Status ParseQueue(const YAML::Node& node, const std::string& path, QueueSpec* out) {
  if (!node.IsMap()) {
    return InvalidArgument(path + ": expected a map");
  }
  FieldReader reader(node, path);
  HJ_RETURN_IF_ERROR(reader.Read("name", &out->name));
  HJ_RETURN_IF_ERROR(reader.Read("parent", &out->parent));
  HJ_RETURN_IF_ERROR(reader.Read("weight", &out->weight));
  HJ_RETURN_IF_ERROR(reader.ReadStringList("namespaces", &out->namespaces));
  std::string order(QueueOrderName(out->order));
  HJ_RETURN_IF_ERROR(reader.Read("order", &order));
  Result<QueueOrder> parsed_order = ParseQueueOrder(order);
  if (!parsed_order.ok()) {
    return InvalidArgument(path + ".order: " + parsed_order.status().message());
  }
  out->order = *parsed_order;
  const YAML::Node selector = reader.Child("namespaceSelector");
  if (selector && !selector.IsNull()) {
    Result<LabelSelector> parsed =
        ParseLabelSelectorJson(YamlToJson(selector), path + ".namespaceSelector");
    if (!parsed.ok()) {
      return parsed.status();
    }
    out->namespace_selector = std::move(parsed).value();
  }
  std::vector<ScalarResource> amounts;
  const YAML::Node guaranteed = reader.Child("guaranteed");
  HJ_RETURN_IF_ERROR(ParseResourceMap(guaranteed, path + ".guaranteed", &amounts));
  for (const ScalarResource& amount : amounts) {
    out->guaranteed.Set(amount.name, amount.amount);
  }
  const YAML::Node max = reader.Child("max");
  HJ_RETURN_IF_ERROR(ParseResourceMap(max, path + ".max", &amounts));
  for (const ScalarResource& amount : amounts) {
    out->max.Set(amount.name, amount.amount);
  }
  return reader.RejectUnknown();
}

Status ParseQueues(const YAML::Node& node, std::vector<QueueSpec>* out) {
  if (!node || node.IsNull()) {
    return Status::Ok();
  }
  if (!node.IsSequence()) {
    return InvalidArgument("queues: expected a list");
  }
  out->clear();
  for (size_t i = 0; i < node.size(); ++i) {
    QueueSpec queue;
    HJ_RETURN_IF_ERROR(ParseQueue(node[i], "queues[" + std::to_string(i) + "]", &queue));
    out->push_back(std::move(queue));
  }
  return ValidateQueues(*out);
}

Status ParseReclaim(const YAML::Node& node, ReclaimSettings* out) {
  if (!node || node.IsNull()) {
    return Status::Ok();
  }
  if (!node.IsMap()) {
    return InvalidArgument("reclaim: expected a map");
  }
  FieldReader reader(node, "reclaim");
  HJ_RETURN_IF_ERROR(reader.Read("enabled", &out->enabled));
  HJ_RETURN_IF_ERROR(reader.Read("growth", &out->growth));
  HJ_RETURN_IF_ERROR(reader.Read("maxGroupsPerCycle", &out->max_groups_per_cycle));
  HJ_RETURN_IF_ERROR(reader.Read("rebalance", &out->rebalance));
  HJ_RETURN_IF_ERROR(reader.Read("shareTolerance", &out->share_tolerance));
  HJ_RETURN_IF_ERROR(reader.Read("minResizeIntervalSeconds", &out->min_resize_interval_seconds));
  HJ_RETURN_IF_ERROR(reader.RejectUnknown());
  if (out->max_groups_per_cycle < 0 || out->max_groups_per_cycle > 1000) {
    return InvalidArgument("reclaim.maxGroupsPerCycle: must be between 0 and 1000");
  }
  if (!(out->share_tolerance >= 0 && out->share_tolerance < 1)) {
    return InvalidArgument("reclaim.shareTolerance: must be at least 0 and below 1");
  }
  if (out->min_resize_interval_seconds < 0 || out->min_resize_interval_seconds > 86400) {
    return InvalidArgument("reclaim.minResizeIntervalSeconds: must be between 0 and 86400");
  }
  return Status::Ok();
}

Status ParsePreemption(const YAML::Node& node, PreemptionSettings* out) {
  if (!node || node.IsNull()) {
    return Status::Ok();
  }
  if (!node.IsMap()) {
    return InvalidArgument("preemption: expected a map");
  }
  FieldReader reader(node, "preemption");
  HJ_RETURN_IF_ERROR(reader.Read("enabled", &out->enabled));
  return reader.RejectUnknown();
}

Status ParseStarvation(const YAML::Node& node, StarvationSettings* out) {
  if (!node || node.IsNull()) {
    return Status::Ok();
  }
  if (!node.IsMap()) {
    return InvalidArgument("starvation: expected a map");
  }
  FieldReader reader(node, "starvation");
  HJ_RETURN_IF_ERROR(reader.Read("maxWaitSeconds", &out->max_wait_seconds));
  HJ_RETURN_IF_ERROR(reader.Read("maxReservedGroups", &out->max_reserved_groups));
  HJ_RETURN_IF_ERROR(reader.RejectUnknown());
  if (out->max_wait_seconds < 0) {
    return InvalidArgument("starvation.maxWaitSeconds: must not be negative");
  }
  if (out->max_reserved_groups < 0) {
    return InvalidArgument("starvation.maxReservedGroups: must not be negative");
  }
  return Status::Ok();
}

Status ParseAttainedService(const YAML::Node& node, AttainedServiceSettings* out) {
  if (!node || node.IsNull()) {
    return Status::Ok();
  }
  if (!node.IsMap()) {
    return InvalidArgument("attainedService: expected a map");
  }
  FieldReader reader(node, "attainedService");
  HJ_RETURN_IF_ERROR(reader.Read("levels", &out->levels));
  HJ_RETURN_IF_ERROR(reader.Read("firstThresholdGpuHours", &out->first_threshold_gpu_hours));
  HJ_RETURN_IF_ERROR(reader.Read("thresholdFactor", &out->threshold_factor));
  HJ_RETURN_IF_ERROR(reader.Read("promoteAfterSeconds", &out->promote_after_seconds));
  HJ_RETURN_IF_ERROR(reader.Read("reserveForStarved", &out->reserve_for_starved));
  HJ_RETURN_IF_ERROR(reader.RejectUnknown());
  return ValidateAttainedService(*out, "attainedService");
}

// At most this many levels: a cluster has zones, blocks, racks, cliques and
// hosts; more would only slow every topology-bound gang's planning.
constexpr size_t kMaxTopologyLevels = 8;

Status ParseTopology(const YAML::Node& node, TopologySettings* out) {
  if (!node || node.IsNull()) {
    return Status::Ok();
  }
  if (!node.IsMap()) {
    return InvalidArgument("topology: expected a map");
  }
  FieldReader reader(node, "topology");
  HJ_RETURN_IF_ERROR(reader.ReadStringList("levels", &out->levels));
  HJ_RETURN_IF_ERROR(reader.RejectUnknown());
  if (out->levels.size() > kMaxTopologyLevels) {
    return InvalidArgument("topology.levels: at most " + std::to_string(kMaxTopologyLevels) +
                           " levels");
  }
  for (size_t i = 0; i < out->levels.size(); ++i) {
    const std::string& level = out->levels[i];
    const std::string path = "topology.levels[" + std::to_string(i) + "]";
    if (!api::IsQualifiedName(level)) {
      return InvalidArgument(path + ": \"" + level + "\" is not a node label key");
    }
    if (std::find(out->levels.begin(), out->levels.begin() + static_cast<ptrdiff_t>(i), level) !=
        out->levels.begin() + static_cast<ptrdiff_t>(i)) {
      return InvalidArgument(path + ": \"" + level + "\" is listed twice");
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
  // At most five digits before converting, so no port string can overflow.
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) > 65535) {
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
  HJ_RETURN_IF_ERROR(ParseGpuResources(reader.Child("gpuResources"), &config.gpu_resources));
  HJ_RETURN_IF_ERROR(reader.Read("gpuModelLabel", &config.gpu_model_label));
  HJ_RETURN_IF_ERROR(reader.Read("scoring", &scoring));
  HJ_RETURN_IF_ERROR(reader.Read("percentageOfNodesToScore", &config.percentage_of_nodes_to_score));
  HJ_RETURN_IF_ERROR(reader.Read("gangBackoffSeconds", &config.gang_backoff_seconds));
  HJ_RETURN_IF_ERROR(reader.Read("clientQPS", &config.client_qps));
  HJ_RETURN_IF_ERROR(reader.Read("clientBurst", &config.client_burst));
  HJ_RETURN_IF_ERROR(reader.Read("bindConcurrency", &config.bind_concurrency));
  HJ_RETURN_IF_ERROR(reader.Read("volumeBindTimeoutSeconds", &config.volume_bind_timeout_seconds));
  HJ_RETURN_IF_ERROR(reader.Read("metricsAddr", &config.metrics_addr));
  HJ_RETURN_IF_ERROR(reader.Read("healthAddr", &config.health_addr));
  HJ_RETURN_IF_ERROR(reader.Read("dashboardAddr", &config.dashboard_addr));
  HJ_RETURN_IF_ERROR(ParseLeaderElection(reader.Child("leaderElection"), &config.leader_election));
  HJ_RETURN_IF_ERROR(ParseQueues(reader.Child("queues"), &config.queues));
  HJ_RETURN_IF_ERROR(ParseReclaim(reader.Child("reclaim"), &config.reclaim));
  HJ_RETURN_IF_ERROR(ParsePreemption(reader.Child("preemption"), &config.preemption));
  HJ_RETURN_IF_ERROR(ParseStarvation(reader.Child("starvation"), &config.starvation));
  HJ_RETURN_IF_ERROR(
      ParseAttainedService(reader.Child("attainedService"), &config.attained_service));
  HJ_RETURN_IF_ERROR(ParseTopology(reader.Child("topology"), &config.topology));
  HJ_RETURN_IF_ERROR(reader.RejectUnknown());

  if (config.scheduler_name.empty()) {
    return InvalidArgument("schedulerName: must not be empty");
  }
  if (!config.gpu_model_label.empty() && !api::IsQualifiedName(config.gpu_model_label)) {
    return InvalidArgument("gpuModelLabel: \"" + config.gpu_model_label +
                           "\" is not a node label key");
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
  if (!std::isfinite(config.client_qps)) {
    return InvalidArgument("clientQPS: must be a finite number");
  }
  if (config.client_qps < 0) {
    return InvalidArgument("clientQPS: must not be negative");
  }
  if (config.client_burst < 1) {
    return InvalidArgument("clientBurst: must be at least 1");
  }
  // The API client's token bucket holds an int.
  if (config.client_burst > std::numeric_limits<int32_t>::max()) {
    return InvalidArgument("clientBurst: must be at most 2147483647");
  }
  if (config.bind_concurrency < 1 || config.bind_concurrency > 1024) {
    return InvalidArgument("bindConcurrency: must be between 1 and 1024");
  }
  if (config.volume_bind_timeout_seconds < 1 || config.volume_bind_timeout_seconds > 86400) {
    return InvalidArgument("volumeBindTimeoutSeconds: must be between 1 and 86400");
  }
  HJ_RETURN_IF_ERROR(ValidateAddress("metricsAddr", config.metrics_addr));
  HJ_RETURN_IF_ERROR(ValidateAddress("healthAddr", config.health_addr));
  HJ_RETURN_IF_ERROR(ValidateAddress("dashboardAddr", config.dashboard_addr));
  return config;
}

#undef HJ_RETURN_IF_ERROR

}  // namespace

PolicyConfig PolicyConfigFrom(const SchedulerConfig& config) {
  PolicyConfig policy;
  policy.queues = config.queues;
  policy.reclaim = config.reclaim;
  policy.preemption = config.preemption;
  policy.starvation = config.starvation;
  policy.attained_service = config.attained_service;
  policy.scheduler_name = config.scheduler_name;
  return policy;
}

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
