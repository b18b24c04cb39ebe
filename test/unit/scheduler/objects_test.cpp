#include <map>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include <hybridjob/scheduler/objects/objects.h>

namespace hybridjob::scheduler {
namespace {

using nlohmann::json;

constexpr const char* kWorkerPod = R"({
  "apiVersion": "v1",
  "kind": "Pod",
  "metadata": {
    "name": "mnist-worker-3",
    "namespace": "ml",
    "uid": "7f1c",
    "creationTimestamp": "2024-05-01T12:00:00Z",
    "labels": {
      "batch.hybridjob.io/job-name": "mnist",
      "batch.hybridjob.io/role": "worker",
      "batch.hybridjob.io/index": "3",
      "app": "mnist"
    },
    "annotations": {
      "batch.hybridjob.io/group-spec": "{\"roles\":[{\"name\":\"ps\",\"min\":1,\"max\":1,\"priority\":1},{\"name\":\"worker\",\"min\":2,\"max\":8,\"priority\":0}],\"queue\":\"research\",\"scheduleTimeoutSeconds\":120}"
    }
  },
  "spec": {
    "schedulerName": "gang-scheduler",
    "priority": 1000,
    "nodeSelector": {"accelerator": "a100"},
    "containers": [
      {"name": "main", "resources": {"requests": {"cpu": "2", "memory": "8Gi"},
                                     "limits": {"nvidia.com/gpu": "1", "memory": "16Gi"}},
       "ports": [{"containerPort": 2222}, {"containerPort": 8080, "hostPort": 8080},
                 {"containerPort": 53, "hostPort": 5353, "protocol": "UDP", "hostIP": "10.0.0.1"}]},
      {"name": "sidecar", "resources": {"requests": {"cpu": "500m", "memory": "512Mi"}}}
    ],
    "initContainers": [
      {"name": "fetch", "resources": {"requests": {"cpu": "4", "memory": "1Gi"}}}
    ],
    "overhead": {"cpu": "100m", "memory": "64Mi"},
    "tolerations": [
      {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
      {"key": "dedicated", "operator": "Equal", "value": "ml"},
      {"operator": "Exists"}
    ],
    "affinity": {
      "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
          "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]},
                                  {"key": "gpu-count", "operator": "Gt", "values": ["3"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-9"]}]}
          ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
          {"weight": 20, "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}}
        ]
      },
      "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
          {"labelSelector": {"matchLabels": {"batch.hybridjob.io/role": "ps"}},
           "topologyKey": "topology.kubernetes.io/zone"}
        ]
      },
      "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
          {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["mnist"]}]},
           "namespaces": ["ml", "shared"],
           "topologyKey": "kubernetes.io/hostname"}
        ]
      }
    }
  },
  "status": {"phase": "Pending"}
})";

