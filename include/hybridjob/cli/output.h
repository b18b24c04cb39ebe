// How `kubectl hybridjob` prints its reports: kubectl-style tables, or the
// same data as JSON or YAML (-o json|yaml) for scripts.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <hybridjob/cli/reports.h>
#include <hybridjob/common/status.h>

namespace hybridjob::cli {

enum class OutputFormat { kTable, kJson, kYaml };

// "", "json", "yaml" (and "table"); anything else is refused, naming the choices.
Result<OutputFormat> ParseOutputFormat(std::string_view text);

nlohmann::json ToJson(const JobStatusReport& report);
nlohmann::json ToJson(const QueuesReport& report);
// NodesReport (scheduler::GpuMap): scheduler::ToJson, the dashboard's shape.

// The Queue: line of `status`: the queue, and why it is that one when the
// job names none.
std::string QueueText(const JobStatusReport& report);

std::string FormatTable(const JobStatusReport& report);
std::string FormatTable(const QueuesReport& report);
std::string FormatTable(const NodesReport& report);

// JSON text (indented) or a YAML document of the same data.
std::string FormatData(const nlohmann::json& data, OutputFormat format);

template <class Report>
std::string Format(const Report& report, OutputFormat format) {
  return format == OutputFormat::kTable ? FormatTable(report) : FormatData(ToJson(report), format);
}

}  // namespace hybridjob::cli
