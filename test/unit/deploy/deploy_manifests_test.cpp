// Checks of deploy/: the kustomize base, the Helm-style chart (rendered here
// without helm, see chart_render.h), the CRD copies and the Dockerfiles.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/json.h>
#include <hybridjob/api/validation.h>
#include <hybridjob/scheduler/shell/config.h>

#include "chart_render.h"
#include "guide_blocks.h"
#include "openapi_check.h"
#include "yaml_json.h"

namespace hybridjob::testing {
namespace {

using nlohmann::json;
using ::testing::IsEmpty;

constexpr const char* kNamespace = "hybridjob-system";
constexpr const char* kCrd = "crds/batch.hybridjob.io_hybridjobs.yaml";
constexpr const char* kChart = "deploy/chart/hybridjob";

const std::set<std::string>& ClusterScopedKinds() {
  static const std::set<std::string> kinds = {"Namespace", "CustomResourceDefinition",
                                              "ClusterRole", "ClusterRoleBinding"};
  return kinds;
}

std::string Key(const json& object) {
  const json& metadata = object.at("metadata");
  return object.value("kind", "") + "/" + metadata.value("namespace", "") + "/" +
         metadata.value("name", "");
}

// Paths where two objects differ, at most `limit` of them.
void Diff(const json& a, const json& b, const std::string& path, std::vector<std::string>* out,
          size_t limit = 20) {
  if (out->size() >= limit) {
    return;
  }
  if (a.type() != b.type()) {
    out->push_back(path + ": " + a.dump() + " vs " + b.dump());
    return;
  }
  if (a.is_object()) {
    std::set<std::string> keys;
    for (const auto& [key, value] : a.items()) {
      keys.insert(key);
    }
    for (const auto& [key, value] : b.items()) {
      keys.insert(key);
    }
    for (const std::string& key : keys) {
      Diff(a.contains(key) ? a[key] : json(), b.contains(key) ? b[key] : json(), path + "." + key,
           out, limit);
    }
  } else if (a.is_array()) {
    if (a.size() != b.size()) {
      out->push_back(path + ": " + std::to_string(a.size()) + " items vs " +
                     std::to_string(b.size()));
      return;
    }
    for (size_t i = 0; i < a.size(); ++i) {
      Diff(a[i], b[i], path + "[" + std::to_string(i) + "]", out, limit);
    }
  } else if (a != b) {
    out->push_back(path + ": " + a.dump() + " vs " + b.dump());
  }
}

struct Objects {
  std::map<std::string, json> by_key;
  std::vector<std::string> errors;
};

void AddDocuments(const std::string& text, const std::string& origin, Objects* objects) {
  std::vector<json> documents;
  try {
    documents = YamlDocumentsToJson(text);
  } catch (const std::exception& e) {
    objects->errors.push_back(origin + ": not valid YAML: " + e.what());
    return;
  }
  for (const json& document : documents) {
    if (document.is_null()) {
      continue;  // an empty document, e.g. a switched-off template
    }
    if (!document.is_object() || !document.contains("apiVersion") || !document.contains("kind") ||
        !document.contains("metadata") || !document["metadata"].contains("name")) {
      objects->errors.push_back(origin + ": a document without apiVersion, kind or name");
      continue;
    }
    const std::string key = Key(document);
    if (!objects->by_key.emplace(key, document).second) {
      objects->errors.push_back(origin + ": " + key + " appears twice");
    }
  }
}

// deploy/ as `kubectl apply -k` renders it: every resource, with the
// kustomization's namespace set on namespaced objects and on ServiceAccount
// subjects of bindings (what kustomize v2.0.3's namespace transformer does).
Objects LoadKustomizeBase() {
  Objects objects;
  const YAML::Node kustomization = YAML::LoadFile(SourcePath("deploy/kustomization.yaml"));
  const std::string ns = kustomization["namespace"].as<std::string>("");
  for (const auto& resource : kustomization["resources"]) {
    const std::string relative = resource.as<std::string>();
    Objects file;
    AddDocuments(ReadFile(SourcePath("deploy/" + relative)), relative, &file);
    objects.errors.insert(objects.errors.end(), file.errors.begin(), file.errors.end());
    for (auto& [key, object] : file.by_key) {
      if (!ns.empty() && !ClusterScopedKinds().contains(object["kind"].get<std::string>())) {
        object["metadata"]["namespace"] = ns;
      }
      if (!ns.empty() && object.contains("subjects")) {
        for (json& subject : object["subjects"]) {
          if (subject.value("kind", "") == "ServiceAccount") {
            subject["namespace"] = ns;
          }
        }
      }
      if (!objects.by_key.emplace(Key(object), object).second) {
        objects.errors.push_back(relative + ": " + Key(object) + " appears twice");
      }
    }
  }
  return objects;
}

std::vector<std::filesystem::path> TemplateFiles() {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(SourcePath(std::string(kChart) + "/templates"))) {
    if (entry.path().extension() == ".yaml") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

YAML::Node ChartValues() {
  return YAML::LoadFile(SourcePath(std::string(kChart) + "/values.yaml"));
}

Objects RenderChart(const ChartRelease& release, std::set<std::string>* value_paths = nullptr) {
  Objects objects;
  const YAML::Node values = ChartValues();
  for (const auto& file : TemplateFiles()) {
    const std::string name = "templates/" + file.filename().string();
    RenderedTemplate rendered = RenderTemplate(ReadFile(file.string()), values, release);
    for (const std::string& error : rendered.errors) {
      objects.errors.push_back(name + ": " + error);
    }
    if (value_paths != nullptr) {
      value_paths->insert(rendered.value_paths.begin(), rendered.value_paths.end());
    }
    AddDocuments(rendered.text, name, &objects);
  }
  return objects;
}

ChartRelease LikeTheBase() {
  ChartRelease release;
  release.namespace_name = kNamespace;
  release.set["namespace.create"] = "true";
  return release;
}

const json& Get(const Objects& objects, const std::string& key) {
  static const json kMissing;
  auto it = objects.by_key.find(key);
  return it == objects.by_key.end() ? kMissing : it->second;
}

const json* FindRule(const json& role, const std::string& resource) {
  for (const json& rule : role["rules"]) {
    for (const json& name : rule["resources"]) {
      if (name == resource) {
        return &rule;
      }
    }
  }
  return nullptr;
}

std::set<std::string> Verbs(const json& role, const std::string& resource) {
  std::set<std::string> verbs;
  for (const json& rule : role["rules"]) {
    for (const json& name : rule["resources"]) {
      if (name == resource) {
        for (const json& verb : rule["verbs"]) {
          verbs.insert(verb.get<std::string>());
        }
      }
    }
  }
  return verbs;
}

// --- the kustomize base -------------------------------------------------------

TEST(DeployKustomizeTest, UsesOnlyFieldsOldKustomizeKnowsAndFilesInsideDeploy) {
  const YAML::Node kustomization = YAML::LoadFile(SourcePath("deploy/kustomization.yaml"));
  // kubectl up to 1.20 embeds kustomize v2.0.3.
  const std::set<std::string> known = {"resources", "namespace", "configMapGenerator",
                                       "generatorOptions", "commonLabels"};
  for (const auto& entry : kustomization) {
    EXPECT_TRUE(known.contains(entry.first.as<std::string>()))
        << "deploy/kustomization.yaml: " << entry.first.as<std::string>();
  }
  EXPECT_EQ(kustomization["namespace"].as<std::string>(""), kNamespace);
  ASSERT_TRUE(kustomization["resources"].IsSequence());
  for (const auto& resource : kustomization["resources"]) {
    const std::string path = resource.as<std::string>();
    // kustomize v2.0.3 refuses files outside the kustomization's folder.
    EXPECT_EQ(path.find(".."), std::string::npos) << path;
    EXPECT_NE(path.front(), '/') << path;
    EXPECT_TRUE(std::filesystem::is_regular_file(SourcePath("deploy/" + path))) << path;
  }
}

TEST(DeployKustomizeTest, HoldsEveryObjectOfAnInstall) {
  const Objects base = LoadKustomizeBase();
  ASSERT_THAT(base.errors, IsEmpty());
  std::vector<std::string> keys;
  for (const auto& [key, object] : base.by_key) {
    keys.push_back(key);
  }
  const std::string ns = kNamespace;
  EXPECT_THAT(
      keys,
      ::testing::UnorderedElementsAre(
          "Namespace//" + ns, "CustomResourceDefinition//hybridjobs.batch.hybridjob.io",
          "ServiceAccount/" + ns + "/hybridjob-controller",
          "ServiceAccount/" + ns + "/gang-scheduler", "ClusterRole//hybridjob-controller",
          "ClusterRole//gang-scheduler", "ClusterRoleBinding//hybridjob-controller",
          "ClusterRoleBinding//gang-scheduler",
          "Role/" + ns + "/hybridjob-controller-leader-election",
          "Role/" + ns + "/gang-scheduler-leader-election",
          "RoleBinding/" + ns + "/hybridjob-controller-leader-election",
          "RoleBinding/" + ns + "/gang-scheduler-leader-election",
          "ConfigMap/" + ns + "/gang-scheduler-config",
          "Deployment/" + ns + "/hybridjob-controller", "Deployment/" + ns + "/gang-scheduler",
          "ClusterRole//hybridjob-viewer", "Role/" + ns + "/hybridjob-viewer",
          "ClusterRoleBinding//hybridjob-controller-auth-delegator",
          "ClusterRoleBinding//gang-scheduler-auth-delegator",
          "ClusterRole//hybridjob-metrics-reader"));
}

// /metrics and the dashboard ask the API server who calls and what it may:
// each binary's account may create TokenReviews and SubjectAccessReviews
// (system:auth-delegator, nothing wider), and scrapers get a role that allows
// exactly `get /metrics`.
TEST(DeployKustomizeTest, BinariesMayReviewTokensAndScrapersGetOnlyMetrics) {
  const Objects base = LoadKustomizeBase();
  ASSERT_THAT(base.errors, IsEmpty());
  for (const std::string account : {"hybridjob-controller", "gang-scheduler"}) {
    auto it = base.by_key.find("ClusterRoleBinding//" + account + "-auth-delegator");
    ASSERT_NE(it, base.by_key.end()) << account;
    const json& binding = it->second;
    EXPECT_EQ(binding["roleRef"].value("kind", ""), "ClusterRole");
    EXPECT_EQ(binding["roleRef"].value("name", ""), "system:auth-delegator");
    ASSERT_EQ(binding["subjects"].size(), 1u);
    EXPECT_EQ(binding["subjects"][0].value("kind", ""), "ServiceAccount");
    EXPECT_EQ(binding["subjects"][0].value("name", ""), account);
    EXPECT_EQ(binding["subjects"][0].value("namespace", ""), kNamespace);
  }
  auto reader = base.by_key.find("ClusterRole//hybridjob-metrics-reader");
  ASSERT_NE(reader, base.by_key.end());
  const json& rules = reader->second["rules"];
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0]["nonResourceURLs"].get<std::vector<std::string>>(),
            std::vector<std::string>{"/metrics"});
  EXPECT_EQ(rules[0]["verbs"].get<std::vector<std::string>>(), std::vector<std::string>{"get"});
  EXPECT_FALSE(rules[0].contains("resources"));
  for (const std::string deployment : {"hybridjob-controller", "gang-scheduler"}) {
    const json& object = base.by_key.at("Deployment/" + std::string(kNamespace) + "/" + deployment);
    EXPECT_EQ(object["spec"]["template"]["metadata"]["annotations"].value("prometheus.io/scheme", ""),
              "https")
        << deployment;
  }
}

TEST(DeployKustomizeTest, CrdCopiesAreTheCanonicalCrd) {
  const std::string crd = ReadFile(SourcePath(kCrd));
  EXPECT_TRUE(ReadFile(SourcePath("deploy/crd/batch.hybridjob.io_hybridjobs.yaml")) == crd)
      << "deploy/crd/ differs from " << kCrd << ": run deploy/sync-crd.sh";
  EXPECT_TRUE(ReadFile(SourcePath(std::string(kChart) + "/templates/crd.yaml")) ==
              "{{- if .Values.crds.install }}\n" + crd + "{{- end }}\n")
      << "the chart's templates/crd.yaml differs from " << kCrd << ": run deploy/sync-crd.sh";
}

TEST(DeployKustomizeTest, RbacGrantsWhatEachBinaryUsesAndNoMore) {
  const Objects base = LoadKustomizeBase();
  ASSERT_THAT(base.errors, IsEmpty());
  using Set = std::set<std::string>;
  const json& controller = Get(base, "ClusterRole//hybridjob-controller");
  ASSERT_FALSE(controller.is_null());
  EXPECT_EQ(Verbs(controller, "hybridjobs"), (Set{"get", "list", "watch", "delete"}));
  EXPECT_EQ(Verbs(controller, "hybridjobs/status"), (Set{"update"}));
  EXPECT_EQ(Verbs(controller, "pods"), (Set{"list", "watch", "create", "patch", "delete"}));
  EXPECT_EQ(Verbs(controller, "services"), (Set{"list", "watch", "create"}));
  EXPECT_EQ(Verbs(controller, "configmaps"), (Set{"get", "list", "watch", "create", "update"}));
  EXPECT_EQ(Verbs(controller, "persistentvolumeclaims"), (Set{"list", "watch", "create"}));
  EXPECT_EQ(Verbs(controller, "deployments"), (Set{"list", "watch", "create"}));
  EXPECT_EQ(Verbs(controller, "events"), (Set{"create", "patch"}));
  // MPI jobs' SSH keys: created, never read.
  EXPECT_EQ(Verbs(controller, "secrets"), (Set{"create"}));
  EXPECT_THAT(Verbs(controller, "pods/binding"), IsEmpty());

  const json& scheduler = Get(base, "ClusterRole//gang-scheduler");
  ASSERT_FALSE(scheduler.is_null());
  EXPECT_EQ(Verbs(scheduler, "pods"), (Set{"get", "list", "watch", "delete"}));
  EXPECT_EQ(Verbs(scheduler, "pods/binding"), (Set{"create"}));
  EXPECT_EQ(Verbs(scheduler, "pods/status"), (Set{"patch"}));
  EXPECT_EQ(Verbs(scheduler, "pods/eviction"), (Set{"create"}));
  EXPECT_EQ(Verbs(scheduler, "nodes"), (Set{"get", "list", "watch"}));
  EXPECT_EQ(Verbs(scheduler, "events"), (Set{"create", "patch"}));
  // Read-only: members are checked against their job, namespaces and classes.
  EXPECT_EQ(Verbs(scheduler, "hybridjobs"), (Set{"get", "list", "watch"}));
  EXPECT_EQ(Verbs(scheduler, "namespaces"), (Set{"get", "list", "watch"}));
  EXPECT_EQ(Verbs(scheduler, "priorityclasses"), (Set{"get", "list", "watch"}));
  EXPECT_EQ(Verbs(scheduler, "persistentvolumeclaims"), (Set{"get", "list", "watch", "patch"}));
  EXPECT_EQ(Verbs(scheduler, "persistentvolumes"), (Set{"get", "list", "watch", "patch"}));
  EXPECT_EQ(Verbs(scheduler, "storageclasses"), (Set{"get", "list", "watch"}));
  // Jobs themselves are read-only; their status only for the attained
  // service of AttainedService queues.
  EXPECT_EQ(Verbs(scheduler, "hybridjobs/status"), (Set{"patch"}));

  for (const std::string binary : {"hybridjob-controller", "gang-scheduler"}) {
    for (const json& role : {controller, scheduler}) {
      for (const json& rule : role["rules"]) {
        for (const json& verb : rule["verbs"]) {
          EXPECT_NE(verb, "*") << binary;
        }
      }
    }
    // Leases only in the own namespace, get/update only of the own Lease.
    const json& leases =
        Get(base, "Role/" + std::string(kNamespace) + "/" + binary + "-leader-election");
    ASSERT_FALSE(leases.is_null()) << binary;
    EXPECT_EQ(Verbs(leases, "leases"), (Set{"create", "get", "update"})) << binary;
    for (const json& rule : leases["rules"]) {
      if (rule["verbs"].size() > 1) {
        EXPECT_EQ(rule["resourceNames"], json::array({binary})) << binary;
      }
    }
    for (const std::string kind : {"ClusterRoleBinding", "RoleBinding"}) {
      const std::string name = kind == "RoleBinding" ? binary + "-leader-election" : binary;
      const std::string ns = kind == "RoleBinding" ? kNamespace : "";
      const json& binding = Get(base, kind + "/" + ns + "/" + name);
      ASSERT_FALSE(binding.is_null()) << kind << " " << name;
      EXPECT_EQ(binding["roleRef"]["name"], name);
      EXPECT_EQ(binding["subjects"], json::parse(R"([{"kind":"ServiceAccount","name":")" + binary +
                                                 R"(","namespace":"hybridjob-system"}])"));
    }
  }
  EXPECT_NE(FindRule(controller, "hybridjobs/finalizers"), nullptr);

  // kubectl hybridjob's reader: reads only, and only the scheduler's own
  // ConfigMap; no binding ships with it.
  const json& viewer = Get(base, "ClusterRole//hybridjob-viewer");
  ASSERT_FALSE(viewer.is_null());
  for (const char* resource : {"pods", "nodes", "namespaces", "hybridjobs", "priorityclasses"}) {
    EXPECT_EQ(Verbs(viewer, resource), (Set{"get", "list", "watch"})) << resource;
  }
  EXPECT_EQ(Verbs(viewer, "pods/log"), (Set{"get"}));
  EXPECT_THAT(Verbs(viewer, "secrets"), IsEmpty());
  EXPECT_THAT(Verbs(viewer, "configmaps"), IsEmpty());
  const json& config_reader = Get(base, "Role/" + std::string(kNamespace) + "/hybridjob-viewer");
  ASSERT_FALSE(config_reader.is_null());
  EXPECT_EQ(Verbs(config_reader, "configmaps"), (Set{"get"}));
  EXPECT_EQ(config_reader["rules"][0]["resourceNames"], json::array({"gang-scheduler-config"}));
  for (const auto& [key, object] : base.by_key) {
    if (object.contains("roleRef")) {
      EXPECT_NE(object["roleRef"]["name"], "hybridjob-viewer") << key;
    }
  }
}