TEST(ParsePodTest, ReadsEverySchedulingField) {
  Result<PodInfo> parsed = ParsePodJson(kWorkerPod);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const PodInfo& pod = *parsed;
  EXPECT_EQ(pod.namespace_name, "ml");
  EXPECT_EQ(pod.name, "mnist-worker-3");
  EXPECT_EQ(pod.Key(), "ml/mnist-worker-3");
  EXPECT_EQ(pod.uid, "7f1c");
  EXPECT_EQ(pod.scheduler_name, "gang-scheduler");
  EXPECT_EQ(pod.node_name, "");
  EXPECT_EQ(pod.phase, "Pending");
  EXPECT_EQ(pod.priority, 1000);
  EXPECT_EQ(pod.creation_time.time_since_epoch().count(), 1714564800);
  EXPECT_EQ(*pod.labels.Find("app"), "mnist");

  // Containers: cpu 2 + 0.5 = 2.5 < init 4 -> 4, plus overhead 0.1.
  EXPECT_EQ(pod.requests.milli_cpu, 4100);
  // Memory: 8Gi + 512Mi > init 1Gi, plus 64Mi overhead.
  EXPECT_EQ(pod.requests.memory, (int64_t{8} << 30) + (int64_t{512} << 20) + (int64_t{64} << 20));
  // The GPU has only a limit: requested at the limit, as API defaulting does.
  EXPECT_EQ(pod.requests.Scalar("nvidia.com/gpu"), 1);
  EXPECT_EQ(pod.requests.pods, 1);

  EXPECT_EQ(*pod.node_selector.Find("accelerator"), "a100");
  ASSERT_TRUE(pod.required_node_affinity.has_value());
  ASSERT_EQ(pod.required_node_affinity->size(), 2u);
  const NodeSelectorTerm& first = (*pod.required_node_affinity)[0];
  ASSERT_EQ(first.match_expressions.size(), 2u);
  EXPECT_EQ(first.match_expressions[1].op, SelectorOperator::kGt);
  EXPECT_EQ((*pod.required_node_affinity)[1].match_fields[0].values,
            std::vector<std::string>{"node-9"});
  ASSERT_EQ(pod.preferred_node_affinity.size(), 1u);
  EXPECT_EQ(pod.preferred_node_affinity[0].weight, 20);

  ASSERT_EQ(pod.tolerations.size(), 3u);
  EXPECT_EQ(pod.tolerations[0].op, TolerationOperator::kExists);
  EXPECT_EQ(pod.tolerations[0].effect, TaintEffect::kNoSchedule);
  EXPECT_EQ(pod.tolerations[1].op, TolerationOperator::kEqual);
  EXPECT_FALSE(pod.tolerations[1].effect.has_value());
  EXPECT_TRUE(pod.tolerations[2].key.empty());

  ASSERT_EQ(pod.required_pod_affinity.size(), 1u);
  EXPECT_EQ(pod.required_pod_affinity[0].topology_key, "topology.kubernetes.io/zone");
  ASSERT_TRUE(pod.required_pod_affinity[0].label_selector.has_value());
  EXPECT_EQ(pod.required_pod_affinity[0].label_selector->requirements[0].key,
            "batch.hybridjob.io/role");
  ASSERT_EQ(pod.required_pod_anti_affinity.size(), 1u);
  EXPECT_EQ(pod.required_pod_anti_affinity[0].namespaces,
            (std::vector<std::string>{"ml", "shared"}));
  EXPECT_EQ(pod.required_pod_anti_affinity[0].label_selector->requirements[0].op,
            SelectorOperator::kNotIn);

  ASSERT_EQ(pod.host_ports.size(), 2u);
  EXPECT_EQ(pod.host_ports[0], (HostPort{"0.0.0.0", "TCP", 8080}));
  EXPECT_EQ(pod.host_ports[1], (HostPort{"10.0.0.1", "UDP", 5353}));

  EXPECT_EQ(pod.job_name, "mnist");
  EXPECT_EQ(pod.role, "worker");
  EXPECT_EQ(pod.index, 3);
  EXPECT_EQ(pod.run, 0);
  ASSERT_TRUE(pod.group_spec.has_value()) << pod.group_spec_error;
  ASSERT_EQ(pod.group_spec->roles.size(), 2u);
  EXPECT_EQ(pod.group_spec->roles[0], (GroupRole{"ps", 1, 1, 1}));
  EXPECT_EQ(pod.group_spec->roles[1], (GroupRole{"worker", 2, 8, 0}));
  EXPECT_EQ(pod.group_spec->queue, "research");
  EXPECT_EQ(pod.group_spec->schedule_timeout_seconds, 120);
}

TEST(ParsePodTest, DefaultsForAMinimalPod) {
  Result<PodInfo> parsed = ParsePodJson(R"({"metadata":{"name":"p"},"spec":{"containers":[{}]}})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->namespace_name, "default");
  EXPECT_EQ(parsed->scheduler_name, "default-scheduler");
  EXPECT_EQ(parsed->phase, "Pending");
  EXPECT_EQ(parsed->index, -1);
  EXPECT_EQ(parsed->run, 0) << "no run label: run 0";
  EXPECT_TRUE(parsed->job_name.empty());
  EXPECT_FALSE(parsed->group_spec.has_value());
  EXPECT_FALSE(parsed->required_node_affinity.has_value());
  ResourceList expected;
  expected.pods = 1;
  EXPECT_EQ(parsed->requests, expected);
}

TEST(ParsePodTest, ClaimsOfPersistentAndEphemeralVolumes) {
  Result<PodInfo> parsed = ParsePodJson(R"({"metadata":{"name":"job-worker-0"},"spec":{
    "containers":[{}],
    "volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"job-data"}},
               {"name":"config","configMap":{"name":"job"}},
               {"name":"again","persistentVolumeClaim":{"claimName":"job-data","readOnly":true}},
               {"name":"scratch","ephemeral":{"volumeClaimTemplate":{"spec":{}}}}]}})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->claims, (std::vector<std::string>{"job-data", "job-worker-0-scratch"}));

  Result<PodInfo> nameless = ParsePodJson(R"({"metadata":{"name":"p"},"spec":{
    "containers":[{}],"volumes":[{"name":"data","persistentVolumeClaim":{}}]}})");
  ASSERT_FALSE(nameless.ok());
  EXPECT_NE(nameless.status().message().find("spec.volumes[0].persistentVolumeClaim.claimName"),
            std::string::npos)
      << nameless.status().message();
}

