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

// Zones of racks of nodes, labelled as a real cluster's nodes would be: node
// i is in rack i / nodes_per_rack, and that rack in zone rack / racks_per_zone.
// zones == 0: no layout (no topology labels).
struct NodeLayout {
  int64_t zones = 0;
  int64_t racks_per_zone = 1;
  int64_t nodes_per_rack = 1;
  std::string zone_label = "topology.kubernetes.io/zone";
  std::string rack_label = "topology.hybridjob.io/rack";

  int64_t node_count() const { return zones * racks_per_zone * nodes_per_rack; }
};

// The label NVIDIA's GPU feature discovery puts the GPU model in.
inline constexpr std::string_view kGpuProductLabel = "nvidia.com/gpu.product";

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
  NodeLayout layout;
  std::string gpu_product;  // kGpuProductLabel's value on GPU nodes; empty: none
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
// The labels node `index` carries beyond the fixed ones: the layout's zone
// and rack ("zone-1", "zone-1-rack-0"), the GPU product, then --node-labels.
std::map<std::string, std::string> NodeLabels(const NodePoolSpec& spec, int64_t index);
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
