#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/shell/config.h>
#include <hybridjob/scheduler/shell/config_watcher.h>

namespace hybridjob::scheduler {
namespace {

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The error message of a config that must be refused.
std::string Refusal(const std::string& yaml) {
  Result<SchedulerConfig> config = ParseSchedulerConfig(yaml);
  EXPECT_FALSE(config.ok()) << yaml;
  return config.ok() ? "" : config.status().message();
}

TEST(SchedulerConfigTest, EmptyFileMeansEveryDefault) {
  for (const char* text : {"", "\n", "# only a comment\n", "~"}) {
    Result<SchedulerConfig> config = ParseSchedulerConfig(text);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    EXPECT_EQ(config->scheduler_name, "gang-scheduler");
    EXPECT_THAT(config->gpu_resources.Names(), ElementsAre("nvidia.com/gpu"));
    EXPECT_EQ(config->scoring, PackingPolicy::kGpuBinPacking);
    EXPECT_EQ(config->percentage_of_nodes_to_score, 0);
    EXPECT_EQ(config->gang_backoff_seconds, 5);
    EXPECT_EQ(config->client_qps, 500);
    EXPECT_EQ(config->client_burst, 1000);
    EXPECT_EQ(config->bind_concurrency, 16);
    EXPECT_FALSE(config->leader_election.enabled);
    EXPECT_EQ(config->leader_election.lease_name, "gang-scheduler");
    EXPECT_EQ(config->leader_election.lease_namespace, "hybridjob-system");
    EXPECT_EQ(config->leader_election.lease_duration, std::chrono::seconds(15));
    EXPECT_EQ(config->leader_election.renew_deadline, std::chrono::seconds(10));
    EXPECT_EQ(config->leader_election.retry_period, std::chrono::seconds(2));
    EXPECT_EQ(config->metrics_addr, "0.0.0.0:10261");
    EXPECT_EQ(config->health_addr, "0.0.0.0:10262");
    EXPECT_TRUE(config->queues.empty());
    EXPECT_EQ(config->reclaim, ReclaimSettings{});
    EXPECT_EQ(config->preemption, PreemptionSettings{});
    EXPECT_EQ(config->starvation, StarvationSettings{});
  }
}

TEST(SchedulerConfigTest, ReadsEveryField) {
  Result<SchedulerConfig> config = ParseSchedulerConfig(R"(
schedulerName: batch-scheduler
gpuResources: [nvidia.com/gpu, amd.com/gpu]
scoring: spread
percentageOfNodesToScore: 30
gangBackoffSeconds: 10
clientQPS: 250.5
clientBurst: 400
bindConcurrency: 8
volumeBindTimeoutSeconds: 120
metricsAddr: 127.0.0.1:9000
healthAddr: "0"
dashboardAddr: 127.0.0.1:9002
leaderElection:
  enabled: true
  leaseName: sched
  leaseNamespace: kube-system
  leaseDuration: 30s
  renewDeadline: 20s
  retryPeriod: 1500ms
queues:
  - name: research
    weight: 2.5
    guaranteed:
      nvidia.com/gpu: 16
      cpu: 64
      memory: 512Gi
    max:
      nvidia.com/gpu: 32
      cpu: 128
  - name: default
reclaim:
  enabled: false
  growth: false
  maxGroupsPerCycle: 3
preemption:
  enabled: true
starvation:
  maxWaitSeconds: 1200
  maxReservedGroups: 2
topology:
  levels: [topology.kubernetes.io/zone, example.com/rack, kubernetes.io/hostname]
)");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->scheduler_name, "batch-scheduler");
  EXPECT_EQ(config->dashboard_addr, "127.0.0.1:9002");
  EXPECT_THAT(config->gpu_resources.Names(), ElementsAre("nvidia.com/gpu", "amd.com/gpu"));
  EXPECT_EQ(config->scoring, PackingPolicy::kSpread);
  EXPECT_EQ(config->percentage_of_nodes_to_score, 30);
  EXPECT_EQ(config->volume_bind_timeout_seconds, 120);
  EXPECT_EQ(config->gang_backoff_seconds, 10);
  EXPECT_DOUBLE_EQ(config->client_qps, 250.5);
  EXPECT_EQ(config->client_burst, 400);
  EXPECT_EQ(config->bind_concurrency, 8);
  EXPECT_EQ(config->metrics_addr, "127.0.0.1:9000");
  EXPECT_EQ(config->health_addr, "0");
  EXPECT_TRUE(config->leader_election.enabled);
  EXPECT_EQ(config->leader_election.lease_name, "sched");
  EXPECT_EQ(config->leader_election.lease_namespace, "kube-system");
  EXPECT_EQ(config->leader_election.lease_duration, std::chrono::seconds(30));
  EXPECT_EQ(config->leader_election.renew_deadline, std::chrono::seconds(20));
  EXPECT_EQ(config->leader_election.retry_period, std::chrono::milliseconds(1500));

  ASSERT_EQ(config->queues.size(), 2u);
  const QueueSpec& research = config->queues[0];
  EXPECT_EQ(research.name, "research");
  EXPECT_DOUBLE_EQ(research.weight, 2.5);
  EXPECT_EQ(research.guaranteed.Scalar("nvidia.com/gpu"), 16);
  EXPECT_EQ(research.guaranteed.milli_cpu, 64000);
  EXPECT_EQ(research.guaranteed.memory, int64_t{512} << 30);
  EXPECT_EQ(research.max.Limit("nvidia.com/gpu"), 32);
  EXPECT_EQ(research.max.Limit("cpu"), 128000);
  EXPECT_EQ(research.max.Limit("memory"), std::nullopt);
  EXPECT_EQ(config->queues[1].name, "default");
  EXPECT_DOUBLE_EQ(config->queues[1].weight, 1.0);
  EXPECT_TRUE(config->queues[1].max.empty());

  EXPECT_FALSE(config->reclaim.enabled);
  EXPECT_FALSE(config->reclaim.growth);
  EXPECT_EQ(config->reclaim.max_groups_per_cycle, 3);
  EXPECT_TRUE(config->preemption.enabled);
  EXPECT_EQ(config->starvation.max_wait_seconds, 1200);
  EXPECT_EQ(config->starvation.max_reserved_groups, 2);
  EXPECT_THAT(config->topology.levels, ElementsAre("topology.kubernetes.io/zone",
                                                   "example.com/rack", "kubernetes.io/hostname"));

  PolicyConfig policy = PolicyConfigFrom(*config);
  EXPECT_EQ(policy.queues, config->queues);
  EXPECT_EQ(policy.reclaim, config->reclaim);
  EXPECT_EQ(policy.preemption, config->preemption);
  EXPECT_EQ(policy.starvation, config->starvation);
  EXPECT_EQ(policy.scheduler_name, "batch-scheduler");
  EXPECT_TRUE(ValidatePolicyConfig(policy).ok());
}

TEST(SchedulerConfigTest, GpuResourcesMayWeighEachResource) {
  Result<SchedulerConfig> config = ParseSchedulerConfig(R"(
gpuResources:
  nvidia.com/gpu: 1
  nvidia.com/mig-1g.10gb: 0.125
  nvidia.com/mig-3g.40gb: "0.5"
)");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_THAT(
      config->gpu_resources.entries(),
      ElementsAre(GpuResource{"nvidia.com/gpu", 1000}, GpuResource{"nvidia.com/mig-1g.10gb", 125},
                  GpuResource{"nvidia.com/mig-3g.40gb", 500}));
  // The list form weighs every resource 1.
  Result<SchedulerConfig> listed = ParseSchedulerConfig("gpuResources: [nvidia.com/gpu]\n");
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->gpu_resources, GpuResources());
  EXPECT_NE(listed->gpu_resources, config->gpu_resources);
}

