#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/defaults.h>
#include <hybridjob/api/group_spec.h>
#include <hybridjob/api/json.h>
#include <hybridjob/controller/children.h>

#include "job_fixtures.h"
#include "shell.h"

namespace hybridjob::controller {
namespace {

using nlohmann::json;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

const json* FindNamed(const json& list, const std::string& name) {
  for (const json& item : list) {
    if (item.value("name", "") == name) {
      return &item;
    }
  }
  return nullptr;
}

std::string EnvValueOf(const json& container, const std::string& name) {
  const json* entry = FindNamed(container["env"], name);
  return entry == nullptr ? "<unset>" : (*entry)["value"].get<std::string>();
}

// The kubelet's $(VAR) expansion when no variable matches: only "$$" changes.
std::string KubeletUnescape(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    out += text[i];
    if (text[i] == '$' && i + 1 < text.size() && text[i + 1] == '$') {
      ++i;
    }
  }
  return out;
}

class ControllerChildrenTest : public ::testing::Test {
 protected:
  json object_ = hybridjob::testing::TfJobJson();
  PlannerOptions options_;
};

TEST_F(ControllerChildrenTest, MemberPodIdentity) {
  object_["spec"]["replicaSpecs"][1]["template"]["metadata"] = {
      {"labels", {{"team", "vision"}, {"batch.hybridjob.io/role", "spoofed"}}},
      {"annotations", {{"sim.hybridjob.io/duration", "30s"}}}};
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  json pod = BuildMemberPod(job, job.spec.replica_specs[1], 2, options_);

  EXPECT_EQ(pod["apiVersion"], "v1");
  EXPECT_EQ(pod["kind"], "Pod");
  const json& meta = pod["metadata"];
  EXPECT_EQ(meta["name"], "mnist-worker-2");
  EXPECT_EQ(meta["namespace"], "team-a");
  EXPECT_EQ(meta["labels"]["batch.hybridjob.io/job-name"], "mnist");
  EXPECT_EQ(meta["labels"]["batch.hybridjob.io/role"], "worker");
  EXPECT_EQ(meta["labels"]["batch.hybridjob.io/index"], "2");
  EXPECT_EQ(meta["labels"]["team"], "vision");
  EXPECT_EQ(meta["annotations"]["sim.hybridjob.io/duration"], "30s");
  ASSERT_EQ(meta["ownerReferences"].size(), 1u);
  const json& owner = meta["ownerReferences"][0];
  EXPECT_EQ(owner["apiVersion"], "batch.hybridjob.io/v1alpha1");
  EXPECT_EQ(owner["kind"], "HybridJob");
  EXPECT_EQ(owner["name"], "mnist");
  EXPECT_EQ(owner["uid"], "job-uid-1");
  EXPECT_EQ(owner["controller"], true);
  EXPECT_EQ(owner["blockOwnerDeletion"], true);

  const json& spec = pod["spec"];
  EXPECT_EQ(spec["schedulerName"], "gang-scheduler");
  EXPECT_EQ(spec["hostname"], "mnist-worker-2");
  EXPECT_EQ(spec["subdomain"], "mnist");
  EXPECT_EQ(spec["restartPolicy"], "Never");
  const json& container = spec["containers"][0];
  EXPECT_EQ(EnvValueOf(container, "HYBRIDJOB_JOB_NAME"), "mnist");
  EXPECT_EQ(EnvValueOf(container, "HYBRIDJOB_ROLE"), "worker");
  EXPECT_EQ(EnvValueOf(container, "HYBRIDJOB_INDEX"), "2");
  EXPECT_EQ(container["resources"]["limits"]["nvidia.com/gpu"], 1);  // the template's own
}

TEST_F(ControllerChildrenTest, GroupSpecAnnotationDescribesTheWholeGang) {
  object_["spec"]["replicaSpecs"][1]["priority"] = 5;
  object_["spec"]["queue"] = "research";
  object_["spec"]["runPolicy"] = {{"scheduleTimeoutSeconds", 120}};
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  json pod = BuildMemberPod(job, job.spec.replica_specs[0], 0, options_);
  const std::string annotation = pod["metadata"]["annotations"]["batch.hybridjob.io/group-spec"];
  EXPECT_EQ(annotation, R"({"roles":[{"name":"ps","min":1,"max":1,"priority":0},)"
                        R"({"name":"worker","min":2,"max":4,"priority":5}],)"
                        R"("queue":"research","scheduleTimeoutSeconds":120,)"
                        R"("resizeRestarts":true})")
      << "TensorFlow reads TF_CONFIG at start: a resize restarts it";
  EXPECT_EQ(api::FormatGroupSpec(api::GroupSpecOf(job)), annotation);
  object_["spec"].erase("runPolicy");
  EXPECT_THAT(api::FormatGroupSpec(api::GroupSpecOf(hybridjob::testing::DefaultedJob(object_))),
              Not(HasSubstr("scheduleTimeoutSeconds")));
}

TEST_F(ControllerChildrenTest, EveryMemberMountsTheClusterConfigMap) {
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  json pod = BuildMemberPod(job, job.spec.replica_specs[0], 0, options_);
  const json* volume = FindNamed(pod["spec"]["volumes"], "hybridjob-cluster");
  ASSERT_NE(volume, nullptr);
  EXPECT_EQ((*volume)["configMap"]["name"], "mnist-cluster");
  EXPECT_FALSE((*volume)["configMap"].contains("optional"));  // containers wait for it
  const json* mount = FindNamed(pod["spec"]["containers"][0]["volumeMounts"], "hybridjob-cluster");
  ASSERT_NE(mount, nullptr);
  EXPECT_EQ((*mount)["mountPath"], "/etc/hybridjob");
  EXPECT_EQ((*mount)["readOnly"], true);
}

TEST_F(ControllerChildrenTest, ElasticJobsWrapTheCommand) {
  object_["spec"]["replicaSpecs"][1]["template"]["spec"]["containers"][0]["command"] = {"python",
                                                                                        "train.py"};
  object_["spec"]["replicaSpecs"][1]["template"]["spec"]["containers"][0]["args"] = {"--lr=$(LR)",
                                                                                     "--epochs=3"};
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  ASSERT_TRUE(job.spec.IsElastic());
  json pod = BuildMemberPod(job, job.spec.replica_specs[1], 1, options_);
  const json& container = pod["spec"]["containers"][0];
  ASSERT_TRUE(container["command"].is_array());
  std::vector<std::string> command = container["command"].get<std::vector<std::string>>();
  ASSERT_EQ(command.size(), 8u);
  EXPECT_EQ(command[0], "/bin/sh");
  EXPECT_EQ(command[1], "-c");
  EXPECT_EQ(KubeletUnescape(command[2]), kEnvWrapperScript);
  EXPECT_EQ(command[3], "hybridjob-env");
  EXPECT_THAT(std::vector<std::string>(command.begin() + 4, command.end()),
              ElementsAre("python", "train.py", "--lr=$(LR)", "--epochs=3"));
  EXPECT_FALSE(container.contains("args"));
  EXPECT_EQ(EnvValueOf(container, "TF_CONFIG"), "<unset>");  // it comes from the env file
  EXPECT_THAT(std::string(kEnvWrapperScript), HasSubstr("/etc/hybridjob/${HYBRIDJOB_ROLE}.env"));
}

TEST_F(ControllerChildrenTest, WrapperSourcesTheEnvFileThenExecsTheCommand) {
  // The wrapper with its directory pointed at a scratch one, run as the kubelet
  // would run the wrapped command.
  const std::string dir = ::testing::TempDir() + "/wrapper-test";
  std::filesystem::create_directories(dir);
  {
    std::ofstream out(dir + "/worker.env");
    out << "export RANK=\"$((HYBRIDJOB_INDEX + 1))\"\n";
  }
  std::string script(kEnvWrapperScript);
  script.replace(script.find("/etc/hybridjob"), std::string("/etc/hybridjob").size(), dir);
  testing::ShellResult result = testing::RunShell(
      "HYBRIDJOB_ROLE=worker HYBRIDJOB_INDEX=2 /bin/sh -c \"$1\" hybridjob-env printf '%s;%s' "
      "\"$2\" '$RANK'\n",
      {script, "arg with spaces"});
  EXPECT_EQ(result.exit_status, 0) << result.output;
  EXPECT_EQ(result.output, "arg with spaces;$RANK");
  result = testing::RunShell(
      "HYBRIDJOB_ROLE=worker HYBRIDJOB_INDEX=2 /bin/sh -c \"$1\" hybridjob-env sh -c "
      "'printf %s \"$RANK\"'\n",
      {script});
  EXPECT_EQ(result.output, "3");
  std::filesystem::remove_all(dir);
}

TEST_F(ControllerChildrenTest, ContainersWithoutCommandAreLeftAlone) {
  object_["spec"]["replicaSpecs"][1]["template"]["spec"]["containers"][0].erase("command");
  object_["spec"]["replicaSpecs"][1]["template"]["spec"]["containers"][0]["args"] = {"--x"};
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  json pod = BuildMemberPod(job, job.spec.replica_specs[1], 0, options_);
  EXPECT_FALSE(pod["spec"]["containers"][0].contains("command"));
  EXPECT_EQ(pod["spec"]["containers"][0]["args"], json({"--x"}));
}

TEST_F(ControllerChildrenTest, StaticJobsGetPlainEnvironment) {
  object_["spec"]["replicaSpecs"][1]["maxReplicas"] = 2;
  object_["spec"]["replicaSpecs"][1]["template"]["spec"]["containers"][0]["env"] = {
      {{"name", "TF_CONFIG"}, {"value", "stale"}}, {{"name", "KEEP"}, {"value", "me"}}};
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  ASSERT_FALSE(job.spec.IsElastic());
  json pod = BuildMemberPod(job, job.spec.replica_specs[1], 1, options_);
  const json& container = pod["spec"]["containers"][0];
  EXPECT_EQ(container["command"], json({"sleep", "10"}));  // not wrapped
  EXPECT_EQ(EnvValueOf(container, "KEEP"), "me");
  json tf_config = json::parse(EnvValueOf(container, "TF_CONFIG"));
  EXPECT_EQ(tf_config["cluster"]["worker"].size(), 2u);
  EXPECT_EQ(tf_config["task"]["index"], 1);
  int tf_configs = 0;
  for (const json& entry : container["env"]) {
    tf_configs += entry["name"] == "TF_CONFIG" ? 1 : 0;
  }
  EXPECT_EQ(tf_configs, 1);
}

TEST_F(ControllerChildrenTest, CodeInitContainerTakesTheUrlAsAnArgument) {
  object_["spec"]["code"] = {{"source", "https://example.com/a$(id).tgz?x=1&y=2"}};
  object_["spec"]["replicaSpecs"][1]["template"]["spec"]["containers"][0]["env"] = {
      {{"name", "AWS_REGION"}, {"value", "eu-west-1"}}, {{"name", "SECRET_OTHER"}, {"value", "x"}}};
  object_["spec"]["replicaSpecs"][1]["template"]["spec"]["initContainers"] =
      json::array({hybridjob::testing::Container("prepare")});
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  json pod = BuildMemberPod(job, job.spec.replica_specs[1], 0, options_);
  const json& init = pod["spec"]["initContainers"];
  ASSERT_EQ(init.size(), 2u);
  EXPECT_EQ(init[0]["name"], "hybridjob-code");  // first, before the template's own
  EXPECT_EQ(init[1]["name"], "prepare");
  EXPECT_EQ(init[0]["image"], options_.code_fetcher_image);
  std::vector<std::string> command = init[0]["command"].get<std::vector<std::string>>();
  ASSERT_EQ(command.size(), 6u);
  EXPECT_EQ(KubeletUnescape(command[2]), kCodeFetchScript);
  EXPECT_THAT(command[2], Not(HasSubstr("example.com")));
  EXPECT_EQ(KubeletUnescape(command[4]), "https://example.com/a$(id).tgz?x=1&y=2");
  EXPECT_EQ(command[4], "https://example.com/a$$(id).tgz?x=1&y=2");
  EXPECT_EQ(command[5], "/workspace");
  // What the store answered becomes the termination message.
  EXPECT_EQ(init[0]["terminationMessagePolicy"], "FallbackToLogsOnError");
  EXPECT_EQ(init[0]["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(init[0]["securityContext"]["allowPrivilegeEscalation"], false);
  EXPECT_EQ(init[0]["securityContext"]["capabilities"]["drop"], json({"ALL"}));
  EXPECT_EQ(init[1].count("securityContext"), 0u) << "the template's own containers are the user's";
  EXPECT_EQ(EnvValueOf(init[0], "AWS_REGION"), "eu-west-1");
  EXPECT_EQ(EnvValueOf(init[0], "SECRET_OTHER"), "<unset>");

  const json* volume = FindNamed(pod["spec"]["volumes"], "hybridjob-code");
  ASSERT_NE(volume, nullptr);
  EXPECT_TRUE((*volume).contains("emptyDir"));
  const json& container = pod["spec"]["containers"][0];
  EXPECT_EQ((*FindNamed(container["volumeMounts"], "hybridjob-code"))["mountPath"], "/workspace");
  EXPECT_EQ(EnvValueOf(container, "HYBRIDJOB_CODE_DIR"), "/workspace");
  // The template's init container sees the code too.
  EXPECT_NE(FindNamed(init[1]["volumeMounts"], "hybridjob-code"), nullptr);

  job.spec.code->image = "my/fetcher:1";
  pod = BuildMemberPod(job, job.spec.replica_specs[1], 0, options_);
  EXPECT_EQ(pod["spec"]["initContainers"][0]["image"], "my/fetcher:1");
}

TEST_F(ControllerChildrenTest, CodeFromAnS3CompatibleStoreGetsItsEndpointAndSecret) {
  object_["spec"]["code"] = {{"source", "s3://models/code.tgz"},
                             {"endpoint", "http://store.internal:9000"},
                             {"credentialsSecret", "store-creds"}};
  object_["spec"]["replicaSpecs"][1]["template"]["spec"]["containers"][0]["envFrom"] = {
      {{"configMapRef", {{"name", "settings"}}}}};
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  json pod = BuildMemberPod(job, job.spec.replica_specs[1], 0, options_);
  const json& fetch = pod["spec"]["initContainers"][0];
  EXPECT_EQ(EnvValueOf(fetch, "AWS_ENDPOINT_URL"), "http://store.internal:9000");
  // The Secret is referenced, never read: the kubelet hands its keys over.
  EXPECT_EQ(fetch["envFrom"], json({{{"configMapRef", {{"name", "settings"}}}},
                                    {{"secretRef", {{"name", "store-creds"}}}}}));
  // The member's own container does not get the store's credentials.
  EXPECT_EQ(pod["spec"]["containers"][0]["envFrom"].size(), 1u);
}

// A PATH of `dir`/bin (the test's stand-ins) then `dir`/tools: links to the
// system's programs the scripts use, and nothing else, so that whether the
// host has an aws CLI does not matter.
std::string ScriptPath(const std::string& dir) {
  std::filesystem::create_directories(dir + "/tools");
  for (const char* tool : {"sh", "mktemp", "rm", "tr", "head", "tail", "sed", "printf", "mkdir",
                           "tar", "gzip", "unzip", "find", "cat", "echo"}) {
    for (const char* prefix : {"/usr/bin/", "/bin/"}) {
      const std::string path = std::string(prefix) + tool;
      std::error_code ec;
      if (std::filesystem::exists(path) && !std::filesystem::exists(dir + "/tools/" + tool, ec)) {
        std::filesystem::create_symlink(path, dir + "/tools/" + tool, ec);
      }
    }
  }
  return dir + "/bin:" + dir + "/tools";
}

// Runs the fetch script for `url` with a curl on PATH that records its
// arguments and serves a small archive; returns the recorded arguments.
std::vector<std::string> FetchWithRecordingCurl(const std::string& url,
                                                const std::vector<std::string>& env) {
  const std::string dir = ::testing::TempDir() + "/fetch-s3-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/bin");
  std::filesystem::create_directories(dir + "/content");
  std::ofstream(dir + "/content/run.sh") << "echo hi\n";
  {
    std::ofstream curl(dir + "/bin/curl");
    curl << "#!/bin/sh\n"
            "out=\n"
            ": > \""
         << dir
         << "/args\"\n"
            "while [ $# -gt 0 ]; do\n"
            "  printf '%s\\n' \"$1\" >> \""
         << dir
         << "/args\"\n"
            "  if [ \"$1\" = -o ]; then out=\"$2\"; fi\n"
            "  shift\n"
            "done\n"
            "tar -czf \"$out\" -C \""
         << dir << "/content\" run.sh\n";
  }
  std::filesystem::permissions(dir + "/bin/curl", std::filesystem::perms::owner_all);
  std::string wrapper = "set -e\nexport PATH=\"" + ScriptPath(dir) + "\"\n";
  for (const std::string& assignment : env) {
    wrapper += "export " + assignment + "\n";
  }
  { std::ofstream(dir + "/fetch.sh") << kCodeFetchScript; }
  wrapper += "exec /bin/sh \"" + dir + "/fetch.sh\" \"$1\" \"$2\"\n";
  testing::ShellResult result = testing::RunShell(wrapper, {url, dir + "/dest"});
  EXPECT_EQ(result.exit_status, 0) << result.output;
  EXPECT_TRUE(std::filesystem::exists(dir + "/dest/run.sh")) << result.output;
  std::vector<std::string> args;
  std::ifstream recorded(dir + "/args");
  for (std::string line; std::getline(recorded, line);) {
    args.push_back(line);
  }
  std::filesystem::remove_all(dir);
  return args;
}

TEST_F(ControllerChildrenTest, CodeFetchSignsPathStyleRequestsToAnS3CompatibleStore) {
  // Without an aws CLI on PATH (the script would hand it the request).
  std::vector<std::string> args =
      FetchWithRecordingCurl("s3://models/team/code.tgz",
                             {"AWS_ENDPOINT_URL=http://127.0.0.1:9000/", "AWS_ACCESS_KEY_ID=AKID",
                              "AWS_SECRET_ACCESS_KEY='s3cr3t;$(x)'", "AWS_REGION=eu-west-1"});
  EXPECT_THAT(args, Contains("http://127.0.0.1:9000/models/team/code.tgz"));
  EXPECT_THAT(args, Contains("aws:amz:eu-west-1:s3"));
  EXPECT_THAT(args, Contains("AKID:s3cr3t;$(x)"));
  // S3 refuses a SigV4 request without it (older curls do not add it).
  EXPECT_THAT(args, Contains("x-amz-content-sha256: UNSIGNED-PAYLOAD"));
  EXPECT_THAT(args, Not(Contains(HasSubstr("x-amz-security-token"))));

  args = FetchWithRecordingCurl("s3://models/code.tgz",
                                {"AWS_ENDPOINT_URL=https://store", "AWS_ACCESS_KEY_ID=AKID",
                                 "AWS_SECRET_ACCESS_KEY=k", "AWS_SESSION_TOKEN=tok"});
  EXPECT_THAT(args, Contains("https://store/models/code.tgz"));
  EXPECT_THAT(args, Contains("aws:amz:us-east-1:s3"));
  EXPECT_THAT(args, Contains("x-amz-security-token: tok"));

  // No credentials: an unsigned request, to the store or to AWS.
  args = FetchWithRecordingCurl("s3://models/code.tgz", {"AWS_ENDPOINT_URL=https://store"});
  EXPECT_THAT(args, Contains("https://store/models/code.tgz"));
  EXPECT_THAT(args, Not(Contains("--aws-sigv4")));
  args = FetchWithRecordingCurl("s3://models/code.tgz", {});
  EXPECT_THAT(args, Contains("https://models.s3.amazonaws.com/code.tgz"));
}

// A curl that answers as a store does when it refuses: the error document
// in the -o file, exit 22 (--fail-with-body).
void WriteRefusingCurl(const std::string& dir) {
  std::filesystem::create_directories(dir + "/bin");
  std::ofstream curl(dir + "/bin/curl");
  curl << "#!/bin/sh\n"
          "while [ $# -gt 0 ]; do\n"
          "  if [ \"$1\" = -o ]; then out=\"$2\"; fi\n"
          "  shift\n"
          "done\n"
          "printf '<?xml version=\"1.0\"?>\\n<Error><Code>InvalidAccessKeyId</Code>"
          "<Message>The AWS Access Key Id you provided does not exist in our records.</Message>"
          "</Error>' > \"$out\"\n"
          "echo 'curl: (22) The requested URL returned error: 403' >&2\n"
          "exit 22\n";
  curl.close();
  std::filesystem::permissions(dir + "/bin/curl", std::filesystem::perms::owner_all);
}

TEST_F(ControllerChildrenTest, FetchAndUploadSayWhatTheStoreAnswered) {
  const std::string dir = ::testing::TempDir() + "/refused-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  WriteRefusingCurl(dir);
  std::filesystem::create_directories(dir + "/volume");
  std::ofstream(dir + "/volume/w.bin") << "w";
  { std::ofstream(dir + "/fetch.sh") << kCodeFetchScript; }
  { std::ofstream(dir + "/upload.sh") << kArtifactsUploadScript; }
  const std::string env = "export PATH=\"" + ScriptPath(dir) +
                          "\" AWS_ENDPOINT_URL=http://127.0.0.1:9 AWS_ACCESS_KEY_ID=nope\n";
  testing::ShellResult fetch = testing::RunShell(
      env + "exec /bin/sh \"" + dir + "/fetch.sh\" \"$@\"\n", {"s3://code/x.tgz", dir + "/dest"});
  EXPECT_NE(fetch.exit_status, 0);
  EXPECT_THAT(fetch.output,
              HasSubstr("hybridjob-code: could not fetch s3://code/x.tgz: the server answered "
                        "InvalidAccessKeyId: The AWS Access Key Id you provided does not exist "
                        "in our records."));
  testing::ShellResult upload =
      testing::RunShell(env + "exec /bin/sh \"" + dir + "/upload.sh\" \"$@\"\n",
                        {"s3://out/run", dir + "/volume", "w.bin"});
  EXPECT_NE(upload.exit_status, 0);
  EXPECT_THAT(
      upload.output,
      HasSubstr("hybridjob-artifacts: could not upload w.bin to "
                "http://127.0.0.1:9/out/run/w.bin: the server answered InvalidAccessKeyId: "));
  EXPECT_THAT(upload.output, Not(HasSubstr("uploaded")));
  std::filesystem::remove_all(dir);
}

TEST_F(ControllerChildrenTest, MpiMembersGetTheJobsSshKeyAndTheLauncherWaitsForWorkers) {
  object_["spec"]["framework"] = "mpi";
  object_["spec"]["replicaSpecs"] = {
      {{"name", "launcher"}, {"minReplicas", 1}, {"template", hybridjob::testing::PodTemplate()}},
      {{"name", "worker"}, {"minReplicas", 2}, {"template", hybridjob::testing::PodTemplate(1)}}};
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  const json launcher = BuildMemberPod(job, job.spec.replica_specs[0], 0, options_);
  const json worker = BuildMemberPod(job, job.spec.replica_specs[1], 1, options_);
  for (const json* pod : {&launcher, &worker}) {
    const json* volume = FindNamed((*pod)["spec"]["volumes"], "hybridjob-ssh");
    ASSERT_NE(volume, nullptr);
    EXPECT_EQ((*volume)["secret"]["secretName"], "mnist-ssh");
    EXPECT_EQ((*volume)["secret"]["defaultMode"], 0600);
    EXPECT_EQ((*volume)["secret"]["items"],
              json({{{"key", "ssh-privatekey"}, {"path", "id_rsa"}},
                    {{"key", "ssh-publickey"}, {"path", "id_rsa.pub"}},
                    {{"key", "ssh-publickey"}, {"path", "authorized_keys"}}}));
    const json* mount = FindNamed((*pod)["spec"]["containers"][0]["volumeMounts"], "hybridjob-ssh");
    ASSERT_NE(mount, nullptr);
    EXPECT_EQ((*mount)["mountPath"], "/root/.ssh");
    EXPECT_EQ((*mount)["readOnly"], true);
  }
  const json& mpirun = launcher["spec"]["containers"][0];
  EXPECT_THAT(EnvValueOf(mpirun, "OMPI_MCA_plm_rsh_args"), HasSubstr("StrictHostKeyChecking=no"));
  EXPECT_EQ(EnvValueOf(mpirun, "OMPI_MCA_orte_keep_fqdn_hostnames"), "true");
  EXPECT_EQ(EnvValueOf(mpirun, "OMPI_MCA_orte_default_hostfile"), "/etc/hybridjob/hostfile");
  EXPECT_EQ(EnvValueOf(worker["spec"]["containers"][0], "OMPI_MCA_plm_rsh_args"), "<unset>");
  const json& init = launcher["spec"]["initContainers"];
  ASSERT_EQ(init.size(), 1u);
  EXPECT_EQ(init[0]["name"], "hybridjob-wait-for-workers");
  EXPECT_EQ(init[0]["image"], mpirun["image"]);
  EXPECT_EQ(KubeletUnescape(init[0]["command"][2].get<std::string>()), kWaitForWorkersScript);
  EXPECT_EQ(init[0]["command"][4], "/etc/hybridjob/hostfile");
  EXPECT_NE(FindNamed(init[0]["volumeMounts"], "hybridjob-cluster"), nullptr);
  EXPECT_NE(FindNamed(init[0]["volumeMounts"], "hybridjob-ssh"), nullptr);
  EXPECT_FALSE(worker["spec"].contains("initContainers"));

  // A template's own setting is kept.
  object_["spec"]["replicaSpecs"][0]["template"]["spec"]["containers"][0]["env"] = {
      {{"name", "OMPI_MCA_plm_rsh_args"}, {"value", "-p 2222"}}};
  job = hybridjob::testing::DefaultedJob(object_);
  EXPECT_EQ(EnvValueOf(BuildMemberPod(job, job.spec.replica_specs[0], 0,
                                      options_)["spec"]["containers"][0],
                       "OMPI_MCA_plm_rsh_args"),
            "-p 2222");
}

TEST_F(ControllerChildrenTest, WaitForWorkersScriptWaitsForEveryHostInTurn) {
  const std::string dir = ::testing::TempDir() + "/wait-workers-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/bin");
  // An ssh that refuses each host twice, then lets it in; it records calls.
  {
    std::ofstream ssh(dir + "/bin/ssh");
    ssh << "#!/bin/sh\n"
           "for last; do :; done\n"  // the command; the host is the word before it
           "host=\"$(printf '%s\\n' \"$@\" | tail -n 2 | head -n 1)\"\n"
           "echo \"$host\" >> \""
        << dir
        << "/calls\"\n"
           "[ \"$(grep -c \"^$host$\" \""
        << dir << "/calls\")\" -ge 3 ]\n";
  }
  std::filesystem::permissions(dir + "/bin/ssh", std::filesystem::perms::owner_all);
  std::ofstream(dir + "/hostfile") << "a.job.ns.svc slots=2\n\nb.job.ns.svc slots=2\n";
  { std::ofstream(dir + "/wait.sh") << kWaitForWorkersScript; }
  // sleep is the shell's own: a stub keeps the test fast.
  std::ofstream(dir + "/bin/sleep") << "#!/bin/sh\n";
  std::filesystem::permissions(dir + "/bin/sleep", std::filesystem::perms::owner_all);
  testing::ShellResult result =
      testing::RunShell("export PATH=\"" + dir + "/bin:/usr/bin:/bin\"\nexec /bin/sh \"" + dir +
                            "/wait.sh\" \"$1\"\n",
                        {dir + "/hostfile"});
  EXPECT_EQ(result.exit_status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("waiting for a.job.ns.svc to accept SSH"));
  EXPECT_THAT(result.output, HasSubstr("a.job.ns.svc accepts SSH"));
  EXPECT_THAT(result.output, HasSubstr("b.job.ns.svc accepts SSH"));
  std::ifstream calls(dir + "/calls");
  std::string all((std::istreambuf_iterator<char>(calls)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all,
            "a.job.ns.svc\na.job.ns.svc\na.job.ns.svc\nb.job.ns.svc\nb.job.ns.svc\n"
            "b.job.ns.svc\n");
  std::filesystem::remove_all(dir);
}

// Runs the upload script over a volume directory with a curl on PATH that
// records each call's arguments, one call per line.
std::vector<std::string> UploadWithRecordingCurl(const std::string& destination,
                                                 const std::vector<std::string>& paths,
                                                 const std::vector<std::string>& env,
                                                 testing::ShellResult* result) {
  const std::string dir = ::testing::TempDir() + "/upload-" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/bin");
  std::filesystem::create_directories(dir + "/volume/model/step 2");
  std::ofstream(dir + "/volume/model/w.bin") << "w";
  std::ofstream(dir + "/volume/model/step 2/w.bin") << "w2";
  std::ofstream(dir + "/volume/metrics.txt") << "m";
  {
    std::ofstream curl(dir + "/bin/curl");
    curl << "#!/bin/sh\nprintf '%s|' \"$@\" >> \"" << dir << "/calls\"\necho >> \"" << dir
         << "/calls\"\n";
  }
  std::filesystem::permissions(dir + "/bin/curl", std::filesystem::perms::owner_all);
  std::string wrapper = "set -e\nexport PATH=\"" + ScriptPath(dir) + "\"\n";
  for (const std::string& assignment : env) {
    wrapper += "export " + assignment + "\n";
  }
  { std::ofstream(dir + "/upload.sh") << kArtifactsUploadScript; }
  wrapper += "exec /bin/sh \"" + dir + "/upload.sh\" \"$@\"\n";
  std::vector<std::string> args = {destination, dir + "/volume"};
  args.insert(args.end(), paths.begin(), paths.end());
  *result = testing::RunShell(wrapper, args);
  std::vector<std::string> calls;
  std::ifstream recorded(dir + "/calls");
  for (std::string line; std::getline(recorded, line);) {
    calls.push_back(line.substr(line.find("-T|") + 3));  // from the file on
  }
  std::sort(calls.begin(), calls.end());
  // Paths in calls are below the volume directory; show them relative.
  for (std::string& call : calls) {
    for (size_t at; (at = call.find(dir + "/volume/")) != std::string::npos;) {
      call.replace(at, dir.size() + 8, "");
    }
  }
  std::filesystem::remove_all(dir);
  return calls;
}

TEST_F(ControllerChildrenTest, ArtifactsUploadPutsEveryFileBelowTheDestination) {
  testing::ShellResult result;
  std::vector<std::string> calls =
      UploadWithRecordingCurl("http://store:8080/runs/1/", {"model", "metrics.txt"}, {}, &result);
  EXPECT_EQ(result.exit_status, 0) << result.output;
  EXPECT_THAT(result.output, HasSubstr("uploaded 3 files to http://store:8080/runs/1"));
  EXPECT_THAT(calls,
              ElementsAre("metrics.txt|--url|http://store:8080/runs/1/metrics.txt|",
                          "model/step 2/w.bin|--url|http://store:8080/runs/1/model/step 2/w.bin|",
                          "model/w.bin|--url|http://store:8080/runs/1/model/w.bin|"));

  // An S3-compatible store, signed; a missing path fails the run (the kubelet retries it).
  calls = UploadWithRecordingCurl("s3://bucket/runs", {"metrics.txt"},
                                  {"AWS_ENDPOINT_URL=http://127.0.0.1:9000",
                                   "AWS_ACCESS_KEY_ID=AKID", "AWS_SECRET_ACCESS_KEY=secret"},
                                  &result);
  EXPECT_EQ(result.exit_status, 0) << result.output;
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0], "metrics.txt|--url|http://127.0.0.1:9000/bucket/runs/metrics.txt|");
  UploadWithRecordingCurl("http://store/x", {"absent"}, {}, &result);
  EXPECT_NE(result.exit_status, 0);
  EXPECT_THAT(result.output, HasSubstr("absent: no such file or directory on the volume"));
}

