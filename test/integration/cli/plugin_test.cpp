// `kubectl hybridjob status|queues|nodes|logs` run by kubectl itself (the
// plugin on its PATH) against the real API server: jobs, their members bound
// on simulated GPU nodes, the standing a waiting job's status carries, and
// the gang-scheduler's configuration in a ConfigMap.
#include <filesystem>
#include <fstream>
#include <memory>
#include <regex>
#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/k8s/resource.h>
#include <hybridjob/sim/kubelet_server.h>
#include <hybridjob/sim/node_factory.h>
#include <hybridjob/sim/simulator.h>

#include "crd.h"
#include "test_cluster.h"

namespace hybridjob::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

class PluginTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    client_ = AdminClient().release();
    ASSERT_TRUE(EnsureHybridJobCrd(*client_).ok());
    ns_ = new TestNamespace(*client_, "plugin");
    const std::string ns = ns_->name();
    sim::SimulatorOptions options;
    options.nodes.name_prefix = ns;
    options.nodes.count = 2;
    options.nodes.gpus_per_node = 8;
    options.nodes.labels = {{"example.com/rack", ns + "-rack"}};
    options.heartbeat_interval = 30s;
    sim_ = new sim::Simulator(*client_, options);
    ASSERT_TRUE(sim_->Start().ok());
    // The scheduler's configuration: this suite's own queues, so that what
    // other tests run in the cluster does not show in their rows.
    const std::string config = "topology:\n  levels: [example.com/rack]\nqueues:\n  - name: " + ns +
                               "-train\n    weight: 2\n    guaranteed: {nvidia.com/gpu: 8}\n" +
                               "  - name: " + ns + "-batch\n    max: {nvidia.com/gpu: 4}\n";
    ASSERT_TRUE(client_
                    ->Create(k8s::resources::ConfigMaps(), ns,
                             {{"apiVersion", "v1"},
                              {"kind", "ConfigMap"},
                              {"metadata", {{"name", "scheduler"}}},
                              {"data", {{"config.yaml", config}}}})
                    .ok());
    CreateJob("resnet", ns + "-train", 2, 6, {ns + "-0", ns + "-1"});
    CreateJob("wide", ns + "-batch", 1, 6, {});
    // Names no queue; its members wait, one of them left out of the gang.
    CreateJob("quiet", "", 2, 0, {});
    PatchPodStatus("quiet-worker-1",
                   {{"conditions",
                     json::array({{{"type", "PodScheduled"},
                                   {"status", "False"},
                                   {"reason", std::string(api::kSurplusReason)},
                                   {"message", "gang quiet was placed without this member"}}})}});
    // What the controller writes for a job the scheduler keeps waiting.
    json job = *client_->Get(k8s::resources::HybridJobs(), ns, "wide");
    job["status"] = {
        {"phase", "Queued"},
        {"queue", {{"name", ns + "-batch"}, {"position", 1}, {"reason", "QueueLimit"}}},
        {"conditions", json::array({{{"type", "Queued"},
                                     {"status", "True"},
                                     {"reason", "QueueLimit"},
                                     {"message", "queue " + ns +
                                                     "-batch would use nvidia.com/gpu=6 over its "
                                                     "max nvidia.com/gpu=4 with this group's "
                                                     "minimum"}}})}};
    ASSERT_TRUE(client_->Update(k8s::resources::HybridJobs(), job, "status").ok());
  }

  static void TearDownTestSuite() {
    if (sim_ != nullptr) {
      sim_->Stop();
    }
    delete sim_;
    delete ns_;
    delete client_;
  }

  // A HybridJob of one worker role and its members of `gpus` GPUs, bound to
  // `nodes` in order (pending when there are fewer nodes than members).
  // An empty queue: the job names none.
  static void CreateJob(const std::string& name, const std::string& queue, int members, int gpus,
                        const std::vector<std::string>& nodes) {
    const std::string ns = ns_->name();
    json job = {
        {"apiVersion", api::kApiVersion},
        {"kind", api::kKind},
        {"metadata", {{"name", name}}},
        {"spec",
         {{"replicaSpecs",
           json::array({{{"name", "worker"},
                         {"minReplicas", members},
                         {"template",
                          {{"spec",
                            {{"containers",
                              json::array({{{"name", "main"}, {"image", "trainer"}}})}}}}}}})}}}};
    if (!queue.empty()) {
      job["spec"]["queue"] = queue;
    }
    auto created = client_->Create(k8s::resources::HybridJobs(), ns, job);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    const json spec = {
        {"roles",
         json::array({{{"name", "worker"}, {"min", members}, {"max", members}, {"priority", 0}}})},
        {"queue", queue}};
    for (int i = 0; i < members; ++i) {
      json pod = {
          {"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata",
           {{"name", name + "-worker-" + std::to_string(i)},
            {"labels",
             {{std::string(api::kJobNameLabel), name},
              {std::string(api::kRoleLabel), "worker"},
              {std::string(api::kIndexLabel), std::to_string(i)}}},
            {"annotations", {{std::string(api::kGroupSpecAnnotation), spec.dump()}}},
            {"ownerReferences", json::array({{{"apiVersion", api::kApiVersion},
                                              {"kind", api::kKind},
                                              {"name", name},
                                              {"uid", (*created)["metadata"]["uid"]},
                                              {"controller", true}}})}}},
          {"spec",
           {{"schedulerName", "gang-scheduler"},
            {"containers",
             json::array(
                 {{{"name", "main"},
                   {"image", "trainer"},
                   {"resources", {{"limits", {{"nvidia.com/gpu", std::to_string(gpus)}}}}}}})}}}};
      if (static_cast<size_t>(i) < nodes.size()) {
        pod["spec"]["nodeName"] = nodes[i];
      }
      ASSERT_TRUE(client_->Create(k8s::resources::Pods(), ns, pod).ok());
    }
  }

  static void PatchPodStatus(const std::string& pod, const json& status) {
    k8s::PatchOptions options;
    options.subresource = "status";
    auto patched = client_->Patch(k8s::resources::Pods(), ns_->name(), pod, k8s::PatchType::kMerge,
                                  json({{"status", status}}).dump(), options);
    ASSERT_TRUE(patched.ok()) << pod << ": " << patched.status().ToString();
  }

  // kubectl hybridjob ARGS, with the plugin on kubectl's PATH.
  // Its stderr goes to `stderr_to` ("&1": into the output).
  static int Plugin(const std::string& args, std::string* output,
                    const std::string& stderr_to = "&1") {
    return RunCommand("(PATH=" + BinaryDir() + ":$PATH " + KubernetesBinDir() +
                          "/kubectl hybridjob " + args + " --kubeconfig " + KubeconfigPath() +
                          " --scheduler-config " + ns_->name() + "/scheduler 2>" + stderr_to + ")",
                      output);
  }

  static k8s::RestClient* client_;
  static TestNamespace* ns_;
  static sim::Simulator* sim_;
};