TEST(SchedulerConfigTest, GpuModelLabelIsALabelKeyOrEmpty) {
  EXPECT_EQ(ParseSchedulerConfig("")->gpu_model_label, "nvidia.com/gpu.product");
  EXPECT_EQ(ParseSchedulerConfig("gpuModelLabel: amd.com/gpu.device-id\n")->gpu_model_label,
            "amd.com/gpu.device-id");
  EXPECT_EQ(ParseSchedulerConfig("gpuModelLabel: \"\"\n")->gpu_model_label, "");
  EXPECT_EQ(Refusal("gpuModelLabel: \"not a key\"\n"),
            "gpuModelLabel: \"not a key\" is not a node label key");
}

TEST(SchedulerConfigTest, GuaranteeAboveMaxInTheSameUnitIsRefused) {
  // 64 cpus guaranteed, 1.5 cpus max: compared in millicores.
  EXPECT_EQ(Refusal(R"(
queues:
  - name: research
    guaranteed: {cpu: 64}
    max: {cpu: 1500m}
)"),
            "queues[0]: guaranteed cpu 64 exceeds max 1500m");
}

TEST(SchedulerConfigTest, UnknownFieldsAreRefusedEverywhere) {
  EXPECT_EQ(Refusal("schedulerNmae: x\n"), "schedulerNmae: unknown field");
  EXPECT_EQ(Refusal("leaderElection:\n  enabeld: true\n"), "leaderElection.enabeld: unknown field");
  EXPECT_EQ(Refusal("queues:\n  - name: a\n    wieght: 2\n"), "queues[0].wieght: unknown field");
  EXPECT_EQ(Refusal("reclaim:\n  grow: true\n"), "reclaim.grow: unknown field");
  EXPECT_EQ(Refusal("preemption:\n  on: true\n"), "preemption.on: unknown field");
  EXPECT_EQ(Refusal("starvation:\n  maxWait: 10\n"), "starvation.maxWait: unknown field");
  EXPECT_EQ(Refusal("topology:\n  level: [a]\n"), "topology.level: unknown field");
}