void ExpectHardenedDeployment(const json& deployment, const std::string& image, int health_port,
                              int metrics_port) {
  SCOPED_TRACE(Key(deployment));
  ASSERT_FALSE(deployment.is_null());
  EXPECT_EQ(deployment["spec"]["replicas"], 2);
  const json& pod = deployment["spec"]["template"]["spec"];
  EXPECT_EQ(pod["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(pod["securityContext"]["runAsUser"], 65532);
  EXPECT_EQ(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_EQ(pod["serviceAccountName"], deployment["metadata"]["name"]);
  ASSERT_EQ(pod["containers"].size(), 1U);
  const json& container = pod["containers"][0];
  EXPECT_EQ(container["image"], image);
  // No registry host: the first path segment is an organisation, not a host.
  const std::string first = image.substr(0, image.find('/'));
  EXPECT_EQ(first.find_first_of(".:"), std::string::npos) << image;
  EXPECT_NE(first, "localhost");
  const json& security = container["securityContext"];
  EXPECT_EQ(security["readOnlyRootFilesystem"], true);
  EXPECT_EQ(security["allowPrivilegeEscalation"], false);
  EXPECT_EQ(security["runAsNonRoot"], true);
  EXPECT_EQ(security["capabilities"]["drop"], json::array({"ALL"}));
  EXPECT_FALSE(security["capabilities"].contains("add"));
  for (const char* kind : {"requests", "limits"}) {
    EXPECT_TRUE(container["resources"][kind].contains("cpu")) << kind;
    EXPECT_TRUE(container["resources"][kind].contains("memory")) << kind;
  }
  std::map<std::string, int> ports;
  for (const json& port : container["ports"]) {
    ports[port["name"].get<std::string>()] = port["containerPort"].get<int>();
  }
  EXPECT_EQ(ports["health"], health_port);
  EXPECT_EQ(ports["metrics"], metrics_port);
  EXPECT_EQ(container["livenessProbe"]["httpGet"]["path"], "/healthz");
  EXPECT_EQ(container["livenessProbe"]["httpGet"]["port"], "health");
  EXPECT_EQ(container["readinessProbe"]["httpGet"]["path"], "/readyz");
  EXPECT_EQ(container["readinessProbe"]["httpGet"]["port"], "health");
  EXPECT_EQ(deployment["spec"]["template"]["metadata"]["annotations"]["prometheus.io/port"],
            std::to_string(metrics_port));
}

std::vector<std::string> Args(const json& deployment) {
  return deployment["spec"]["template"]["spec"]["containers"][0]["args"]
      .get<std::vector<std::string>>();
}

TEST(DeployKustomizeTest, DeploymentsAreHardenedAndProbed) {
  const Objects base = LoadKustomizeBase();
  ASSERT_THAT(base.errors, IsEmpty());
  const std::string ns = kNamespace;
  const json& controller = Get(base, "Deployment/" + ns + "/hybridjob-controller");
  ExpectHardenedDeployment(controller, "hybridjob/controller:0.1.0", 10252, 10251);
  const std::vector<std::string> controller_args = Args(controller);
  EXPECT_THAT(controller_args, ::testing::Contains("--leader-elect"));
  EXPECT_THAT(controller_args, ::testing::Contains("--health-addr=0.0.0.0:10252"));
  EXPECT_THAT(controller_args, ::testing::Contains("--metrics-addr=0.0.0.0:10251"));

  const json& scheduler = Get(base, "Deployment/" + ns + "/gang-scheduler");
  ExpectHardenedDeployment(scheduler, "hybridjob/gang-scheduler:0.1.0", 10262, 10261);
  // The config file is the ConfigMap, mounted where --config points.
  const json& pod = scheduler["spec"]["template"]["spec"];
  std::string config_volume;
  for (const json& volume : pod["volumes"]) {
    if (volume.contains("configMap") && volume["configMap"]["name"] == "gang-scheduler-config") {
      config_volume = volume["name"];
    }
  }
  ASSERT_FALSE(config_volume.empty());
  std::string mount_path;
  for (const json& mount : pod["containers"][0]["volumeMounts"]) {
    if (mount["name"] == config_volume) {
      mount_path = mount["mountPath"];
      EXPECT_EQ(mount.value("readOnly", false), true);
    }
  }
  ASSERT_FALSE(mount_path.empty());
  EXPECT_THAT(Args(scheduler), ::testing::Contains("--config=" + mount_path + "/config.yaml"));
}

TEST(DeployKustomizeTest, SchedulerConfigIsValidAndLeaderElected) {
  const Objects base = LoadKustomizeBase();
  ASSERT_THAT(base.errors, IsEmpty());
  const json& map = Get(base, "ConfigMap/" + std::string(kNamespace) + "/gang-scheduler-config");
  ASSERT_TRUE(map["data"].contains("config.yaml"));
  auto config = scheduler::ParseSchedulerConfig(map["data"]["config.yaml"].get<std::string>());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->leader_election.enabled);
  EXPECT_EQ(config->leader_election.lease_namespace, kNamespace);
  EXPECT_EQ(config->leader_election.lease_name, "gang-scheduler");
  EXPECT_EQ(config->health_addr, "0.0.0.0:10262");
  EXPECT_EQ(config->metrics_addr, "0.0.0.0:10261");
  // The Role lets it touch exactly the Lease the config names.
  const json& role =
      Get(base, "Role/" + std::string(kNamespace) + "/gang-scheduler-leader-election");
  bool names_lease = false;
  for (const json& rule : role["rules"]) {
    names_lease = names_lease || rule.value("resourceNames", json::array()) ==
                                     json::array({config->leader_election.lease_name});
  }
  EXPECT_TRUE(names_lease);
}

// --- the chart -----------------------------------------------------------------

TEST(DeployChartTest, TemplatesUseOnlySimpleActionsAndKnownValues) {
  ASSERT_FALSE(TemplateFiles().empty());
  std::set<std::string> used;
  const Objects rendered = RenderChart(ChartRelease{}, &used);
  EXPECT_THAT(rendered.errors, IsEmpty());
  // And every value is used by some template: values.yaml documents the chart.
  for (const std::string& leaf : LeafPaths(ChartValues())) {
    bool is_used = false;
    for (const std::string& path : used) {
      is_used = is_used || path == leaf || leaf.rfind(path + ".", 0) == 0;
    }
    EXPECT_TRUE(is_used) << "values.yaml: " << leaf << " is used by no template";
  }
}

TEST(DeployChartTest, ChartMetadataIsComplete) {
  const YAML::Node chart = YAML::LoadFile(SourcePath(std::string(kChart) + "/Chart.yaml"));
  EXPECT_EQ(chart["apiVersion"].as<std::string>(""), "v2");
  EXPECT_EQ(chart["name"].as<std::string>(""), "hybridjob");
  EXPECT_FALSE(chart["version"].as<std::string>("").empty());
  EXPECT_EQ(chart["appVersion"].as<std::string>(""), "0.1.0");
}

TEST(DeployChartTest, EverySwitchCombinationRendersValidYaml) {
  for (const char* ns : {"false", "true"}) {
    for (const char* crds : {"false", "true"}) {
      for (const char* rbac : {"false", "true"}) {
        for (const char* eviction : {"false", "true"}) {
          ChartRelease release;
          release.name = "hj";
          release.namespace_name = "ml-platform";
          release.set = {{"namespace.create", ns},
                         {"crds.install", crds},
                         {"rbac.create", rbac},
                         {"scheduler.allowEviction", eviction}};
          const Objects rendered = RenderChart(release);
          SCOPED_TRACE(std::string("namespace.create=") + ns + " crds.install=" + crds +
                       " rbac.create=" + rbac + " scheduler.allowEviction=" + eviction);
          EXPECT_THAT(rendered.errors, IsEmpty());
          const bool want_rbac = std::string(rbac) == "true";
          EXPECT_EQ(rendered.by_key.contains("Namespace//ml-platform"), std::string(ns) == "true");
          EXPECT_EQ(
              rendered.by_key.contains("CustomResourceDefinition//hybridjobs.batch.hybridjob.io"),
              std::string(crds) == "true");
          EXPECT_EQ(rendered.by_key.contains("ClusterRole//gang-scheduler"), want_rbac);
          EXPECT_EQ(rendered.by_key.contains("ServiceAccount/ml-platform/hybridjob-controller"),
                    want_rbac);
          EXPECT_TRUE(rendered.by_key.contains("Deployment/ml-platform/gang-scheduler"));
          EXPECT_TRUE(rendered.by_key.contains("Deployment/ml-platform/hybridjob-controller"));
          if (want_rbac) {
            const json& role = Get(rendered, "ClusterRole//gang-scheduler");
            EXPECT_EQ(FindRule(role, "pods/eviction") != nullptr, std::string(eviction) == "true");
          }
          for (const auto& [key, object] : rendered.by_key) {
            if (!ClusterScopedKinds().contains(object["kind"].get<std::string>())) {
              EXPECT_EQ(object["metadata"].value("namespace", ""), "ml-platform") << key;
            }
          }
          // The scheduler's config follows the release namespace.
          auto config = scheduler::ParseSchedulerConfig(
              Get(rendered, "ConfigMap/ml-platform/gang-scheduler-config")["data"]["config.yaml"]
                  .get<std::string>());
          ASSERT_TRUE(config.ok()) << config.status().ToString();
          EXPECT_EQ(config->leader_election.lease_namespace, "ml-platform");
        }
      }
    }
  }
}

TEST(DeployChartTest, RendersExactlyTheKustomizeBase) {
  const Objects base = LoadKustomizeBase();
  const Objects chart = RenderChart(LikeTheBase());
  ASSERT_THAT(base.errors, IsEmpty());
  ASSERT_THAT(chart.errors, IsEmpty());
  std::vector<std::string> base_keys;
  std::vector<std::string> chart_keys;
  for (const auto& [key, object] : base.by_key) {
    base_keys.push_back(key);
  }
  for (const auto& [key, object] : chart.by_key) {
    chart_keys.push_back(key);
  }
  ASSERT_EQ(chart_keys, base_keys);
  for (const auto& [key, object] : base.by_key) {
    std::vector<std::string> differences;
    Diff(object, chart.by_key.at(key), key, &differences);
    EXPECT_THAT(differences, IsEmpty()) << "kustomize base vs chart";
  }
}

TEST(DeployChartTest, ValuesOverrideWhatTheyName) {
  ChartRelease release = LikeTheBase();
  release.set["controller.replicas"] = "3";
  release.set["controller.image.tag"] = "0.2.0";
  release.set["scheduler.config.scoring"] = "spread";
  // A string holding a YAML flow list, as values.yaml documents: a real list
  // would be printed in Go syntax.
  release.set["scheduler.config.gpuResources"] = "'[nvidia.com/gpu, amd.com/gpu]'";
  release.set["scheduler.resources.limits.memory"] = "2Gi";
  const Objects chart = RenderChart(release);
  ASSERT_THAT(chart.errors, IsEmpty());
  const std::string ns = kNamespace;
  const json& controller = Get(chart, "Deployment/" + ns + "/hybridjob-controller");
  EXPECT_EQ(controller["spec"]["replicas"], 3);
  EXPECT_EQ(controller["spec"]["template"]["spec"]["containers"][0]["image"],
            "hybridjob/controller:0.2.0");
  EXPECT_EQ(
      Get(chart, "Deployment/" + ns + "/gang-scheduler")["spec"]["template"]["spec"]["containers"]
                                                        [0]["resources"]["limits"]["memory"],
      "2Gi");
  auto config = scheduler::ParseSchedulerConfig(
      Get(chart, "ConfigMap/" + ns + "/gang-scheduler-config")["data"]["config.yaml"]
          .get<std::string>());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->scoring, scheduler::PackingPolicy::kSpread);
  EXPECT_EQ(config->gpu_resources.Names(),
            (std::vector<std::string>{"nvidia.com/gpu", "amd.com/gpu"}));

  // The map form weighs each resource.
  release.set["scheduler.config.gpuResources"] =
      "'{nvidia.com/gpu: 1, nvidia.com/mig-1g.10gb: 0.125}'";
  const Objects weighted = RenderChart(release);
  ASSERT_THAT(weighted.errors, IsEmpty());
  config = scheduler::ParseSchedulerConfig(
      Get(weighted, "ConfigMap/" + ns + "/gang-scheduler-config")["data"]["config.yaml"]
          .get<std::string>());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->gpu_resources.entries().back(),
            (scheduler::GpuResource{"nvidia.com/mig-1g.10gb", 125}));

  // The dashboard: off by default (the base has neither the field nor the
  // port), on with its port named.
  EXPECT_EQ(config->dashboard_addr, "");
  release.set["scheduler.dashboard.enabled"] = "true";
  const Objects with_dashboard = RenderChart(release);
  ASSERT_THAT(with_dashboard.errors, IsEmpty());
  config = scheduler::ParseSchedulerConfig(
      Get(with_dashboard, "ConfigMap/" + ns + "/gang-scheduler-config")["data"]["config.yaml"]
          .get<std::string>());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->dashboard_addr, "0.0.0.0:10263");
  const json& ports = Get(
      with_dashboard,
      "Deployment/" + ns + "/gang-scheduler")["spec"]["template"]["spec"]["containers"][0]["ports"];
  EXPECT_EQ(ports.back()["name"], "dashboard");
  EXPECT_EQ(ports.back()["containerPort"], 10263);
  release.set.erase("scheduler.dashboard.enabled");

  release.set["scheduler.config.gpuResources"] = "[nvidia.com/gpu, amd.com/gpu]";
  EXPECT_THAT(RenderChart(release).errors,
              ::testing::ElementsAre(::testing::HasSubstr("not a single value")));
}

