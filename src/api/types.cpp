#include <algorithm>
#include <array>
#include <utility>

#include <hybridjob/api/types.h>

namespace hybridjob::api {
namespace {

template <typename Enum, size_t N>
using Spellings = std::array<std::pair<Enum, std::string_view>, N>;

constexpr Spellings<Framework, 5> kFrameworks{{
    {Framework::kTensorFlow, "tensorflow"},
    {Framework::kPyTorch, "pytorch"},
    {Framework::kMXNet, "mxnet"},
    {Framework::kMPI, "mpi"},
    {Framework::kGeneric, "generic"},
}};

constexpr Spellings<RestartPolicy, 4> kRestartPolicies{{
    {RestartPolicy::kNever, "Never"},
    {RestartPolicy::kOnFailure, "OnFailure"},
    {RestartPolicy::kExitCode, "ExitCode"},
    {RestartPolicy::kAlways, "Always"},
}};

constexpr Spellings<CleanPodPolicy, 3> kCleanPodPolicies{{
    {CleanPodPolicy::kRunning, "Running"},
    {CleanPodPolicy::kAll, "All"},
    {CleanPodPolicy::kNone, "None"},
}};

constexpr Spellings<SuccessOperator, 2> kSuccessOperators{{
    {SuccessOperator::kAll, "All"},
    {SuccessOperator::kAny, "Any"},
}};

constexpr Spellings<JobPhase, 7> kJobPhases{{
    {JobPhase::kPending, "Pending"},
    {JobPhase::kQueued, "Queued"},
    {JobPhase::kRunning, "Running"},
    {JobPhase::kRestarting, "Restarting"},
    {JobPhase::kSucceeded, "Succeeded"},
    {JobPhase::kFailed, "Failed"},
    {JobPhase::kSuspended, "Suspended"},
}};

constexpr Spellings<TopologyMode, 3> kTopologyModes{{
    {TopologyMode::kRequired, "Required"},
    {TopologyMode::kPreferred, "Preferred"},
    {TopologyMode::kNone, "None"},
}};

template <typename Enum, size_t N>
std::string_view Spell(const Spellings<Enum, N>& table, Enum value) {
  for (const auto& [entry, text] : table) {
    if (entry == value) {
      return text;
    }
  }
  return "Unknown";
}

template <typename Enum, size_t N>
std::optional<Enum> Lookup(const Spellings<Enum, N>& table, std::string_view text) {
  for (const auto& [entry, spelling] : table) {
    if (spelling == text) {
      return entry;
    }
  }
  return std::nullopt;
}

template <typename Enum, size_t N>
std::vector<std::string_view> AllOf(const Spellings<Enum, N>& table) {
  std::vector<std::string_view> out;
  for (const auto& entry : table) {
    out.push_back(entry.second);
  }
  return out;
}

}  // namespace

std::string_view ToString(Framework value) {
  return Spell(kFrameworks, value);
}
std::string_view ToString(RestartPolicy value) {
  return Spell(kRestartPolicies, value);
}
std::string_view ToString(CleanPodPolicy value) {
  return Spell(kCleanPodPolicies, value);
}
std::string_view ToString(SuccessOperator value) {
  return Spell(kSuccessOperators, value);
}
std::string_view ToString(JobPhase value) {
  return Spell(kJobPhases, value);
}
std::string_view ToString(TopologyMode value) {
  return Spell(kTopologyModes, value);
}

std::optional<Framework> ParseFramework(std::string_view text) {
  return Lookup(kFrameworks, text);
}
std::optional<RestartPolicy> ParseRestartPolicy(std::string_view text) {
  return Lookup(kRestartPolicies, text);
}
std::optional<CleanPodPolicy> ParseCleanPodPolicy(std::string_view text) {
  return Lookup(kCleanPodPolicies, text);
}
std::optional<SuccessOperator> ParseSuccessOperator(std::string_view text) {
  return Lookup(kSuccessOperators, text);
}
std::optional<JobPhase> ParseJobPhase(std::string_view text) {
  return Lookup(kJobPhases, text);
}
std::optional<TopologyMode> ParseTopologyMode(std::string_view text) {
  return Lookup(kTopologyModes, text);
}

std::vector<std::string_view> AllFrameworks() {
  return AllOf(kFrameworks);
}
std::vector<std::string_view> AllRestartPolicies() {
  return AllOf(kRestartPolicies);
}
std::vector<std::string_view> AllCleanPodPolicies() {
  return AllOf(kCleanPodPolicies);
}
std::vector<std::string_view> AllSuccessOperators() {
  return AllOf(kSuccessOperators);
}
std::vector<std::string_view> AllJobPhases() {
  return AllOf(kJobPhases);
}
std::vector<std::string_view> AllTopologyModes() {
  return AllOf(kTopologyModes);
}

bool IsTerminal(JobPhase phase) {
  return phase == JobPhase::kSucceeded || phase == JobPhase::kFailed;
}

int32_t DefaultPort(Framework framework) {
  switch (framework) {
    case Framework::kTensorFlow:
      return 2222;
    case Framework::kPyTorch:
      return 23456;
    case Framework::kMXNet:
      return 9091;
    case Framework::kMPI:
      return 2222;
    case Framework::kGeneric:
      return 2222;
  }
  return 2222;
}

const ReplicaSpec* HybridJobSpec::FindRole(std::string_view name) const {
  for (const ReplicaSpec& role : replica_specs) {
    if (role.name == name) {
      return &role;
    }
  }
  return nullptr;
}

const VolumeSpec* HybridJobSpec::FindVolume(std::string_view name) const {
  for (const VolumeSpec& volume : volumes) {
    if (volume.name == name) {
      return &volume;
    }
  }
  return nullptr;
}

bool VolumeSpec::AppliesTo(std::string_view role) const {
  return roles.empty() || std::find(roles.begin(), roles.end(), role) != roles.end();
}

bool HybridJobSpec::IsElastic() const {
  for (const ReplicaSpec& role : replica_specs) {
    if (role.EffectiveMaxReplicas() != role.min_replicas) {
      return true;
    }
  }
  return false;
}

SuccessPolicy DefaultSuccessPolicy(const HybridJobSpec& spec) {
  SuccessPolicy policy;
  for (std::string_view leader : {"chief", "master"}) {
    if (spec.FindRole(leader) != nullptr) {
      policy.roles.emplace_back(leader);
      return policy;
    }
  }
  if (spec.FindRole("worker") != nullptr) {
    policy.roles.emplace_back("worker");
    return policy;
  }
  for (const ReplicaSpec& role : spec.replica_specs) {
    policy.roles.push_back(role.name);
  }
  return policy;
}

SuccessPolicy EffectiveSuccessPolicy(const HybridJobSpec& spec) {
  return spec.success_policy.has_value() ? *spec.success_policy : DefaultSuccessPolicy(spec);
}

const Condition* HybridJobStatus::FindCondition(std::string_view type) const {
  for (const Condition& condition : conditions) {
    if (condition.type == type) {
      return &condition;
    }
  }
  return nullptr;
}

bool HybridJobStatus::HasTrueCondition(std::string_view type) const {
  const Condition* condition = FindCondition(type);
  return condition != nullptr && condition->status == "True";
}

const ReplicaStatus* HybridJobStatus::FindReplicaStatus(std::string_view role) const {
  for (const ReplicaStatus& status : replica_statuses) {
    if (status.name == role) {
      return &status;
    }
  }
  return nullptr;
}

}  // namespace hybridjob::api
