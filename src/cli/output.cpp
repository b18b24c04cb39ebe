#include <algorithm>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include <hybridjob/cli/output.h>
#include <hybridjob/common/strings.h>
#include <hybridjob/scheduler/core/attained_service.h>

namespace hybridjob::cli {
namespace {

using nlohmann::json;
using scheduler::FormatMilliGpus;
using scheduler::ResourceList;

// Columns padded to their widest cell, three spaces apart, as kubectl prints.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render(const std::string& indent = "") const {
    std::vector<size_t> widths;
    for (const auto& row : rows_) {
      widths.resize(std::max(widths.size(), row.size()), 0);
      for (size_t i = 0; i < row.size(); ++i) {
        widths[i] = std::max(widths[i], row[i].size());
      }
    }
    std::string out;
    for (const auto& row : rows_) {
      std::string line = indent;
      for (size_t i = 0; i < row.size(); ++i) {
        line += row[i];
        if (i + 1 < row.size()) {
          line += std::string(widths[i] - row[i].size() + 3, ' ');
        }
      }
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

// "cpu=4 memory=16Gi nvidia.com/gpu=8": the pods count left out; "-" for none.
std::string Resources(ResourceList list) {
  list.pods = 0;
  const std::string text = list.ToString();
  return text.empty() ? "-" : text;
}

std::string Dash(const std::string& text) {
  return text.empty() ? "-" : text;
}

std::string Weight(double weight) {
  std::ostringstream out;
  out << weight;
  return out.str();
}

// "rack" for example.com/rack: a level's column header.
std::string LevelHeader(const std::string& key) {
  const size_t slash = key.rfind('/');
  std::string name = slash == std::string::npos ? key : key.substr(slash + 1);
  std::transform(name.begin(), name.end(), name.begin(), ::toupper);
  return name;
}

void EmitYaml(YAML::Emitter& out, const json& value) {
  if (value.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [key, item] : value.items()) {
      out << YAML::Key << key << YAML::Value;
      EmitYaml(out, item);
    }
    out << YAML::EndMap;
  } else if (value.is_array()) {
    out << YAML::BeginSeq;
    for (const json& item : value) {
      EmitYaml(out, item);
    }
    out << YAML::EndSeq;
  } else if (value.is_string()) {
    out << YAML::DoubleQuoted << value.get<std::string>();
  } else if (value.is_null()) {
    out << YAML::Null;
  } else {
    out << value.dump();
  }
}

}  // namespace

Result<OutputFormat> ParseOutputFormat(std::string_view text) {
  if (text.empty() || text == "table") {
    return OutputFormat::kTable;
  }
  if (text == "json") {
    return OutputFormat::kJson;
  }
  if (text == "yaml") {
    return OutputFormat::kYaml;
  }
  return InvalidArgument("--output: unknown format \"" + std::string(text) +
                         "\"; use json or yaml (or leave it out for a table)");
}

std::string FormatData(const json& data, OutputFormat format) {
  if (format == OutputFormat::kYaml) {
    YAML::Emitter out;
    EmitYaml(out, data);
    return std::string(out.c_str()) + "\n";
  }
  return data.dump(2) + "\n";
}

json ToJson(const JobStatusReport& report) {
  json out = {{"name", report.name},
              {"namespace", report.namespace_name},
              {"phase", report.phase},
              {"readyMembers", report.ready},
              {"run", report.run},
              {"restarts", report.restarts},
              {"gpus", FormatMilliGpus(report.milli_gpus)},
              {"gpusOnNodes", FormatMilliGpus(report.bound_milli_gpus)},
              {"roles", json::array()},
              {"members", json::array()}};
  if (!report.queue.empty()) {
    out["queue"] = {{"name", report.queue}, {"source", QueueOriginName(report.queue_origin)}};
    if (report.position > 0) {
      out["queue"]["position"] = report.position;
    }
  }
  if (!report.reason.empty()) {
    out["waiting"] = {{"reason", report.reason}, {"message", report.message}};
  }
  if (!report.placement.empty()) {
    out["placement"] = report.placement;
  }
  if (report.attained_service) {
    out["attainedService"] = {{"gpuSeconds", report.attained_service->gpu_seconds},
                              {"level", report.attained_service->level},
                              {"queue", report.attained_service->queue}};
  }
  for (const RoleRow& role : report.roles) {
    out["roles"].push_back({{"name", role.name},
                            {"minReplicas", role.min_replicas},
                            {"maxReplicas", role.max_replicas},
                            {"members", role.members},
                            {"active", role.active},
                            {"succeeded", role.succeeded},
                            {"failed", role.failed},
                            {"restarts", role.restarts}});
  }
  for (const MemberRow& member : report.members) {
    json row = {{"name", member.name},
                {"role", member.role},
                {"index", member.index},
                {"phase", member.phase},
                {"gpus", FormatMilliGpus(member.milli_gpus)},
                {"restarts", member.restarts}};
    if (!member.node.empty()) {
      row["node"] = member.node;
    }
    if (!member.waiting.empty()) {
      row["waiting"] = member.waiting;
    }
    out["members"].push_back(std::move(row));
  }
  if (report.members_run != report.run) {
    out["membersRun"] = report.members_run;
  }
  if (!report.earlier_runs.empty()) {
    out["earlierRuns"] = json::array();
    for (const EarlierRunRow& earlier : report.earlier_runs) {
      out["earlierRuns"].push_back({{"run", earlier.run},
                                    {"phase", earlier.phase},
                                    {"reason", earlier.reason},
                                    {"completionTime", earlier.completion_time},
                                    {"keptMembers", earlier.kept_members}});
    }
  }
  return out;
}

std::string QueueText(const JobStatusReport& report) {
  const std::string& name = report.queue;
  const std::string& ns = report.namespace_name;
  switch (report.queue_origin) {
    case QueueOrigin::kStanding:
      return Dash(name) +
             (report.position > 0 ? " (position " + std::to_string(report.position) + ")" : "");
    case QueueOrigin::kJob:
      return Dash(name);
    case QueueOrigin::kNamespaceDefault:
      return name + " (no spec.queue: the default queue of namespace " + ns + ")";
    case QueueOrigin::kDefault:
      return name + " (no spec.queue)";
    case QueueOrigin::kDefaultUnlessNamespace:
      return name + " (no spec.queue; unless namespace " + ns +
             " names a default queue: it could not be read)";
  }
  return Dash(name);
}

std::string FormatTable(const JobStatusReport& report) {
  const std::string queue = QueueText(report);
  Table head({"Name:", report.name});
  head.Add({"Namespace:", report.namespace_name});
  head.Add({"Phase:", Dash(report.phase)});
  head.Add({"Ready:", Dash(report.ready)});
  head.Add({"Queue:", queue});
  if (!report.reason.empty()) {
    head.Add({"Waiting:", report.reason + (report.message.empty() ? "" : ": " + report.message)});
  }
  if (!report.placement.empty()) {
    head.Add({"Placement:", report.placement});
  }
  head.Add({"GPUs:", FormatMilliGpus(report.bound_milli_gpus) + " on nodes, of " +
                         FormatMilliGpus(report.milli_gpus) + " asked"});
  head.Add({"Restarts:", std::to_string(report.restarts)});
  if (report.attained_service) {
    const api::AttainedService& service = *report.attained_service;
    head.Add({"Attained:",
              scheduler::FormatService(static_cast<double>(service.gpu_seconds)) + " (level " +
                  std::to_string(service.level) + " of queue " + Dash(service.queue) + ")"});
  }
  if (report.run != 0) {
    head.Add({"Run:", std::to_string(report.run)});
  }
  Table roles({"ROLE", "MIN", "MAX", "MEMBERS", "ACTIVE", "SUCCEEDED", "FAILED", "RESTARTS"});
  for (const RoleRow& role : report.roles) {
    roles.Add({role.name, std::to_string(role.min_replicas), std::to_string(role.max_replicas),
               std::to_string(role.members), std::to_string(role.active),
               std::to_string(role.succeeded), std::to_string(role.failed),
               std::to_string(role.restarts)});
  }
  std::string out = head.Render() + "\n" + roles.Render();
  if (!report.members.empty()) {
    Table members({"MEMBER", "ROLE", "INDEX", "PHASE", "NODE", "GPUS", "RESTARTS", "WAITING"});
    for (const MemberRow& member : report.members) {
      members.Add({member.name, member.role, std::to_string(member.index), member.phase,
                   Dash(member.node), FormatMilliGpus(member.milli_gpus),
                   std::to_string(member.restarts), Dash(member.waiting)});
    }
    out += "\n" + members.Render();
  }
  if (!report.earlier_runs.empty()) {
    // Where `kubectl hybridjob logs --run N` has something to show.
    Table runs({"RUN", "ENDED", "REASON", "COMPLETED", "KEPT MEMBERS"});
    for (const EarlierRunRow& earlier : report.earlier_runs) {
      runs.Add({std::to_string(earlier.run), earlier.phase, Dash(earlier.reason),
                Dash(earlier.completion_time), std::to_string(earlier.kept_members)});
    }
    out += "\nEarlier runs:\n" + runs.Render("  ");
  }
  return out;
}

json ToJson(const QueuesReport& report) {
  json out = {{"capacity", scheduler::ResourcesJson(report.capacity)}, {"queues", json::array()}};
  for (const QueueRow& queue : report.queues) {
    out["queues"].push_back(scheduler::ToJson(queue, report.gpus));
  }
  return out;
}

std::string FormatTable(const QueuesReport& report) {
  Table table(
      {"QUEUE", "PARENT", "WEIGHT", "ORDER", "GUARANTEED", "USED", "FAIR SHARE", "MAX", "WAITING"});
  const bool gpus = report.gpus.MilliGpus(report.capacity) > 0;
  for (const QueueRow& queue : report.queues) {
    // The share in GPUs on a GPU cluster, else of the cluster.
    const std::string fair =
        gpus ? scheduler::FormatGpuCount(queue.fair_milli_gpus)
             : std::to_string(static_cast<int>(std::lround(queue.fair_share * 100))) + "%";
    table.Add({queue.name + (queue.configured ? "" : " (not configured)"), Dash(queue.parent),
               Weight(queue.weight), queue.leaf ? Dash(queue.order) : "-",
               Resources(queue.guaranteed), Resources(queue.used), fair, queue.max.ToString(),
               std::to_string(queue.waiting.size())});
  }
  std::string out = table.Render();
  for (const QueueRow& queue : report.queues) {
    if (queue.waiting.empty()) {
      continue;
    }
    Table waiting({"POSITION", "JOB", "REASON"});
    for (const WaitingJob& job : queue.waiting) {
      waiting.Add({job.position > 0 ? std::to_string(job.position) : "-",
                   job.namespace_name + "/" + job.name, Dash(job.reason)});
    }
    out += "\nWaiting in " + queue.name + ":\n" + waiting.Render("  ");
  }
  for (const QueueRow& queue : report.queues) {
    if (queue.served.empty()) {
      continue;
    }
    Table served({"LEVEL", "JOB", "ATTAINED SERVICE"});
    for (const scheduler::ServedJob& job : queue.served) {
      served.Add({std::to_string(job.level), job.namespace_name + "/" + job.name,
                  scheduler::FormatService(static_cast<double>(job.gpu_seconds))});
    }
    out += "\nAttained service in " + queue.name + " (least served first):\n" +
           served.Render("  ");
  }
  return out;
}

std::string FormatTable(const NodesReport& report) {
  std::vector<std::string> header = {"NODE"};
  for (const std::string& level : report.levels) {
    header.push_back(LevelHeader(level));
  }
  for (const char* column : {"GPUS", "USED", "FREE", "STATUS", "JOBS"}) {
    header.emplace_back(column);
  }
  Table nodes(header);
  for (const scheduler::NodeView& node : report.nodes) {
    std::vector<std::string> row = {node.name};
    for (const std::string& domain : node.domains) {
      row.push_back(Dash(domain));
    }
    std::string jobs;
    for (const scheduler::GpuHolder& holder : node.holders) {
      jobs += (jobs.empty() ? "" : ",") + holder.job + ":" + FormatMilliGpus(holder.milli_gpus);
    }
    std::string status = node.ready ? "Ready" : "NotReady";
    if (!node.schedulable) {
      status += ",SchedulingDisabled";
    }
    row.push_back(FormatMilliGpus(node.milli_gpus));
    row.push_back(FormatMilliGpus(node.used_milli_gpus));
    row.push_back(FormatMilliGpus(std::max<int64_t>(node.milli_gpus - node.used_milli_gpus, 0)));
    row.push_back(status);
    row.push_back(Dash(jobs));
    nodes.Add(std::move(row));
  }
  std::string out = nodes.Render();
  if (!report.domains.empty()) {
    Table domains({"LEVEL", "DOMAIN", "NODES", "GPUS", "USED", "FREE", "LARGEST FREE"});
    for (const scheduler::DomainView& domain : report.domains) {
      domains.Add(
          {domain.level, domain.value, std::to_string(domain.nodes),
           FormatMilliGpus(domain.milli_gpus), FormatMilliGpus(domain.used_milli_gpus),
           FormatMilliGpus(std::max<int64_t>(domain.milli_gpus - domain.used_milli_gpus, 0)),
           FormatMilliGpus(domain.largest_free)});
    }
    out += "\n" + domains.Render();
  }
  const int64_t free = std::max<int64_t>(report.milli_gpus - report.used_milli_gpus, 0);
  out += "\nGPUs: " + FormatMilliGpus(report.milli_gpus) + ", " +
         FormatMilliGpus(report.used_milli_gpus) + " used, " + FormatMilliGpus(free) + " free (" +
         FormatMilliGpus(report.fragmented_free) +
         " of them on nodes in use; the most on one node: " + FormatMilliGpus(report.largest_free) +
         ")\n";
  return out;
}

}  // namespace hybridjob::cli
