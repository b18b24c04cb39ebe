#include "recovery_support.h"

#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/k8s/api_status.h>

namespace hybridjob::testing {
namespace {

using nlohmann::json;

int64_t Gpus(const json& container, const char* kind) {
  if (!container.contains("resources") || !container["resources"].contains(kind)) {
    return 0;
  }
  const json& values = container["resources"][kind];
  if (!values.contains("nvidia.com/gpu")) {
    return 0;
  }
  const json& value = values["nvidia.com/gpu"];
  return value.is_string() ? std::stoll(value.get<std::string>()) : value.get<int64_t>();
}

int64_t PodGpus(const json& pod) {
  int64_t total = 0;
  for (const auto& container : pod["spec"]["containers"]) {
    const int64_t requests = Gpus(container, "requests");
    total += requests > 0 ? requests : Gpus(container, "limits");
  }
  return total;
}

std::string Label(const json& object, std::string_view key) {
  const json& labels = object["metadata"].value("labels", json::object());
  return labels.value(std::string(key), "");
}

}  // namespace

json WorkerJob(const std::string& name, const WorkerJobSpec& spec) {
  json container = {{"name", "main"}, {"image", "trainer:latest"}};
  if (spec.gpus > 0) {
    container["resources"] = {{"limits", {{"nvidia.com/gpu", spec.gpus}}}};
  }
  json role = {
      {"name", "worker"},
      {"minReplicas", spec.workers},
      {"maxReplicas", spec.workers},
      {"restartPolicy", spec.restart_policy},
      {"template",
       {{"metadata",
         {{"annotations",
           {{"sim.hybridjob.io/duration", spec.duration}, {"sim.hybridjob.io/exit-code", "0"}}}}},
        {"spec", {{"containers", json::array({container})}}}}}};
  json job = {{"apiVersion", std::string(api::kApiVersion)},
              {"kind", std::string(api::kKind)},
              {"metadata", {{"name", name}}},
              {"spec", {{"framework", "generic"}, {"replicaSpecs", json::array({role})}}}};
  if (spec.with_volume) {
    job["spec"]["volumes"] =
        json::array({{{"name", "scratch"}, {"size", "1Gi"}, {"mountPath", "/scratch"}}});
  }
  return job;
}

Status CreateJobRetrying(k8s::ApiClient& client, const std::string& ns, const json& job,
                         std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool retried = false;
  while (true) {
    auto created = client.Create(k8s::resources::HybridJobs(), ns, job);
    if (created.ok() || (retried && k8s::IsAlreadyExists(created.status()))) {
      return Status::Ok();
    }
    if (std::chrono::steady_clock::now() >= deadline ||
        created.status().code() == StatusCode::kInvalid) {
      return created.status();
    }
    retried = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

std::map<std::string, std::vector<json>> PodsByJob(k8s::ApiClient& client, const std::string& ns) {
  std::map<std::string, std::vector<json>> out;
  k8s::ListOptions options;
  options.label_selector = std::string(api::kJobNameLabel);
  auto pods = client.List(k8s::resources::Pods(), ns, options);
  if (!pods.ok()) {
    return out;
  }
  for (auto& pod : pods->items) {
    std::string job = Label(pod, api::kJobNameLabel);
    out[job].push_back(std::move(pod));
  }
  return out;
}

std::map<std::string, std::string> JobPhases(k8s::ApiClient& client, const std::string& ns) {
  std::map<std::string, std::string> out;
  auto jobs = client.List(k8s::resources::HybridJobs(), ns, {});
  if (!jobs.ok()) {
    return out;
  }
  for (const auto& job : jobs->items) {
    const json status = job.value("status", json::object());
    out[job["metadata"].value("name", "")] = status.is_object() ? status.value("phase", "") : "";
  }
  return out;
}

bool Terminating(const json& object) {
  return object["metadata"].contains("deletionTimestamp");
}

std::string NodeOf(const json& pod) {
  return pod["spec"].value("nodeName", "");
}

std::string DuplicateMembers(const std::string& job, const std::vector<json>& pods) {
  std::map<std::string, std::vector<std::string>> by_slot;
  for (const auto& pod : pods) {
    if (Terminating(pod)) {
      continue;
    }
    const std::string slot = Label(pod, api::kRoleLabel) + "/" + Label(pod, api::kIndexLabel);
    by_slot[slot].push_back(pod["metadata"].value("name", ""));
  }
  std::string out;
  for (const auto& [slot, names] : by_slot) {
    if (names.size() > 1) {
      out += "job " + job + " " + slot + " has " + std::to_string(names.size()) + " pods;";
    }
  }
  return out;
}

std::string OrphanedChildren(k8s::ApiClient& client, const std::string& ns,
                             const k8s::Resource& resource) {
  auto jobs = client.List(k8s::resources::HybridJobs(), ns, {});
  auto children = client.List(resource, ns, {});
  if (!jobs.ok() || !children.ok()) {
    return "could not list: " + (jobs.ok() ? children.status() : jobs.status()).ToString();
  }
  std::set<std::string> job_uids;
  for (const auto& job : jobs->items) {
    job_uids.insert(job["metadata"].value("uid", ""));
  }
  std::string out;
  for (const auto& child : children->items) {
    const std::string name = child["metadata"].value("name", "");
    if (name == "kubernetes") {
      continue;  // the API server's own Service
    }
    bool owned = false;
    for (const auto& owner : child["metadata"].value("ownerReferences", json::array())) {
      owned |= owner.value("kind", "") == api::kKind && job_uids.count(owner.value("uid", "")) > 0;
    }
    if (!owned) {
      out += name + " ";
    }
  }
  return out;
}

std::string OvercommittedNodes(k8s::ApiClient& client) {
  auto nodes = client.List(k8s::resources::Nodes(), "", {});
  k8s::ListOptions options;
  options.field_selector = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed";
  auto pods = client.List(k8s::resources::Pods(), "", options);
  if (!nodes.ok() || !pods.ok()) {
    return {};  // an unreachable API server proves nothing either way
  }
  std::map<std::string, int64_t> used;
  for (const auto& pod : pods->items) {
    used[NodeOf(pod)] += PodGpus(pod);
  }
  std::string out;
  for (const auto& node : nodes->items) {
    const std::string name = node["metadata"].value("name", "");
    const json allocatable = node["status"].value("allocatable", json::object());
    const std::string gpus = allocatable.value("nvidia.com/gpu", "0");
    if (used[name] > std::stoll(gpus)) {
      out += name + " runs pods asking " + std::to_string(used[name]) + " GPUs of " + gpus + "; ";
    }
  }
  return out;
}

int BoundMembers(const std::vector<json>& pods) {
  int bound = 0;
  for (const auto& pod : pods) {
    bound += !Terminating(pod) && !NodeOf(pod).empty() ? 1 : 0;
  }
  return bound;
}

std::map<std::string, std::string> PollJobPhasesUntil(k8s::ApiClient& client, const std::string& ns,
                                                      int jobs,
                                                      const std::set<std::string>& end_phases,
                                                      std::chrono::seconds timeout,
                                                      const std::function<void()>& each_poll) {
  std::map<std::string, std::string> phases;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    each_poll();
    phases = JobPhases(client, ns);
    int ended = 0;
    for (const auto& [job, phase] : phases) {
      ended += end_phases.contains(phase) ? 1 : 0;
    }
    if (ended == jobs) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return phases;
}

void ExpectAllSucceeded(const std::map<std::string, std::string>& phases, size_t jobs) {
  ASSERT_EQ(phases.size(), jobs);
  for (const auto& [job, phase] : phases) {
    EXPECT_EQ(phase, "Succeeded") << "job " << job;
  }
}

void ExpectEachJobWhole(k8s::ApiClient& client, const std::string& ns, int jobs, int workers) {
  const auto pods_by_job = PodsByJob(client, ns);
  for (int i = 0; i < jobs; ++i) {
    const std::string job = "job-" + std::to_string(i);
    auto it = pods_by_job.find(job);
    ASSERT_NE(it, pods_by_job.end()) << "job " << job << " has no pods";
    EXPECT_EQ(it->second.size(), static_cast<size_t>(workers)) << "job " << job;
    EXPECT_EQ(DuplicateMembers(job, it->second), "");
    for (const auto& pod : it->second) {
      EXPECT_EQ(pod["status"].value("phase", ""), "Succeeded") << pod["metadata"].value("name", "");
    }
  }
}

}  // namespace hybridjob::testing
