#include <algorithm>
#include <functional>
#include <thread>

#include <hybridjob/api/labels.h>
#include <hybridjob/cli/commands.h>
#include <hybridjob/common/mutex.h>
#include <hybridjob/controller/observed.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/resource.h>
#include <hybridjob/scheduler/core/tenancy.h>

namespace hybridjob::cli {
namespace {

using nlohmann::json;

// Every object of a list, page by page.
Result<std::vector<json>> ListAll(k8s::ApiClient& client, const k8s::Resource& resource,
                                  const std::string& namespace_name,
                                  const std::string& label_selector = "") {
  std::vector<json> items;
  k8s::ListOptions options;
  options.label_selector = label_selector;
  options.limit = 500;
  while (true) {
    Result<k8s::ObjectList> page = client.List(resource, namespace_name, options);
    if (!page.ok()) {
      std::string where =
          namespace_name.empty() ? "in all namespaces" : "in namespace " + namespace_name;
      return Status(page.status().code(), "cannot list " + resource.plural + " " + where + ": " +
                                              page.status().message());
    }
    for (json& item : page->items) {
      items.push_back(std::move(item));
    }
    if (page->continue_token.empty()) {
      return items;
    }
    options.continue_token = page->continue_token;
  }
}

// What the cluster-wide views read. Namespaces and PriorityClasses only
// refine queue and priority resolution: without them the view still stands.
Result<ClusterObjects> ReadCluster(k8s::ApiClient& client) {
  ClusterObjects objects;
  for (auto [resource, into] : {std::pair{k8s::resources::Nodes(), &objects.nodes},
                                std::pair{k8s::resources::Pods(), &objects.pods},
                                std::pair{k8s::resources::HybridJobs(), &objects.jobs}}) {
    Result<std::vector<json>> items = ListAll(client, resource, "");
    if (!items.ok()) {
      return items.status();
    }
    *into = std::move(*items);
  }
  for (auto [resource, into] :
       {std::pair{k8s::resources::Namespaces(), &objects.namespaces},
        std::pair{k8s::resources::PriorityClasses(), &objects.priority_classes}}) {
    if (Result<std::vector<json>> items = ListAll(client, resource, ""); items.ok()) {
      *into = std::move(*items);
    }
  }
  return objects;
}

std::string DefaultContainer(const json& pod) {
  const json& metadata = pod.value("metadata", json::object());
  const json annotations = metadata.value("annotations", json::object());
  if (annotations.is_object()) {
    if (auto it = annotations.find("kubectl.kubernetes.io/default-container");
        it != annotations.end() && it->is_string()) {
      return it->get<std::string>();
    }
  }
  const json spec = pod.value("spec", json::object());
  const json containers = spec.is_object() ? spec.value("containers", json::array()) : json();
  if (containers.is_array() && !containers.empty() && containers[0].is_object()) {
    return containers[0].value("name", "");
  }
  return "";
}

}  // namespace

Result<scheduler::SchedulerConfig> ReadSchedulerConfig(k8s::ApiClient& client,
                                                       const std::string& reference,
                                                       std::string* note) {
  const size_t slash = reference.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == reference.size()) {
    return InvalidArgument("--scheduler-config: want NAMESPACE/NAME of a ConfigMap, got \"" +
                           reference + "\"");
  }
  const std::string ns = reference.substr(0, slash);
  const std::string name = reference.substr(slash + 1);
  Result<json> config_map = client.Get(k8s::resources::ConfigMaps(), ns, name);
  if (!config_map.ok()) {
    if (k8s::IsNotFound(config_map.status()) || k8s::IsForbidden(config_map.status())) {
      *note = "the gang-scheduler's configuration (ConfigMap " + reference +
              ") could not be read (" + config_map.status().message() +
              "): showing the defaults, one queue `default`; see --scheduler-config";
      return scheduler::ParseSchedulerConfig("{}");
    }
    return Status(config_map.status().code(),
                  "cannot read ConfigMap " + reference + ": " + config_map.status().message());
  }
  const json data = config_map->value("data", json::object());
  if (!data.is_object() || !data.contains("config.yaml") || !data["config.yaml"].is_string()) {
    return InvalidArgument("ConfigMap " + reference + " has no data.config.yaml");
  }
  Result<scheduler::SchedulerConfig> config =
      scheduler::ParseSchedulerConfig(data["config.yaml"].get<std::string>());
  if (!config.ok()) {
    return InvalidArgument("ConfigMap " + reference + ": " + config.status().message());
  }
  return config;
}