TEST_F(ControllerChildrenTest, CodeFetchScriptNeverEvaluatesTheUrl) {
  const std::string dir = ::testing::TempDir() + "/fetch-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string marker = dir + "/pwned";
  // Port 9 refuses connections, so the fetch fails fast after the URL was used.
  for (const std::string& url :
       {"http://127.0.0.1:9/$(touch " + marker + ").tgz",
        "http://127.0.0.1:9/`touch " + marker + "`", "http://127.0.0.1:9/a.tgz;touch " + marker}) {
    testing::ShellResult result =
        testing::RunShell(std::string(kCodeFetchScript), {url, dir + "/dest"});
    EXPECT_NE(result.exit_status, 0) << result.output;
    EXPECT_FALSE(std::filesystem::exists(marker)) << url;
  }
  std::filesystem::remove_all(dir);
}

TEST_F(ControllerChildrenTest, JobVolumesMountIntoTheirRoles) {
  object_["spec"]["volumes"] = {
      {{"name", "data"}, {"size", "10Gi"}, {"mountPath", "/data"}},
      {{"name", "ckpt"}, {"size", "1Gi"}, {"mountPath", "/ckpt"}, {"roles", {"worker"}}},
      {{"name", "shared"}, {"existingClaim", "team-share"}, {"mountPath", "/shared"}}};
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  json ps = BuildMemberPod(job, job.spec.replica_specs[0], 0, options_);
  json worker = BuildMemberPod(job, job.spec.replica_specs[1], 0, options_);
  EXPECT_EQ((*FindNamed(ps["spec"]["volumes"], "data"))["persistentVolumeClaim"]["claimName"],
            "mnist-data");
  EXPECT_EQ(FindNamed(ps["spec"]["volumes"], "ckpt"), nullptr);
  EXPECT_NE(FindNamed(worker["spec"]["volumes"], "ckpt"), nullptr);
  EXPECT_EQ((*FindNamed(worker["spec"]["volumes"], "shared"))["persistentVolumeClaim"]["claimName"],
            "team-share");
  EXPECT_EQ((*FindNamed(worker["spec"]["containers"][0]["volumeMounts"], "ckpt"))["mountPath"],
            "/ckpt");
}