// serving.certSecret mounts a TLS Secret and points both binaries at its
// files; serving.insecure asks for plain HTTP; by default neither.
TEST(DeployChartTest, ServingValuesGiveTheCertificateOrPlainHttp) {
  const std::string ns = kNamespace;
  auto args_of = [&](const Objects& chart, const std::string& name) {
    return Get(chart, "Deployment/" + ns + "/" + name)["spec"]["template"]["spec"]["containers"][0]
                                                       ["args"]
                                                           .get<std::vector<std::string>>();
  };
  ChartRelease release = LikeTheBase();
  release.set["serving.certSecret"] = "hybridjob-serving";
  const Objects with_secret = RenderChart(release);
  ASSERT_THAT(with_secret.errors, IsEmpty());
  for (const std::string name : {"hybridjob-controller", "gang-scheduler"}) {
    EXPECT_THAT(args_of(with_secret, name),
                ::testing::IsSupersetOf({"--tls-cert-file=/etc/hybridjob/serving/tls.crt",
                                         "--tls-private-key-file=/etc/hybridjob/serving/tls.key"}))
        << name;
    const json& spec = Get(with_secret, "Deployment/" + ns + "/" + name)["spec"]["template"]["spec"];
    EXPECT_EQ(spec["volumes"].back(),
              json({{"name", "serving-cert"}, {"secret", {{"secretName", "hybridjob-serving"}}}}));
    EXPECT_EQ(spec["containers"][0]["volumeMounts"].back(),
              json({{"name", "serving-cert"},
                    {"mountPath", "/etc/hybridjob/serving"},
                    {"readOnly", true}}));
  }
  release.set.erase("serving.certSecret");
  release.set["serving.insecure"] = "true";
  const Objects insecure = RenderChart(release);
  ASSERT_THAT(insecure.errors, IsEmpty());
  for (const std::string name : {"hybridjob-controller", "gang-scheduler"}) {
    EXPECT_THAT(args_of(insecure, name), ::testing::Contains("--insecure-serving")) << name;
    EXPECT_THAT(args_of(RenderChart(LikeTheBase()), name),
                ::testing::Not(::testing::Contains("--insecure-serving")))
        << name;
  }
}