TEST(ParsePodTest, BoundAndTerminalPods) {
  Result<PodInfo> parsed = ParsePodJson(
      R"({"metadata":{"name":"p","namespace":"a"},"spec":{"nodeName":"n1"},
          "status":{"phase":"Succeeded"}})");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->node_name, "n1");
  EXPECT_TRUE(parsed->IsTerminal());
}

TEST(ParsePodTest, SidecarInitContainersAddToTheRequest) {
  // Sidecar (restartPolicy Always) runs beside the app containers; the plain
  // init container runs beside the sidecar started before it.
  Result<PodInfo> parsed = ParsePodJson(R"({"metadata":{"name":"p"},"spec":{
      "initContainers":[
        {"name":"proxy","restartPolicy":"Always","resources":{"requests":{"cpu":"1"}}},
        {"name":"migrate","resources":{"requests":{"cpu":"3"}}}],
      "containers":[{"name":"app","resources":{"requests":{"cpu":"2"}}}]}})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  // max(app 2 + sidecar 1 = 3, migrate 3 + sidecar 1 = 4) = 4 cores.
  EXPECT_EQ(parsed->requests.milli_cpu, 4000);
}

TEST(ParsePodTest, InitContainerScalarFloor) {
  Result<PodInfo> parsed = ParsePodJson(R"({"metadata":{"name":"p"},"spec":{
      "initContainers":[{"resources":{"requests":{"nvidia.com/gpu":"2"}}}],
      "containers":[{"resources":{"requests":{"nvidia.com/gpu":"1"}}},
                    {"resources":{"requests":{"nvidia.com/gpu":"0"}}}]}})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->requests.Scalar("nvidia.com/gpu"), 2);
}

TEST(ParsePodTest, BadGroupSpecIsRecordedNotFatal) {
  Result<PodInfo> parsed = ParsePodJson(R"({"metadata":{"name":"p",
      "labels":{"batch.hybridjob.io/job-name":"j","batch.hybridjob.io/index":"x",
                "batch.hybridjob.io/run":"-2"},
      "annotations":{"batch.hybridjob.io/group-spec":"{\"roles\":[]}"}}})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->job_name, "j");
  EXPECT_EQ(parsed->index, -1);  // "x" is not an index
  EXPECT_EQ(parsed->run, -1);    // nor "-2" a run
  EXPECT_FALSE(parsed->group_spec.has_value());
  EXPECT_NE(parsed->group_spec_error.find("role"), std::string::npos);
}

TEST(ParsePodTest, EmptyNamespaceSelectorMeansAllNamespaces) {
  Result<PodInfo> parsed = ParsePodJson(R"({"metadata":{"name":"p"},"spec":{"affinity":{
      "podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
        {"labelSelector":{},"namespaceSelector":{},"topologyKey":"zone"}]}}}})");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->required_pod_anti_affinity.size(), 1u);
  EXPECT_TRUE(parsed->required_pod_anti_affinity[0].all_namespaces);
  EXPECT_TRUE(parsed->required_pod_anti_affinity[0].label_selector->requirements.empty());
}

class BadPodTest : public ::testing::TestWithParam<std::string> {};

TEST_P(BadPodTest, GivesInvalidArgumentNotACrash) {
  Result<PodInfo> parsed = ParsePodJson(GetParam());
  ASSERT_FALSE(parsed.ok()) << GetParam();
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(parsed.status().message().empty());
}

