#include <exception>

#include <hybridjob/api/names.h>
#include <hybridjob/api/validation.h>
#include <hybridjob/common/quantity.h>
#include <hybridjob/controller/children.h>
#include <hybridjob/controller/cluster_spec.h>

namespace hybridjob::controller {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// The role whose first member leads: chief or master.
const api::ReplicaSpec* LeaderRole(const api::HybridJobSpec& spec) {
  for (std::string_view name : {"chief", "master"}) {
    if (const api::ReplicaSpec* role = spec.FindRole(name)) {
      return role;
    }
  }
  return nullptr;
}

// Global rank order: the leader role first, then every other role in spec
// order; members of a role by index.
std::vector<const api::ReplicaSpec*> RankOrder(const api::HybridJobSpec& spec) {
  std::vector<const api::ReplicaSpec*> order;
  const api::ReplicaSpec* leader = LeaderRole(spec);
  if (leader != nullptr) {
    order.push_back(leader);
  }
  for (const api::ReplicaSpec& role : spec.replica_specs) {
    if (&role != leader) {
      order.push_back(&role);
    }
  }
  return order;
}

int64_t RankOffset(const api::HybridJobSpec& spec, const Membership& membership,
                   std::string_view role) {
  int64_t offset = 0;
  for (const api::ReplicaSpec* candidate : RankOrder(spec)) {
    if (candidate->name == role) {
      return offset;
    }
    offset += membership.Count(candidate->name);
  }
  return offset;
}

std::string HostPort(const api::HybridJob& job, const api::ReplicaSpec& role, int64_t index) {
  return MemberAddress(job, role.name, index) + ":" +
         std::to_string(role.EffectivePort(job.spec.framework));
}

// TF_CONFIG's cluster: roles with members, without the evaluator, which
// TensorFlow keeps outside the cluster it trains with.
ordered_json TfCluster(const api::HybridJob& job, const Membership& membership) {
  ordered_json cluster = ordered_json::object();
  for (const api::ReplicaSpec& role : job.spec.replica_specs) {
    int32_t count = membership.Count(role.name);
    if (count == 0 || role.name == "evaluator") {
      continue;
    }
    ordered_json hosts = ordered_json::array();
    for (int32_t i = 0; i < count; ++i) {
      hosts.push_back(HostPort(job, role, i));
    }
    cluster[role.name] = std::move(hosts);
  }
  return cluster;
}

std::string ShellQuote(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += "'";
  return out;
}

void Add(std::vector<EnvTemplate>& env, std::string name, EnvValue value) {
  env.push_back({std::move(name), std::move(value)});
}

void Add(std::vector<EnvTemplate>& env, std::string name, std::string literal) {
  env.push_back({std::move(name), EnvValue(std::move(literal))});
}

}  // namespace

int32_t Membership::Count(std::string_view role) const {
  for (const auto& [name, count] : counts) {
    if (name == role) {
      return count;
    }
  }
  return 0;
}

int32_t Membership::Total() const {
  int32_t total = 0;
  for (const auto& entry : counts) {
    total += entry.second;
  }
  return total;
}

Membership FullMembership(const api::HybridJobSpec& spec) {
  Membership membership;
  for (const api::ReplicaSpec& role : spec.replica_specs) {
    membership.counts.emplace_back(role.name, role.EffectiveMaxReplicas());
  }
  return membership;
}

std::string FormatMembership(const Membership& membership) {
  ordered_json out = ordered_json::object();
  for (const auto& [name, count] : membership.counts) {
    out[name] = count;
  }
  return out.dump();
}

std::optional<Membership> ParseMembership(std::string_view text, const api::HybridJobSpec& spec) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) {
    return std::nullopt;
  }
  for (const auto& item : parsed.items()) {
    const api::ReplicaSpec* role = spec.FindRole(item.key());
    if (role == nullptr || !item.value().is_number_integer()) {
      return std::nullopt;
    }
    // Above maxReplicas when it was lowered since: the planner shrinks it.
    int64_t count = item.value().get<int64_t>();
    if (count < 0 || count > api::kMaxReplicasPerRole) {
      return std::nullopt;
    }
  }
  Membership membership;
  for (const api::ReplicaSpec& role : spec.replica_specs) {
    auto it = parsed.find(role.name);
    membership.counts.emplace_back(
        role.name, it == parsed.end() ? 0 : static_cast<int32_t>(it->get<int64_t>()));
  }
  return membership;
}

