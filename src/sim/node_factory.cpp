#include <hybridjob/api/names.h>
#include <hybridjob/api/time.h>
#include <hybridjob/common/quantity.h>
#include <hybridjob/sim/node_factory.h>

namespace hybridjob::sim {
namespace {

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) {
      end = text.size();
    }
    std::string part = text.substr(start, end - start);
    if (!part.empty()) {
      out.push_back(part);
    }
    start = end + 1;
  }
  return out;
}

}  // namespace

Result<std::map<std::string, std::string>> ParseLabels(const std::string& text) {
  std::map<std::string, std::string> labels;
  for (const auto& entry : SplitComma(text)) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidArgument("label \"" + entry + "\": expected key=value");
    }
    labels[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return labels;
}

Result<std::vector<Taint>> ParseTaints(const std::string& text) {
  std::vector<Taint> taints;
  for (const auto& entry : SplitComma(text)) {
    const size_t colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return InvalidArgument("taint \"" + entry + "\": expected key[=value]:Effect");
    }
    Taint taint;
    taint.effect = entry.substr(colon + 1);
    if (taint.effect != "NoSchedule" && taint.effect != "PreferNoSchedule" &&
        taint.effect != "NoExecute") {
      return InvalidArgument("taint \"" + entry +
                             "\": effect must be NoSchedule, PreferNoSchedule or NoExecute");
    }
    const std::string key_value = entry.substr(0, colon);
    const size_t eq = key_value.find('=');
    taint.key = key_value.substr(0, eq);
    if (eq != std::string::npos) {
      taint.value = key_value.substr(eq + 1);
    }
    if (taint.key.empty()) {
      return InvalidArgument("taint \"" + entry + "\": empty key");
    }
    taints.push_back(std::move(taint));
  }
  return taints;
}

Status ValidateNodePool(const NodePoolSpec& spec) {
  if (spec.count < 0 || spec.count > 100000) {
    return InvalidArgument("--nodes must be between 0 and 100000");
  }
  if (spec.gpus_per_node < 0) {
    return InvalidArgument("--gpus-per-node must not be negative");
  }
  if (spec.max_pods <= 0) {
    return InvalidArgument("--max-pods must be positive");
  }
  if (auto cpu = ParseQuantityMilli(spec.cpu); !cpu || *cpu <= 0) {
    return InvalidArgument("--cpu: \"" + spec.cpu + "\" is not a positive quantity");
  }
  if (auto memory = ParseQuantity(spec.memory); !memory || *memory <= 0) {
    return InvalidArgument("--memory: \"" + spec.memory + "\" is not a positive quantity");
  }
  if (spec.name_prefix.empty()) {
    return InvalidArgument("--node-prefix must not be empty");
  }
  if (spec.kubelet_port < 0 || spec.kubelet_port > 65535) {
    return InvalidArgument("kubelet port " + std::to_string(spec.kubelet_port) +
                           " is not between 0 and 65535");
  }
  if (spec.kubelet_port > 0 && spec.kubelet_address.empty()) {
    return InvalidArgument("a kubelet port needs a kubelet address");
  }
  const NodeLayout& layout = spec.layout;
  if (layout.zones < 0 || layout.zones > 1000) {
    return InvalidArgument("--zones must be between 0 and 1000");
  }
  if (layout.zones > 0) {
    if (layout.racks_per_zone < 1 || layout.racks_per_zone > 1000) {
      return InvalidArgument("--racks-per-zone must be between 1 and 1000");
    }
    if (layout.nodes_per_rack < 1 || layout.nodes_per_rack > 1000) {
      return InvalidArgument("--nodes-per-rack must be between 1 and 1000");
    }
    if (layout.node_count() != spec.count) {
      return InvalidArgument("--nodes " + std::to_string(spec.count) + " does not match --zones " +
                             std::to_string(layout.zones) + " x --racks-per-zone " +
                             std::to_string(layout.racks_per_zone) + " x --nodes-per-rack " +
                             std::to_string(layout.nodes_per_rack) + " = " +
                             std::to_string(layout.node_count()));
    }
  }
  if (!spec.gpu_product.empty() && !api::IsQualifiedNamePart(spec.gpu_product)) {
    return InvalidArgument("--gpu-product: \"" + spec.gpu_product +
                           "\" is not a label value (letters, digits, '-', '_', '.')");
  }
  return Status::Ok();
}