INSTANTIATE_TEST_SUITE_P(
    Malformed, BadPodTest,
    ::testing::Values(
        "", "{", "[]", "42", "null", R"({"metadata":{}})", R"({"metadata":{"name":7}})",
        R"({"metadata":"x"})", R"({"metadata":{"name":"p","labels":{"a":1}}})",
        R"({"metadata":{"name":"p","creationTimestamp":"yesterday"}})",
        R"({"metadata":{"name":"p"},"spec":[]})",
        R"({"metadata":{"name":"p"},"spec":{"containers":{}}})",
        R"({"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"requests":{"cpu":"x"}}}]}})",
        R"({"metadata":{"name":"p"},"spec":{"containers":[{"resources":{"requests":{"cpu":"-1"}}}]}})",
        R"({"metadata":{"name":"p"},"spec":{"priority":"high"}})",
        R"({"metadata":{"name":"p"},"spec":{"priority":99999999999}})",
        R"({"metadata":{"name":"p"},"spec":{"tolerations":[{"operator":"Maybe"}]}})",
        R"({"metadata":{"name":"p"},"spec":{"tolerations":[{"effect":"Sometimes"}]}})",
        R"({"metadata":{"name":"p"},"spec":{"containers":[{"ports":[{"hostPort":"80"}]}]}})",
        R"({"metadata":{"name":"p"},"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Near"}]}]}}}}})",
        R"({"metadata":{"name":"p"},"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.uid","operator":"In","values":["x"]}]}]}}}}})",
        R"({"metadata":{"name":"p"},"spec":{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{}}]}}}})",
        R"({"metadata":{"name":"p"},"spec":{"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchExpressions":[{"key":"a","operator":"Gt","values":["1"]}]},"topologyKey":"z"}]}}}})",
        R"({"metadata":{"name":"p"},"spec":{"affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{},"namespaceSelector":{"matchLabels":{"team":"a"}},"topologyKey":"z"}]}}}})"));

TEST(ParsePodTest, ErrorNamesTheField) {
  Result<PodInfo> parsed = ParsePodJson(
      R"({"metadata":{"name":"p"},"spec":{"containers":[{},{"resources":{"requests":{"memory":"lots"}}}]}})");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("spec.containers[1].resources.requests"),
            std::string::npos)
      << parsed.status().message();
}

constexpr const char* kGpuNode = R"({
  "metadata": {"name": "gpu-7", "labels": {"zone": "a", "accelerator": "a100"}},
  "spec": {"unschedulable": true,
           "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                      {"key": "spot", "effect": "PreferNoSchedule"}]},
  "status": {
    "capacity": {"cpu": "64", "memory": "512Gi", "pods": "110", "nvidia.com/gpu": "8"},
    "allocatable": {"cpu": "63500m", "memory": "500Gi", "pods": "110", "nvidia.com/gpu": "8",
                    "ephemeral-storage": "100Gi"},
    "conditions": [{"type": "MemoryPressure", "status": "False"},
                   {"type": "Ready", "status": "True"}]
  }
})";

TEST(ParseNodeTest, ReadsEverySchedulingField) {
  Result<NodeInfo> parsed = ParseNodeJson(kGpuNode);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const NodeInfo& node = *parsed;
  EXPECT_EQ(node.name, "gpu-7");
  EXPECT_EQ(*node.labels.Find("zone"), "a");
  EXPECT_EQ(node.allocatable.milli_cpu, 63500);
  EXPECT_EQ(node.allocatable.memory, int64_t{500} << 30);
  EXPECT_EQ(node.allocatable.ephemeral_storage, int64_t{100} << 30);
  EXPECT_EQ(node.allocatable.pods, 110);
  EXPECT_EQ(node.allocatable.Scalar("nvidia.com/gpu"), 8);
  ASSERT_EQ(node.taints.size(), 2u);
  EXPECT_EQ(node.taints[0], (Taint{"nvidia.com/gpu", "present", TaintEffect::kNoSchedule}));
  EXPECT_EQ(node.taints[1].effect, TaintEffect::kPreferNoSchedule);
  EXPECT_TRUE(node.unschedulable);
  EXPECT_TRUE(node.ready);
}

TEST(ParseNodeTest, ReadinessAndCapacityFallback) {
  Result<NodeInfo> not_ready = ParseNodeJson(R"({"metadata":{"name":"n"},"status":{
      "capacity":{"cpu":"4"},"conditions":[{"type":"Ready","status":"Unknown"}]}})");
  ASSERT_TRUE(not_ready.ok());
  EXPECT_FALSE(not_ready->ready);
  EXPECT_EQ(not_ready->allocatable.milli_cpu, 4000);

  Result<NodeInfo> no_conditions = ParseNodeJson(R"({"metadata":{"name":"n"}})");
  ASSERT_TRUE(no_conditions.ok());
  EXPECT_FALSE(no_conditions->ready);
}