EnvValue EnvValue::IndexPlus(int64_t offset) {
  EnvValue value;
  value.AppendIndexPlus(offset);
  return value;
}

EnvValue& EnvValue::Append(std::string literal) {
  if (literal.empty()) {
    return *this;
  }
  if (!parts_.empty() && !parts_.back().index_offset) {
    parts_.back().literal += literal;
  } else {
    parts_.push_back({std::move(literal), std::nullopt});
  }
  return *this;
}

EnvValue& EnvValue::AppendIndexPlus(int64_t offset) {
  parts_.push_back({"", offset});
  return *this;
}

std::string EnvValue::Render(int64_t index) const {
  std::string out;
  for (const Part& part : parts_) {
    out += part.index_offset ? std::to_string(index + *part.index_offset) : part.literal;
  }
  return out;
}

std::string EnvValue::RenderShell() const {
  if (parts_.empty()) {
    return "''";
  }
  std::string out;
  for (const Part& part : parts_) {
    if (!part.index_offset) {
      out += ShellQuote(part.literal);
    } else if (*part.index_offset == 0) {
      out += "\"${HYBRIDJOB_INDEX}\"";
    } else {
      out += "\"$((HYBRIDJOB_INDEX + " + std::to_string(*part.index_offset) + "))\"";
    }
  }
  return out;
}

std::string MemberAddress(const api::HybridJob& job, std::string_view role, int64_t index) {
  return api::MemberHost(job.metadata.name, JobNamespace(job), role, index);
}

ordered_json ClusterJson(const api::HybridJob& job, const Membership& membership) {
  ordered_json cluster = ordered_json::object();
  for (const api::ReplicaSpec& role : job.spec.replica_specs) {
    ordered_json hosts = ordered_json::array();
    for (int32_t i = 0; i < membership.Count(role.name); ++i) {
      hosts.push_back(HostPort(job, role, i));
    }
    cluster[role.name] = std::move(hosts);
  }
  return cluster;
}

std::vector<EnvTemplate> ClusterEnvironment(const api::HybridJob& job, const Membership& membership,
                                            std::string_view role) {
  const api::HybridJobSpec& spec = job.spec;
  std::vector<EnvTemplate> env;
  const std::string world_size = std::to_string(membership.Total());
  const int64_t rank_offset = RankOffset(spec, membership, role);
  Add(env, "HYBRIDJOB_WORLD_SIZE", world_size);
  Add(env, "HYBRIDJOB_RANK", EnvValue::IndexPlus(rank_offset));

  switch (spec.framework) {
    case api::Framework::kTensorFlow: {
      ordered_json prefix = {{"cluster", TfCluster(job, membership)}};
      // {"cluster":{...},"task":{"type":"<role>","index":<i>}}
      std::string head = prefix.dump();
      head.pop_back();  // the closing brace; the task follows
      head += ",\"task\":{\"type\":" + json(std::string(role)).dump() + ",\"index\":";
      EnvValue tf_config(head);
      tf_config.AppendIndexPlus(0).Append("}}");
      Add(env, "TF_CONFIG", std::move(tf_config));
      break;
    }
    case api::Framework::kPyTorch: {
      const api::ReplicaSpec* master = LeaderRole(spec);
      if (master == nullptr) {
        master = spec.FindRole("worker");
      }
      if (master == nullptr && !spec.replica_specs.empty()) {
        master = &spec.replica_specs.front();
      }
      if (master != nullptr) {
        Add(env, "MASTER_ADDR", MemberAddress(job, master->name, 0));
        Add(env, "MASTER_PORT", std::to_string(master->EffectivePort(spec.framework)));
      }
      Add(env, "WORLD_SIZE", world_size);
      Add(env, "RANK", EnvValue::IndexPlus(rank_offset));
      break;
    }
    case api::Framework::kMXNet: {
      if (const api::ReplicaSpec* scheduler = spec.FindRole("scheduler")) {
        Add(env, "DMLC_PS_ROOT_URI", MemberAddress(job, scheduler->name, 0));
        Add(env, "DMLC_PS_ROOT_PORT", std::to_string(scheduler->EffectivePort(spec.framework)));
      }
      Add(env, "DMLC_NUM_SERVER", std::to_string(membership.Count("server")));
      Add(env, "DMLC_NUM_WORKER", std::to_string(membership.Count("worker")));
      Add(env, "DMLC_ROLE", std::string(role));
      break;
    }
    case api::Framework::kMPI: {
      const std::string hostfile =
          std::string(api::kClusterMountPath) + "/" + std::string(kHostfileKey);
      Add(env, "HYBRIDJOB_HOSTFILE", hostfile);
      Add(env, "OMPI_MCA_orte_default_hostfile", hostfile);
      break;
    }
    case api::Framework::kGeneric:
      Add(env, "HYBRIDJOB_CLUSTER", ClusterJson(job, membership).dump());
      break;
  }
  return env;
}