TEST(SchedulerConfigTest, BadValuesNameTheField) {
  EXPECT_EQ(Refusal("schedulerName: ''\n"), "schedulerName: must not be empty");
  EXPECT_EQ(Refusal("schedulerName: [a, b]\n"), "schedulerName: expected a single value");
  EXPECT_EQ(Refusal("percentageOfNodesToScore: many\n"),
            "percentageOfNodesToScore: \"many\" is not a valid integer");
  EXPECT_EQ(Refusal("percentageOfNodesToScore: 101\n"),
            "percentageOfNodesToScore: must be between 0 and 100");
  EXPECT_EQ(Refusal("scoring: random\n"), "scoring: \"random\" is not binpack or spread");
  EXPECT_EQ(Refusal("gangBackoffSeconds: -1\n"), "gangBackoffSeconds: must be between 0 and 3600");
  EXPECT_EQ(Refusal("clientQPS: -5\n"), "clientQPS: must not be negative");
  // YAML spells them .nan and .inf; a rate limiter can use neither.
  EXPECT_EQ(Refusal("clientQPS: .nan\n"), "clientQPS: must be a finite number");
  EXPECT_EQ(Refusal("clientQPS: .inf\n"), "clientQPS: must be a finite number");
  EXPECT_EQ(Refusal("clientQPS: fast\n"), "clientQPS: \"fast\" is not a valid number");
  EXPECT_EQ(Refusal("clientBurst: 0\n"), "clientBurst: must be at least 1");
  // Used to be accepted and truncated to an int: 4294967296 became a burst of 0.
  EXPECT_EQ(Refusal("clientBurst: 4294967296\n"), "clientBurst: must be at most 2147483647");
  EXPECT_EQ(Refusal("bindConcurrency: 2000\n"), "bindConcurrency: must be between 1 and 1024");
  EXPECT_EQ(Refusal("volumeBindTimeoutSeconds: 0\n"),
            "volumeBindTimeoutSeconds: must be between 1 and 86400");
  EXPECT_EQ(Refusal("gpuResources: []\n"), "gpuResources: name at least one resource");
  EXPECT_EQ(Refusal("gpuResources: nvidia.com/gpu\n"),
            "gpuResources: expected a list of resource names or a map of name to weight");
  EXPECT_EQ(Refusal("gpuResources: {}\n"), "gpuResources: name at least one resource");
  EXPECT_EQ(Refusal("gpuResources: {nvidia.com/mig-1g.10gb: an-eighth}\n"),
            "gpuResources.nvidia.com/mig-1g.10gb: expected a number of GPUs per unit");
  EXPECT_EQ(Refusal("gpuResources: {nvidia.com/mig-1g.10gb: [1]}\n"),
            "gpuResources.nvidia.com/mig-1g.10gb: expected a number of GPUs per unit");
  EXPECT_EQ(Refusal("gpuResources: {nvidia.com/gpu: 0}\n"),
            "gpuResources.nvidia.com/gpu: the weight (GPUs per unit) must be between 0.001 and "
            "1000");
  EXPECT_EQ(Refusal("gpuResources: [gpu]\n"),
            "gpuResources: \"gpu\" is not an extended resource name (a domain prefix and a "
            "name, e.g. nvidia.com/gpu)");
  EXPECT_EQ(Refusal("gpuResources: [amd.com/gpu, amd.com/gpu]\n"),
            "gpuResources: \"amd.com/gpu\" is listed twice");
  EXPECT_EQ(Refusal("gpuResources: [{a: b}]\n"),
            "gpuResources: every entry must be a non-empty string");
  EXPECT_EQ(Refusal("metricsAddr: nowhere\n"), "metricsAddr: \"nowhere\" must be host:port");
  EXPECT_EQ(Refusal("dashboardAddr: \":70000\"\n"), "dashboardAddr: \":70000\" has no valid port");
  EXPECT_EQ(Refusal("healthAddr: \":99999\"\n"), "healthAddr: \":99999\" has no valid port");
  EXPECT_EQ(Refusal("healthAddr: \"a:99999999999999999999\"\n"),
            "healthAddr: \"a:99999999999999999999\" has no valid port");
  EXPECT_EQ(Refusal("healthAddr: \"a:\"\n"), "healthAddr: \"a:\" has no valid port");
  EXPECT_EQ(Refusal("leaderElection: yes\n"), "leaderElection: expected a map");
  EXPECT_EQ(Refusal("topology: [rack]\n"), "topology: expected a map");
  EXPECT_EQ(Refusal("topology:\n  levels: rack\n"), "topology.levels: expected a list");
  EXPECT_EQ(Refusal("topology:\n  levels: [example.com/rack, example.com/rack]\n"),
            "topology.levels[1]: \"example.com/rack\" is listed twice");
  EXPECT_EQ(Refusal("topology:\n  levels: [\"Not a key\"]\n"),
            "topology.levels[0]: \"Not a key\" is not a node label key");
  EXPECT_EQ(Refusal("topology:\n  levels: [a, b, c, d, e, f, g, h, i]\n"),
            "topology.levels: at most 8 levels");
}

