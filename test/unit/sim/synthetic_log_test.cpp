#include <gtest/gtest.h>

#include <hybridjob/sim/kubelet.h>
#include <hybridjob/sim/synthetic_log.h>

namespace hybridjob::sim {
namespace {

using nlohmann::json;

// A member pod as the controller makes it: the job's variables as env, the
// cluster ConfigMap mounted at /etc/hybridjob.
json MemberPod(json annotations = json::object(), json status = json::object()) {
  json trainer = {
      {"name", "trainer"},
      {"image", "pytorch:2.1"},
      {"command", {"python", "train.py"}},
      {"args", {"--epochs", "3", "--note", "it's fine"}},
      {"env",
       {{{"name", "HYBRIDJOB_JOB_NAME"}, {"value", "ddp"}},
        {{"name", "HYBRIDJOB_ROLE"}, {"value", "worker"}},
        {{"name", "HYBRIDJOB_INDEX"}, {"value", "1"}},
        {{"name", "HYBRIDJOB_WORLD_SIZE"}, {"value", "3"}},
        {{"name", "HYBRIDJOB_RANK"}, {"value", "2"}},
        {{"name", "MASTER_ADDR"}, {"value", "ddp-master-0.ddp.team-a.svc"}},
        {{"name", "LEARNING_RATE"}, {"value", "0.1"}},
        {{"name", "RANK"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.name"}}}}}}}},
      {"volumeMounts", {{{"name", "hybridjob-cluster"}, {"mountPath", "/etc/hybridjob"}}}}};
  return {
      {"metadata",
       {{"name", "ddp-worker-1"},
        {"namespace", "team-a"},
        {"uid", "u1"},
        {"annotations", annotations}}},
      {"spec",
       {{"nodeName", "sim-node-2"},
        {"initContainers", json::array({{{"name", "fetch"}, {"image", "fetcher"}}})},
        {"containers", json::array({trainer, {{"name", "sidecar"}, {"image", "log"}}})},
        {"volumes", {{{"name", "hybridjob-cluster"}, {"configMap", {{"name", "ddp-cluster"}}}}}}}},
      {"status", status}};
}

const json kRunning = {{"phase", "Running"}, {"startTime", "2027-01-15T08:00:00Z"}};

SimPod Decoded(const json& pod) {
  auto decoded = DecodeSimPod(pod);
  EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
  return decoded.ok() ? *decoded : SimPod{};
}

std::string LogOf(const json& pod, const std::string& container) {
  auto log = SyntheticContainerLog(Decoded(pod), container, false);
  EXPECT_TRUE(log.ok()) << log.status().ToString();
  return log.ok() ? *log : std::string();
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(SyntheticLogTest, SaysTheMemberIsSimulatedAndWhatItWasGiven) {
  const std::string log = LogOf(
      MemberPod({{kDurationAnnotation, "30s"}, {kExitCodeAnnotation, "3"}}, kRunning), "trainer");
  EXPECT_EQ(log,
            "hybridjob-sim simulates this member: no process runs, so there is no output to show.\n"
            "Below is what the container was given. `hybridjob-sim --exec` runs the commands for "
            "real.\n"
            "\n"
            "pod:           team-a/ddp-worker-1 on node sim-node-2\n"
            "container:     trainer\n"
            "image:         pytorch:2.1\n"
            "command:       python train.py\n"
            "args:          --epochs 3 --note 'it'\\''s fine'\n"
            "env:           HYBRIDJOB_JOB_NAME=ddp\n"
            "               HYBRIDJOB_ROLE=worker\n"
            "               HYBRIDJOB_INDEX=1\n"
            "               HYBRIDJOB_WORLD_SIZE=3\n"
            "               HYBRIDJOB_RANK=2\n"
            "               MASTER_ADDR=ddp-master-0.ddp.team-a.svc\n"
            "cluster spec:  ConfigMap \"ddp-cluster\", mounted at /etc/hybridjob\n"
            "\n"
            "lifecycle (simulated):\n"
            "  started at 2027-01-15T08:00:00Z\n"
            "  runs for 30s (annotation sim.hybridjob.io/duration), until 2027-01-15T08:00:30Z\n"
            "  then exits with code 3 (annotation sim.hybridjob.io/exit-code, 0 when unset)\n");
}

TEST(SyntheticLogTest, KeepsOnlyTheJobsVariablesWithPlainValues) {
  const std::string log = LogOf(MemberPod({}, kRunning), "trainer");
  EXPECT_FALSE(Has(log, "LEARNING_RATE")) << log;  // the user's own
  EXPECT_FALSE(Has(log, " RANK=")) << log;         // not a plain value
  EXPECT_TRUE(Has(log, "HYBRIDJOB_RANK=2")) << log;
}

TEST(SyntheticLogTest, WithoutADurationTheMemberRunsUntilDeleted) {
  const std::string log = LogOf(MemberPod({}, kRunning), "trainer");
  EXPECT_TRUE(
      Has(log, "  runs until the pod is deleted (no sim.hybridjob.io/duration annotation)\n"))
      << log;
  json deleting = MemberPod({}, kRunning);
  deleting["metadata"]["deletionTimestamp"] = "2027-01-15T09:00:00Z";
  EXPECT_TRUE(Has(LogOf(deleting, "trainer"), "being deleted"));
}

TEST(SyntheticLogTest, OtherContainersEndWithTheFirst) {
  const std::string log = LogOf(
      MemberPod({{kDurationAnnotation, "1m"}, {kExitCodeAnnotation, "3"}}, kRunning), "sidecar");
  EXPECT_TRUE(Has(log, "command:       (the image's entrypoint)\n")) << log;
  EXPECT_TRUE(Has(log, "then exits with code 0, with the first container")) << log;
  EXPECT_TRUE(Has(log, "ConfigMap \"ddp-cluster\", not mounted in this container")) << log;
  EXPECT_FALSE(Has(log, "env:")) << log;
}

TEST(SyntheticLogTest, AnEndedContainerSaysHowAndWhen) {
  json status = kRunning;
  status["phase"] = "Failed";
  status["containerStatuses"] = {
      {{"name", "trainer"},
       {"state", {{"terminated", {{"exitCode", 137}, {"finishedAt", "2027-01-15T08:01:00Z"}}}}}}};
  status["initContainerStatuses"] = {
      {{"name", "fetch"},
       {"state", {{"terminated", {{"exitCode", 0}, {"finishedAt", "2027-01-15T08:00:00Z"}}}}}}};
  const std::string log = LogOf(MemberPod({{kDurationAnnotation, "1m"}}, status), "trainer");
  EXPECT_TRUE(Has(log,
                  "lifecycle (simulated):\n"
                  "  started at 2027-01-15T08:00:00Z\n"
                  "  exited with code 137 at 2027-01-15T08:01:00Z\n"))
      << log;
  const std::string init = LogOf(MemberPod({}, status), "fetch");
  EXPECT_TRUE(Has(init, "init container: fetch\n")) << init;
  EXPECT_TRUE(Has(init,
                  "  exited with code 0 at 2027-01-15T08:00:00Z, before the pod's containers "
                  "started\n"))
      << init;
}

TEST(SyntheticLogTest, APodThatFailedBeforeStartingNeverRan) {
  // As the kubelet's admission refuses a pod: Failed, no container status.
  const std::string log = LogOf(MemberPod({}, {{"phase", "Failed"}}), "trainer");
  EXPECT_TRUE(Has(log, "  never ran: the pod is Failed")) << log;
}

TEST(SyntheticLogTest, AWrappedCommandShowsWhatTheWrapperRuns) {
  json pod = MemberPod({}, kRunning);
  json& trainer = pod["spec"]["containers"][0];
  trainer["command"] = {
      "/bin/sh",       "-c",     "set -e\n. \"/etc/hybridjob/${HYBRIDJOB_ROLE}.env\"\n",
      "hybridjob-env", "python", "train.py",
      "--epochs",      "3"};
  trainer.erase("args");
  const std::string log = LogOf(pod, "trainer");
  EXPECT_TRUE(Has(log,
                  "command:       python train.py --epochs 3\n"
                  "               (run by /bin/sh after it sources /etc/hybridjob/worker.env, the "
                  "job's cluster variables)\n"))
      << log;
}

TEST(SyntheticLogTest, LongValuesAreCutWhenDecoded) {
  json pod = MemberPod({}, kRunning);
  const std::string tf_config = "{\"cluster\":{\"worker\":[" + std::string(5000, 'w') + "]}}";
  pod["spec"]["containers"][0]["env"].push_back({{"name", "TF_CONFIG"}, {"value", tf_config}});
  const SimPod decoded = Decoded(pod);
  const auto& kept = decoded.containers[0].job_env.back();
  EXPECT_EQ(kept.first, "TF_CONFIG");
  EXPECT_LT(kept.second.size(), kSyntheticLogValueLimit + 40);
  EXPECT_TRUE(Has(kept.second, "... (" + std::to_string(tf_config.size()) + " bytes in all)"))
      << kept.second;
  EXPECT_EQ(kept.second.substr(0, 20), tf_config.substr(0, 20));
}

TEST(SyntheticLogTest, ExecModeKeepsNoneOfIt) {
  auto decoded = DecodeSimPod(MemberPod({}, kRunning), /*with_exec=*/true);
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->containers[0].command.empty());
  EXPECT_TRUE(decoded->containers[0].job_env.empty());
  EXPECT_TRUE(decoded->cluster_config_map.empty());
  EXPECT_EQ(decoded->containers[0].image, "pytorch:2.1");
}

TEST(SyntheticLogTest, RefusesAsTheKubeletDoes) {
  const SimPod running = Decoded(MemberPod({}, kRunning));
  auto unknown = SyntheticContainerLog(running, "nope", false);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(unknown.status().message(), "container \"nope\" not found in pod \"ddp-worker-1\"");

  auto previous = SyntheticContainerLog(running, "trainer", true);
  ASSERT_FALSE(previous.ok());
  EXPECT_EQ(previous.status().code(), StatusCode::kBadRequest);
  EXPECT_TRUE(Has(previous.status().message(),
                  "previous terminated container \"trainer\" in pod \"ddp-worker-1\" not found"))
      << previous.status().message();

  for (const json& status : {json::object(), json{{"phase", "Pending"}}}) {
    auto waiting = SyntheticContainerLog(Decoded(MemberPod({}, status)), "trainer", false);
    ASSERT_FALSE(waiting.ok());
    EXPECT_EQ(waiting.status().code(), StatusCode::kBadRequest);
    EXPECT_EQ(waiting.status().message(),
              "container \"trainer\" in pod \"ddp-worker-1\" is waiting to start: "
              "ContainerCreating");
  }
}

}  // namespace
}  // namespace hybridjob::sim