namespace {

// The namespace's default queue ("" when it names none), or nullopt when the
// namespace cannot be read: a namespace's user may not be allowed to.
std::optional<std::string> NamespaceDefaultQueue(k8s::ApiClient& client,
                                                 const std::string& namespace_name) {
  Result<json> object = client.Get(k8s::resources::Namespaces(), "", namespace_name);
  if (!object.ok()) {
    return std::nullopt;
  }
  Result<scheduler::NamespaceInfo> info = scheduler::ParseNamespaceInfo(*object);
  if (!info.ok()) {
    return std::nullopt;
  }
  return info->default_queue;
}

// The job and its member pods (into *pods), as `status` shows them.
Result<JobStatusReport> ReadJobStatus(k8s::ApiClient& client, const std::string& job,
                                      const CommandOptions& options, std::vector<json>* pods) {
  Result<json> object = client.Get(k8s::resources::HybridJobs(), options.namespace_name, job);
  if (!object.ok()) {
    if (k8s::IsNotFound(object.status())) {
      return NotFound("no HybridJob \"" + job + "\" in namespace " + options.namespace_name);
    }
    return Status(object.status().code(), "cannot read HybridJob " + options.namespace_name + "/" +
                                              job + ": " + object.status().message());
  }
  Result<std::vector<json>> listed = ListAll(client, k8s::resources::Pods(), options.namespace_name,
                                             std::string(api::kJobNameLabel) + "=" + job);
  if (!listed.ok()) {
    return listed.status();
  }
  *pods = std::move(*listed);
  // GPUs as the scheduler's defaults count them: a per-cluster weighting
  // needs its configuration, which a namespace's user may not read.
  return BuildJobStatus(*object, *pods, scheduler::SchedulerConfig{}.gpu_resources,
                        NamespaceDefaultQueue(client, options.namespace_name),
                        options.run >= 0 ? std::optional<int64_t>(options.run) : std::nullopt);
}

}  // namespace

Result<std::string> RunStatus(k8s::ApiClient& client, const std::string& job,
                              const CommandOptions& options) {
  std::vector<json> pods;
  Result<JobStatusReport> report = ReadJobStatus(client, job, options, &pods);
  if (!report.ok()) {
    return report.status();
  }
  return Format(*report, options.format);
}

namespace {

// A cluster-wide view: the scheduler's configuration, everything listed,
// then `build` and the output format.
template <class Build>
Result<std::string> RunClusterView(k8s::ApiClient& client, const CommandOptions& options,
                                   std::string* note, Build build) {
  Result<scheduler::SchedulerConfig> config =
      ReadSchedulerConfig(client, options.scheduler_config, note);
  if (!config.ok()) {
    return config.status();
  }
  Result<ClusterObjects> objects = ReadCluster(client);
  if (!objects.ok()) {
    return objects.status();
  }
  return Format(build(*objects, *config), options.format);
}

}  // namespace

Result<std::string> RunQueues(k8s::ApiClient& client, const CommandOptions& options,
                              std::string* note) {
  return RunClusterView(client, options, note, BuildQueuesReport);
}

Result<std::string> RunNodes(k8s::ApiClient& client, const CommandOptions& options,
                             std::string* note) {
  return RunClusterView(client, options, note, BuildNodesReport);
}

Status LogsOutcome(const std::string& job, size_t asked,
                   const std::vector<MemberLogFailure>& failures) {
  if (failures.size() < asked || failures.empty()) {
    return Status::Ok();
  }
  const MemberLogFailure& first = failures.front();
  if (asked == 1) {
    return Status(first.error.code(),
                  "pod " + first.pod + " has no log to show: " + first.error.message());
  }
  return Status(first.error.code(), "none of the " + std::to_string(asked) + " members of job " +
                                        job + " has a log to show (each said why above)");
}

