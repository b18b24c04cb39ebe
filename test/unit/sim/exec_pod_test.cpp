#include <gtest/gtest.h>

#include <hybridjob/sim/exec_pod.h>

namespace hybridjob::sim {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json ExecPodJson() {
  return {
      {"metadata",
       {{"name", "job-worker-1"},
        {"namespace", "team-a"},
        {"uid", "u1"},
        {"labels", {{"role", "worker"}}},
        {"annotations", {{"note", "x"}}}}},
      {"spec",
       {{"nodeName", "sim-node-0"},
        {"hostname", "job-worker-1"},
        {"subdomain", "job"},
        {"restartPolicy", "Never"},
        {"terminationGracePeriodSeconds", 7},
        {"initContainers",
         json::array(
             {{{"name", "fetch"},
               {"image", "curl"},
               {"command", {"curl", "-o", "/code/a.tgz", "http://x"}},
               {"volumeMounts", json::array({{{"name", "code"}, {"mountPath", "/code"}}})}}})},
        {"containers",
         json::array(
             {{{"name", "trainer"},
               {"image", "torch"},
               {"command", {"python3", "train.py"}},
               {"args", {"--rank", "$(RANK)", "$$(RANK)", "$(UNSET)"}},
               {"workingDir", "/code"},
               {"env",
                json::array(
                    {{{"name", "RANK"}, {"value", "1"}},
                     {{"name", "ADDR"}, {"value", "$(POD_IP):$(RANK)"}},
                     {{"name", "POD_IP"},
                      {"valueFrom", {{"fieldRef", {{"fieldPath", "status.podIP"}}}}}},
                     {{"name", "ROLE"},
                      {"valueFrom", {{"fieldRef", {{"fieldPath", "metadata.labels['role']"}}}}}},
                     {{"name", "TOKEN"},
                      {"valueFrom", {{"secretKeyRef", {{"name", "creds"}, {"key", "token"}}}}}}})},
               {"envFrom",
                json::array({{{"configMapRef", {{"name", "settings"}}}, {"prefix", "CFG_"}}})},
               {"volumeMounts",
                json::array(
                    {{{"name", "code"}, {"mountPath", "/code"}},
                     {{"name", "data"}, {"mountPath", "/data"}},
                     {{"name", "cluster"}, {"mountPath", "/etc/hybridjob"}, {"readOnly", true}},
                     {{"name", "data"},
                      {"mountPath", "/code/checkpoints"},
                      {"subPath", "ckpt"}}})}}})},
        {"volumes",
         json::array({{{"name", "code"}, {"emptyDir", json::object()}},
                      {{"name", "data"}, {"persistentVolumeClaim", {{"claimName", "job-data"}}}},
                      {{"name", "cluster"}, {"configMap", {{"name", "job-cluster"}}}},
                      {{"name", "token"}, {"secret", {{"secretName", "creds"}}}},
                      {{"name", "nfs"}, {"nfs", {{"server", "x"}}}}})}}}};
}

PodObjects Objects() {
  PodObjects objects;
  objects.config_maps["settings"] = {{"lr", "0.1"}, {"bad-name", "ignored? no: kept"}};
  objects.config_maps["job-cluster"] = {{"worker.env", "export X=1\n"}, {"cluster.json", "{}"}};
  objects.secrets["creds"] = {{"token", "s3cr3t"}};
  return objects;
}

TEST(ExecPodTest, DecodesWhatThePodRunsWith) {
  auto pod = DecodeExecPod(ExecPodJson());
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  EXPECT_EQ(pod->hostname, "job-worker-1");
  EXPECT_EQ(pod->subdomain, "job");
  EXPECT_EQ(pod->restart_policy, ExecRestartPolicy::kNever);
  EXPECT_EQ(pod->termination_grace, 7s);
  ASSERT_EQ(pod->init_containers.size(), 1u);
  ASSERT_EQ(pod->containers.size(), 1u);
  EXPECT_EQ(pod->containers[0].working_dir, "/code");
  ASSERT_EQ(pod->volumes.size(), 5u);
  EXPECT_EQ(pod->volumes[1].kind, ExecVolume::Kind::kClaim);
  EXPECT_EQ(pod->volumes[1].source, "job-data");
  EXPECT_EQ(pod->volumes[3].kind, ExecVolume::Kind::kSecret);
  EXPECT_EQ(pod->volumes[3].projections[0].name, "creds");
  EXPECT_EQ(pod->volumes[4].kind, ExecVolume::Kind::kUnsupported);
  EXPECT_EQ(pod->volumes[4].source, "nfs");

  const ObjectNames names = ReferencedObjects(*pod);
  EXPECT_EQ(names.config_maps, (std::vector<std::string>{"job-cluster", "settings"}));
  EXPECT_EQ(names.secrets, (std::vector<std::string>{"creds"}));
}

TEST(ExecPodTest, DecodeNamesAFieldOfTheWrongType) {
  json pod = ExecPodJson();
  pod["spec"]["containers"][0]["command"] = "python3 train.py";
  auto decoded = DecodeExecPod(pod);
  ASSERT_FALSE(decoded.ok());
  EXPECT_NE(decoded.status().message().find("spec.containers[0].command"), std::string::npos)
      << decoded.status().message();
}

TEST(ExecPodTest, EnvironmentFollowsTheKubeletsOrderAndExpansion) {
  auto pod = DecodeExecPod(ExecPodJson());
  ASSERT_TRUE(pod.ok());
  auto env = ContainerEnvironment(*pod, pod->containers[0], {"127.1.0.3", "127.0.0.1"}, Objects());
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  std::map<std::string, std::string> map(env->begin(), env->end());
  EXPECT_EQ(env->front().first, "CFG_bad-name");  // envFrom first, in key order
  EXPECT_EQ(map["CFG_lr"], "0.1");
  EXPECT_EQ(map["RANK"], "1");
  // POD_IP is defined after ADDR, so ADDR keeps the reference as written.
  EXPECT_EQ(map["ADDR"], "$(POD_IP):1");
  EXPECT_EQ(map["POD_IP"], "127.1.0.3");
  EXPECT_EQ(map["ROLE"], "worker");
  EXPECT_EQ(map["TOKEN"], "s3cr3t");
  EXPECT_EQ(map["HOSTNAME"], "job-worker-1");
  EXPECT_NE(map["PATH"].find("/usr/bin"), std::string::npos);

  auto argv = ContainerArgv(pod->containers[0], map);
  ASSERT_TRUE(argv.ok());
  EXPECT_EQ(*argv, (std::vector<std::string>{"python3", "train.py", "--rank", "1", "$(RANK)",
                                             "$(UNSET)"}));
}

std::map<std::string, std::string> EnvMap(
    const std::vector<std::pair<std::string, std::string>>& env) {
  return {env.begin(), env.end()};
}

TEST(ExecPodTest, AnImagesPathStandsInForWhatTheImageHolds) {
  auto paths = ParseExecImagePaths("curl-only=/opt/curl/bin:/bin,tools=/opt/tools");
  ASSERT_TRUE(paths.ok()) << paths.status().ToString();
  EXPECT_EQ(*paths, (std::map<std::string, std::string>{{"curl-only", "/opt/curl/bin:/bin"},
                                                        {"tools", "/opt/tools"}}));
  EXPECT_TRUE(ParseExecImagePaths("")->empty());
  for (const char* bad : {"curl-only", "=/bin", "curl-only=", "a=/x,", "a=/x,a=/y"}) {
    EXPECT_FALSE(ParseExecImagePaths(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseExecImagePaths("a=/x,a=/y").status().message(), "image \"a\" is given twice");

  // The image's PATH is the default; the container's own PATH still wins.
  auto pod = DecodeExecPod(ExecPodJson());
  ASSERT_TRUE(pod.ok());
  PodFields fields{"127.1.0.3", "127.0.0.1", "/opt/curl/bin"};
  auto env = ContainerEnvironment(*pod, pod->containers[0], fields, Objects());
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(EnvMap(*env)["PATH"], "/opt/curl/bin");
  pod->containers[0].env.push_back({{"name", "PATH"}, {"value", "/mine"}});
  env = ContainerEnvironment(*pod, pod->containers[0], fields, Objects());
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(EnvMap(*env)["PATH"], "/mine");
}

TEST(ExecPodTest, FallbackTerminationMessageIsTheLogsLastEightyLinesAndTwoKilobytes) {
  EXPECT_EQ(FallbackTerminationMessage(""), "");
  EXPECT_EQ(FallbackTerminationMessage("one\ntwo\n"), "one\ntwo\n");
  std::string log;
  for (int i = 1; i <= 100; ++i) {
    log += "line " + std::to_string(i) + "\n";
  }
  const std::string tail = FallbackTerminationMessage(log);
  EXPECT_EQ(tail.substr(0, 8), "line 21\n");
  EXPECT_EQ(tail.substr(tail.size() - 9), "line 100\n");
  // Long lines: the last 2,048 bytes.
  const std::string wide = std::string(3000, 'x') + "\nlast words\n";
  const std::string cut = FallbackTerminationMessage(wide);
  EXPECT_EQ(cut.size(), 2048u);
  EXPECT_EQ(cut.substr(cut.size() - 12), "\nlast words\n");
  // A decoded container keeps its policy.
  json pod_json = ExecPodJson();
  pod_json["spec"]["initContainers"][0]["terminationMessagePolicy"] = "FallbackToLogsOnError";
  auto pod = DecodeExecPod(pod_json);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->init_containers[0].termination_message_policy, "FallbackToLogsOnError");
  EXPECT_EQ(pod->containers[0].termination_message_policy, "File");
}

TEST(ExecPodTest, MissingReferencesFailAsTheKubeletSays) {
  auto pod = DecodeExecPod(ExecPodJson());
  ASSERT_TRUE(pod.ok());
  PodObjects objects = Objects();
  objects.secrets["creds"].erase("token");
  auto env = ContainerEnvironment(*pod, pod->containers[0], {}, objects);
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().message(), "couldn't find key token in Secret team-a/creds");

  objects.config_maps.erase("settings");
  env = ContainerEnvironment(*pod, pod->containers[0], {}, objects);
  ASSERT_FALSE(env.ok());
  EXPECT_EQ(env.status().message(), "configmap \"settings\" not found");

  // Optional references are skipped instead.
  pod->containers[0].env_from[0]["configMapRef"]["optional"] = true;
  pod->containers[0].env[4]["valueFrom"]["secretKeyRef"]["optional"] = true;
  env = ContainerEnvironment(*pod, pod->containers[0], {}, objects);
  EXPECT_TRUE(env.ok()) << env.status().ToString();
}

TEST(ExecPodTest, ExpansionKeepsUndefinedReferencesAndEscapes) {
  const std::map<std::string, std::string> defined = {{"A", "x"}};
  EXPECT_EQ(ExpandReferences("$(A)-$(B)-$$(A)-$$-$", defined), "x-$(B)-$(A)-$-$");
  EXPECT_EQ(ExpandReferences("$(A", defined), "$(A");
}

TEST(ExecPodTest, ArgsAloneAreTheCommandAndNothingIsAnError) {
  ExecContainer container;
  container.name = "c";
  container.args = {"sleep", "1"};
  auto argv = ContainerArgv(container, {});
  ASSERT_TRUE(argv.ok());
  EXPECT_EQ(argv->front(), "sleep");
  container.args.clear();
  EXPECT_FALSE(ContainerArgv(container, {}).ok());
}

TEST(ExecPodTest, VolumeFilesHonourItemsAndOptional) {
  ExecVolume volume;
  volume.name = "cfg";
  volume.kind = ExecVolume::Kind::kConfigMap;
  volume.projections.push_back({ExecVolume::Kind::kConfigMap, "job-cluster", {}, false, 0644});
  auto files = VolumeFiles(volume, Objects());
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->size(), 2u);
  EXPECT_EQ(files->at("worker.env"), (VolumeFile{"export X=1\n", 0644}));