// --- the renderer itself ------------------------------------------------------

TEST(ChartRenderTest, SubstitutesTrimsAndEvaluatesConditions) {
  const YAML::Node values = YAML::Load("a: {b: 7, on: true, off: false, empty: ''}\nname: x\n");
  ChartRelease release;
  release.name = "rel";
  release.namespace_name = "ns1";
  const std::string text =
      "k: {{ .Values.a.b }}\n"
      "{{- if .Values.a.on }}\n"
      "on: {{ .Release.Name }}/{{ .Release.Namespace }}\n"
      "{{- end }}\n"
      "{{- if .Values.a.off }}\n"
      "off: 1\n"
      "{{- end }}\n"
      "{{- if .Values.a.empty }}\n"
      "empty: 1\n"
      "{{- end }}\n"
      "n: {{ .Values.name -}}   \n"
      "  !\n";
  RenderedTemplate rendered = RenderTemplate(text, values, release);
  EXPECT_THAT(rendered.errors, IsEmpty());
  EXPECT_EQ(rendered.text, "k: 7\non: rel/ns1\nn: x!\n");
  EXPECT_EQ(rendered.value_paths,
            (std::set<std::string>{"a.b", "a.on", "a.off", "a.empty", "name"}));
}

TEST(ChartRenderTest, RefusesWhatItCannotRenderFaithfully) {
  const YAML::Node values = YAML::Load("a: {b: 1, list: [1, 2]}\n");
  auto errors = [&](const std::string& text) {
    return RenderTemplate(text, values, ChartRelease{}).errors;
  };
  EXPECT_THAT(errors("{{ .Values.a.missing }}"),
              ::testing::ElementsAre(::testing::HasSubstr("not in values.yaml")));
  EXPECT_THAT(errors("{{ .Values.a.b | quote }}"),
              ::testing::ElementsAre(::testing::HasSubstr("unsupported template action")));
  EXPECT_THAT(errors("{{ include \"x\" . }}"),
              ::testing::ElementsAre(::testing::HasSubstr("unsupported")));
  EXPECT_THAT(errors("{{ .Values.a.list }}"),
              ::testing::ElementsAre(::testing::HasSubstr("not a single value")));
  EXPECT_THAT(errors("{{ if .Values.a.b }}x"),
              ::testing::ElementsAre(::testing::HasSubstr("never closed")));
  EXPECT_THAT(errors("x{{ end }}"), ::testing::ElementsAre(::testing::HasSubstr("without")));
  EXPECT_THAT(errors("{{ else }}"), ::testing::ElementsAre(::testing::HasSubstr("unsupported")));
  EXPECT_THAT(errors("{{ .Values.a.b"), ::testing::ElementsAre(::testing::HasSubstr("closed")));
}