std::map<std::string, std::string> NodeLabels(const NodePoolSpec& spec, int64_t index) {
  std::map<std::string, std::string> labels;
  const NodeLayout& layout = spec.layout;
  if (layout.zones > 0) {
    const int64_t rack = index / layout.nodes_per_rack;
    const std::string zone = "zone-" + std::to_string(rack / layout.racks_per_zone);
    labels[layout.zone_label] = zone;
    labels[layout.rack_label] = zone + "-rack-" + std::to_string(rack % layout.racks_per_zone);
  }
  if (!spec.gpu_product.empty() && spec.gpus_per_node > 0) {
    labels[std::string(kGpuProductLabel)] = spec.gpu_product;
  }
  for (const auto& [key, value] : spec.labels) {
    labels[key] = value;
  }
  return labels;
}

std::string NodeName(const NodePoolSpec& spec, int64_t index) {
  return spec.name_prefix + "-" + std::to_string(index);
}

std::string NodeAddress(int64_t index) {
  return "10.200." + std::to_string((index / 250) % 250) + "." + std::to_string(index % 250 + 1);
}

std::string NodeAddress(const NodePoolSpec& spec, int64_t index) {
  return spec.kubelet_port > 0 ? spec.kubelet_address : NodeAddress(index);
}

nlohmann::json NodeTaints(const NodePoolSpec& spec) {
  nlohmann::json taints = nlohmann::json::array();
  for (const auto& taint : spec.taints) {
    nlohmann::json t = {{"key", taint.key}, {"effect", taint.effect}};
    if (!taint.value.empty()) {
      t["value"] = taint.value;
    }
    taints.push_back(std::move(t));
  }
  return taints;
}

nlohmann::json MakeNode(const NodePoolSpec& spec, int64_t index) {
  const std::string name = NodeName(spec, index);
  const std::string now =
      api::FormatTime(std::chrono::time_point_cast<std::chrono::seconds>(api::Clock::now()));
  auto condition = [&now](const char* type, const char* status, const char* reason,
                          const char* message) {
    return nlohmann::json{
        {"type", type},       {"status", status},         {"reason", reason},
        {"message", message}, {"lastHeartbeatTime", now}, {"lastTransitionTime", now}};
  };
  nlohmann::json labels = {
      {"kubernetes.io/hostname", name}, {"kubernetes.io/os", "linux"},
      {"kubernetes.io/arch", "amd64"},  {"node.hybridjob.io/simulated", "true"},
      {"type", "hybridjob-sim"},
  };
  for (const auto& [key, value] : NodeLabels(spec, index)) {
    labels[key] = value;
  }
  nlohmann::json capacity = {
      {"cpu", spec.cpu},
      {"memory", spec.memory},
      {"ephemeral-storage", spec.ephemeral_storage},
      {"pods", std::to_string(spec.max_pods)},
  };
  if (spec.gpus_per_node > 0) {
    capacity[spec.gpu_resource] = std::to_string(spec.gpus_per_node);
  }
  nlohmann::json node = {
      {"apiVersion", "v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", name},
        {"labels", labels},
        {"annotations", {{"node.alpha.kubernetes.io/ttl", "0"}}}}},
      {"spec", {{"taints", NodeTaints(spec)}}},
      {"status",
       {{"capacity", capacity},
        {"allocatable", capacity},
        {"phase", "Running"},
        {"addresses",
         nlohmann::json::array({{{"type", "InternalIP"}, {"address", NodeAddress(spec, index)}},
                                {{"type", "Hostname"}, {"address", name}}})},
        {"conditions",
         nlohmann::json::array(
             {condition("Ready", "True", "KubeletReady", "hybridjob-sim is posting ready status"),
              condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "simulated"),
              condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "simulated"),
              condition("PIDPressure", "False", "KubeletHasSufficientPID", "simulated")})},
        {"nodeInfo",
         {{"kubeletVersion", "v1.20.2-hybridjob-sim"},
          {"containerRuntimeVersion", "sim://1.0"},
          {"operatingSystem", "linux"},
          {"architecture", "amd64"},
          {"kernelVersion", ""},
          {"osImage", "hybridjob-sim"},
          {"kubeProxyVersion", ""},
          {"machineID", ""},
          {"systemUUID", ""},
          {"bootID", ""}}}}}};
  if (spec.taints.empty()) {
    node["spec"].erase("taints");
  }
  if (spec.kubelet_port > 0) {
    node["status"]["daemonEndpoints"] = {{"kubeletEndpoint", {{"Port", spec.kubelet_port}}}};
  }
  return node;
}

}  // namespace hybridjob::sim
