#include <algorithm>
#include <set>

#include <hybridjob/api/names.h>
#include <hybridjob/common/quantity.h>
#include <hybridjob/sim/trace/inventory.h>

#include "csv_fields.h"

namespace hybridjob::sim::trace {
namespace {

constexpr std::string_view kInventoryHeader = "name,gpus,cpu,memory,labels";
constexpr int32_t kMaxNodeGpus = 1024;

// "zone=z1;example.com/rack=r3"
Result<std::map<std::string, std::string>> ParseLabels(std::string_view text) {
  std::map<std::string, std::string> labels;
  if (text.empty()) {
    return labels;
  }
  for (std::string_view part : SplitTrimmed(text, ';')) {
    const size_t equals = part.find('=');
    if (equals == std::string_view::npos) {
      return InvalidArgument("labels: \"" + std::string(part) + "\" is not key=value");
    }
    const std::string key(Trim(part.substr(0, equals)));
    const std::string value(Trim(part.substr(equals + 1)));
    if (!api::IsQualifiedName(key)) {
      return InvalidArgument("labels: \"" + key + "\" is not a label key");
    }
    if (!value.empty() && !api::IsQualifiedNamePart(value)) {
      return InvalidArgument("labels: \"" + value + "\" is not a label value (key " + key + ")");
    }
    if (!labels.emplace(key, value).second) {
      return InvalidArgument("labels: " + key + " is given twice");
    }
  }
  return labels;
}

Result<int64_t> ParsePositiveQuantity(std::string_view field, std::string_view text, bool milli) {
  Result<int64_t> value = milli ? ParseQuantityMilli(text) : ParseQuantity(text);
  if (!value.ok() || *value <= 0) {
    return InvalidArgument(std::string(field) + ": \"" + std::string(text) +
                           "\" is not a positive quantity");
  }
  return value;
}

Result<InventoryNode> ParseNode(const std::vector<std::string_view>& fields) {
  InventoryNode node;
  node.name = std::string(fields[0]);
  if (!api::IsDns1123Subdomain(node.name)) {
    return InvalidArgument("name: \"" + node.name + "\" is not a DNS subdomain");
  }
  Result<int32_t> gpus = ParseCount("gpus", fields[1]);
  if (!gpus.ok()) {
    return gpus.status();
  }
  if (*gpus < 0 || *gpus > kMaxNodeGpus) {
    return InvalidArgument("gpus: must be in 0.." + std::to_string(kMaxNodeGpus));
  }
  node.gpus = *gpus;
  Result<int64_t> cpu = ParsePositiveQuantity("cpu", fields[2], /*milli=*/true);
  if (!cpu.ok()) {
    return cpu.status();
  }
  node.milli_cpu = *cpu;
  Result<int64_t> memory = ParsePositiveQuantity("memory", fields[3], /*milli=*/false);
  if (!memory.ok()) {
    return memory.status();
  }
  node.memory_bytes = *memory;
  Result<std::map<std::string, std::string>> labels = ParseLabels(fields[4]);
  if (!labels.ok()) {
    return labels.status();
  }
  node.labels = std::move(*labels);
  return node;
}

}  // namespace

Result<std::vector<InventoryNode>> ParseInventoryCsv(std::string_view text) {
  std::vector<InventoryNode> nodes;
  std::set<std::string, std::less<>> names;
  Status read =
      ForEachCsvRecord(text, {kInventoryHeader}, "inventory",
                       [&](const std::vector<std::string_view>& fields) -> Status {
                         Result<InventoryNode> node = ParseNode(fields);
                         if (!node.ok()) {
                           return node.status();
                         }
                         if (!names.insert(node->name).second) {
                           return InvalidArgument("name: " + node->name + " is listed twice");
                         }
                         nodes.push_back(std::move(*node));
                         return Status::Ok();
                       });
  if (!read.ok()) {
    return read;
  }
  if (nodes.empty()) {
    return InvalidArgument("the inventory lists no node");
  }
  return nodes;
}

int64_t TotalGpus(const std::vector<InventoryNode>& nodes) {
  int64_t total = 0;
  for (const InventoryNode& node : nodes) {
    total += node.gpus;
  }
  return total;
}

int32_t LargestNodeGpus(const std::vector<InventoryNode>& nodes) {
  int32_t largest = 0;
  for (const InventoryNode& node : nodes) {
    largest = std::max(largest, node.gpus);
  }
  return largest;
}

}  // namespace hybridjob::sim::trace