  volume.projections[0].items = {{"worker.env", "env/worker", 0600}};
  files = VolumeFiles(volume, Objects());
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(*files, (std::map<std::string, VolumeFile>{{"env/worker", {"export X=1\n", 0600}}}));

  volume.projections[0].items = {{"worker.env", "../escape", std::nullopt}};
  EXPECT_FALSE(VolumeFiles(volume, Objects()).ok());

  volume.projections[0].name = "absent";
  volume.projections[0].items.clear();
  EXPECT_FALSE(VolumeFiles(volume, Objects()).ok());
  volume.projections[0].optional = true;
  files = VolumeFiles(volume, Objects());
  ASSERT_TRUE(files.ok());
  EXPECT_TRUE(files->empty());
}

TEST(ExecPodTest, BindsPlaceVolumesWithSubPathsAndRefuseEscapes) {
  auto pod = DecodeExecPod(ExecPodJson());
  ASSERT_TRUE(pod.ok());
  const std::map<std::string, std::filesystem::path> dirs = {
      {"code", "/state/pods/u1/volumes/code"},
      {"data", "/state/volumes/pv-1"},
      {"cluster", "/state/pods/u1/volumes/cluster"}};
  auto binds = ContainerBinds(pod->containers[0], dirs);
  ASSERT_TRUE(binds.ok()) << binds.status().ToString();
  ASSERT_EQ(binds->size(), 4u);
  // Outer paths first: /code/checkpoints lands on top of /code.
  EXPECT_EQ(binds->back().target, "/code/checkpoints");
  EXPECT_EQ(binds->back().source, "/state/volumes/pv-1/ckpt");
  EXPECT_TRUE(std::any_of(binds->begin(), binds->end(), [](const ExecBind& bind) {
    return bind.target == "/etc/hybridjob" && bind.read_only;
  }));

  ExecContainer bad = pod->containers[0];
  bad.mounts = {{"data", "/x", "../../etc", false}};
  EXPECT_FALSE(ContainerBinds(bad, dirs).ok());
  bad.mounts = {{"data", "relative", "", false}};
  EXPECT_FALSE(ContainerBinds(bad, dirs).ok());
  bad.mounts = {{"nope", "/x", "", false}};
  EXPECT_FALSE(ContainerBinds(bad, dirs).ok());
}