k8s::RestClient* PluginTest::client_ = nullptr;
TestNamespace* PluginTest::ns_ = nullptr;
sim::Simulator* PluginTest::sim_ = nullptr;

TEST_F(PluginTest, StatusShowsMembersNodesAndWhyAJobWaits) {
  const std::string ns = ns_->name();
  std::string out;
  ASSERT_TRUE(WaitFor(
      [&] {
        // Both members Running: the simulated kubelet has started them.
        return Plugin("status resnet -n " + ns, &out) == 0 &&
               out.find("Running   " + ns + "-0") != std::string::npos &&
               out.find("Running   " + ns + "-1") != std::string::npos;
      },
      30s))
      << out;
  EXPECT_THAT(out, HasSubstr("Name:        resnet\n"));
  EXPECT_THAT(out, HasSubstr("GPUs:        12 on nodes, of 12 asked\n"));
  EXPECT_THAT(out, HasSubstr("resnet-worker-0   worker   0       Running   " + ns + "-0   6"));

  ASSERT_EQ(Plugin("status wide -n " + ns, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("Queue:       " + ns + "-batch (position 1)\n"));
  EXPECT_THAT(out, HasSubstr("Waiting:     QueueLimit: queue " + ns + "-batch would use"));

  ASSERT_EQ(Plugin("status wide -n " + ns + " -o json", &out), 0) << out;
  const json data = json::parse(out);
  EXPECT_EQ(data["waiting"]["reason"], "QueueLimit");
  EXPECT_EQ(data["members"][0]["name"], "wide-worker-0");

  // kubectl describe shows the same code, in the status and the condition.
  // (kubectl's discovery may lag a CRD established a moment ago.)
  ASSERT_TRUE(WaitFor(
      [&] {
        return RunCommand(KubernetesBinDir() + "/kubectl describe hybridjobs wide -n " + ns +
                              " --kubeconfig " + KubeconfigPath(),
                          &out) == 0;
      },
      30s))
      << out;
  EXPECT_TRUE(std::regex_search(
      out,
      std::regex(R"(Queue:\s+Name:\s+)" + ns + R"(-batch\s+Position:\s+1\s+Reason:\s+QueueLimit)")))
      << out;
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(Reason:\s+QueueLimit\s+Status:\s+True\s+Type:\s+Queued)")))
      << out;

  EXPECT_NE(Plugin("status nope -n " + ns, &out), 0);
  EXPECT_THAT(out, HasSubstr("error: no HybridJob \"nope\" in namespace " + ns));
}

// A job that names no queue runs in the one its namespace names, else in
// `default`: `status` says which; a member the scheduler left out of its
// gang waits with reason GangSurplus.
TEST_F(PluginTest, StatusShowsTheQueueTheSchedulerUsesAndEveryWaitingReason) {
  const std::string ns = ns_->name();
  std::string out;
  ASSERT_EQ(Plugin("status quiet -n " + ns, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("Queue:       default (no spec.queue)\n"));
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(quiet-worker-1 +worker +1 +Pending +- +0 +0 +GangSurplus\n)")))
      << out;

  // The namespace names a default queue: the scheduler puts the job there.
  const json label = {
      {"metadata", {{"labels", {{"batch.hybridjob.io/default-queue", ns + "-train"}}}}}};
  ASSERT_TRUE(
      client_->Patch(k8s::resources::Namespaces(), "", ns, k8s::PatchType::kMerge, label.dump())
          .ok());
  ASSERT_EQ(Plugin("status quiet -n " + ns, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("Queue:       " + ns +
                             "-train (no spec.queue: the default queue of "
                             "namespace " +
                             ns + ")\n"));
  ASSERT_EQ(Plugin("status quiet -n " + ns + " -o json", &out), 0) << out;
  EXPECT_EQ(json::parse(out)["queue"],
            json({{"name", ns + "-train"}, {"source", "namespaceDefault"}}));
  ASSERT_TRUE(client_
                  ->Patch(k8s::resources::Namespaces(), "", ns, k8s::PatchType::kMerge,
                          R"({"metadata":{"labels":{"batch.hybridjob.io/default-queue":null}}})")
                  .ok());
}

// `logs` ends as kubectl's commands do: 0 when it could show a log, even if
// another member has none (which it notes, with the API server's reason,
// on stderr); 1 when no member has one, each still saying why.
TEST_F(PluginTest, LogsSucceedWhenAMemberHasALogAndSayWhyTheOthersHaveNone) {
  const std::string ns = ns_->name();
  // A kubelet that serves member 0's log, on a node of its own.
  const std::filesystem::path log_file =
      std::filesystem::temp_directory_path() / ("plugin-logs-" + ns + ".log");
  std::ofstream(log_file) << "step 1 loss 0.9\nstep 2 loss 0.7\n";
  sim::KubeletServer kubelet(
      {}, [&](const sim::ContainerLogRequest& request) -> Result<sim::ContainerLogSource> {
        if (request.namespace_name != ns || request.pod != "talk-worker-0" ||
            request.container != "main") {
          return NotFound("container \"" + request.container + "\" not found in pod \"" +
                          request.pod + "\"");
        }
        return sim::ContainerLogSource{log_file, [] { return false; }};
      });
  ASSERT_TRUE(kubelet.Start().ok());
  sim::NodePoolSpec pool;
  pool.name_prefix = "klog-" + ns;
  pool.kubelet_port = kubelet.port();
  const std::string node = sim::NodeName(pool, 0);
  ASSERT_TRUE(client_->Create(k8s::resources::Nodes(), "", sim::MakeNode(pool, 0)).ok());

  CreateJob("talk", "", 2, 0, {node});
  std::string out;
  EXPECT_EQ(Plugin("logs talk -n " + ns, &out, "/dev/null"), 0) << out;
  EXPECT_EQ(out, "[pod/talk-worker-0] step 1 loss 0.9\n[pod/talk-worker-0] step 2 loss 0.7\n");
  EXPECT_EQ(Plugin("logs talk -n " + ns, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("[pod/talk-worker-1] (no log: "));

  // One member asked, without a log: the API server's reason, and 1.
  EXPECT_EQ(Plugin("logs talk --index 1 -n " + ns, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("error: pod talk-worker-1 has no log to show: it is not on a node "
                             "yet\n"));
  // No member with a log: each says why, and 1.
  EXPECT_EQ(Plugin("logs quiet -n " + ns, &out), 1) << out;
  EXPECT_THAT(out, HasSubstr("[pod/quiet-worker-0] (no log: it is not on a node yet)\n"));
  EXPECT_THAT(out,
              HasSubstr("[pod/quiet-worker-1] (no log: it is not on a node yet (GangSurplus))\n"));
  EXPECT_THAT(out, HasSubstr("error: none of the 2 members of job quiet has a log to show"));

  kubelet.Stop();
  k8s::DeleteOptions now;
  now.grace_period_seconds = 0;
  (void)client_->Delete(k8s::resources::Pods(), ns, "talk-worker-0", now);
  (void)client_->Delete(k8s::resources::Nodes(), "", node);
  std::filesystem::remove(log_file);
}

TEST_F(PluginTest, QueuesShowUsageAgainstGuaranteesAndCeilingsAndTheLine) {
  const std::string ns = ns_->name();
  std::string out;
  ASSERT_EQ(Plugin("queues", &out), 0) << out;
  EXPECT_TRUE(std::regex_search(
      out, std::regex(ns + R"(-train\s+-\s+2\s+BestEffortFIFO\s+nvidia.com/gpu=8\s+)"
                           R"(nvidia.com/gpu=12\s+[0-9.]+ GPUs\s+unlimited\s+0)")))
      << out;
  // Each queue's fair share, in GPUs. Its value depends on every queue of the
  // cluster, which other tests share, and may be a fraction (2.667 GPUs):
  // the numbers are unit-tested.
  EXPECT_TRUE(std::regex_search(
      out, std::regex(ns + R"(-batch\s+-\s+1\s+BestEffortFIFO\s+-\s+-\s+[0-9.]+ GPUs\s+)"
                           R"(nvidia.com/gpu=4\s+1)")))
      << out;
  EXPECT_THAT(out, HasSubstr("Waiting in " + ns + "-batch:\n  POSITION   JOB"));
  EXPECT_TRUE(std::regex_search(out, std::regex(R"(  1\s+)" + ns + R"(/wide\s+QueueLimit)")))
      << out;

  ASSERT_EQ(Plugin("queues -o yaml", &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("name: \"" + ns + "-train\""));
}

TEST_F(PluginTest, NodesShowTheGpuMapByRack) {
  const std::string ns = ns_->name();
  std::string out;
  ASSERT_EQ(Plugin("nodes", &out), 0) << out;
  EXPECT_TRUE(std::regex_search(
      out, std::regex(ns + "-0\\s+" + ns + R"(-rack\s+8\s+6\s+2\s+Ready\s+)" + ns + "/resnet:6")))
      << out;
  EXPECT_TRUE(std::regex_search(
      out, std::regex(R"(example.com/rack\s+)" + ns + R"(-rack\s+2\s+16\s+12\s+4\s+2)")))
      << out;
  ASSERT_EQ(Plugin("nodes -o json", &out), 0) << out;
  const json data = json::parse(out);
  bool found = false;
  for (const json& node : data["nodes"]) {
    if (node["name"] == ns + "-1") {
      found = true;
      EXPECT_EQ(node["usedGpus"], "6");
      EXPECT_EQ(node["jobs"][0]["job"], ns + "/resnet");
    }
  }
  EXPECT_TRUE(found) << out;
}

// serve and notebook make standard objects on the real API server, the
// autoscaler in the newest version it serves (autoscaling/v2beta2 on 1.20,
// v2 from 1.23), and refuse a claim that is not bound yet.
TEST_F(PluginTest, ServeAndNotebookMakeStandardObjectsOnTheJobsClaim) {
  const std::string ns = ns_->name();
  json job = {
      {"apiVersion", api::kApiVersion},
      {"kind", api::kKind},
      {"metadata", {{"name", "trained"}}},
      {"spec",
       {{"replicaSpecs",
         json::array(
             {{{"name", "worker"},
               {"minReplicas", 1},
               {"template",
                {{"spec",
                  {{"containers", json::array({{{"name", "main"}, {"image", "trainer"}}})}}}}}}})},
        {"volumes",
         json::array(
             {{{"name", "model"}, {"size", "1Gi"}, {"mountPath", "/model"}, {"retain", true}},
              {{"name", "later"}, {"size", "1Gi"}, {"mountPath", "/l"}}})}}}};
  ASSERT_TRUE(client_->Create(k8s::resources::HybridJobs(), ns, job).ok());
  // The claim as the controller made it, bound to a node-local volume.
  for (const char* claim : {"trained-model", "trained-later"}) {
    ASSERT_TRUE(client_
                    ->Create(k8s::resources::PersistentVolumeClaims(), ns,
                             {{"apiVersion", "v1"},
                              {"kind", "PersistentVolumeClaim"},
                              {"metadata", {{"name", claim}}},
                              {"spec",
                               {{"accessModes", {"ReadWriteOnce"}},
                                {"storageClassName", ""},
                                {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}})
                    .ok());
  }
  const std::string pv = ns + "-trained-model";
  ASSERT_TRUE(client_
                  ->Create(k8s::resources::PersistentVolumes(), "",
                           {{"apiVersion", "v1"},
                            {"kind", "PersistentVolume"},
                            {"metadata", {{"name", pv}}},
                            {"spec",
                             {{"capacity", {{"storage", "1Gi"}}},
                              {"accessModes", {"ReadWriteOnce"}},
                              {"storageClassName", ""},
                              {"hostPath", {{"path", "/tmp/" + pv}}},
                              {"claimRef", {{"namespace", ns}, {"name", "trained-model"}}},
                              {"nodeAffinity",
                               {{"required",
                                 {{"nodeSelectorTerms",
                                   {{{"matchExpressions",
                                      {{{"key", "kubernetes.io/hostname"},
                                        {"operator", "In"},
                                        {"values", {ns + "-0"}}}}}}}}}}}}}}})
                  .ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        auto claim = client_->Get(k8s::resources::PersistentVolumeClaims(), ns, "trained-model");
        return claim.ok() && (*claim)["status"].value("phase", "") == "Bound";
      },
      60s));

  std::string out;
  std::string err_path = std::filesystem::temp_directory_path().string() + "/" + ns + "-serve.err";
  // The model server's command follows "--", so the flags go before it.
  ASSERT_EQ(RunCommand("(PATH=" + BinaryDir() + ":$PATH " + KubernetesBinDir() +
                           "/kubectl hybridjob serve trained --kubeconfig " + KubeconfigPath() +
                           " -n " + ns +
                           " --volume model --model-path /models --image srv:1 --port 8500 "
                           "--min-replicas 1 --max-replicas 3 --cpu-percent 70 -- python3 -m "
                           "srv 2>" +
                           err_path + ")",
                       &out),
            0)
      << out;
  EXPECT_EQ(out,
            "deployment.apps/trained-serve created\nservice/trained-serve created\n"
            "horizontalpodautoscaler.autoscaling/trained-serve created\n");
  std::string err;
  {
    std::ifstream in(err_path);
    err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  std::filesystem::remove(err_path);
  EXPECT_THAT(err, HasSubstr("can run only on node " + ns + "-0"));
  EXPECT_THAT(err, HasSubstr("-l batch.hybridjob.io/serve=trained-serve"));
  auto deployment = client_->Get(k8s::resources::Deployments(), ns, "trained-serve");
  ASSERT_TRUE(deployment.ok());
  const json& container = (*deployment)["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(container["command"], json({"python3", "-m", "srv"}));
  EXPECT_EQ((*deployment)["spec"]["template"]["spec"]["volumes"][0]["persistentVolumeClaim"],
            json({{"claimName", "trained-model"}, {"readOnly", true}}));
  // The version discovery chose: the newest this server serves.
  std::string autoscaling;
  ASSERT_EQ(RunCommand(KubernetesBinDir() + "/kubectl --kubeconfig " + KubeconfigPath() +
                           " api-versions | grep '^autoscaling/v2' | sort | tail -1",
                       &autoscaling),
            0);
  while (!autoscaling.empty() && autoscaling.back() == '\n') {
    autoscaling.pop_back();
  }
  ASSERT_FALSE(autoscaling.empty());
  const std::string version = autoscaling.substr(autoscaling.find('/') + 1);
  auto hpa =
      client_->Get({"autoscaling", version, "horizontalpodautoscalers"}, ns, "trained-serve");
  ASSERT_TRUE(hpa.ok()) << hpa.status().ToString();
  EXPECT_EQ((*hpa)["spec"]["maxReplicas"], 3);
  EXPECT_EQ((*hpa)["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 70);
  EXPECT_TRUE(client_->Get(k8s::resources::Services(), ns, "trained-serve").ok());

  // A dry run writes nothing.
  ASSERT_EQ(Plugin("serve trained -n " + ns +
                       " --volume model --model-path /m --image srv --port 80 --name dry "
                       "--dry-run=client -o name",
                   &out, "/dev/null"),
            0)
      << out;
  EXPECT_EQ(out, "deployment.apps/dry\nservice/dry\n");
  EXPECT_FALSE(client_->Get(k8s::resources::Deployments(), ns, "dry").ok());

  // A claim not bound yet would be placed by the serving pod: refused.
  EXPECT_NE(Plugin("serve trained -n " + ns +
                       " --volume later --model-path /m --image srv --port 80 --name later",
                   &out),
            0);
  EXPECT_THAT(out, HasSubstr("claim trained-later of volume later is not bound yet"));
  EXPECT_THAT(out, HasSubstr("run the job first"));
  EXPECT_NE(Plugin("notebook trained -n " + ns, &out), 0) << "it mounts every claim";

  ASSERT_TRUE(client_->Delete(k8s::resources::PersistentVolumeClaims(), ns, "trained-later").ok());
  json without_later = *client_->Get(k8s::resources::HybridJobs(), ns, "trained");
  without_later["spec"]["volumes"].erase(1);
  ASSERT_TRUE(client_->Update(k8s::resources::HybridJobs(), without_later).ok());
  ASSERT_EQ(Plugin("notebook trained -n " + ns, &out), 0) << out;
  EXPECT_THAT(out, HasSubstr("secret/trained-notebook-token created"));
  EXPECT_THAT(out, HasSubstr("kubectl port-forward -n " + ns +
                             " service/trained-notebook "
                             "8888:8888"));
  auto secret = client_->Get(k8s::resources::Secrets(), ns, "trained-notebook-token");
  ASSERT_TRUE(secret.ok());
  EXPECT_EQ((*secret)["data"]["token"].get<std::string>().size(), 64u) << "48 hex, in base64";
  ASSERT_TRUE(client_->Delete(k8s::resources::PersistentVolumes(), "", pv).ok());
}

TEST_F(PluginTest, BadFlagsAndContextsAreRefusedClearly) {
  std::string out;
  EXPECT_NE(Plugin("queues -o wide", &out), 0);
  EXPECT_THAT(out, HasSubstr("error: --output: unknown format \"wide\""));
  EXPECT_NE(Plugin("queues --context nowhere", &out), 0);
  EXPECT_THAT(out, HasSubstr("nowhere"));
  EXPECT_NE(Plugin("frobnicate", &out), 0);
  EXPECT_THAT(out, HasSubstr("unknown command \"frobnicate\""));
}

}  // namespace
}  // namespace hybridjob::testing