TEST(SchedulerConfigTest, MalformedYamlAndTopLevelShapeAreRefused) {
  EXPECT_THAT(Refusal("a: [1, 2\n"), StartsWith("scheduler config: invalid YAML: "));
  EXPECT_EQ(Refusal("- a\n- b\n"), "scheduler config: expected a YAML map at the top");
  EXPECT_EQ(Refusal("just text\n"), "scheduler config: expected a YAML map at the top");
}

TEST(SchedulerConfigTest, BadDurationsAreRefused) {
  EXPECT_THAT(Refusal("leaderElection:\n  leaseDuration: 5 parsecs\n"),
              StartsWith("leaderElection.leaseDuration: "));
  EXPECT_THAT(Refusal("leaderElection:\n  renewDeadline: 10\n"),
              StartsWith("leaderElection.renewDeadline: "));
  EXPECT_THAT(Refusal("leaderElection:\n  retryPeriod: -2s\n"),
              AllOf(StartsWith("leaderElection.retryPeriod: "), HasSubstr("negative")));
  EXPECT_THAT(Refusal("leaderElection:\n  leaseDuration: [1s]\n"),
              StartsWith("leaderElection.leaseDuration: expected a single value"));
}

TEST(SchedulerConfigTest, LeaderElectionChecksOnlyWhenEnabled) {
  const std::string inverted =
      "leaderElection:\n  enabled: %s\n  leaseDuration: 5s\n  renewDeadline: 10s\n";
  std::string disabled = inverted;
  disabled.replace(disabled.find("%s"), 2, "false");
  EXPECT_TRUE(ParseSchedulerConfig(disabled).ok());
  std::string enabled = inverted;
  enabled.replace(enabled.find("%s"), 2, "true");
  EXPECT_EQ(Refusal(enabled),
            "leaderElection: need leaseDuration > renewDeadline > retryPeriod > 0");
  EXPECT_EQ(Refusal("leaderElection:\n  enabled: true\n  retryPeriod: 0s\n"),
            "leaderElection: need leaseDuration > renewDeadline > retryPeriod > 0");
  EXPECT_EQ(Refusal("leaderElection:\n  enabled: true\n  leaseName: ''\n"),
            "leaderElection: leaseName and leaseNamespace are required");
  EXPECT_EQ(Refusal("leaderElection:\n  enabled: maybe\n"),
            "leaderElection.enabled: \"maybe\" is not a valid boolean");
}