TEST(ExecPodTest, HostsFileResolvesMembersAndHeadlessServices) {
  const HostsEntry self{"127.1.0.2", "team-a", "job-worker-1", "job"};
  const std::vector<HostsEntry> all = {self,
                                       {"127.1.0.1", "team-a", "job-master-0", "job"},
                                       {"127.1.0.9", "team-b", "other-0", "other"},
                                       {"127.1.0.7", "team-a", "plain", ""}};
  const std::string hosts = HostsFile(self, all, "cluster.local");
  // Its own name first, so its hostname is its own address.
  EXPECT_NE(hosts.find("127.1.0.2\tjob-worker-1.job.team-a.svc.cluster.local "
                       "job-worker-1.job.team-a.svc job-worker-1\n"),
            std::string::npos)
      << hosts;
  EXPECT_NE(hosts.find("127.1.0.1\tjob-master-0.job.team-a.svc.cluster.local "
                       "job-master-0.job.team-a.svc\n"),
            std::string::npos);
  EXPECT_NE(hosts.find("127.1.0.9\tother-0.other.team-b.svc.cluster.local"), std::string::npos);
  EXPECT_NE(hosts.find("127.1.0.1\tjob.team-a.svc.cluster.local job.team-a.svc\n"),
            std::string::npos);
  EXPECT_NE(hosts.find("127.1.0.2\tjob.team-a.svc.cluster.local job.team-a.svc\n"),
            std::string::npos);
  // A pod without a subdomain has no DNS name.
  EXPECT_EQ(hosts.find("plain"), std::string::npos);
  EXPECT_NE(hosts.find("127.0.0.1\tlocalhost"), std::string::npos);
}

