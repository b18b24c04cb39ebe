#include "cluster_reset.h"

#include <thread>

#include <hybridjob/k8s/api_status.h>

namespace hybridjob::testing {
namespace {

bool HasVerb(const nlohmann::json& resource, const std::string& verb) {
  const auto verbs = resource.find("verbs");
  if (verbs == resource.end() || !verbs->is_array()) {
    return false;
  }
  for (const auto& v : *verbs) {
    if (v.is_string() && v.get<std::string>() == verb) {
      return true;
    }
  }
  return false;
}

// "v1" or "apps/v1" into the Resource's group and version.
void SplitGroupVersion(const std::string& group_version, k8s::Resource& resource) {
  const auto slash = group_version.find('/');
  if (slash == std::string::npos) {
    resource.version = group_version;
  } else {
    resource.group = group_version.substr(0, slash);
    resource.version = group_version.substr(slash + 1);
  }
}

Result<nlohmann::json> GetJson(k8s::ApiClient& client, const std::string& path) {
  auto body = client.GetRaw(path);
  if (!body) {
    return body.status();
  }
  auto parsed = nlohmann::json::parse(*body, nullptr, false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Internal("discovery " + path + " answered no JSON object");
  }
  return parsed;
}

// Every object of `resource`, across namespaces.
Result<std::vector<nlohmann::json>> ListAll(k8s::ApiClient& client, const k8s::Resource& resource) {
  auto list = k8s::ListAll(client, resource, "", {});
  if (!list) {
    return list.status();
  }
  return std::move(list->items);
}

std::string Describe(const k8s::Resource& resource, const nlohmann::json& object) {
  const auto& metadata = object["metadata"];
  std::string name = resource.plural + " ";
  if (metadata.contains("namespace")) {
    name += metadata["namespace"].get<std::string>() + "/";
  }
  return name + metadata.value("name", "");
}

}  // namespace

std::vector<k8s::Resource> DeletableResources(const nlohmann::json& resource_list) {
  std::vector<k8s::Resource> out;
  const std::string group_version = resource_list.value("groupVersion", "");
  const auto resources = resource_list.find("resources");
  if (group_version.empty() || resources == resource_list.end() || !resources->is_array()) {
    return out;
  }
  for (const auto& entry : *resources) {
    const std::string plural = entry.value("name", "");
    if (plural.empty() || plural.find('/') != std::string::npos ||
        plural == "customresourcedefinitions" || plural == "apiservices" ||
        !HasVerb(entry, "list") || !HasVerb(entry, "delete")) {
      continue;
    }
    k8s::Resource resource;
    SplitGroupVersion(group_version, resource);
    resource.plural = plural;
    resource.namespaced = entry.value("namespaced", false);
    out.push_back(std::move(resource));
  }
  return out;
}

Result<std::vector<k8s::Resource>> DiscoverDeletableResources(k8s::ApiClient& client) {
  auto core = GetJson(client, "/api/v1");
  if (!core) {
    return core.status();
  }
  std::vector<k8s::Resource> out = DeletableResources(*core);
  auto groups = GetJson(client, "/apis");
  if (!groups) {
    return groups.status();
  }
  for (const auto& group : groups->value("groups", nlohmann::json::array())) {
    const std::string preferred = group.value("preferredVersion", nlohmann::json::object())
                                      .value("groupVersion", std::string());
    if (preferred.empty()) {
      continue;
    }
    auto list = GetJson(client, "/apis/" + preferred);
    if (!list) {
      return list.status();
    }
    for (auto& resource : DeletableResources(*list)) {
      out.push_back(std::move(resource));
    }
  }
  return out;
}

Result<std::set<std::string>> ObjectUids(k8s::ApiClient& client) {
  auto resources = DiscoverDeletableResources(client);
  if (!resources) {
    return resources.status();
  }
  std::set<std::string> uids;
  for (const auto& resource : *resources) {
    auto items = ListAll(client, resource);
    if (!items) {
      return Internal("list " + resource.plural + ": " + items.status().ToString());
    }
    for (const auto& item : *items) {
      uids.insert(item["metadata"].value("uid", ""));
    }
  }
  return uids;
}

Status DeleteAllBut(k8s::ApiClient& client, const std::set<std::string>& baseline,
                    std::chrono::seconds timeout) {
  // Discovered afresh: a test may have added a CustomResourceDefinition.
  auto resources = DiscoverDeletableResources(client);
  if (!resources) {
    return resources.status();
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  k8s::DeleteOptions now;
  now.grace_period_seconds = 0;
  now.propagation_policy = "Background";
  while (true) {
    std::vector<std::string> left;
    // One object may be served by two groups (events, ingresses): each once.
    std::set<std::string> seen;
    for (const auto& resource : *resources) {
      auto items = ListAll(client, resource);
      if (!items) {
        if (k8s::IsNotFound(items.status())) {
          continue;  // its definition went with a test's CRD
        }
        return Internal("list " + resource.plural + ": " + items.status().ToString());
      }
      for (const auto& item : *items) {
        const auto& metadata = item["metadata"];
        const std::string uid = metadata.value("uid", "");
        if (baseline.count(uid) != 0 || !seen.insert(uid).second) {
          continue;
        }
        const std::string ns = metadata.value("namespace", "");
        const std::string name = metadata.value("name", "");
        if (metadata.contains("finalizers") && !metadata["finalizers"].empty()) {
          (void)client.Patch(resource, ns, name, k8s::PatchType::kMerge,
                             R"({"metadata":{"finalizers":null}})");
        }
        if (!metadata.contains("deletionTimestamp")) {
          (void)client.Delete(resource, ns, name, now);
        }
        if (resource.plural != "events") {
          left.push_back(Describe(resource, item));
        }
      }
    }
    if (left.empty()) {
      return Status::Ok();
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      std::string names;
      for (const auto& name : left) {
        names += (names.empty() ? "" : ", ") + name;
      }
      return Internal("still there after " + std::to_string(timeout.count()) + " s: " + names);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace hybridjob::testing