TEST(SchedulerConfigTest, QueueErrorsNameTheQueueAndField) {
  EXPECT_EQ(Refusal("queues: {name: a}\n"), "queues: expected a list");
  EXPECT_EQ(Refusal("queues: [a]\n"), "queues[0]: expected a map");
  EXPECT_EQ(Refusal("queues:\n  - name: a\n  - name: b\n    weight: 0\n"),
            "queues[1].weight: must be positive");
  EXPECT_EQ(Refusal("queues:\n  - name: a\n    weight: -2\n"),
            "queues[0].weight: must be positive");
  EXPECT_EQ(Refusal("queues:\n  - name: a\n    weight: heavy\n"),
            "queues[0].weight: \"heavy\" is not a valid number");
  EXPECT_EQ(Refusal("queues:\n  - weight: 1\n"), "queues[0].name: required");
  EXPECT_EQ(Refusal("queues:\n  - name: a\n  - name: a\n"),
            "queues[1].name: duplicate queue \"a\"");
  EXPECT_EQ(Refusal("queues:\n  - name: a\n    guaranteed: 16\n"),
            "queues[0].guaranteed: expected a map of resource name to quantity");
  EXPECT_EQ(Refusal("queues:\n  - name: a\n    max: {nvidia.com/gpu: [1]}\n"),
            "queues[0].max.nvidia.com/gpu: expected a quantity");
  EXPECT_THAT(Refusal("queues:\n  - name: a\n    max: {memory: lots}\n"),
              StartsWith("queues[0].max.memory: quantity \"lots\""));
  EXPECT_EQ(Refusal("queues:\n  - name: a\n    guaranteed: {nvidia.com/gpu: -1}\n"),
            "queues[0].guaranteed.nvidia.com/gpu: must not be negative");
  EXPECT_EQ(Refusal("queues:\n  - name: a\n    guaranteed: {nvidia.com/gpu: 16}\n"
                    "    max: {nvidia.com/gpu: 8}\n"),
            "queues[0]: guaranteed nvidia.com/gpu 16 exceeds max 8");
}

TEST(SchedulerConfigTest, ReadsAQueueTree) {
  Result<SchedulerConfig> config = ParseSchedulerConfig(R"(
queues:
  - name: org
    guaranteed: {nvidia.com/gpu: 12}
    max: {nvidia.com/gpu: 16}
    namespaceSelector:
      matchLabels: {org: research}
  - name: team-a
    parent: org
    weight: 2
    guaranteed: {nvidia.com/gpu: 8}
    namespaces: [team-a, team-a-dev]
  - name: team-b
    parent: org
    guaranteed: {nvidia.com/gpu: 4}
  - name: other
)");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_EQ(config->queues.size(), 4u);
  EXPECT_EQ(config->queues[0].parent, "");
  ASSERT_TRUE(config->queues[0].namespace_selector.has_value());
  EXPECT_TRUE(config->queues[0].namespace_selector->Matches(LabelMap{{"org", "research"}}));
  EXPECT_FALSE(config->queues[0].namespace_selector->Matches(LabelMap{{"org", "ops"}}));
  EXPECT_EQ(config->queues[1].parent, "org");
  EXPECT_THAT(config->queues[1].namespaces, ElementsAre("team-a", "team-a-dev"));
  EXPECT_FALSE(config->queues[1].namespace_selector.has_value());
  EXPECT_EQ(config->queues[2].parent, "org");
  EXPECT_EQ(config->queues[3].parent, "");

  QueueTable table(PolicyConfigFrom(*config).queues);
  EXPECT_THAT(table.Children("org"), ElementsAre("team-a", "team-b"));
  EXPECT_TRUE(table.AdmitsNamespace("team-a", "team-a", LabelMap{{"org", "research"}}));
  EXPECT_FALSE(table.AdmitsNamespace("team-a", "team-a", LabelMap{{"org", "ops"}}));
  EXPECT_FALSE(table.AdmitsNamespace("team-a", "team-c", LabelMap{{"org", "research"}}));
  EXPECT_TRUE(table.AdmitsNamespace("team-b", "team-c", LabelMap{{"org", "research"}}));
}