// --- the guides ---------------------------------------------------------------

// The YAML code blocks of a Markdown file.
std::vector<std::string> YamlBlocks(const std::string& markdown) {
  std::vector<std::string> blocks;
  std::istringstream lines(markdown);
  std::string block;
  bool inside = false;
  for (std::string line; std::getline(lines, line);) {
    if (!inside && line == "```yaml") {
      inside = true;
      block.clear();
    } else if (inside && line == "```") {
      inside = false;
      blocks.push_back(block);
    } else if (inside) {
      block += line + "\n";
    }
  }
  return blocks;
}

// The "every field" reference and the runnable examples of the guide; the
// manifests it shows being refused are refused.
TEST(DeployDocsTest, UserGuideManifestsAreValidHybridJobs) {
  int jobs = 0;
  const json crd = YamlToJson(ReadFile(SourcePath(kCrd)));
  const json& schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  const std::string guide = ReadFile(SourcePath("docs/user-guide.md"));
  auto marked = hybridjob::testing::ExtractGuideBlocks(guide);
  ASSERT_TRUE(marked.ok()) << marked.status().ToString();
  std::set<std::string> refused;
  for (const hybridjob::testing::GuideBlock& block : *marked) {
    if (block.kind == hybridjob::testing::GuideBlock::Kind::kRefused) {
      refused.insert(block.text);
    }
  }
  EXPECT_GE(refused.size(), 2u);
  for (const std::string& block : YamlBlocks(guide)) {
    const json object = YamlToJson(block);
    if (!object.is_object() || object.value("kind", "") != "HybridJob") {
      continue;
    }
    if (refused.contains(block)) {
      auto parsed = api::ParseHybridJob(object, {.reject_unknown_fields = true});
      EXPECT_TRUE(!parsed.ok() || !SchemaProblems(object, schema).empty()) << block;
      continue;
    }
    ++jobs;
    auto parsed = api::ParseHybridJob(object, {.reject_unknown_fields = true});
    ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
    api::HybridJob job = *parsed;
    api::ApplyDefaults(job);
    EXPECT_THAT(api::JoinErrors(api::Validate(job)), IsEmpty());
    EXPECT_THAT(SchemaProblems(object, schema), IsEmpty());
  }
  EXPECT_GE(jobs, 2);
}