TEST(ParseNodeTest, RefusesMalformedNodes) {
  for (const char* text :
       {"", "[]", R"({"metadata":{}})", R"({"metadata":{"name":"n"},"spec":{"taints":[{}]}})",
        R"({"metadata":{"name":"n"},"spec":{"taints":[{"key":"k","effect":"Never"}]}})",
        R"({"metadata":{"name":"n"},"spec":{"unschedulable":"yes"}})",
        R"({"metadata":{"name":"n"},"status":{"allocatable":{"cpu":"many"}}})",
        R"({"metadata":{"name":"n"},"status":{"conditions":{}}})"}) {
    Result<NodeInfo> parsed = ParseNodeJson(text);
    EXPECT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
  }
}

TEST(ParseTimestampTest, Rfc3339Forms) {
  auto seconds = [](std::string_view text) {
    Result<Timestamp> parsed = ParseTimestamp(text);
    EXPECT_TRUE(parsed.ok()) << text;
    return parsed.ok() ? parsed->time_since_epoch().count() : -1;
  };
  EXPECT_EQ(seconds("1970-01-01T00:00:00Z"), 0);
  EXPECT_EQ(seconds("2024-05-01T12:00:00Z"), 1714564800);
  EXPECT_EQ(seconds("2024-05-01T12:00:00.123456Z"), 1714564800);
  EXPECT_EQ(seconds("2024-05-01T14:00:00+02:00"), 1714564800);
  EXPECT_EQ(seconds("2024-05-01T11:30:00-00:30"), 1714564800);
  EXPECT_EQ(seconds("2024-02-29T00:00:00Z"), 1709164800);
  for (const char* bad : {"", "2024-05-01", "2024-05-01 12:00:00Z", "2024-13-01T00:00:00Z",
                          "2023-02-29T00:00:00Z", "2024-05-01T25:00:00Z", "2024-05-01T12:00:00",
                          "2024-05-01T12:00:00.Z", "2024-05-01T12:00:00+0200"}) {
    EXPECT_FALSE(ParseTimestamp(bad).ok()) << bad;
  }
}

TEST(SelectorTest, RequirementOperators) {
  LabelMap labels{{"zone", "a"}, {"gpus", "8"}, {"name", "x"}};
  auto matches = [&labels](SelectorOperator op, std::string key, std::vector<std::string> values) {
    return SelectorRequirement{std::move(key), op, std::move(values)}.Matches(labels);
  };
  EXPECT_TRUE(matches(SelectorOperator::kIn, "zone", {"a", "b"}));
  EXPECT_FALSE(matches(SelectorOperator::kIn, "zone", {"b"}));
  EXPECT_FALSE(matches(SelectorOperator::kIn, "missing", {"a"}));
  EXPECT_FALSE(matches(SelectorOperator::kIn, "zone", {}));
  EXPECT_TRUE(matches(SelectorOperator::kNotIn, "zone", {"b"}));
  EXPECT_FALSE(matches(SelectorOperator::kNotIn, "zone", {"a"}));
  EXPECT_TRUE(matches(SelectorOperator::kNotIn, "missing", {"a"}));
  EXPECT_TRUE(matches(SelectorOperator::kExists, "zone", {}));
  EXPECT_FALSE(matches(SelectorOperator::kExists, "missing", {}));
  EXPECT_TRUE(matches(SelectorOperator::kDoesNotExist, "missing", {}));
  EXPECT_FALSE(matches(SelectorOperator::kDoesNotExist, "zone", {}));
  EXPECT_TRUE(matches(SelectorOperator::kGt, "gpus", {"4"}));
  EXPECT_FALSE(matches(SelectorOperator::kGt, "gpus", {"8"}));
  EXPECT_TRUE(matches(SelectorOperator::kLt, "gpus", {"9"}));
  EXPECT_FALSE(matches(SelectorOperator::kLt, "gpus", {"8"}));
  EXPECT_FALSE(matches(SelectorOperator::kGt, "name", {"1"}));       // not an integer
  EXPECT_FALSE(matches(SelectorOperator::kGt, "gpus", {"1", "2"}));  // needs one value
  EXPECT_FALSE(matches(SelectorOperator::kLt, "missing", {"1"}));
}