TEST(SchedulerConfigTest, QueueTreeErrorsNameTheQueueAndField) {
  EXPECT_EQ(Refusal("queues:\n  - name: a\n  - name: b\n  - name: team-a\n    parent: org\n"),
            "queues[2].parent: no queue named \"org\"");
  EXPECT_EQ(Refusal("queues:\n  - name: a\n    parent: b\n  - name: b\n    parent: a\n"),
            "queues[0].parent: \"a\" is its own ancestor");
  EXPECT_EQ(Refusal("queues:\n  - name: a\n    parent: default\n"),
            "queues[0].parent: queue \"default\" cannot have child queues: groups without a "
            "queue and pods outside any group run in it");
  EXPECT_EQ(Refusal(R"(
queues:
  - name: org
    guaranteed: {nvidia.com/gpu: 8}
  - name: team-a
    parent: org
    guaranteed: {nvidia.com/gpu: 6}
  - name: team-b
    parent: org
    guaranteed: {nvidia.com/gpu: 4}
)"),
            "queues[0]: guaranteed nvidia.com/gpu 8 of queue \"org\" is less than its children "
            "are guaranteed, 10 (team-a 6, team-b 4)");
  EXPECT_EQ(Refusal(R"(
queues:
  - name: org
    max: {nvidia.com/gpu: 16}
  - name: team-a
    parent: org
    guaranteed: {nvidia.com/gpu: 20}
)"),
            "queues[1]: guaranteed nvidia.com/gpu 20 exceeds max 16 of its parent \"org\"");
  EXPECT_THAT(Refusal("queues:\n  - name: a\n    namespaces: [Team_A]\n"),
              StartsWith("queues[0].namespaces[0]: \"Team_A\" is not a valid namespace name"));
  EXPECT_EQ(Refusal("queues:\n  - name: org\n    order: StrictFIFO\n  - name: team-a\n"
                    "    parent: org\n"),
            "queues[0].order: queue \"org\" has child queues and no groups of its own; set "
            "StrictFIFO on its children");
}

TEST(SchedulerConfigTest, ReadsEachQueuesOrder) {
  Result<SchedulerConfig> config = ParseSchedulerConfig(
      "queues:\n  - name: batch\n    order: StrictFIFO\n  - name: interactive\n"
      "  - name: research\n    order: BestEffortFIFO\n");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_EQ(config->queues.size(), 3u);
  EXPECT_EQ(config->queues[0].order, QueueOrder::kStrictFifo);
  EXPECT_EQ(config->queues[1].order, QueueOrder::kBestEffortFifo);
  EXPECT_EQ(config->queues[2].order, QueueOrder::kBestEffortFifo);
  EXPECT_EQ(PolicyConfigFrom(*config).queues[0].order, QueueOrder::kStrictFifo);

  EXPECT_EQ(Refusal("queues:\n  - name: a\n    order: fifo\n"),
            "queues[0].order: \"fifo\" is not BestEffortFIFO, StrictFIFO or AttainedService");
  EXPECT_EQ(Refusal("queues:\n  - name: a\n    order: [StrictFIFO]\n"),
            "queues[0].order: expected a single value");
}

TEST(SchedulerConfigTest, PolicySwitchErrors) {
  EXPECT_EQ(Refusal("reclaim: on\n"), "reclaim: expected a map");
  EXPECT_EQ(Refusal("reclaim:\n  enabled: sometimes\n"),
            "reclaim.enabled: \"sometimes\" is not a valid boolean");
  EXPECT_EQ(Refusal("reclaim:\n  maxGroupsPerCycle: -1\n"),
            "reclaim.maxGroupsPerCycle: must be between 0 and 1000");
  EXPECT_EQ(Refusal("preemption: true\n"), "preemption: expected a map");
  EXPECT_EQ(Refusal("starvation:\n  maxWaitSeconds: -1\n"),
            "starvation.maxWaitSeconds: must not be negative");
  EXPECT_EQ(Refusal("starvation:\n  maxWaitSeconds: 10m\n"),
            "starvation.maxWaitSeconds: \"10m\" is not a valid integer");
  EXPECT_EQ(Refusal("starvation:\n  maxReservedGroups: -3\n"),
            "starvation.maxReservedGroups: must not be negative");
  Result<SchedulerConfig> off = ParseSchedulerConfig("starvation:\n  maxWaitSeconds: 0\n");
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->starvation.max_wait_seconds, 0);
}

