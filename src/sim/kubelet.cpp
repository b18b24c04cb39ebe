#include <charconv>
#include <map>

#include <hybridjob/api/names.h>
#include <hybridjob/api/time.h>
#include <hybridjob/common/duration.h>
#include <hybridjob/common/json_fields.h>
#include <hybridjob/k8s/object_meta.h>
#include <hybridjob/scheduler/objects/objects.h>
#include <hybridjob/sim/kubelet.h>

namespace hybridjob::sim {
namespace {

std::optional<WallClock::time_point> ParseTimeField(const nlohmann::json& object,
                                                    const char* field) {
  auto it = object.find(field);
  if (it == object.end() || !it->is_string()) {
    return std::nullopt;
  }
  auto parsed = api::ParseTime(it->get<std::string>());
  if (!parsed) {
    return std::nullopt;
  }
  return WallClock::time_point(*parsed);
}

// `text`, or its first kSyntheticLogValueLimit bytes (not splitting a UTF-8
// character) and how long it was.
std::string KeptValue(const std::string& text) {
  if (text.size() <= kSyntheticLogValueLimit) {
    return text;
  }
  size_t cut = kSyntheticLogValueLimit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes in all)";
}

std::vector<std::string> KeptWords(const nlohmann::json& container, const char* field) {
  std::vector<std::string> words;
  const nlohmann::json* list = JsonMember(container, field);
  if (list == nullptr || !list->is_array()) {
    return words;
  }
  for (const auto& word : *list) {
    if (word.is_string()) {
      words.push_back(KeptValue(word.get<std::string>()));
    }
  }
  return words;
}

// The variables the controller sets for a member to find its place in the
// job and its peers (children.cpp, cluster_spec.cpp).
bool IsJobVariable(std::string_view name) {
  return name.starts_with("HYBRIDJOB_") || name.starts_with("DMLC_") || name == "TF_CONFIG" ||
         name == "MASTER_ADDR" || name == "MASTER_PORT" || name == "WORLD_SIZE" || name == "RANK" ||
         name == "OMPI_MCA_orte_default_hostfile";
}

std::vector<std::pair<std::string, std::string>> JobEnv(const nlohmann::json& container) {
  std::vector<std::pair<std::string, std::string>> env;
  const nlohmann::json* list = JsonMember(container, "env");
  if (list == nullptr || !list->is_array()) {
    return env;
  }
  for (const auto& entry : *list) {
    const nlohmann::json* name = JsonMember(entry, "name");
    const nlohmann::json* value = JsonMember(entry, "value");
    if (name != nullptr && name->is_string() && value != nullptr && value->is_string() &&
        IsJobVariable(name->get_ref<const std::string&>())) {
      env.emplace_back(name->get<std::string>(), KeptValue(value->get<std::string>()));
    }
  }
  return env;
}

std::string MountPathOf(const nlohmann::json& container, std::string_view volume) {
  const nlohmann::json* mounts = JsonMember(container, "volumeMounts");
  if (volume.empty() || mounts == nullptr || !mounts->is_array()) {
    return {};
  }
  for (const auto& mount : *mounts) {
    if (mount.is_object() && mount.value("name", "") == volume) {
      return mount.value("mountPath", "");
    }
  }
  return {};
}

using TerminationsByName = std::map<std::string, SimTermination, std::less<>>;

// The terminated state of each container that status.<field>
// (containerStatuses or initContainerStatuses) reports, by name.
TerminationsByName Terminations(const nlohmann::json& status, const char* field) {
  TerminationsByName out;
  const nlohmann::json* statuses = JsonMember(status, field);
  if (statuses == nullptr || !statuses->is_array()) {
    return out;
  }
  for (const auto& entry : *statuses) {
    const nlohmann::json* state = JsonMember(entry, "state");
    const nlohmann::json* terminated =
        state != nullptr ? JsonMember(*state, "terminated") : nullptr;
    if (terminated == nullptr || !terminated->is_object()) {
      continue;
    }
    SimTermination termination;
    if (const nlohmann::json* code = JsonMember(*terminated, "exitCode");
        code != nullptr && code->is_number_integer()) {
      termination.exit_code = code->get<int>();
    }
    termination.finished_at = ParseTimeField(*terminated, "finishedAt");
    out[entry.value("name", "")] = termination;
  }
  return out;
}

// with_inputs: also what the container was given, for the synthetic log;
// cluster_volume: the pod's cluster-spec volume ("" if none).
std::vector<SimContainer> Containers(const nlohmann::json& spec, const char* field,
                                     bool with_inputs, std::string_view cluster_volume,
                                     const TerminationsByName& ended) {
  std::vector<SimContainer> out;
  auto it = spec.find(field);
  if (it == spec.end() || !it->is_array()) {
    return out;
  }
  for (const auto& container : *it) {
    if (!container.is_object()) {
      continue;
    }
    SimContainer& decoded = out.emplace_back();
    decoded.name = container.value("name", "");
    decoded.image = container.value("image", "");
    if (auto termination = ended.find(decoded.name); termination != ended.end()) {
      decoded.terminated = termination->second;
    }
    if (with_inputs) {
      decoded.command = KeptWords(container, "command");
      decoded.args = KeptWords(container, "args");
      decoded.job_env = JobEnv(container);
      decoded.cluster_spec_path = MountPathOf(container, cluster_volume);
    }
  }
  return out;
}

// The ConfigMap the controller's cluster-spec volume names; "" if the pod has none.
std::string ClusterConfigMap(const nlohmann::json& spec) {
  const nlohmann::json* volumes = JsonMember(spec, "volumes");
  if (volumes == nullptr || !volumes->is_array()) {
    return {};
  }
  for (const auto& volume : *volumes) {
    const nlohmann::json* config_map = JsonMember(volume, "configMap");
    if (config_map != nullptr && config_map->is_object() &&
        volume.value("name", "") == api::kClusterVolumeName) {
      return config_map->value("name", "");
    }
  }
  return {};
}

nlohmann::json Condition(const char* type, bool status, WallClock::time_point now) {
  return {{"type", type},
          {"status", status ? "True" : "False"},
          {"lastTransitionTime", api::FormatTime(now)}};
}

nlohmann::json ContainerStatus(const SimPod& pod, const SimContainer& c, nlohmann::json state,
                               bool ready) {
  return {{"name", c.name},
          {"image", c.image},
          {"imageID", "sim://" + c.image},
          {"containerID", "sim://" + pod.uid + "/" + c.name},
          {"ready", ready},
          {"started", ready},
          {"restartCount", 0},
          {"state", std::move(state)}};
}

nlohmann::json Terminated(int exit_code, WallClock::time_point started,
                          WallClock::time_point finished, const std::string& message = "") {
  nlohmann::json terminated = {{"exitCode", exit_code},
                               {"reason", exit_code == 0 ? "Completed" : "Error"},
                               {"startedAt", api::FormatTime(started)},
                               {"finishedAt", api::FormatTime(finished)}};
  if (!message.empty()) {
    terminated["message"] = message;
  }
  return {{"terminated", terminated}};
}

nlohmann::json InitStatuses(const SimPod& pod, WallClock::time_point now) {
  nlohmann::json statuses = nlohmann::json::array();
  for (const auto& c : pod.init_containers) {
    auto status = ContainerStatus(pod, c, Terminated(0, now, now), true);
    status["started"] = false;
    statuses.push_back(std::move(status));
  }
  return statuses;
}

// The objects the pod's volumes name. A ConfigMap or Secret marked optional
// mounts empty when it is missing, so it never holds the pod.
std::vector<SimMount> Mounts(const std::string& pod_name, const nlohmann::json& spec) {
  std::vector<SimMount> mounts;
  auto volumes = spec.find("volumes");
  if (volumes == spec.end() || !volumes->is_array()) {
    return mounts;
  }
  for (const auto& volume : *volumes) {
    if (!volume.is_object()) {
      continue;
    }
    const std::string name = volume.value("name", "");
    auto source = [&](const char* field) -> const nlohmann::json* {
      auto it = volume.find(field);
      return it != volume.end() && it->is_object() ? &*it : nullptr;
    };
    if (const auto* claim = source("persistentVolumeClaim")) {
      mounts.push_back({SimMount::Kind::kClaim, name, claim->value("claimName", "")});
    } else if (source("ephemeral") != nullptr) {
      mounts.push_back({SimMount::Kind::kClaim, name, pod_name + "-" + name});
    } else if (const auto* config_map = source("configMap")) {
      if (!config_map->value("optional", false)) {
        mounts.push_back({SimMount::Kind::kConfigMap, name, config_map->value("name", "")});
      }
    } else if (const auto* secret = source("secret")) {
      if (!secret->value("optional", false)) {
        mounts.push_back({SimMount::Kind::kSecret, name, secret->value("secretName", "")});
      }
    }
  }
  return mounts;
}

}  // namespace