TEST(DeployDocsTest, SchedulerConfigExampleParses) {
  const auto blocks = YamlBlocks(ReadFile(SourcePath("docs/scheduler-config.md")));
  ASSERT_FALSE(blocks.empty());
  auto config = scheduler::ParseSchedulerConfig(blocks.front());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(config->leader_election.enabled);
}

// --- the Grafana dashboard -------------------------------------------------------

// Every series a panel plots is a metric the binaries export, as
// docs/admin-guide.md documents them (histograms through _bucket).
TEST(DeployGrafanaTest, PanelsPlotDocumentedMetrics) {
  const json dashboard =
      json::parse(ReadFile(SourcePath("deploy/grafana/hybridjob-dashboard.json")));
  EXPECT_EQ(dashboard["uid"], "hybridjob");
  ASSERT_TRUE(dashboard["panels"].is_array());
  EXPECT_GE(dashboard["panels"].size(), 10u);
  const std::string guide = ReadFile(SourcePath("docs/admin-guide.md"));
  const std::regex metric("hybridjob_[a-z_]+");
  std::set<std::string> plotted;
  std::set<int> ids;
  for (const json& panel : dashboard["panels"]) {
    EXPECT_TRUE(ids.insert(panel["id"].get<int>()).second) << "panel ids are unique";
    EXPECT_EQ(panel["datasource"]["uid"], "${datasource}") << panel["title"];
    ASSERT_FALSE(panel["targets"].empty()) << panel["title"];
    for (const json& target : panel["targets"]) {
      const std::string expr = target["expr"];
      for (auto it = std::sregex_iterator(expr.begin(), expr.end(), metric);
           it != std::sregex_iterator(); ++it) {
        std::string name = it->str();
        for (const char* suffix : {"_bucket", "_sum", "_count"}) {
          if (name.size() > std::strlen(suffix) && name.ends_with(suffix)) {
            name.resize(name.size() - std::strlen(suffix));
          }
        }
        plotted.insert(name);
        EXPECT_NE(guide.find("`" + name + "`"), std::string::npos)
            << name << " (panel " << panel["title"] << ") is not documented";
      }
    }
  }
  for (const char* needed :
       {"hybridjob_jobs", "hybridjob_queue_allocated", "hybridjob_queue_pending_groups",
        "hybridjob_scheduler_allocatable", "hybridjob_scheduler_gang_latency_seconds"}) {
    EXPECT_TRUE(plotted.contains(needed)) << needed;
  }
}