TEST(SchedulerConfigTest, RebalancingSettings) {
  Result<SchedulerConfig> defaults = ParseSchedulerConfig("");
  ASSERT_TRUE(defaults.ok());
  EXPECT_TRUE(defaults->reclaim.rebalance);
  EXPECT_DOUBLE_EQ(defaults->reclaim.share_tolerance, 0.1);
  EXPECT_EQ(defaults->reclaim.min_resize_interval_seconds, 30);
  Result<SchedulerConfig> set = ParseSchedulerConfig(
      "reclaim:\n  rebalance: false\n  shareTolerance: 0.25\n  minResizeIntervalSeconds: 120\n");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_FALSE(set->reclaim.rebalance);
  EXPECT_DOUBLE_EQ(set->reclaim.share_tolerance, 0.25);
  EXPECT_EQ(set->reclaim.min_resize_interval_seconds, 120);
  EXPECT_EQ(PolicyConfigFrom(*set).reclaim, set->reclaim);
  EXPECT_EQ(Refusal("reclaim:\n  shareTolerance: 1\n"),
            "reclaim.shareTolerance: must be at least 0 and below 1");
  EXPECT_EQ(Refusal("reclaim:\n  shareTolerance: -0.1\n"),
            "reclaim.shareTolerance: must be at least 0 and below 1");
  EXPECT_EQ(Refusal("reclaim:\n  shareTolerance: lots\n"),
            "reclaim.shareTolerance: \"lots\" is not a valid number");
  EXPECT_EQ(Refusal("reclaim:\n  minResizeIntervalSeconds: -1\n"),
            "reclaim.minResizeIntervalSeconds: must be between 0 and 86400");
  EXPECT_EQ(Refusal("reclaim:\n  rebalance: maybe\n"),
            "reclaim.rebalance: \"maybe\" is not a valid boolean");
}

TEST(SchedulerConfigTest, AttainedServiceOrderAndSettings) {
  Result<SchedulerConfig> defaults = ParseSchedulerConfig("");
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->attained_service, AttainedServiceSettings{});
  EXPECT_EQ(defaults->attained_service.levels, 4);
  EXPECT_EQ(defaults->attained_service.promote_after_seconds, 3600);
  EXPECT_FALSE(defaults->attained_service.reserve_for_starved);
  Result<SchedulerConfig> set = ParseSchedulerConfig(
      "queues:\n  - name: research\n    order: AttainedService\n"
      "attainedService:\n  levels: 3\n  firstThresholdGpuHours: 0.5\n  thresholdFactor: 4\n"
      "  promoteAfterSeconds: 900\n  reserveForStarved: true\n");
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->queues[0].order, QueueOrder::kAttainedService);
  EXPECT_EQ(set->attained_service.levels, 3);
  EXPECT_DOUBLE_EQ(set->attained_service.first_threshold_gpu_hours, 0.5);
  EXPECT_DOUBLE_EQ(set->attained_service.threshold_factor, 4);
  EXPECT_EQ(set->attained_service.promote_after_seconds, 900);
  EXPECT_TRUE(set->attained_service.reserve_for_starved);
  EXPECT_EQ(PolicyConfigFrom(*set).attained_service, set->attained_service);
  EXPECT_EQ(Refusal("attainedService: 3\n"), "attainedService: expected a map");
  EXPECT_EQ(Refusal("attainedService:\n  levels: 17\n"), "attainedService.levels: must be 1 to 16");
  EXPECT_EQ(Refusal("attainedService:\n  thresholdFactor: 1\n"),
            "attainedService.thresholdFactor: must be a number above 1");
  EXPECT_EQ(Refusal("attainedService:\n  promoteAfter: 10\n"),
            "attainedService.promoteAfter: unknown field");
}

TEST(SchedulerConfigFileTest, ReadsAFileAndPrefixesErrorsWithItsPath) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/scheduler-config-good.yaml";
  {
    std::ofstream out(good);
    out << "schedulerName: from-file\nqueues:\n  - name: a\n    weight: 3\n";
  }
  Result<SchedulerConfig> config = LoadSchedulerConfigFile(good);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->scheduler_name, "from-file");
  ASSERT_EQ(config->queues.size(), 1u);
  EXPECT_DOUBLE_EQ(config->queues[0].weight, 3.0);

  const std::string bad = dir + "/scheduler-config-bad.yaml";
  {
    std::ofstream out(bad);
    out << "queues:\n  - name: a\n    weight: 0\n";
  }
  config = LoadSchedulerConfigFile(bad);
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().message(), bad + ": queues[0].weight: must be positive");

  config = LoadSchedulerConfigFile(dir + "/does-not-exist.yaml");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("cannot read"));
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
}