bool LogNotStartedYet(const Status& refusal) {
  // The API server's words for a pod without a node (a member created again
  // after the member list was read), and the kubelet's for a container that
  // has not started.
  return refusal.code() == StatusCode::kBadRequest &&
         (refusal.message().find("is waiting to start") != std::string::npos ||
          refusal.message().find("does not have a host assigned") != std::string::npos);
}

namespace {

// Writes a log as it arrives, whole lines only, each with the member's prefix.
class LinePrinter {
 public:
  explicit LinePrinter(std::string prefix) : prefix_(std::move(prefix)) {}

  void Feed(std::string_view text, std::ostream& out) {
    pending_.append(text);
    size_t start = 0;
    for (size_t end = pending_.find('\n'); end != std::string::npos;
         end = pending_.find('\n', start)) {
      out << prefix_ << std::string_view(pending_).substr(start, end - start) << "\n";
      start = end + 1;
    }
    pending_.erase(0, start);
  }
  // The last line, which had no newline.
  void Finish(std::ostream& out) {
    if (!pending_.empty()) {
      out << prefix_ << pending_ << "\n";
      pending_.clear();
    }
  }

 private:
  std::string prefix_;
  std::string pending_;
};

// A run that is neither the current one nor a finished one the status lists.
Status UnknownRun(const std::string& job, const JobStatusReport& report, int64_t run) {
  std::string runs;
  for (const EarlierRunRow& earlier : report.earlier_runs) {
    runs += (runs.empty() ? "" : ", ") + std::to_string(earlier.run);
  }
  return NotFound("job " + job + " has no run " + std::to_string(run) + ": it is at run " +
                  std::to_string(report.run) +
                  (runs.empty() ? " and was never re-run"
                                : ", and its earlier runs (the newest " +
                                      std::to_string(api::kMaxPreviousRuns) + ") are " + runs));
}

struct ChosenMember {
  const MemberRow* row;
  std::string prefix;
  std::string path;  // its log, with the query
};

// Each member's log followed at once, as `kubectl logs -f -l` does: lines
// appear as they are written, whole, until every member's log has ended. A
// member whose container has not started yet is asked again until it has,
// for up to `wait_for_start`.
void FollowLogs(k8s::ApiClient& client, const std::vector<ChosenMember>& members, std::ostream& out,
                std::chrono::milliseconds wait_for_start,
                const std::function<void(const ChosenMember&, Status)>& no_log) {
  constexpr std::chrono::milliseconds kAskAgainAfter{500};
  const auto give_up_at = std::chrono::steady_clock::now() + wait_for_start;
  Mutex out_mu;
  std::vector<Status> ended(members.size());
  {
    std::vector<std::jthread> readers;
    for (size_t i = 0; i < members.size(); ++i) {
      readers.emplace_back([&, i] {
        Result<std::unique_ptr<k8s::ByteStream>> stream = client.GetStream(members[i].path);
        while (!stream.ok() && LogNotStartedYet(stream.status()) &&
               std::chrono::steady_clock::now() + kAskAgainAfter < give_up_at) {
          std::this_thread::sleep_for(kAskAgainAfter);
          stream = client.GetStream(members[i].path);
        }
        if (!stream.ok()) {
          ended[i] = stream.status();
          return;
        }
        LinePrinter printer(members[i].prefix);
        std::string chunk;
        while (true) {
          chunk.clear();
          Result<bool> more = (*stream)->ReadSome(chunk);
          MutexLock lock(out_mu);
          if (!more.ok()) {
            printer.Finish(out);
            ended[i] = Status(more.status().code(),
                              "its log stream broke off: " + more.status().message());
            break;
          }
          printer.Feed(chunk, out);
          if (!*more) {
            printer.Finish(out);
            break;
          }
          out.flush();
        }
        out.flush();
      });
    }
  }  // every reader joined
  for (size_t i = 0; i < members.size(); ++i) {
    if (!ended[i].ok()) {
      no_log(members[i], ended[i]);
    }
  }
}

}  // namespace