// --- the Dockerfiles ------------------------------------------------------------

TEST(DeployDockerfileTest, MultiStageDebianNonRootWithoutRegistryHost) {
  for (const std::string binary : {"hybridjob-controller", "gang-scheduler"}) {
    SCOPED_TRACE(binary);
    const std::string path = SourcePath("deploy/docker/" + binary + ".Dockerfile");
    ASSERT_TRUE(std::filesystem::is_regular_file(path)) << path;
    const std::string text = ReadFile(path);
    std::vector<std::string> from;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("FROM ", 0) == 0) {
        std::istringstream words(line.substr(5));
        std::string image;
        words >> image;
        from.push_back(image);
      }
    }
    EXPECT_THAT(from, ::testing::ElementsAre("debian:bookworm", "debian:bookworm-slim"));
    EXPECT_THAT(text, ::testing::HasSubstr("\nUSER 65532:65532\n"));
    EXPECT_THAT(text, ::testing::HasSubstr("--target " + binary));
    EXPECT_THAT(text, ::testing::HasSubstr("ENTRYPOINT [\"/usr/local/bin/" + binary + "\"]"));
  }
}

// The images ship the flavour `make test` builds and tests: the same build
// type and optimisation (the Makefile adds only line tables, -g1).
TEST(DeployDockerfileTest, ImagesBuildTheFlavourMakeTestBuilds) {
  const std::string makefile = ReadFile(SourcePath("Makefile"));
  EXPECT_THAT(makefile, ::testing::HasSubstr("\nBUILD_TYPE ?= Release\n"));
  EXPECT_THAT(makefile,
              ::testing::HasSubstr("-DCMAKE_CXX_FLAGS_RELEASE=\"-O2 $(DEBUG_INFO) -DNDEBUG\""));
  for (const std::string binary : {"hybridjob-controller", "gang-scheduler"}) {
    SCOPED_TRACE(binary);
    EXPECT_THAT(ReadFile(SourcePath("deploy/docker/" + binary + ".Dockerfile")),
                ::testing::HasSubstr(
                    "-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=\"-O2 -DNDEBUG\""));
  }
}

}  // namespace
}  // namespace hybridjob::testing