std::map<std::string, std::string> MemberEnvironment(const api::HybridJob& job,
                                                     const Membership& membership,
                                                     std::string_view role, int64_t index) {
  std::map<std::string, std::string> out;
  for (const EnvTemplate& entry : ClusterEnvironment(job, membership, role)) {
    out[entry.name] = entry.value.Render(index);
  }
  return out;
}

std::string MpiHostfile(const api::HybridJob& job, const Membership& membership,
                        const std::vector<std::string>& gpu_resources) {
  std::string out;
  for (const api::ReplicaSpec& role : job.spec.replica_specs) {
    if (role.name == "launcher") {
      continue;
    }
    int64_t slots = GpusPerMember(role, gpu_resources);
    const std::string slots_text = std::to_string(slots > 0 ? slots : 1);
    for (int32_t i = 0; i < membership.Count(role.name); ++i) {
      out += MemberAddress(job, role.name, i) + " slots=" + slots_text + "\n";
    }
  }
  return out;
}

std::string RoleEnvFile(const api::HybridJob& job, const Membership& membership,
                        std::string_view role) {
  std::string out = "# Cluster spec of role " + std::string(role) + " in HybridJob " +
                    job.metadata.name + "; values may use $HYBRIDJOB_INDEX.\n";
  for (const EnvTemplate& entry : ClusterEnvironment(job, membership, role)) {
    out += "export " + entry.name + "=" + entry.value.RenderShell() + "\n";
  }
  return out;
}

int64_t GpusPerMember(const api::ReplicaSpec& role, const std::vector<std::string>& gpu_resources) {
  try {
    const json& pod_template = role.pod_template;
    if (!pod_template.is_object() || !pod_template.contains("spec")) {
      return 0;
    }
    const json& spec = pod_template["spec"];
    if (!spec.is_object() || !spec.contains("containers") || !spec["containers"].is_array()) {
      return 0;
    }
    auto amount = [](const json& resources, const char* kind, const std::string& name) -> int64_t {
      if (!resources.contains(kind) || !resources[kind].is_object() ||
          !resources[kind].contains(name)) {
        return 0;
      }
      const json& value = resources[kind][name];
      if (value.is_number_integer()) {
        return value.get<int64_t>();
      }
      if (value.is_string()) {
        Result<int64_t> parsed = ParseQuantity(value.get<std::string>());
        return parsed.ok() ? *parsed : 0;
      }
      return 0;
    };
    int64_t total = 0;
    for (const json& container : spec["containers"]) {
      if (!container.is_object() || !container.contains("resources") ||
          !container["resources"].is_object()) {
        continue;
      }
      const json& resources = container["resources"];
      for (const std::string& name : gpu_resources) {
        int64_t limits = amount(resources, "limits", name);
        total += limits > 0 ? limits : amount(resources, "requests", name);
      }
    }
    return total;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace hybridjob::controller