TEST(ExecPodTest, RestartPolicyAndBackoff) {
  EXPECT_TRUE(RestartsAfterExit(ExecRestartPolicy::kAlways, 0));
  EXPECT_TRUE(RestartsAfterExit(ExecRestartPolicy::kOnFailure, 1));
  EXPECT_FALSE(RestartsAfterExit(ExecRestartPolicy::kOnFailure, 0));
  EXPECT_FALSE(RestartsAfterExit(ExecRestartPolicy::kNever, 1));
  EXPECT_EQ(RestartBackoff(1), 10s);
  EXPECT_EQ(RestartBackoff(2), 20s);
  EXPECT_EQ(RestartBackoff(4), 80s);
  EXPECT_EQ(RestartBackoff(20), 300s);
}

ExecContainerStatus Terminated(int code) {
  ExecContainerStatus status;
  status.state = ExecContainerStatus::State::kTerminated;
  status.exit_code = code;
  return status;
}

TEST(ExecPodTest, PhaseFromContainers) {
  ExecContainerStatus running;
  running.state = ExecContainerStatus::State::kRunning;
  ExecContainerStatus waiting;
  EXPECT_EQ(PodPhaseFromContainers({waiting}, ExecRestartPolicy::kNever), "Pending");
  EXPECT_EQ(PodPhaseFromContainers({running, Terminated(0)}, ExecRestartPolicy::kNever), "Running");
  EXPECT_EQ(PodPhaseFromContainers({Terminated(0), Terminated(0)}, ExecRestartPolicy::kNever),
            "Succeeded");
  EXPECT_EQ(PodPhaseFromContainers({Terminated(0), Terminated(2)}, ExecRestartPolicy::kNever),
            "Failed");
  EXPECT_EQ(PodPhaseFromContainers({Terminated(2)}, ExecRestartPolicy::kOnFailure), "Running");
  EXPECT_EQ(PodPhaseFromContainers({Terminated(0)}, ExecRestartPolicy::kOnFailure), "Succeeded");
  EXPECT_EQ(PodPhaseFromContainers({Terminated(0)}, ExecRestartPolicy::kAlways), "Running");
  // Waiting to restart after an exit counts as that exit, not as Pending.
  ExecContainerStatus backing_off;
  backing_off.reason = "CrashLoopBackOff";
  backing_off.last_terminated = ExecContainerStatus::Terminated{1, "Error", {}, {}};
  EXPECT_EQ(PodPhaseFromContainers({backing_off}, ExecRestartPolicy::kOnFailure), "Running");
}

