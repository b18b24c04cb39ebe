// Scheduling throughput on a real API server, one scheduler at a time.
//
//   bench_scheduling --kubeconfig FILE --scheduler-name NAME [--pods 10000]
//       [--group-size 10] [--gpus-per-pod 1] [--concurrency 16] [--bind-self]
//       [--via-controller | --plain-pods] [--scheduler-pid PID] [--label TEXT]
//
// Creates --pods pods in groups of --group-size (one worker role, min = max =
// group size, 1 CPU and --gpus-per-pod GPUs each) with schedulerName NAME,
// from --concurrency writers, and watches them until every pod is bound. Each
// group's HybridJob is created first, untimed, and its pods are the ones
// hybridjob-controller's planner makes for it (labels, group-spec annotation,
// owner reference, environment, hostname, cluster ConfigMap mount). With
// --bind-self the harness is the scheduler: a trivial binder that POSTs a
// binding for each pod as it appears, round-robin over the nodes,
// --concurrency at a time (the ceiling). With --via-controller it creates
// only the HybridJobs, --concurrency in flight, and hybridjob-controller
// (running beside it) creates their pods: the whole pipeline from a burst of
// submissions to every member bound.
// Prints one Markdown table row: pods/s from first create to last bind, p50
// and p99 gang latency (last member bound - first member or job created), and
// the scheduler process's CPU seconds and peak RSS when --scheduler-pid is
// given.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <variant>
#include <vector>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/time.h>
#include <hybridjob/common/flags.h>
#include <hybridjob/controller/actions.h>
#include <hybridjob/controller/observed.h>
#include <hybridjob/controller/options.h>
#include <hybridjob/controller/planner.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/rest_client.h>

#include "process_stats.h"

namespace {

namespace k8s = hybridjob::k8s;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) {
    return 0;
  }
  std::sort(values.begin(), values.end());
  const size_t index =
      std::min(values.size() - 1, static_cast<size_t>(p * (values.size() - 1) + 0.5));
  return values[index];
}

}  // namespace

