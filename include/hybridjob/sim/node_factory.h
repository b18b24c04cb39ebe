// The simulated nodes: what each looks like to the API server.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>

namespace hybridjob::sim {

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule, PreferNoSchedule, NoExecute
};

struct NodePoolSpec {
  std::string name_prefix = "sim-node";
  int64_t count = 4;
  int64_t gpus_per_node = 8;
  std::string gpu_resource = "nvidia.com/gpu";
  std::string cpu = "64";
  std::string memory = "512Gi";
  std::string ephemeral_storage = "1Ti";
  int64_t max_pods = 110;
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  // Where the API server reaches the nodes' kubelet (a KubeletServer) for
  // logs: with a port, every node of the pool has InternalIP kubelet_address
  // and status.daemonEndpoints.kubeletEndpoint.Port kubelet_port (the API
  // server must prefer InternalIP: --kubelet-preferred-address-types). Port 0:
  // no kubelet endpoint, and InternalIP is NodeAddress(index), never contacted.
  int kubelet_port = 0;
  std::string kubelet_address = "127.0.0.1";
};

// "a=b,c=d" -> map; errors name the bad entry.
Result<std::map<std::string, std::string>> ParseLabels(const std::string& text);
// "key=value:Effect,key:Effect" -> taints; errors name the bad entry.
Result<std::vector<Taint>> ParseTaints(const std::string& text);
Status ValidateNodePool(const NodePoolSpec& spec);

std::string NodeName(const NodePoolSpec& spec, int64_t index);
// The Node object to create (with Ready status and capacity).
nlohmann::json MakeNode(const NodePoolSpec& spec, int64_t index);
// The taints the node should carry: the configured ones only (admission adds
// node.kubernetes.io/not-ready on create; a Ready kubelet removes it).
nlohmann::json NodeTaints(const NodePoolSpec& spec);
// A stable, obviously simulated address per node (never contacted).
std::string NodeAddress(int64_t index);
// The InternalIP MakeNode gives the node: the kubelet's address when the pool
// has a kubelet endpoint, else NodeAddress(index). Pods' hostIP is this.
std::string NodeAddress(const NodePoolSpec& spec, int64_t index);

}  // namespace hybridjob::sim