TEST(SelectorTest, LabelSelectorAndAffinityTermNamespaces) {
  LabelMap labels{{"app", "web"}, {"tier", "front"}};
  EXPECT_TRUE(LabelSelector{}.Matches(labels));
  LabelSelector selector{{SelectorRequirement{"app", SelectorOperator::kIn, {"web"}},
                          SelectorRequirement{"tier", SelectorOperator::kNotIn, {"back"}}}};
  EXPECT_TRUE(selector.Matches(labels));
  selector.requirements.push_back(SelectorRequirement{"x", SelectorOperator::kExists, {}});
  EXPECT_FALSE(selector.Matches(labels));

  PodAffinityTerm term;
  term.topology_key = "zone";
  EXPECT_FALSE(term.Selects("ns", labels, "ns"));  // no selector: nothing
  term.label_selector = LabelSelector{};
  EXPECT_TRUE(term.Selects("ns", labels, "ns"));
  EXPECT_FALSE(term.Selects("other", labels, "ns"));  // own namespace by default
  term.namespaces = {"other"};
  EXPECT_TRUE(term.Selects("other", labels, "ns"));
  EXPECT_FALSE(term.Selects("ns", labels, "ns"));
  term.all_namespaces = true;
  EXPECT_TRUE(term.Selects("anything", labels, "ns"));
}

TEST(TolerationTest, MatchesLikeKubernetes) {
  Taint taint{"dedicated", "ml", TaintEffect::kNoSchedule};
  EXPECT_TRUE((Toleration{"dedicated", TolerationOperator::kEqual, "ml", {}}).Tolerates(taint));
  EXPECT_FALSE((Toleration{"dedicated", TolerationOperator::kEqual, "web", {}}).Tolerates(taint));
  EXPECT_TRUE((Toleration{"dedicated", TolerationOperator::kExists, "", {}}).Tolerates(taint));
  EXPECT_TRUE((Toleration{"", TolerationOperator::kExists, "", {}}).Tolerates(taint));
  EXPECT_FALSE((Toleration{"", TolerationOperator::kEqual, "ml", {}}).Tolerates(taint));
  EXPECT_TRUE((Toleration{"dedicated", TolerationOperator::kEqual, "ml", TaintEffect::kNoSchedule})
                  .Tolerates(taint));
  EXPECT_FALSE((Toleration{"dedicated", TolerationOperator::kEqual, "ml", TaintEffect::kNoExecute})
                   .Tolerates(taint));
  EXPECT_FALSE((Toleration{"other", TolerationOperator::kExists, "", {}}).Tolerates(taint));
}

TEST(HostPortTest, Conflicts) {
  HostPort any{"0.0.0.0", "TCP", 80};
  EXPECT_TRUE(any.ConflictsWith(HostPort{"10.0.0.1", "TCP", 80}));
  EXPECT_TRUE((HostPort{"10.0.0.1", "TCP", 80}).ConflictsWith(any));
  EXPECT_FALSE((HostPort{"10.0.0.1", "TCP", 80}).ConflictsWith(HostPort{"10.0.0.2", "TCP", 80}));
  EXPECT_FALSE(any.ConflictsWith(HostPort{"0.0.0.0", "UDP", 80}));
  EXPECT_FALSE(any.ConflictsWith(HostPort{"0.0.0.0", "TCP", 81}));
}

TEST(LabelMapTest, SortedLookupAndReplace) {
  LabelMap labels{{"b", "2"}, {"a", "1"}};
  labels.Set("c", "3");
  labels.Set("a", "one");
  ASSERT_EQ(labels.size(), 3u);
  EXPECT_EQ(labels.entries()[0].first, "a");
  EXPECT_EQ(*labels.Find("a"), "one");
  EXPECT_EQ(labels.Find("z"), nullptr);
  EXPECT_TRUE(labels.Contains("c"));
}

TEST(LabelMapTest, TakesAMapAsItIs) {
  std::map<std::string, std::string> entries{{"zone", "b"}, {"app", "x"}, {"tier", ""}};
  const LabelMap labels(std::move(entries));
  EXPECT_EQ(labels, (LabelMap{{"tier", ""}, {"app", "x"}, {"zone", "b"}}));
  ASSERT_NE(labels.Find("tier"), nullptr);
  EXPECT_EQ(*labels.Find("tier"), "");
  EXPECT_EQ(labels.Find("other"), nullptr);
  EXPECT_TRUE(LabelMap(std::map<std::string, std::string>{}).empty());
}

}  // namespace
}  // namespace hybridjob::scheduler