TEST(ExecPodTest, StatusPatchIsWhatAKubeletWrites) {
  ExecPodStatus status;
  status.namespace_name = "team-a";
  status.name = "p";
  status.phase = "Failed";
  status.pod_ip = "127.1.0.2";
  status.host_ip = "127.0.0.1";
  status.initialized = true;
  ExecContainerStatus init = Terminated(0);
  init.name = "fetch";
  init.reason = "Completed";
  status.init_containers = {init};
  ExecContainerStatus main = Terminated(137);
  main.name = "trainer";
  main.reason = "Error";
  main.signal = 9;
  main.restart_count = 1;
  main.last_terminated = ExecContainerStatus::Terminated{1, "Error", {}, {}};
  status.containers = {main};
  const json patch = ExecStatusPatch(status, ExecClock::time_point(1800000000s))["status"];
  EXPECT_EQ(patch["phase"], "Failed");
  EXPECT_EQ(patch["podIP"], "127.1.0.2");
  EXPECT_EQ(patch["podIPs"][0]["ip"], "127.1.0.2");
  EXPECT_EQ(patch["hostIP"], "127.0.0.1");
  const json& trainer = patch["containerStatuses"][0];
  EXPECT_EQ(trainer["state"]["terminated"]["exitCode"], 137);
  EXPECT_EQ(trainer["state"]["terminated"]["signal"], 9);
  EXPECT_EQ(trainer["lastState"]["terminated"]["exitCode"], 1);
  EXPECT_EQ(trainer["restartCount"], 1);
  EXPECT_EQ(patch["initContainerStatuses"][0]["state"]["terminated"]["reason"], "Completed");
  for (const json& condition : patch["conditions"]) {
    if (condition["type"] == "Ready") {
      EXPECT_EQ(condition["status"], "False");
      EXPECT_EQ(condition["reason"], "PodCompleted");
    }
    if (condition["type"] == "Initialized") {
      EXPECT_EQ(condition["status"], "True");
      // Cleared explicitly: conditions merge by type in a strategic merge patch.
      EXPECT_TRUE(condition["message"].is_null());
    }
  }
}

}  // namespace
}  // namespace hybridjob::sim