TEST_F(ControllerChildrenTest, HeadlessService) {
  object_["spec"]["replicaSpecs"][1]["port"] = 3333;
  object_["spec"]["replicaSpecs"].push_back({{"name", "evaluator"},
                                             {"minReplicas", 0},
                                             {"maxReplicas", 1},
                                             {"template", hybridjob::testing::PodTemplate()}});
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  json service = BuildHeadlessService(job);
  EXPECT_EQ(service["metadata"]["name"], "mnist");
  EXPECT_EQ(service["metadata"]["ownerReferences"][0]["uid"], "job-uid-1");
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  EXPECT_EQ(service["spec"]["publishNotReadyAddresses"], true);
  EXPECT_EQ(service["spec"]["selector"], json({{"batch.hybridjob.io/job-name", "mnist"}}));
  // ps and evaluator share 2222: one entry per port.
  EXPECT_EQ(
      service["spec"]["ports"],
      json({{{"name", "ps"}, {"port", 2222}, {"targetPort", 2222}, {"protocol", "TCP"}},
            {{"name", "worker"}, {"port", 3333}, {"targetPort", 3333}, {"protocol", "TCP"}}}));
}

TEST_F(ControllerChildrenTest, VolumeClaims) {
  object_["spec"]["volumes"] = {
      {{"name", "data"}, {"size", "10Gi"}, {"mountPath", "/data"}, {"storageClassName", "fast"}},
      {{"name", "keep"},
       {"size", "5Gi"},
       {"mountPath", "/keep"},
       {"retain", true},
       {"accessModes", {"ReadWriteMany"}}}};
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  json data = BuildVolumeClaim(job, job.spec.volumes[0]);
  EXPECT_EQ(data["kind"], "PersistentVolumeClaim");
  EXPECT_EQ(data["metadata"]["name"], "mnist-data");
  EXPECT_EQ(data["metadata"]["labels"]["batch.hybridjob.io/job-name"], "mnist");
  EXPECT_EQ(data["metadata"]["ownerReferences"].size(), 1u);
  EXPECT_EQ(data["spec"]["accessModes"], json({"ReadWriteOnce"}));
  EXPECT_EQ(data["spec"]["resources"]["requests"]["storage"], "10Gi");
  EXPECT_EQ(data["spec"]["storageClassName"], "fast");
  json keep = BuildVolumeClaim(job, job.spec.volumes[1]);
  EXPECT_FALSE(keep["metadata"].contains("ownerReferences"));
  EXPECT_EQ(keep["spec"]["accessModes"], json({"ReadWriteMany"}));
  EXPECT_FALSE(keep["spec"].contains("storageClassName"));
}