std::string MountFailureMessage(const SimMount& mount, MountState state) {
  switch (mount.kind) {
    case SimMount::Kind::kClaim:
      if (state == MountState::kUnbound) {
        return "Unable to attach or mount volumes: unmounted volumes=[" + mount.volume +
               "]: persistentvolumeclaim \"" + mount.object + "\" is not bound";
      }
      return "Unable to attach or mount volumes: unmounted volumes=[" + mount.volume +
             "]: persistentvolumeclaim \"" + mount.object + "\" not found";
    case SimMount::Kind::kConfigMap:
      return "MountVolume.SetUp failed for volume \"" + mount.volume + "\" : configmap \"" +
             mount.object + "\" not found";
    case SimMount::Kind::kSecret:
      return "MountVolume.SetUp failed for volume \"" + mount.volume + "\" : secret \"" +
             mount.object + "\" not found";
  }
  return {};
}

Result<SimPod> DecodeSimPod(const nlohmann::json& pod, bool with_exec) {
  if (!pod.is_object() || !pod.contains("metadata") || !pod["metadata"].is_object()) {
    return InvalidArgument("pod without metadata");
  }
  const auto& metadata = pod["metadata"];
  SimPod out;
  out.namespace_name = k8s::NamespaceOf(pod);
  out.name = k8s::NameOf(pod);
  out.uid = k8s::UidOf(pod);
  if (metadata.contains("deletionTimestamp") && !metadata["deletionTimestamp"].is_null()) {
    out.deleting = true;
    out.deletion_time = ParseTimeField(metadata, "deletionTimestamp");
  }
  const nlohmann::json empty = nlohmann::json::object();
  const auto& spec = pod.contains("spec") && pod["spec"].is_object() ? pod["spec"] : empty;
  out.node_name = spec.value("nodeName", "");
  const auto& status = pod.contains("status") && pod["status"].is_object() ? pod["status"] : empty;
  const bool with_inputs = !with_exec;
  if (with_inputs) {
    out.cluster_config_map = ClusterConfigMap(spec);
  }
  const std::string_view cluster_volume =
      out.cluster_config_map.empty() ? std::string_view() : api::kClusterVolumeName;
  out.containers = Containers(spec, "containers", with_inputs, cluster_volume,
                              Terminations(status, "containerStatuses"));
  out.init_containers = Containers(spec, "initContainers", with_inputs, cluster_volume,
                                   Terminations(status, "initContainerStatuses"));
  out.mounts = Mounts(out.name, spec);
  out.phase = status.value("phase", "");
  out.start_time = ParseTimeField(status, "startTime");
  if (with_exec && !out.node_name.empty()) {
    if (Result<ExecPod> exec = DecodeExecPod(pod); exec.ok()) {
      out.exec = std::make_shared<const ExecPod>(std::move(exec).value());
    } else {
      out.exec_error = exec.status().message();
    }
  }
  if (Result<scheduler::ResourceList> requests = scheduler::ParsePodRequests(pod); requests.ok()) {
    out.requests = *requests;
  } else {
    out.requests.pods = 1;
  }

  if (auto annotations = metadata.find("annotations");
      annotations != metadata.end() && annotations->is_object()) {
    if (auto duration = annotations->find(kDurationAnnotation);
        duration != annotations->end() && duration->is_string()) {
      auto parsed = ParseDuration(duration->get<std::string>());
      if (parsed) {
        out.run_for = *parsed;
      } else {
        out.annotation_error = std::string(kDurationAnnotation) + ": " + parsed.status().message();
      }
    }
    if (auto code = annotations->find(kExitCodeAnnotation);
        code != annotations->end() && code->is_string()) {
      const std::string text = code->get<std::string>();
      int value = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (ec != std::errc() || end != text.data() + text.size() || value < 0 || value > 255) {
        out.annotation_error =
            std::string(kExitCodeAnnotation) + ": \"" + text + "\" is not an exit code (0-255)";
      } else {
        out.exit_code = value;
      }
    }
  }
  return out;
}

