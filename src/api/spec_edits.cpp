#include <algorithm>
#include <cstdint>
#include <set>
#include <string_view>
#include <utility>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/json.h>
#include <hybridjob/api/spec_edits.h>
#include <hybridjob/api/validation.h>

namespace hybridjob::api {
namespace {

std::string RolePath(const std::string& role, std::string_view field) {
  std::string path = "spec.replicaSpecs[" + role + "]";
  if (!field.empty()) {
    path += ".";
    path += field;
  }
  return path;
}

// Takes one allowed edit into `running` unless it makes the spec invalid (a
// problem the spec did not have before it); then the edit is ignored with the
// first such problem.
template <typename Edit>
void TakeIfValid(const HybridJob& job, RunningSpec& running, const std::string& path, Edit edit) {
  HybridJob candidate{.metadata = job.metadata, .spec = running.spec, .status = {}};
  edit(candidate.spec);
  if (candidate.spec == running.spec) {
    return;
  }
  const std::vector<FieldError> before =
      Validate(HybridJob{.metadata = job.metadata, .spec = running.spec, .status = {}});
  for (const FieldError& error : Validate(candidate)) {
    if (std::find(before.begin(), before.end(), error) == before.end()) {
      running.ignored.push_back(path + ": " + error.ToString());
      return;
    }
  }
  running.spec = std::move(candidate.spec);
}

}  // namespace

RunningSpec ApplyRunningEdits(const HybridJob& job, const HybridJobSpec& run_spec) {
  HybridJobSpec edited = job.spec;
  ApplyDefaults(edited);
  HybridJobSpec before = run_spec;
  ApplyDefaults(before);
  RunningSpec out{.spec = before, .ignored = {}};
  auto ignore_if = [&](bool changed, std::string path) {
    if (changed) {
      out.ignored.push_back(std::move(path));
    }
  };

  ignore_if(edited.framework != before.framework, "spec.framework");
  std::set<std::string> roles_now;
  for (const ReplicaSpec& role : edited.replica_specs) {
    roles_now.insert(role.name);
    ignore_if(before.FindRole(role.name) == nullptr, RolePath(role.name, "") + " (added)");
  }
  for (const ReplicaSpec& role : before.replica_specs) {
    const ReplicaSpec* now = edited.FindRole(role.name);
    if (now == nullptr) {
      out.ignored.push_back(RolePath(role.name, "") + " (removed)");
      continue;
    }
    ignore_if(now->min_replicas != role.min_replicas, RolePath(role.name, "minReplicas"));
    ignore_if(now->restart_policy != role.restart_policy, RolePath(role.name, "restartPolicy"));
    ignore_if(now->port != role.port, RolePath(role.name, "port"));
    ignore_if(now->topology != role.topology, RolePath(role.name, "topology"));
    ignore_if(now->pod_template != role.pod_template, RolePath(role.name, "template"));
  }
  ignore_if(edited.success_policy != before.success_policy, "spec.successPolicy");
  ignore_if(edited.volumes != before.volumes, "spec.volumes");
  ignore_if(edited.code != before.code, "spec.code");
  ignore_if(edited.tensorboard != before.tensorboard, "spec.tensorboard");
  ignore_if(edited.queue != before.queue, "spec.queue");
  ignore_if(edited.topology != before.topology, "spec.topology");
  ignore_if(edited.scheduler_name != before.scheduler_name, "spec.schedulerName");

  out.spec.suspend = edited.suspend;
  TakeIfValid(job, out, "spec.runPolicy",
              [&](HybridJobSpec& spec) { spec.run_policy = edited.run_policy; });
  TakeIfValid(job, out, "spec.runHistoryLimit",
              [&](HybridJobSpec& spec) { spec.run_history_limit = edited.run_history_limit; });
  TakeIfValid(job, out, "spec.artifacts",
              [&](HybridJobSpec& spec) { spec.artifacts = edited.artifacts; });
  for (const ReplicaSpec& role : before.replica_specs) {
    const ReplicaSpec* now = edited.FindRole(role.name);
    if (now == nullptr) {
      continue;
    }
    TakeIfValid(job, out, RolePath(role.name, "maxReplicas"), [&](HybridJobSpec& spec) {
      for (ReplicaSpec& taken : spec.replica_specs) {
        if (taken.name == role.name) {
          taken.max_replicas = now->max_replicas;
          taken.priority = now->priority;
        }
      }
    });
  }
  return out;
}

namespace {

// FNV-1a, 64 bits: names and compares, never secures.
uint64_t Fnv1a(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

std::string Hex(uint64_t value, int digits) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(static_cast<size_t>(digits), '0');
  for (int i = digits - 1; i >= 0; --i) {
    out[static_cast<size_t>(i)] = kDigits[value & 0xf];
    value >>= 4;
  }
  return out;
}

HybridJobSpec Defaulted(HybridJobSpec spec) {
  ApplyDefaults(spec);
  return spec;
}

}  // namespace

std::string RunFixedHash(const HybridJobSpec& spec) {
  HybridJobSpec fixed = Defaulted(spec);
  fixed.suspend = false;
  fixed.run_policy = {};
  fixed.run_history_limit = kDefaultRunHistoryLimit;
  fixed.artifacts.reset();
  for (ReplicaSpec& role : fixed.replica_specs) {
    role.max_replicas.reset();
    role.priority = 0;
  }
  return Hex(Fnv1a(ToJson(fixed).dump()), 16);
}

std::string RunRevisionName(std::string_view job_name, const HybridJobSpec& spec) {
  return std::string(job_name) + "-run-" + Hex(Fnv1a(ToJson(Defaulted(spec)).dump()), 10);
}

bool NeedsStartedSpec(const HybridJob& job) {
  if (!job.status.run_spec) {
    return false;
  }
  if (RunFixedHash(job.spec) != job.status.run_spec->hash) {
    return true;
  }
  HybridJob defaulted = job;
  ApplyDefaults(defaulted.spec);
  return !Validate(defaulted).empty();
}

RunningSpec EffectiveSpec(const HybridJob& job, const HybridJobSpec* started) {
  if (job.status.run_spec && started != nullptr) {
    return ApplyRunningEdits(job, *started);
  }
  // Not started, or job.spec still is the run's spec (NeedsStartedSpec).
  return RunningSpec{.spec = Defaulted(job.spec), .ignored = {}};
}

}  // namespace hybridjob::api