TEST_F(ControllerChildrenTest, Tensorboard) {
  object_["spec"]["volumes"] = {{{"name", "logs"}, {"size", "1Gi"}, {"mountPath", "/logs/"}},
                                {{"name", "other"}, {"size", "1Gi"}, {"mountPath", "/logsx"}}};
  object_["spec"]["tensorboard"] = {{"logDir", "/logs/run1"}, {"serviceType", "NodePort"}};
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  json deployment = BuildTensorboardDeployment(job, options_);
  EXPECT_EQ(deployment["kind"], "Deployment");
  EXPECT_EQ(deployment["metadata"]["name"], "mnist-tensorboard");
  EXPECT_EQ(deployment["metadata"]["ownerReferences"][0]["controller"], true);
  const json& pod_labels = deployment["spec"]["template"]["metadata"]["labels"];
  EXPECT_EQ(pod_labels, json({{"batch.hybridjob.io/tensorboard", "mnist"}}));
  EXPECT_EQ(deployment["spec"]["selector"]["matchLabels"], pod_labels);
  const json& container = deployment["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["image"], options_.tensorboard_image);
  EXPECT_EQ(container["args"][1], "/logs/run1");
  EXPECT_EQ(container["securityContext"]["runAsNonRoot"], true);
  EXPECT_NE(container["securityContext"]["runAsUser"], 0);
  EXPECT_EQ(container["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_EQ(deployment["spec"]["template"]["spec"]["automountServiceAccountToken"], false);
  const json& volumes = deployment["spec"]["template"]["spec"]["volumes"];
  ASSERT_EQ(volumes.size(), 1u);
  EXPECT_EQ(volumes[0]["persistentVolumeClaim"]["claimName"], "mnist-logs");
  json service = BuildTensorboardService(job);
  EXPECT_EQ(service["spec"]["type"], "NodePort");
  EXPECT_EQ(service["spec"]["selector"], pod_labels);
  EXPECT_EQ(service["metadata"]["labels"]["batch.hybridjob.io/job-name"], "mnist");
}

TEST_F(ControllerChildrenTest, ClusterConfigMap) {
  api::HybridJob job = hybridjob::testing::DefaultedJob(object_);
  Membership membership{{{"ps", 1}, {"worker", 3}}};
  json config_map = BuildClusterConfigMap(job, membership, PlannerOptions{});
  EXPECT_EQ(config_map["metadata"]["name"], "mnist-cluster");
  EXPECT_EQ(config_map["metadata"]["annotations"]["batch.hybridjob.io/members"],
            R"({"ps":1,"worker":3})");
  const json& data = config_map["data"];
  EXPECT_TRUE(data.contains("cluster.json"));
  EXPECT_TRUE(data.contains("ps.env"));
  EXPECT_TRUE(data.contains("worker.env"));
  EXPECT_FALSE(data.contains("hostfile"));
  EXPECT_EQ(json::parse(data["cluster.json"].get<std::string>())["worker"].size(), 3u);
}

TEST_F(ControllerChildrenTest, EscapesKubeletExpansion) {
  EXPECT_EQ(EscapeKubeExpansion("a$(B)c$$d"), "a$$(B)c$$$$d");
  EXPECT_EQ(EscapeKubeExpansion("plain"), "plain");
}

}  // namespace
}  // namespace hybridjob::controller
