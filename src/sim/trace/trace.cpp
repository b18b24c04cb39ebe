#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>

#include <nlohmann/json.hpp>

#include <hybridjob/api/names.h>
#include <hybridjob/common/strings.h>
#include <hybridjob/sim/trace/trace.h>

#include "csv_fields.h"

namespace hybridjob::sim::trace {
namespace {

constexpr std::string_view kCsvHeader = "id,submit_s,queue,roles,work_gpu_s,duration_s";
constexpr std::string_view kCsvHeaderWithPlacement =
    "id,submit_s,queue,roles,work_gpu_s,duration_s,topology,gpu_model";

Result<api::TopologySpec> MakeTopology(std::string_view level, std::string_view mode) {
  if (mode != "Required" && mode != "Preferred") {
    return InvalidArgument("topology: mode \"" + std::string(mode) +
                           "\" is not Required or Preferred");
  }
  return api::TopologySpec{std::string(level), mode == "Required" ? api::TopologyMode::kRequired
                                                                  : api::TopologyMode::kPreferred};
}

// "example.com/rack" (Required) or "example.com/rack:Preferred".
Result<std::optional<api::TopologySpec>> ParseTopologyField(std::string_view text) {
  if (text.empty()) {
    return std::optional<api::TopologySpec>{};
  }
  const size_t colon = text.rfind(':');
  Result<api::TopologySpec> topology = MakeTopology(
      text.substr(0, colon), colon == std::string_view::npos ? "Required" : text.substr(colon + 1));
  if (!topology.ok()) {
    return topology.status();
  }
  return std::optional<api::TopologySpec>(std::move(*topology));
}

// "worker:2:8:1;ps:1:1:0"
Result<std::vector<TraceRole>> ParseRoles(std::string_view text) {
  std::vector<TraceRole> roles;
  if (text.empty()) {
    return InvalidArgument("roles: empty; expected name:min:max:gpus[;...]");
  }
  for (std::string_view item : SplitTrimmed(text, ';')) {
    std::vector<std::string_view> parts = SplitTrimmed(item, ':');
    if (parts.size() != 4) {
      return InvalidArgument("roles: \"" + std::string(item) + "\" is not name:min:max:gpus");
    }
    TraceRole role;
    role.name = std::string(parts[0]);
    auto min = ParseCount("roles: min", parts[1]);
    auto max = ParseCount("roles: max", parts[2]);
    auto gpus = ParseCount("roles: gpus", parts[3]);
    for (const Status* status : {&min.status(), &max.status(), &gpus.status()}) {
      if (!status->ok()) {
        return *status;
      }
    }
    role.min_replicas = *min;
    role.max_replicas = *max;
    role.gpus_per_member = *gpus;
    roles.push_back(std::move(role));
  }
  return roles;
}

// Work from exactly one of work (GPU-seconds) and duration (seconds at max).
Status SetWork(TraceJob& job, std::optional<double> work, std::optional<double> duration) {
  if (work.has_value() == duration.has_value()) {
    return InvalidArgument("exactly one of work and duration must be given");
  }
  if (work.has_value()) {
    job.work_gpu_seconds = *work;
  } else {
    if (!(*duration > 0)) {
      return InvalidArgument("duration: must be positive");
    }
    job.work_gpu_seconds = *duration * static_cast<double>(job.MaxGpus());
  }
  return Status::Ok();
}

}  // namespace

int64_t TraceJob::MaxGpus() const {
  int64_t total = 0;
  for (const TraceRole& role : roles) {
    total += static_cast<int64_t>(role.max_replicas) * role.gpus_per_member;
  }
  return total;
}

int64_t TraceJob::MinGpus() const {
  int64_t total = 0;
  for (const TraceRole& role : roles) {
    total += static_cast<int64_t>(role.min_replicas) * role.gpus_per_member;
  }
  return total;
}

double TraceJob::DurationAtMax() const {
  int64_t gpus = MaxGpus();
  return gpus > 0 ? work_gpu_seconds / static_cast<double>(gpus) : 0;
}

Status ValidateJob(const TraceJob& job) {
  if (job.id.empty()) {
    return InvalidArgument("id: must not be empty");
  }
  if (!(job.submit_seconds >= 0) || !std::isfinite(job.submit_seconds)) {
    return InvalidArgument("submit: must be a finite number >= 0");
  }
  if (job.queue.empty()) {
    return InvalidArgument("queue: must not be empty");
  }
  if (job.roles.empty()) {
    return InvalidArgument("roles: at least one role is needed");
  }
  std::set<std::string> names;
  for (const TraceRole& role : job.roles) {
    if (role.name.empty()) {
      return InvalidArgument("roles: a role needs a name");
    }
    if (!names.insert(role.name).second) {
      return InvalidArgument("roles: duplicate role \"" + role.name + "\"");
    }
    if (role.min_replicas < 0 || role.max_replicas < 1 || role.min_replicas > role.max_replicas) {
      return InvalidArgument("roles: " + role.name + ": need 0 <= min <= max and max >= 1");
    }
    if (role.gpus_per_member < 0) {
      return InvalidArgument("roles: " + role.name + ": gpus must not be negative");
    }
  }
  if (job.MaxGpus() <= 0) {
    return InvalidArgument("roles: the job needs at least one GPU at its maximum");
  }
  if (job.MinGpus() <= 0) {
    return InvalidArgument("roles: the job needs at least one GPU at its minimum");
  }
  if (!(job.work_gpu_seconds > 0) || !std::isfinite(job.work_gpu_seconds)) {
    return InvalidArgument("work: must be positive");
  }
  if (job.topology.has_value()) {
    if (!api::IsQualifiedName(job.topology->level)) {
      return InvalidArgument("topology: level \"" + job.topology->level + "\" is not a label key");
    }
    if (job.topology->mode == api::TopologyMode::kNone) {
      return InvalidArgument("topology: mode must be Required or Preferred");
    }
  }
  if (!job.gpu_model.empty() && !api::IsQualifiedNamePart(job.gpu_model)) {
    return InvalidArgument("gpu_model: \"" + job.gpu_model + "\" is not a label value");
  }
  return Status::Ok();
}

Result<std::vector<TraceJob>> ParseTraceCsv(std::string_view text) {
  std::vector<TraceJob> jobs;
  Status read = ForEachCsvRecord(text, {kCsvHeader, kCsvHeaderWithPlacement}, "trace",
                                 [&](const std::vector<std::string_view>& fields) -> Status {
                                   TraceJob job;
                                   job.id = std::string(fields[0]);
                                   auto submit = ParseNumber("submit_s", fields[1]);
                                   if (!submit.ok()) {
                                     return submit.status();
                                   }
                                   job.submit_seconds = *submit;
                                   job.queue =
                                       fields[2].empty() ? "default" : std::string(fields[2]);
                                   auto roles = ParseRoles(fields[3]);
                                   if (!roles.ok()) {
                                     return roles.status();
                                   }
                                   job.roles = std::move(*roles);
                                   std::optional<double> work;
                                   std::optional<double> duration;
                                   if (!fields[4].empty()) {
                                     auto value = ParseNumber("work_gpu_s", fields[4]);
                                     if (!value.ok()) {
                                       return value.status();
                                     }
                                     work = *value;
                                   }
                                   if (!fields[5].empty()) {
                                     auto value = ParseNumber("duration_s", fields[5]);
                                     if (!value.ok()) {
                                       return value.status();
                                     }
                                     duration = *value;
                                   }
                                   if (Status status = SetWork(job, work, duration); !status.ok()) {
                                     return status;
                                   }
                                   if (fields.size() > 6) {
                                     auto topology = ParseTopologyField(fields[6]);
                                     if (!topology.ok()) {
                                       return topology.status();
                                     }
                                     job.topology = std::move(*topology);
                                     job.gpu_model = std::string(fields[7]);
                                   }
                                   if (Status status = ValidateJob(job); !status.ok()) {
                                     return status;
                                   }
                                   jobs.push_back(std::move(job));
                                   return Status::Ok();
                                 });
  if (!read.ok()) {
    return read;
  }
  return jobs;
}

Result<std::vector<TraceJob>> ParseTraceJsonLines(std::string_view text) {
  std::vector<TraceJob> jobs;
  size_t line_number = 0;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) {
      end = text.size();
    }
    std::string_view line = text.substr(begin, end - begin);
    begin = end + 1;
    ++line_number;
    if (SkippedLine(line)) {
      continue;
    }
    nlohmann::json object = nlohmann::json::parse(line, nullptr, false);
    if (object.is_discarded() || !object.is_object()) {
      return AtLine(line_number, InvalidArgument("not a JSON object"));
    }
    TraceJob job;
    std::optional<double> work;
    std::optional<double> duration;
    for (const auto& [key, value] : object.items()) {
      if (key == "id") {
        if (!value.is_string()) {
          return AtLine(line_number, InvalidArgument("id: must be a string"));
        }
        job.id = value.get<std::string>();
      } else if (key == "submit" || key == "work" || key == "duration") {
        if (!value.is_number()) {
          return AtLine(line_number, InvalidArgument(key + ": must be a number"));
        }
        double number = value.get<double>();
        if (key == "submit") {
          job.submit_seconds = number;
        } else if (key == "work") {
          work = number;
        } else {
          duration = number;
        }
      } else if (key == "queue" || key == "gpuModel") {
        if (!value.is_string()) {
          return AtLine(line_number, InvalidArgument(key + ": must be a string"));
        }
        (key == "queue" ? job.queue : job.gpu_model) = value.get<std::string>();
      } else if (key == "topology") {
        if (!value.is_object() || !value.contains("level") || !value["level"].is_string() ||
            (value.contains("mode") && !value["mode"].is_string()) ||
            value.size() != (value.contains("mode") ? 2u : 1u)) {
          return AtLine(line_number, InvalidArgument("topology: must be {\"level\": <label key>, "
                                                     "\"mode\": Required|Preferred}"));
        }
        auto topology = MakeTopology(value["level"].get<std::string>(),
                                     value.value("mode", std::string("Required")));
        if (!topology.ok()) {
          return AtLine(line_number, topology.status());
        }
        job.topology = std::move(*topology);
      } else if (key == "roles") {
        if (!value.is_array()) {
          return AtLine(line_number, InvalidArgument("roles: must be an array"));
        }
        for (const nlohmann::json& item : value) {
          if (!item.is_object()) {
            return AtLine(line_number, InvalidArgument("roles: every role must be an object"));
          }
          TraceRole role;
          for (const auto& [field, field_value] : item.items()) {
            if (field == "name" && field_value.is_string()) {
              role.name = field_value.get<std::string>();
            } else if ((field == "min" || field == "max" || field == "gpus") &&
                       field_value.is_number_integer()) {
              int64_t number = field_value.get<int64_t>();
              if (number < 0 || number > 1'000'000) {
                return AtLine(line_number, InvalidArgument("roles: " + field + ": out of range"));
              }
              int32_t& target = field == "min"   ? role.min_replicas
                                : field == "max" ? role.max_replicas
                                                 : role.gpus_per_member;
              target = static_cast<int32_t>(number);
            } else {
              return AtLine(line_number,
                            InvalidArgument("roles: unknown field or bad value: " + field));
            }
          }
          job.roles.push_back(std::move(role));
        }
      } else {
        return AtLine(line_number, InvalidArgument("unknown field \"" + key + "\""));
      }
    }
    if (Status status = SetWork(job, work, duration); !status.ok()) {
      return AtLine(line_number, status);
    }
    if (Status status = ValidateJob(job); !status.ok()) {
      return AtLine(line_number, status);
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<std::vector<TraceJob>> ParseTrace(std::string_view text) {
  bool json_lines = false;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = std::min(text.find('\n', begin), text.size());
    std::string_view line = Trim(text.substr(begin, end - begin));
    begin = end + 1;
    if (!SkippedLine(line)) {
      json_lines = line.front() == '{';
      break;
    }
  }
  auto jobs = json_lines ? ParseTraceJsonLines(text) : ParseTraceCsv(text);
  if (!jobs.ok()) {
    return jobs;
  }
  std::set<std::string> ids;
  for (const TraceJob& job : *jobs) {
    if (!ids.insert(job.id).second) {
      return InvalidArgument("duplicate job id \"" + job.id + "\"");
    }
  }
  std::stable_sort(jobs->begin(), jobs->end(), [](const TraceJob& a, const TraceJob& b) {
    return a.submit_seconds < b.submit_seconds;
  });
  return jobs;
}

std::string FormatTraceCsv(const std::vector<TraceJob>& jobs) {
  const bool placement = std::any_of(jobs.begin(), jobs.end(), [](const TraceJob& job) {
    return job.topology.has_value() || !job.gpu_model.empty();
  });
  std::string out = std::string(placement ? kCsvHeaderWithPlacement : kCsvHeader) + "\n";
  char number[64];
  for (const TraceJob& job : jobs) {
    out += job.id + ",";
    std::snprintf(number, sizeof(number), "%.3f", job.submit_seconds);
    out += number;
    out += "," + job.queue + ",";
    for (size_t r = 0; r < job.roles.size(); ++r) {
      const TraceRole& role = job.roles[r];
      out += (r == 0 ? "" : ";") + role.name + ":" + std::to_string(role.min_replicas) + ":" +
             std::to_string(role.max_replicas) + ":" + std::to_string(role.gpus_per_member);
    }
    std::snprintf(number, sizeof(number), "%.3f", job.work_gpu_seconds);
    out += ",";
    out += number;
    out += ",";
    if (placement) {
      out += ",";
      if (job.topology.has_value()) {
        out += job.topology->level + ":" +
               (job.topology->mode == api::TopologyMode::kPreferred ? "Preferred" : "Required");
      }
      out += "," + job.gpu_model;
    }
    out += "\n";
  }
  return out;
}

}  // namespace hybridjob::sim::trace