std::optional<AdmissionRefusal> AdmitPod(const scheduler::ResourceList& request,
                                         const scheduler::ResourceList& admitted,
                                         const scheduler::ResourceList& allocatable) {
  const std::string_view short_of =
      scheduler::FirstInsufficientResource(request, admitted, allocatable);
  if (short_of.empty()) {
    return std::nullopt;
  }
  const std::string name(short_of);
  AdmissionRefusal refusal;
  refusal.reason = "OutOf" + name;
  if (short_of == scheduler::kResourcePods) {
    refusal.message =
        "Node didn't have enough resource: pods, capacity: " + std::to_string(allocatable.pods);
    return refusal;
  }
  // The kubelet says cpu in millicores and memory in bytes.
  refusal.message = "Node didn't have enough resource: " + name +
                    ", requested: " + std::to_string(request.Get(name)) +
                    ", used: " + std::to_string(admitted.Get(name)) +
                    ", capacity: " + std::to_string(allocatable.Get(name));
  return refusal;
}

nlohmann::json RefusalStatusPatch(const AdmissionRefusal& refusal) {
  return {{"status",
           {{"phase", "Failed"},
            {"reason", refusal.reason},
            {"message", "Pod was rejected: " + refusal.message}}}};
}

nlohmann::json ContainerCreatingStatusPatch(const SimPod& pod, WallClock::time_point now,
                                            const std::string& host_ip) {
  nlohmann::json containers = nlohmann::json::array();
  for (const auto& c : pod.containers) {
    containers.push_back({{"name", c.name},
                          {"image", c.image},
                          {"imageID", ""},
                          {"ready", false},
                          {"started", false},
                          {"restartCount", 0},
                          {"state", {{"waiting", {{"reason", "ContainerCreating"}}}}}});
  }
  nlohmann::json not_ready = Condition("Ready", false, now);
  not_ready["reason"] = "ContainersNotReady";
  nlohmann::json containers_not_ready = Condition("ContainersReady", false, now);
  containers_not_ready["reason"] = "ContainersNotReady";
  return {
      {"status",
       {{"phase", "Pending"},
        {"hostIP", host_ip},
        {"startTime", api::FormatTime(now)},
        {"conditions", nlohmann::json::array(
                           {Condition("Initialized", pod.init_containers.empty(), now), not_ready,
                            containers_not_ready, Condition("PodScheduled", true, now)})},
        {"containerStatuses", containers}}}};
}