// The reload path, one check at a time (no thread): a good change applies, a
// bad one is refused and leaves the configuration in force, an unreadable
// file is reported once.
TEST(SchedulerConfigWatcherTest, AppliesGoodChangesAndRefusesBadOnes) {
  const std::string path = ::testing::TempDir() + "/scheduler-config-watched.yaml";
  WriteFile(path, "queues:\n  - name: a\n    weight: 1\n");
  std::vector<SchedulerConfig> applied;
  std::vector<std::string> refused;
  ConfigFileWatcher watcher(
      path, std::chrono::milliseconds(10),
      [&](const SchedulerConfig& config) { applied.push_back(config); },
      [&](const Status& status) { refused.push_back(status.message()); });
  Result<SchedulerConfig> first = watcher.Load();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(watcher.CheckOnce(), ConfigFileWatcher::Check::kUnchanged);

  WriteFile(path, "queues:\n  - name: a\n    weight: 2\n  - name: b\n    weight: 1\n");
  EXPECT_EQ(watcher.CheckOnce(), ConfigFileWatcher::Check::kApplied);
  ASSERT_EQ(applied.size(), 1u);
  ASSERT_EQ(applied[0].queues.size(), 2u);
  EXPECT_DOUBLE_EQ(applied[0].queues[0].weight, 2.0);
  EXPECT_EQ(watcher.CheckOnce(), ConfigFileWatcher::Check::kUnchanged);

  WriteFile(path, "queues:\n  - name: a\n    weight: -1\n");
  EXPECT_EQ(watcher.CheckOnce(), ConfigFileWatcher::Check::kRefused);
  EXPECT_EQ(applied.size(), 1u) << "a bad file never applies";
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_THAT(refused[0], HasSubstr("queues[0].weight: must be positive"));
  EXPECT_THAT(refused[0], HasSubstr("keeping the configuration in force"));
  EXPECT_EQ(watcher.CheckOnce(), ConfigFileWatcher::Check::kUnchanged) << "said once";

  std::remove(path.c_str());
  EXPECT_EQ(watcher.CheckOnce(), ConfigFileWatcher::Check::kRefused);
  EXPECT_EQ(watcher.CheckOnce(), ConfigFileWatcher::Check::kUnchanged);
  ASSERT_EQ(refused.size(), 2u);
  EXPECT_THAT(refused[1], HasSubstr("cannot read"));

  // Fixed again: the change applies.
  WriteFile(path, "queues:\n  - name: a\n    weight: 5\n");
  EXPECT_EQ(watcher.CheckOnce(), ConfigFileWatcher::Check::kApplied);
  ASSERT_EQ(applied.size(), 2u);
  EXPECT_DOUBLE_EQ(applied[1].queues[0].weight, 5.0);
  std::remove(path.c_str());
}

TEST(SchedulerConfigWatcherTest, PollsInItsOwnThreadUntilStopped) {
  const std::string path = ::testing::TempDir() + "/scheduler-config-polled.yaml";
  WriteFile(path, "gangBackoffSeconds: 5\n");
  std::mutex mu;
  std::condition_variable changed;
  std::vector<int64_t> seen;
  ConfigFileWatcher watcher(
      path, std::chrono::milliseconds(5),
      [&](const SchedulerConfig& config) {
        std::lock_guard lock(mu);
        seen.push_back(config.gang_backoff_seconds);
        changed.notify_all();
      },
      [](const Status&) {});
  ASSERT_TRUE(watcher.Load().ok());
  watcher.Start();
  WriteFile(path, "gangBackoffSeconds: 9\n");
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(changed.wait_for(lock, std::chrono::seconds(10), [&] { return !seen.empty(); }));
    EXPECT_EQ(seen.front(), 9);
  }
  watcher.Stop();
  std::remove(path.c_str());
}

}  // namespace
}  // namespace hybridjob::scheduler