Status RunLogs(k8s::ApiClient& client, const std::string& job, const CommandOptions& options,
               std::ostream& out, std::ostream& err) {
  std::vector<json> pods;
  Result<JobStatusReport> report = ReadJobStatus(client, job, options, &pods);
  if (!report.ok()) {
    return report.status();
  }
  const int64_t run = report->members_run;
  const bool earlier = run != report->run;
  if (earlier && std::none_of(report->earlier_runs.begin(), report->earlier_runs.end(),
                              [run](const EarlierRunRow& row) { return row.run == run; })) {
    return UnknownRun(job, *report, run);
  }
  std::vector<const MemberRow*> rows;
  for (const MemberRow& member : report->members) {
    if ((options.role.empty() || member.role == options.role) &&
        (options.index < 0 || member.index == options.index)) {
      rows.push_back(&member);
    }
  }
  if (rows.empty()) {
    const std::string which =
        (options.role.empty() ? "" : " of role " + options.role) +
        (options.index < 0 ? "" : " with index " + std::to_string(options.index));
    if (earlier) {
      return NotFound("run " + std::to_string(run) + " of job " + job + " has no member" + which +
                      " left: a re-run keeps the ended members of the newest " +
                      "spec.runHistoryLimit earlier runs (default 1), and cleanPodPolicy " +
                      "may have deleted them when the run ended");
    }
    return NotFound("job " + job + " has no member" + which);
  }
  std::vector<MemberLogFailure> failures;
  // Members without a log say why on stderr, as kubectl says its errors,
  // and the others go on.
  auto no_log = [&](const ChosenMember& member, Status why) {
    if (rows.size() > 1) {
      err << member.prefix << "(no log: " << why.message() << ")\n";
    }
    failures.push_back({member.row->name, std::move(why)});
  };
  std::vector<ChosenMember> chosen;
  for (const MemberRow* member : rows) {
    ChosenMember entry{member, rows.size() > 1 ? "[pod/" + member->name + "] " : "", ""};
    if (member->node.empty()) {
      // No container has run yet; the API server would answer an empty log.
      no_log(entry, Status(StatusCode::kBadRequest,
                           "it is not on a node yet" +
                               (member->waiting.empty() ? "" : " (" + member->waiting + ")")));
      continue;
    }
    std::string container = options.container;
    if (container.empty()) {
      for (const json& pod : pods) {
        if (pod["metadata"].value("name", "") == member->name) {
          container = DefaultContainer(pod);
        }
      }
    }
    entry.path = "/api/v1/namespaces/" + options.namespace_name + "/pods/" + member->name +
                 "/log?container=" + container;
    if (options.tail >= 0) {
      entry.path += "&tailLines=" + std::to_string(options.tail);
    }
    if (options.follow) {
      entry.path += "&follow=true";
    }
    chosen.push_back(std::move(entry));
  }
  if (options.follow) {
    if (static_cast<int64_t>(chosen.size()) > options.max_log_requests) {
      // As kubectl: each followed log holds a connection and a stream on a kubelet.
      return InvalidArgument("you are attempting to follow " + std::to_string(chosen.size()) +
                             " log streams, but the maximum allowed concurrency is " +
                             std::to_string(options.max_log_requests) +
                             ": use --max-log-requests to increase the limit, or --role and "
                             "--index to follow fewer members");
    }
    FollowLogs(client, chosen, out, options.pod_running_timeout, no_log);
  } else {
    for (const ChosenMember& member : chosen) {
      Result<std::string> text = client.GetRaw(member.path);
      if (!text.ok()) {
        no_log(member, text.status());
        continue;
      }
      LinePrinter printer(member.prefix);
      printer.Feed(*text, out);
      printer.Finish(out);
    }
  }
  out.flush();
  err.flush();
  return LogsOutcome(job, rows.size(), failures);
}

}  // namespace hybridjob::cli