KubeletDecision DecideKubeletStep(const SimPod& pod, WallClock::time_point now,
                                  const std::string& pod_ip, const std::string& host_ip) {
  KubeletDecision decision;
  if (pod.deleting) {
    // The containers stop at once on SIGTERM; the kubelet then removes the pod.
    decision.step = KubeletStep::kRemove;
    return decision;
  }
  if (pod.phase == "Succeeded" || pod.phase == "Failed") {
    return decision;
  }
  if (pod.phase != "Running") {
    decision.step = KubeletStep::kStart;
    nlohmann::json containers = nlohmann::json::array();
    for (const auto& c : pod.containers) {
      containers.push_back(
          ContainerStatus(pod, c, {{"running", {{"startedAt", api::FormatTime(now)}}}}, true));
    }
    decision.status_patch = {
        {"status",
         {{"phase", "Running"},
          {"hostIP", host_ip},
          {"podIP", pod_ip},
          {"podIPs", nlohmann::json::array({{{"ip", pod_ip}}})},
          {"startTime", api::FormatTime(now)},
          {"conditions",
           nlohmann::json::array(
               {Condition("Initialized", true, now), Condition("Ready", true, now),
                Condition("ContainersReady", true, now), Condition("PodScheduled", true, now)})},
          {"initContainerStatuses", InitStatuses(pod, now)},
          {"containerStatuses", containers}}}};
    if (!pod.annotation_error.empty()) {
      decision.wake_at = now;  // fail it right after it starts, saying why
    } else if (pod.run_for) {
      decision.wake_at = now + *pod.run_for;
    }
    return decision;
  }

  // Running.
  const auto started = pod.start_time.value_or(now);
  const bool bad_annotation = !pod.annotation_error.empty();
  if (!bad_annotation && !pod.run_for) {
    return decision;  // runs until deleted
  }
  const auto finish_at = bad_annotation ? started : started + *pod.run_for;
  if (now < finish_at) {
    decision.wake_at = finish_at;
    return decision;
  }
  const int exit_code = bad_annotation ? 2 : pod.exit_code;
  decision.step = KubeletStep::kFinish;
  nlohmann::json containers = nlohmann::json::array();
  for (size_t i = 0; i < pod.containers.size(); ++i) {
    // The first container is the trainer; sidecars end cleanly with it.
    const int code = i == 0 ? exit_code : 0;
    containers.push_back(ContainerStatus(
        pod, pod.containers[i],
        Terminated(code, started, now, i == 0 && bad_annotation ? pod.annotation_error : ""),
        false));
  }
  nlohmann::json status = {
      {"phase", exit_code == 0 ? "Succeeded" : "Failed"},
      {"conditions",
       nlohmann::json::array({Condition("Initialized", true, now), Condition("Ready", false, now),
                              Condition("ContainersReady", false, now),
                              Condition("PodScheduled", true, now)})},
      {"containerStatuses", containers}};
  if (bad_annotation) {
    status["reason"] = "InvalidSimulation";
    status["message"] = pod.annotation_error;
  }
  decision.status_patch = {{"status", status}};
  return decision;
}

}  // namespace hybridjob::sim