int main(int argc, char** argv) {
  std::string kubeconfig;
  std::string scheduler_name = "gang-scheduler";
  std::string label = "";
  int64_t pods = 10000;
  int64_t group_size = 10;
  int64_t concurrency = 16;
  int64_t scheduler_pid = 0;
  int64_t gpus_per_pod = 1;
  bool bind_self = false;
  bool via_controller = false;
  bool created_only = false;
  bool plain_pods = false;
  int64_t trace_status = 0;
  std::string ns = "bench-" + std::to_string(::getpid());
  hybridjob::FlagSet flags("bench_scheduling");
  flags.String("kubeconfig", &kubeconfig, "kubeconfig");
  flags.String("scheduler-name", &scheduler_name, "spec.schedulerName of the pods");
  flags.String("label", &label, "name of this run in the table");
  flags.String("namespace", &ns, "namespace to create and run in (default bench-PID)");
  flags.Int("pods", &pods, "pods to create");
  flags.Int("group-size", &group_size, "pods per group");
  flags.Int("concurrency", &concurrency, "writers, and binds in flight with --bind-self");
  flags.Int("scheduler-pid", &scheduler_pid, "process to report CPU and memory of");
  flags.Int("gpus-per-pod", &gpus_per_pod, "nvidia.com/gpu of each pod (0: CPU only)");
  flags.Bool("bind-self", &bind_self, "bind the pods here (the raw bind ceiling)");
  flags.Bool("via-controller", &via_controller,
             "create only the HybridJobs (timed); hybridjob-controller creates the pods");
  flags.Bool("plain-pods", &plain_pods,
             "create small plain pods (identity labels and the group-spec annotation only), no "
             "HybridJobs: the pods a user would create for kube-scheduler");
  flags.Bool("created-only", &created_only,
             "stop the clock once the watch has seen every pod created (nothing need bind "
             "them): the create rate alone");
  flags.Int("trace-status", &trace_status,
            "with --via-controller: print on stderr each status the first N jobs were "
            "written with");
  if (auto status = flags.Parse(argc, argv); !status.ok() || flags.help_requested()) {
    std::cerr << (status.ok() ? "" : status.message() + "\n") << flags.Usage();
    return status.ok() ? 0 : 2;
  }
  if (via_controller && plain_pods) {
    std::cerr << "--via-controller and --plain-pods exclude each other\n";
    return 2;
  }
  if (via_controller && bind_self) {
    std::cerr << "--via-controller and --bind-self exclude each other\n";
    return 2;
  }
  auto config = k8s::ResolveClientConfig(kubeconfig);
  if (!config) {
    std::cerr << config.status().ToString() << "\n";
    return 1;
  }
  config->qps = 0;
  config->max_in_flight = static_cast<int>(concurrency * 2 + 8);
  auto client_result = k8s::RestClient::Create(*config);
  if (!client_result) {
    std::cerr << client_result.status().ToString() << "\n";
    return 1;
  }
  auto& client = **client_result;
  auto nodes = k8s::ListAll(client, k8s::resources::Nodes(), "", {});
  if (!nodes || nodes->items.empty()) {
    std::cerr << "no nodes\n";
    return 1;
  }
  std::vector<std::string> node_names;
  for (const auto& node : nodes->items) {
    node_names.push_back(node["metadata"]["name"]);
  }
  (void)client.Create(k8s::resources::Namespaces(), "",
                      {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", ns}}}});
  while (!client.Get(k8s::resources::ServiceAccounts(), ns, "default").ok()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }

  json resources = {{"requests", {{"cpu", "1"}, {"memory", "1Gi"}}}};
  if (gpus_per_pod > 0) {
    resources["limits"] = {{"nvidia.com/gpu", std::to_string(gpus_per_pod)}};
  }
  const int64_t groups = (pods + group_size - 1) / group_size;
  auto job_object = [&](int64_t g) {
    return json{
        {"apiVersion", hybridjob::api::kApiVersion},
        {"kind", hybridjob::api::kKind},
        {"metadata", {{"name", "g" + std::to_string(g)}}},
        {"spec",
         {{"schedulerName", scheduler_name},
          {"replicaSpecs",
           json::array({{{"name", "worker"},
                         {"minReplicas", group_size},
                         {"maxReplicas", group_size},
                         {"template",
                          {{"spec",
                            {{"terminationGracePeriodSeconds", 0},
                             {"containers", json::array({{{"name", "main"},
                                                          {"image", "trainer"},
                                                          {"resources", resources}}})}}}}}}})}}}};
  };
  // Creates every group's HybridJob from --concurrency writers; `on_created`
  // sees each job's group index and name, the time before its create, and the
  // answer. Calls for different groups may run at once.
  auto create_jobs = [&](const std::function<void(int64_t, const std::string&, Clock::time_point,
                                                  const hybridjob::Result<json>&)>& on_created) {
    std::atomic<int64_t> next_job{0};
    std::atomic<bool> served{true};  // false: the server has no HybridJob CRD
    std::vector<std::thread> job_writers;
    for (int64_t w = 0; w < concurrency; ++w) {
      job_writers.emplace_back([&] {
        for (int64_t g = next_job++; g < groups && served; g = next_job++) {
          const json job = job_object(g);
          const auto before = Clock::now();
          auto created = client.Create(k8s::resources::HybridJobs(), ns, job);
          if (!created && k8s::IsNotFound(created.status())) {
            served = false;
          }
          on_created(g, job["metadata"]["name"], before, created);
        }
      });
    }
    for (auto& writer : job_writers) {
      writer.join();
    }
  };

  // Without --via-controller, the HybridJob of each group is made before the
  // clock starts: the gang scheduler takes a pod as a member only when that
  // job controls it, and the pods created directly are the very pods
  // hybridjob-controller would create for it (its planner's first pass), so
  // every leg creates and binds the same objects. Left out when the CRD is
  // not installed (the other schedulers do not need it), or with
  // --plain-pods: then the pods are the smaller ones below.
  std::vector<json> member_pods(static_cast<size_t>(pods));
  if (!via_controller && !plain_pods) {
    // Each writer fills only its own groups' slots.
    std::atomic<int64_t> unplanned{0};
    create_jobs([&](int64_t group, const std::string& name, Clock::time_point,
                    const hybridjob::Result<json>& job) {
      if (!job) {
        return;
      }
      const auto now =
          std::chrono::time_point_cast<std::chrono::seconds>(hybridjob::api::Clock::now());
      const hybridjob::controller::Plan plan = hybridjob::controller::PlanJob(
          *job, hybridjob::controller::Observed{}, now, hybridjob::controller::PlannerOptions{});
      int64_t planned = 0;
      for (const auto& action : plan.actions) {
        const auto* create = std::get_if<hybridjob::controller::CreatePod>(&action);
        if (create == nullptr) {
          continue;
        }
        const std::string index =
            create->pod["metadata"]["labels"].value(std::string(hybridjob::api::kIndexLabel), "");
        const int64_t i = group * group_size + std::stoll(index);
        if (i < pods) {
          member_pods[static_cast<size_t>(i)] = create->pod;
          ++planned;
        }
      }
      if (planned != std::min(group_size, pods - group * group_size) && unplanned++ == 0) {
        std::cerr << "HybridJob " << name << ": the controller's planner made " << planned
                  << " member pods\n";
      }
    });
    if (unplanned > 0) {
      return 1;
    }
  }

  std::mutex mu;
  std::unordered_map<std::string, Clock::time_point> created_at;
  std::unordered_map<std::string, Clock::time_point> bound_at;
  std::atomic<int64_t> bound_count{0};
  std::atomic<int64_t> seen_count{0};  // pods the watch saw created
  Clock::time_point last_seen;         // when it saw the latest

  // Observe bindings (and, as the ceiling binder, pods to bind).
  std::atomic<bool> stop{false};
  Clock::time_point start_time = Clock::now();  // reset when the clock starts
  std::vector<std::string> to_bind;
  std::condition_variable bind_cv;
  std::string list_rv;
  if (auto initial = client.List(k8s::resources::Pods(), ns, {}); initial) {
    list_rv = initial->resource_version;
  }
  // Follows `resource` in the namespace from `from` until stopped, coming
  // back after a watch ends; `on_event` sees each event. The stream open now
  // is in `slot`, for the end to cancel.
  auto follow = [&](const k8s::Resource& resource, std::string from,
                    std::unique_ptr<k8s::WatchStream>& slot,
                    const std::function<void(const k8s::WatchEvent&)>& on_event) {
    std::string rv = std::move(from);
    while (!stop) {
      k8s::WatchOptions options;
      options.resource_version = rv;
      options.timeout = std::chrono::seconds(600);
      auto watch = client.Watch(resource, ns, options);
      if (!watch) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
      k8s::WatchStream* stream = nullptr;
      {
        std::lock_guard lock(mu);
        slot = std::move(*watch);
        stream = slot.get();
      }
      while (!stop) {
        auto event = stream->Next();
        if (!event || !event->has_value()) {
          break;
        }
        rv = (*event)->object["metadata"].value("resourceVersion", rv);
        on_event(**event);
      }
    }
  };
  std::unique_ptr<k8s::WatchStream> active_watch;
  std::thread watcher([&] {
    follow(k8s::resources::Pods(), list_rv, active_watch, [&](const k8s::WatchEvent& event) {
      const json& pod = event.object;
      const std::string name = pod["metadata"].value("name", "");
      const std::string node = pod["spec"].value("nodeName", "");
      std::lock_guard lock(mu);
      if (event.type == k8s::WatchEventType::kAdded) {
        ++seen_count;
        last_seen = Clock::now();
      }
      if (!node.empty()) {
        if (bound_at.emplace(name, Clock::now()).second) {
          ++bound_count;
        }
      } else if (bind_self && event.type == k8s::WatchEventType::kAdded) {
        to_bind.push_back(name);
        bind_cv.notify_one();
      }
    });
  });

  // With --via-controller, every status a job is written with, as its watch
  // events show it (a write that changes nothing makes no event).
  std::unordered_map<std::string, json> job_status;
  std::unordered_map<std::string, int64_t> status_writes;
  std::unique_ptr<k8s::WatchStream> job_watch;
  std::thread job_watcher;
  if (via_controller) {
    std::string jobs_rv;
    if (auto initial = client.List(k8s::resources::HybridJobs(), ns, {}); initial) {
      jobs_rv = initial->resource_version;
    }
    job_watcher = std::thread([&, jobs_rv] {
      follow(k8s::resources::HybridJobs(), jobs_rv, job_watch, [&](const k8s::WatchEvent& event) {
        const json& job = event.object;
        const std::string name = job["metadata"].value("name", "");
        const json status = job.value("status", json::object());
        std::lock_guard lock(mu);
        json& last = job_status[name];
        if (status == last || (last.is_null() && status.empty())) {
          return;
        }
        last = status;
        const int64_t writes = ++status_writes[name];
        const std::string group = name.size() > 1 ? name.substr(1) : "";
        if (trace_status > 0 && !group.empty() &&
            group.find_first_not_of("0123456789") == std::string::npos &&
            std::stoll(group) < trace_status) {
          std::fprintf(stderr, "bench_scheduling: %s status write %lld at %.2f s: %s\n",
                       name.c_str(), static_cast<long long>(writes),
                       std::chrono::duration<double>(Clock::now() - start_time).count(),
                       status.dump().c_str());
        }
      });
    });
  }

  std::vector<std::thread> binders;
  std::atomic<uint64_t> next_node{0};
  if (bind_self) {
    for (int64_t b = 0; b < concurrency; ++b) {
      binders.emplace_back([&] {
        while (true) {
          std::string name;
          {
            std::unique_lock lock(mu);
            bind_cv.wait(lock, [&] { return stop || !to_bind.empty(); });
            if (to_bind.empty()) {
              return;
            }
            name = std::move(to_bind.back());
            to_bind.pop_back();
          }
          const std::string& node = node_names[next_node++ % node_names.size()];
          (void)k8s::BindPod(client, ns, name, "", node);
        }
      });
    }
  }

  const std::string group_spec =
      json(
          {{"roles",
            json::array(
                {{{"name", "worker"}, {"min", group_size}, {"max", group_size}, {"priority", 0}}})},
           {"queue", "default"},
           {"scheduleTimeoutSeconds", 300}})
          .dump();
  std::atomic<int64_t> next_pod{0};
  const auto start = Clock::now();
  {
    std::lock_guard lock(mu);
    start_time = start;
  }
  std::atomic<int64_t> refused{0};
  if (via_controller) {
    create_jobs([&](int64_t, const std::string& name, Clock::time_point before,
                    const hybridjob::Result<json>& job) {
      if (!job) {
        if (refused++ == 0) {
          std::cerr << "creating HybridJob " << name << ": " << job.status().ToString() << "\n";
        }
        return;
      }
      std::lock_guard lock(mu);
      created_at[name] = before;
    });
  }
  std::vector<std::thread> writers;
  for (int64_t w = 0; w < concurrency && !via_controller; ++w) {
    writers.emplace_back([&] {
      for (int64_t i = next_pod++; i < pods; i = next_pod++) {
        const int64_t group = i / group_size;
        const int64_t index = i % group_size;
        const std::string job = "g" + std::to_string(group);
        const std::string name = job + "-worker-" + std::to_string(index);
        // The controller's pod when its job exists; each slot is taken once.
        json pod = std::move(member_pods[static_cast<size_t>(i)]);
        if (pod.is_null()) {
          pod = {{"apiVersion", "v1"},
                 {"kind", "Pod"},
                 {"metadata",
                  {{"name", name},
                   {"labels",
                    {{std::string(hybridjob::api::kJobNameLabel), job},
                     {std::string(hybridjob::api::kRoleLabel), "worker"},
                     {std::string(hybridjob::api::kIndexLabel), std::to_string(index)}}},
                   {"annotations",
                    {{std::string(hybridjob::api::kGroupSpecAnnotation), group_spec}}}}},
                 {"spec",
                  {{"schedulerName", scheduler_name},
                   {"terminationGracePeriodSeconds", 0},
                   {"containers",
                    json::array(
                        {{{"name", "main"}, {"image", "trainer"}, {"resources", resources}}})}}}};
        }
        const auto before = Clock::now();
        auto created = client.Create(k8s::resources::Pods(), ns, pod);
        if (created) {
          std::lock_guard lock(mu);
          created_at[name] = before;
        }
      }
    });
  }
  for (auto& writer : writers) {
    writer.join();
  }
  const auto created_all = Clock::now();
  const auto deadline = created_all + std::chrono::minutes(10);
  // Progress on stderr every 5 s: where the time goes (pods created against
  // pods bound).
  auto next_report = start + std::chrono::seconds(5);
  auto done = [&] { return (created_only ? seen_count.load() : bound_count.load()) >= pods; };
  while (!done() && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (Clock::now() >= next_report) {
      std::fprintf(stderr, "bench_scheduling: %3.0f s: %lld pods created, %lld bound\n",
                   std::chrono::duration<double>(Clock::now() - start).count(),
                   static_cast<long long>(seen_count.load()),
                   static_cast<long long>(bound_count.load()));
      next_report += std::chrono::seconds(5);
    }
  }
  if (via_controller) {
    // The status write that follows the last binding (Scheduled) is counted.
    std::this_thread::sleep_for(std::chrono::seconds(3));
  }
  stop = true;
  bind_cv.notify_all();
  {
    std::lock_guard lock(mu);
    if (active_watch) {
      active_watch->Cancel();
    }
    if (job_watch) {
      job_watch->Cancel();
    }
  }
  watcher.join();
  if (job_watcher.joinable()) {
    job_watcher.join();
  }
  if (via_controller) {
    std::lock_guard lock(mu);
    int64_t writes = 0;
    for (const auto& [job, count] : status_writes) {
      writes += count;
    }
    std::fprintf(stderr,
                 "bench_scheduling: %lld job status writes, %.2f per job (until 3 s after the "
                 "last member was bound)\n",
                 static_cast<long long>(writes),
                 static_cast<double>(writes) / static_cast<double>(std::max<int64_t>(groups, 1)));
  }
  for (auto& binder : binders) {
    binder.join();
  }

  Clock::time_point last_bind = start;
  std::vector<double> gang_latencies;
  {
    std::lock_guard lock(mu);
    std::map<std::string, std::pair<Clock::time_point, Clock::time_point>> per_group;
    for (const auto& [name, bound] : bound_at) {
      last_bind = std::max(last_bind, bound);
      const std::string job = name.substr(0, name.find("-worker-"));
      auto created = created_at.find(name);  // the pod, or with --via-controller its job
      if (created == created_at.end()) {
        created = created_at.find(job);
      }
      if (created == created_at.end()) {
        continue;
      }
      auto [it, inserted] = per_group.try_emplace(job, created->second, bound);
      if (!inserted) {
        it->second.first = std::min(it->second.first, created->second);
        it->second.second = std::max(it->second.second, bound);
      }
    }
    for (const auto& [job, times] : per_group) {
      gang_latencies.push_back(std::chrono::duration<double>(times.second - times.first).count());
    }
  }
  const double seconds = std::chrono::duration<double>(last_bind - start).count();
  const double create_seconds = std::chrono::duration<double>(created_all - start).count();
  // The measured process's CPU seconds and peak RSS, "-" without one.
  std::string cpu = "-";
  std::string rss = "-";
  if (scheduler_pid > 0) {
    cpu = std::to_string(hybridjob::testing::ProcessCpuSeconds(static_cast<pid_t>(scheduler_pid)))
              .substr(0, 5);
    rss = std::to_string(static_cast<int>(
              hybridjob::testing::ProcessMemoryMiB(static_cast<pid_t>(scheduler_pid), "VmHWM"))) +
          " MiB";
  }
  const char* name = label.empty() ? scheduler_name.c_str() : label.c_str();
  if (created_only) {
    // | run | pods created | seconds | pods created/s | CPU s | peak RSS |, from the first
    // create to the watch seeing the last pod.
    std::lock_guard lock(mu);
    const double seen_seconds = std::chrono::duration<double>(last_seen - start).count();
    std::printf("| %s | %lld/%lld | %.1f | %.0f | %s | %s |\n", name,
                static_cast<long long>(seen_count.load()), static_cast<long long>(pods),
                seen_seconds, seen_count.load() / std::max(seen_seconds, 1e-9), cpu.c_str(),
                rss.c_str());
    return seen_count.load() == pods && refused.load() == 0 ? 0 : 1;
  }
  std::printf("| %s | %lld/%lld | %lld x %lld | %.0f | %.0f | %.2f | %.2f | %s | %s |\n", name,
              static_cast<long long>(bound_count.load()), static_cast<long long>(pods),
              static_cast<long long>(groups), static_cast<long long>(group_size),
              pods / create_seconds, bound_count.load() / seconds, Percentile(gang_latencies, 0.5),
              Percentile(gang_latencies, 0.99), cpu.c_str(), rss.c_str());
  return bound_count.load() == pods && refused.load() == 0 ? 0 : 1;
}
