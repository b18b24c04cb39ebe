// A node inventory for trace replay: the nodes of a heterogeneous cluster
// (2-, 4- and 8-GPU nodes, several GPU models, topology labels) instead of
// --gpus/--gpus-per-node's uniform ones. Parsing is pure (text in, nodes or
// an error naming the line); docs/trace-format.md describes the file.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/status.h>

namespace hybridjob::sim::trace {

struct InventoryNode {
  std::string name;
  int32_t gpus = 0;
  int64_t milli_cpu = 0;
  int64_t memory_bytes = 0;
  std::map<std::string, std::string> labels;

  friend bool operator==(const InventoryNode&, const InventoryNode&) = default;
};

// CSV: header `name,gpus,cpu,memory,labels`; cpu and memory as Kubernetes
// quantities ("64", "500m"; "512Gi"); labels `key=value` joined by `;`
// (may be empty). Names are DNS subdomains and unique, gpus 0..1024, cpu and
// memory positive, label keys qualified names and values label values.
// Blank lines and lines starting with `#` are skipped. Errors read
// "line 4: labels: ...". At least one node.
Result<std::vector<InventoryNode>> ParseInventoryCsv(std::string_view text);

// GPUs over all nodes, and on the largest node.
int64_t TotalGpus(const std::vector<InventoryNode>& nodes);
int32_t LargestNodeGpus(const std::vector<InventoryNode>& nodes);

}  // namespace hybridjob::sim::trace
