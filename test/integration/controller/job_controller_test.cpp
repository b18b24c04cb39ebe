// hybridjob-controller's reconciler (JobController, in-process) against the
// real kube-apiserver. There is no scheduler and no kubelet: the test binds
// pods through pods/binding and writes their status as a kubelet would, and
// marks the pods a gang scheduler would leave out as surplus. Each test runs
// its own controller restricted to its own namespace.
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/time.h>
#include <hybridjob/controller/job_controller.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/base64.h>

#include "crd.h"
#include "test_cluster.h"

namespace hybridjob::controller {
namespace {

using hybridjob::testing::AdminClient;
using hybridjob::testing::TestNamespace;
using hybridjob::testing::WaitFor;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kNode = "node-a";

std::string Now() {
  return api::FormatTime(std::chrono::time_point_cast<std::chrono::seconds>(api::Clock::now()));
}

// Plays the part of the kubelet that matters here: a pod bound to a node and
// deleted gracefully goes once its containers stop, which this does at once.
class TerminatingPodReaper {
 public:
  TerminatingPodReaper(k8s::ApiClient& client, std::string ns)
      : client_(client), ns_(std::move(ns)), thread_([this] { Run(); }) {}
  ~TerminatingPodReaper() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  TerminatingPodReaper(const TerminatingPodReaper&) = delete;
  TerminatingPodReaper& operator=(const TerminatingPodReaper&) = delete;

 private:
  void Run() {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, 100ms, [this] { return stopping_; })) {
      lock.unlock();
      auto pods = client_.List(k8s::resources::Pods(), ns_, {});
      if (pods.ok()) {
        for (const json& pod : pods->items) {
          const json& meta = pod["metadata"];
          if (!meta.contains("deletionTimestamp")) {
            continue;
          }
          k8s::DeleteOptions now;
          now.grace_period_seconds = 0;
          now.precondition_uid = meta.value("uid", "");
          (void)client_.Delete(k8s::resources::Pods(), ns_, meta.value("name", ""), now);
        }
      }
      lock.lock();
    }
  }

  k8s::ApiClient& client_;
  const std::string ns_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

json Container() {
  return {{"name", "main"}, {"image", "trainer:1"}, {"command", {"python", "train.py"}}};
}

json Role(const std::string& name, int min, int max, const std::string& restart = "Never") {
  return {{"name", name},
          {"minReplicas", min},
          {"maxReplicas", max},
          {"restartPolicy", restart},
          {"template", {{"spec", {{"containers", json::array({Container()})}}}}}};
}

class JobControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    client_ = AdminClient();
    hybridjob::Status crd = hybridjob::testing::EnsureHybridJobCrd(*client_);
    ASSERT_TRUE(crd.ok()) << crd.ToString();
    ns_ = std::make_unique<TestNamespace>(*client_, "ctl");
    reaper_ = std::make_unique<TerminatingPodReaper>(*client_, ns_->name());
  }

  void TearDown() override {
    if (controller_) {
      controller_->Stop();
    }
    reaper_.reset();
    // No PVC protection controller runs on the local cluster: drop the
    // finalizer it would remove, so the namespace can go.
    if (client_ && ns_) {
      auto claims = client_->List(k8s::resources::PersistentVolumeClaims(), ns_->name(), {});
      if (claims.ok()) {
        for (const json& claim : claims->items) {
          (void)client_->Patch(k8s::resources::PersistentVolumeClaims(), ns_->name(),
                               claim["metadata"].value("name", ""), k8s::PatchType::kMerge,
                               R"({"metadata":{"finalizers":null}})");
        }
      }
    }
  }

  void StartController() {
    ControllerOptions options;
    options.namespace_name = ns_->name();
    options.workers = 2;
    options.planner.restart_backoff_base = 1s;
    options.planner.restart_backoff_cap = 2s;
    // The scheduler no one runs, which the test plays instead.
    options.planner.allowed_scheduler_names = {"none-" + ns()};
    controller_ = std::make_unique<JobController>(*client_, options);
    controller_->Start();
    ASSERT_TRUE(controller_->WaitForCacheSync(30s));
    controller_->StartWorkers();
  }

  const std::string& ns() const { return ns_->name(); }

  json NewJob(const std::string& name, const std::string& framework, const json& roles,
              const json& run_policy = json::object(), const json& volumes = json::array()) {
    json spec = {{"framework", framework},
                 {"schedulerName", "none-" + ns()},  // nothing else schedules them
                 {"replicaSpecs", roles},
                 {"runPolicy", run_policy}};
    if (!volumes.empty()) {
      spec["volumes"] = volumes;
    }
    return {{"apiVersion", "batch.hybridjob.io/v1alpha1"},
            {"kind", "HybridJob"},
            {"metadata", {{"name", name}}},
            {"spec", spec}};
  }

  json CreateJob(const json& job) {
    auto created = client_->Create(k8s::resources::HybridJobs(), ns(), job);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? *created : json();
  }

  json Job(const std::string& name) {
    auto job = client_->Get(k8s::resources::HybridJobs(), ns(), name);
    return job.ok() ? *job : json();
  }

  json Status(const std::string& name) {
    json job = Job(name);
    return job.is_object() && job.contains("status") ? job["status"] : json::object();
  }

  std::string Phase(const std::string& name) { return Status(name).value("phase", ""); }

  // A condition of the job, or null.
  json Condition(const std::string& name, const std::string& type) {
    json status = Status(name);
    if (status.contains("conditions")) {
      for (const json& condition : status["conditions"]) {
        if (condition.value("type", "") == type) {
          return condition;
        }
      }
    }
    return nullptr;
  }

  json ReplicaStatus(const std::string& name, const std::string& role) {
    json status = Status(name);
    if (status.contains("replicaStatuses")) {
      for (const json& replica : status["replicaStatuses"]) {
        if (replica.value("name", "") == role) {
          return replica;
        }
      }
    }
    return json::object();
  }

  json Pod(const std::string& name) {
    auto pod = client_->Get(k8s::resources::Pods(), ns(), name);
    return pod.ok() ? *pod : json();
  }

  std::string Uid(const json& object) {
    return object.is_object() ? object["metadata"].value("uid", "") : "";
  }

  std::set<std::string> PodNames(const std::string& job) {
    k8s::ListOptions options;
    options.label_selector = std::string(api::kJobNameLabel) + "=" + job;
    auto pods = client_->List(k8s::resources::Pods(), ns(), options);
    std::set<std::string> names;
    if (pods.ok()) {
      for (const json& pod : pods->items) {
        names.insert(pod["metadata"].value("name", ""));
      }
    }
    return names;
  }

  bool PodsAre(const std::string& job, const std::set<std::string>& names) {
    return PodNames(job) == names;
  }

  bool Exists(const k8s::Resource& resource, const std::string& name) {
    return client_->Get(resource, ns(), name).ok();
  }

  // The scheduler's part: bind through pods/binding.
  void Bind(const std::string& pod) {
    const std::string uid = Uid(Pod(pod));
    ASSERT_FALSE(uid.empty()) << "no pod " << pod;
    hybridjob::Status bound = k8s::BindPod(*client_, ns(), pod, uid, kNode);
    ASSERT_TRUE(bound.ok()) << pod << ": " << bound.ToString();
  }

  // The scheduler's part: placed the group without this pod.
  void MarkSurplus(const std::string& pod) {
    const json patch = {{"status",
                         {{"conditions",
                           {{{"type", "PodScheduled"},
                             {"status", "False"},
                             {"reason", std::string(api::kSurplusReason)},
                             {"message", "the gang was placed without this pod"}}}}}}};
    PatchStatus(pod, patch);
  }

  // The kubelet's part.
  void SetRunning(const std::string& pod) {
    const std::string now = Now();
    const json patch = {{"status",
                         {{"phase", "Running"},
                          {"startTime", now},
                          {"conditions",
                           {{{"type", "PodScheduled"}, {"status", "True"}},
                            {{"type", "Ready"}, {"status", "True"}}}},
                          {"containerStatuses",
                           {{{"name", "main"},
                             {"image", "trainer:1"},
                             {"imageID", ""},
                             {"ready", true},
                             {"restartCount", 0},
                             {"state", {{"running", {{"startedAt", now}}}}}}}}}}};
    PatchStatus(pod, patch);
  }

  void Finish(const std::string& pod, int exit_code) {
    const std::string now = Now();
    const json patch = {{"status",
                         {{"phase", exit_code == 0 ? "Succeeded" : "Failed"},
                          {"conditions",
                           {{{"type", "PodScheduled"}, {"status", "True"}},
                            {{"type", "Ready"}, {"status", "False"}}}},
                          {"containerStatuses",
                           {{{"name", "main"},
                             {"image", "trainer:1"},
                             {"imageID", ""},
                             {"ready", false},
                             {"restartCount", 0},
                             {"state",
                              {{"terminated",
                                {{"exitCode", exit_code},
                                 {"reason", exit_code == 0 ? "Completed" : "Error"},
                                 {"startedAt", now},
                                 {"finishedAt", now}}}}}}}}}}};
    PatchStatus(pod, patch);
  }

  void PatchStatus(const std::string& pod, const json& patch) {
    k8s::PatchOptions options;
    options.subresource = "status";
    auto patched = client_->Patch(k8s::resources::Pods(), ns(), pod, k8s::PatchType::kMerge,
                                  patch.dump(), options);
    ASSERT_TRUE(patched.ok()) << pod << ": " << patched.status().ToString();
  }

  // The gang scheduler's own mark on a member it evicts.
  static json GangEvictionMark() {
    return {{"type", std::string(api::kGangEvictionCondition)},
            {"status", "True"},
            {"reason", std::string(api::kReclaimedReason)},
            {"message", "Reclaim: making room for another job"}};
  }

  // DisruptionTarget as a 1.26+ component writes it.
  static json DisruptionTarget(const std::string& reason) {
    return {{"type", std::string(api::kDisruptionTargetCondition)},
            {"status", "True"},
            {"reason", reason},
            {"message", reason == "EvictionByEvictionAPI"
                            ? "Eviction API: evicting"
                            : "Taint manager: deleting due to NoExecute taint"}};
  }

  // What a 1.26+ cluster does to a pod it takes away: the conditions written
  // (the Eviction handler writes DisruptionTarget itself; v1.20 does not, so
  // the test writes it), then the eviction (or, for the taint manager, a
  // plain delete); then the kubelet's part: the containers stop, the pod goes.
  void EvictAsANewerServerDoes(const std::string& pod, const json& conditions,
                               bool through_eviction_api = true) {
    PatchStatus(pod, {{"status", {{"conditions", conditions}}}});
    const std::string uid = Uid(Pod(pod));
    if (through_eviction_api) {
      auto version = k8s::DiscoverEvictionApiVersion(*client_);
      ASSERT_TRUE(version.ok()) << version.status().ToString();
      const hybridjob::Status evicted = k8s::EvictPod(*client_, ns(), pod, uid, *version);
      ASSERT_TRUE(evicted.ok()) << evicted.ToString();
    }
    k8s::DeleteOptions now;
    now.grace_period_seconds = 0;
    now.precondition_uid = uid;
    const hybridjob::Status removed = client_->Delete(k8s::resources::Pods(), ns(), pod, now);
    ASSERT_TRUE(removed.ok() || k8s::IsNotFound(removed)) << removed.ToString();
  }

  // A pod of that name exists, unbound, and is not the pod with `old_uid`.
  bool ReplacedUnbound(const std::string& pod, const std::string& old_uid) {
    json object = Pod(pod);
    return object.is_object() && Uid(object) != old_uid &&
           object["spec"].value("nodeName", "").empty();
  }

  std::map<std::string, std::string> UidsOf(const std::string& job) {
    std::map<std::string, std::string> uids;
    for (const std::string& name : PodNames(job)) {
      uids[name] = Uid(Pod(name));
    }
    return uids;
  }

  void BindAndRun(const std::vector<std::string>& pods) {
    for (const std::string& pod : pods) {
      ASSERT_NO_FATAL_FAILURE(Bind(pod));
      ASSERT_NO_FATAL_FAILURE(SetRunning(pod));
    }
  }

  // Events about the job: reason -> type.
  std::multimap<std::string, std::string> Events(const std::string& job) {
    k8s::ListOptions options;
    options.field_selector = "involvedObject.name=" + job;
    auto events = client_->List(k8s::resources::Events(), ns(), options);
    std::multimap<std::string, std::string> out;
    if (events.ok()) {
      for (const json& event : events->items) {
        out.emplace(event.value("reason", ""), event.value("type", ""));
      }
    }
    return out;
  }

  // The messages of the Events about the job with this reason.
  std::vector<std::string> EventMessages(const std::string& job, const std::string& reason) {
    k8s::ListOptions options;
    options.field_selector = "involvedObject.name=" + job + ",reason=" + reason;
    auto events = client_->List(k8s::resources::Events(), ns(), options);
    std::vector<std::string> out;
    if (events.ok()) {
      for (const json& event : events->items) {
        out.push_back(event.value("message", ""));
      }
    }
    return out;
  }

  // A column of `kubectl get hybridjobs JOB -o wide`: the API server prints
  // the CRD's additionalPrinterColumns. Empty when kubectl fails (its
  // discovery may lag a CRD established a moment ago).
  std::string WideColumn(const std::string& job, const std::string& column) {
    std::string output;
    if (hybridjob::testing::RunCommand(hybridjob::testing::KubernetesBinDir() +
                                           "/kubectl get hybridjobs " + job + " -o wide -n " +
                                           ns() + " --kubeconfig " +
                                           hybridjob::testing::KubeconfigPath() + " 2>&1",
                                       &output) != 0) {
      return "";
    }
    const size_t header_end = output.find('\n');
    const std::string header = output.substr(0, header_end);
    const std::string row = header_end == std::string::npos ? "" : output.substr(header_end + 1);
    const size_t at = header.find(column);
    if (at == std::string::npos || at >= row.size()) {
      return "";
    }
    const size_t end = row.find_first_of(" \n", at);
    return row.substr(at, end == std::string::npos ? std::string::npos : end - at);
  }

  bool HasEvent(const std::string& job, const std::string& reason, const std::string& type) {
    for (const auto& [event_reason, event_type] : Events(job)) {
      if (event_reason == reason && event_type == type) {
        return true;
      }
    }
    return false;
  }

  std::string Describe(const std::string& job) {
    std::string pods;
    for (const std::string& name : PodNames(job)) {
      pods += " " + name;
    }
    return "status " + Status(job).dump() + "\npods:" + pods;
  }

  std::unique_ptr<k8s::RestClient> client_;
  std::unique_ptr<TestNamespace> ns_;
  std::unique_ptr<TerminatingPodReaper> reaper_;
  std::unique_ptr<JobController> controller_;
};

TEST_F(JobControllerTest, CreatesMemberPodsServiceAndClaimsForATensorflowJob) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  const json volumes = {{{"name", "data"}, {"size", "1Gi"}, {"mountPath", "/data"}}};
  const json job =
      CreateJob(NewJob("tf", "tensorflow", json::array({Role("ps", 1, 1), Role("worker", 2, 3)}),
                       json::object(), volumes));
  ASSERT_TRUE(job.is_object());
  const std::set<std::string> all = {"tf-ps-0", "tf-worker-0", "tf-worker-1", "tf-worker-2"};
  ASSERT_TRUE(WaitFor([&] { return PodsAre("tf", all); })) << Describe("tf");

  for (const std::string& name : all) {
    SCOPED_TRACE(name);
    const json pod = Pod(name);
    const json& labels = pod["metadata"]["labels"];
    EXPECT_EQ(labels[std::string(api::kJobNameLabel)], "tf");
    const std::string role = name.find("-ps-") != std::string::npos ? "ps" : "worker";
    EXPECT_EQ(labels[std::string(api::kRoleLabel)], role);
    EXPECT_EQ(labels[std::string(api::kIndexLabel)], name.substr(name.rfind('-') + 1));
    ASSERT_TRUE(pod["metadata"].contains("ownerReferences"));
    const json& owner = pod["metadata"]["ownerReferences"][0];
    EXPECT_EQ(owner["uid"], Uid(job));
    EXPECT_EQ(owner["kind"], "HybridJob");
    EXPECT_TRUE(owner.value("controller", false));
    EXPECT_TRUE(pod["metadata"]["annotations"].contains(std::string(api::kGroupSpecAnnotation)));
    EXPECT_EQ(pod["spec"]["schedulerName"], "none-" + ns());
    EXPECT_EQ(pod["spec"]["hostname"], name);
    EXPECT_EQ(pod["spec"]["subdomain"], "tf");
    EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
    bool mounts_claim = false;
    for (const json& volume : pod["spec"]["volumes"]) {
      mounts_claim = mounts_claim || (volume.contains("persistentVolumeClaim") &&
                                      volume["persistentVolumeClaim"]["claimName"] == "tf-data");
    }
    EXPECT_TRUE(mounts_claim) << pod["spec"]["volumes"].dump();
  }

  ASSERT_TRUE(WaitFor([&] { return Exists(k8s::resources::Services(), "tf"); }));
  const json service = *client_->Get(k8s::resources::Services(), ns(), "tf");
  EXPECT_EQ(service["spec"]["clusterIP"], "None");
  EXPECT_EQ(service["spec"]["selector"][std::string(api::kJobNameLabel)], "tf");
  ASSERT_TRUE(WaitFor([&] { return Exists(k8s::resources::PersistentVolumeClaims(), "tf-data"); }));
  const json claim = *client_->Get(k8s::resources::PersistentVolumeClaims(), ns(), "tf-data");
  EXPECT_EQ(claim["spec"]["resources"]["requests"]["storage"], "1Gi");
  EXPECT_EQ(claim["metadata"]["ownerReferences"][0]["uid"], Uid(job));

  // Every pod exists, none is placed: queued for the scheduler, and no
  // cluster spec yet, since the membership is not known.
  ASSERT_TRUE(WaitFor([&] { return Phase("tf") == "Queued"; })) << Describe("tf");
  EXPECT_EQ(Condition("tf", "Created").value("status", ""), "True");
  EXPECT_FALSE(Exists(k8s::resources::ConfigMaps(), "tf-cluster"));
  EXPECT_TRUE(WaitFor([&] { return HasEvent("tf", "Created", "Normal"); }));
}

TEST_F(JobControllerTest, DeletesSurplusPodsAndWritesTheClusterSpecOfTheBoundMembers) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(NewJob("el", "tensorflow", json::array({Role("ps", 1, 1), Role("worker", 2, 4)})));
  ASSERT_TRUE(WaitFor([&] { return PodNames("el").size() == 5; })) << Describe("el");
  // The scheduler found room for ps-0 and two of the four workers.
  for (const char* pod : {"el-ps-0", "el-worker-0", "el-worker-1"}) {
    ASSERT_NO_FATAL_FAILURE(Bind(pod));
  }
  ASSERT_NO_FATAL_FAILURE(MarkSurplus("el-worker-2"));
  ASSERT_NO_FATAL_FAILURE(MarkSurplus("el-worker-3"));

  ASSERT_TRUE(WaitFor([&] {
    return PodsAre("el", {"el-ps-0", "el-worker-0", "el-worker-1"});
  })) << Describe("el");
  ASSERT_TRUE(WaitFor([&] { return Exists(k8s::resources::ConfigMaps(), "el-cluster"); }));
  const json config_map = *client_->Get(k8s::resources::ConfigMaps(), ns(), "el-cluster");
  EXPECT_EQ(json::parse(config_map["metadata"]["annotations"][std::string(api::kMembersAnnotation)]
                            .get<std::string>()),
            json({{"ps", 1}, {"worker", 2}}));
  const json cluster = json::parse(config_map["data"]["cluster.json"].get<std::string>());
  const std::string domain = ".el." + ns() + ".svc:2222";
  EXPECT_EQ(cluster["ps"], json({"el-ps-0" + domain}));
  EXPECT_EQ(cluster["worker"], json({"el-worker-0" + domain, "el-worker-1" + domain}));

  ASSERT_TRUE(WaitFor([&] { return Phase("el") == "Running"; })) << Describe("el");
  EXPECT_EQ(Condition("el", "Scheduled").value("status", ""), "True");
  EXPECT_EQ(ReplicaStatus("el", "worker").value("members", -1), 2);
  EXPECT_EQ(ReplicaStatus("el", "worker").value("scheduled", -1), 2);
  EXPECT_EQ(ReplicaStatus("el", "ps").value("members", -1), 1);
  // The surplus stays gone: members are never re-created beyond the gang.
  std::this_thread::sleep_for(1500ms);
  EXPECT_TRUE(PodsAre("el", {"el-ps-0", "el-worker-0", "el-worker-1"})) << Describe("el");
}

// The gang scheduler's reclaim and growth as the controller sees them: a
// member marked DisruptionTarget and evicted shrinks the job, the cluster spec
// follows, the index comes back as a pending pod, and binding it grows the
// job again. PyTorch learns the membership live: nothing restarts.
TEST_F(JobControllerTest, FollowsTheSchedulerWhenItShrinksAndGrowsAnElasticJob) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(NewJob("pt", "pytorch", json::array({Role("worker", 2, 4, "OnFailure")})));
  ASSERT_TRUE(WaitFor([&] { return PodNames("pt").size() == 4; })) << Describe("pt");
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"pt-worker-0", "pt-worker-1", "pt-worker-2", "pt-worker-3"}));
  ASSERT_TRUE(WaitFor([&] { return ReplicaStatus("pt", "worker").value("members", -1) == 4; }))
      << Describe("pt");

  // The scheduler marks its victims, then evicts them; a 1.26+ Eviction
  // handler then overwrites DisruptionTarget's reason.
  for (const char* pod : {"pt-worker-2", "pt-worker-3"}) {
    ASSERT_NO_FATAL_FAILURE(EvictAsANewerServerDoes(
        pod, {GangEvictionMark(), DisruptionTarget("EvictionByEvictionAPI")}));
  }
  auto published = [&] {
    auto config_map = client_->Get(k8s::resources::ConfigMaps(), ns(), "pt-cluster");
    return config_map.ok() ? (*config_map)["metadata"]["annotations"].value(
                                 std::string(api::kMembersAnnotation), "")
                           : "";
  };
  ASSERT_TRUE(WaitFor([&] { return published() == R"({"worker":2})"; })) << Describe("pt");
  EXPECT_EQ(ReplicaStatus("pt", "worker").value("members", -1), 2);
  EXPECT_TRUE(WaitFor([&] { return HasEvent("pt", "MembershipChanged", "Normal"); }));
  // The evicted indices come back unbound, for the job to grow into later.
  ASSERT_TRUE(WaitFor([&] {
    for (const char* name : {"pt-worker-2", "pt-worker-3"}) {
      json pod = Pod(name);
      if (pod.is_null() || !pod["spec"].value("nodeName", "").empty()) {
        return false;
      }
    }
    return true;
  })) << Describe("pt");
  EXPECT_EQ(Phase("pt"), "Running");
  EXPECT_EQ(Status("pt").value("restartCount", 0), 0);

  ASSERT_NO_FATAL_FAILURE(BindAndRun({"pt-worker-2", "pt-worker-3"}));
  ASSERT_TRUE(WaitFor([&] { return published() == R"({"worker":4})"; })) << Describe("pt");
  EXPECT_EQ(ReplicaStatus("pt", "worker").value("members", -1), 4);
  EXPECT_EQ(Phase("pt"), "Running");
}

// spec.suspend: the members go (the Service, the claims and the job stay) and
// the run's cluster spec with them; cleared, the gang is created again and
// placed afresh at another size; a job created suspended creates nothing.
TEST_F(JobControllerTest, SuspendFreesTheMembersKeepsTheClaimsAndResumesPlacedAfresh) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  const json volumes = {{{"name", "ckpt"}, {"size", "1Gi"}, {"mountPath", "/ckpt"}}};
  CreateJob(NewJob("sus", "pytorch", json::array({Role("worker", 2, 4, "OnFailure")}),
                   json::object(), volumes));
  const std::set<std::string> all = {"sus-worker-0", "sus-worker-1", "sus-worker-2",
                                     "sus-worker-3"};
  ASSERT_TRUE(WaitFor([&] { return PodsAre("sus", all); })) << Describe("sus");
  ASSERT_NO_FATAL_FAILURE(
      BindAndRun({"sus-worker-0", "sus-worker-1", "sus-worker-2", "sus-worker-3"}));
  ASSERT_TRUE(WaitFor([&] { return Phase("sus") == "Running"; })) << Describe("sus");
  // The status is written before the ConfigMap in one pass.
  ASSERT_TRUE(WaitFor([&] { return Exists(k8s::resources::ConfigMaps(), "sus-cluster"); }));
  ASSERT_TRUE(
      WaitFor([&] { return Exists(k8s::resources::PersistentVolumeClaims(), "sus-ckpt"); }));
  const std::string claim_uid =
      Uid(*client_->Get(k8s::resources::PersistentVolumeClaims(), ns(), "sus-ckpt"));

  auto set_suspend = [&](bool suspend) {
    auto patched = client_->Patch(k8s::resources::HybridJobs(), ns(), "sus", k8s::PatchType::kMerge,
                                  json{{"spec", {{"suspend", suspend}}}}.dump());
    ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  };
  ASSERT_NO_FATAL_FAILURE(set_suspend(true));
  ASSERT_TRUE(WaitFor([&] { return PodNames("sus").empty() && Phase("sus") == "Suspended"; }))
      << Describe("sus");
  EXPECT_FALSE(Exists(k8s::resources::ConfigMaps(), "sus-cluster"));
  EXPECT_TRUE(Exists(k8s::resources::Services(), "sus"));
  EXPECT_EQ(Uid(*client_->Get(k8s::resources::PersistentVolumeClaims(), ns(), "sus-ckpt")),
            claim_uid);
  EXPECT_EQ(Condition("sus", "Suspended").value("reason", ""), "JobSuspended");
  EXPECT_FALSE(Status("sus").contains("startTime"));
  EXPECT_TRUE(WaitFor([&] { return HasEvent("sus", "JobSuspended", "Normal"); }));

  ASSERT_NO_FATAL_FAILURE(set_suspend(false));
  ASSERT_TRUE(WaitFor([&] { return PodsAre("sus", all); })) << Describe("sus");
  EXPECT_EQ(Condition("sus", "Suspended").value("reason", ""), "JobResumed");
  // The scheduler finds room for two workers this time.
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"sus-worker-0", "sus-worker-1"}));
  ASSERT_NO_FATAL_FAILURE(MarkSurplus("sus-worker-2"));
  ASSERT_NO_FATAL_FAILURE(MarkSurplus("sus-worker-3"));
  ASSERT_TRUE(WaitFor([&] {
    auto config_map = client_->Get(k8s::resources::ConfigMaps(), ns(), "sus-cluster");
    return config_map.ok() && (*config_map)["metadata"]["annotations"].value(
                                  std::string(api::kMembersAnnotation), "") == R"({"worker":2})";
  })) << Describe("sus");
  EXPECT_TRUE(WaitFor([&] { return Phase("sus") == "Running"; })) << Describe("sus");
  EXPECT_EQ(Status("sus").value("restartCount", -1), 0);
  EXPECT_TRUE(WaitFor([&] { return HasEvent("sus", "JobResumed", "Normal"); }));
  // The resumed run completes.
  ASSERT_NO_FATAL_FAILURE(Finish("sus-worker-0", 0));
  ASSERT_NO_FATAL_FAILURE(Finish("sus-worker-1", 0));
  EXPECT_TRUE(WaitFor([&] { return Phase("sus") == "Succeeded"; })) << Describe("sus");

  // Created suspended: nothing at all until an admission system resumes it.
  json created_suspended =
      NewJob("later", "pytorch", json::array({Role("worker", 1, 1, "OnFailure")}));
  created_suspended["spec"]["suspend"] = true;
  CreateJob(created_suspended);
  ASSERT_TRUE(WaitFor([&] { return Phase("later") == "Suspended"; })) << Describe("later");
  std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(PodNames("later").empty());
  EXPECT_FALSE(Exists(k8s::resources::Services(), "later"));
  auto resumed = client_->Patch(k8s::resources::HybridJobs(), ns(), "later", k8s::PatchType::kMerge,
                                json{{"spec", {{"suspend", false}}}}.dump());
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_TRUE(WaitFor([&] { return PodsAre("later", {"later-worker-0"}); })) << Describe("later");
}

// A finished job run again with a changed command: members of the new run
// carry it, restart counts start from zero, the finished run is recorded and
// the job's claim is the same claim.
TEST_F(JobControllerTest, ARerunWithAChangedCommandRecordsThePreviousRunAndKeepsTheClaim) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  const json volumes = {{{"name", "ckpt"}, {"size", "1Gi"}, {"mountPath", "/ckpt"}}};
  CreateJob(NewJob("rr", "pytorch", json::array({Role("worker", 2, 2, "OnFailure")}),
                   json::object(), volumes));
  ASSERT_TRUE(WaitFor([&] { return PodsAre("rr", {"rr-worker-0", "rr-worker-1"}); }));
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"rr-worker-0", "rr-worker-1"}));
  ASSERT_TRUE(WaitFor([&] { return Phase("rr") == "Running"; })) << Describe("rr");
  const std::string failed_uid = Uid(Pod("rr-worker-1"));
  ASSERT_NO_FATAL_FAILURE(Finish("rr-worker-1", 1));
  ASSERT_TRUE(WaitFor([&] {
    const std::string uid = Uid(Pod("rr-worker-1"));
    return !uid.empty() && uid != failed_uid;
  })) << Describe("rr");
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"rr-worker-1"}));
  ASSERT_NO_FATAL_FAILURE(Finish("rr-worker-0", 0));
  ASSERT_NO_FATAL_FAILURE(Finish("rr-worker-1", 0));
  ASSERT_TRUE(WaitFor([&] { return Phase("rr") == "Succeeded"; })) << Describe("rr");
  const json first_run = Status("rr");
  ASSERT_EQ(first_run.value("restartCount", -1), 1);
  const std::string claim_uid =
      Uid(*client_->Get(k8s::resources::PersistentVolumeClaims(), ns(), "rr-ckpt"));

  json roles = Job("rr")["spec"]["replicaSpecs"];
  const json new_command = {"python", "train.py", "--resume", "--lr=0.01"};
  roles[0]["template"]["spec"]["containers"][0]["command"] = new_command;
  auto patched = client_->Patch(
      k8s::resources::HybridJobs(), ns(), "rr", k8s::PatchType::kMerge,
      json{{"spec", {{"replicaSpecs", roles}, {"runPolicy", {{"rerun", 1}}}}}}.dump());
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();

  auto of_run_one = [&](const std::string& name) {
    const json pod = Pod(name);
    return pod.is_object() && pod.contains("metadata") &&
           pod["metadata"].value("labels", json::object()).value(std::string(api::kRunLabel), "") ==
               "1";
  };
  ASSERT_TRUE(WaitFor([&] {
    return of_run_one("rr-worker-0-run1") && of_run_one("rr-worker-1-run1");
  })) << Describe("rr");
  for (const char* name : {"rr-worker-0-run1", "rr-worker-1-run1"}) {
    EXPECT_EQ(Pod(name)["spec"]["containers"][0]["command"], new_command) << name;
    EXPECT_EQ(Pod(name)["spec"]["hostname"], std::string(name).substr(0, 11)) << name;
  }
  // Run 0's ended members stay, with their logs (runHistoryLimit 1).
  for (const char* name : {"rr-worker-0", "rr-worker-1"}) {
    const json kept = Pod(name);
    ASSERT_TRUE(kept.is_object() && kept.contains("status")) << name;
    EXPECT_EQ(kept["status"].value("phase", ""), "Succeeded") << name;
    EXPECT_EQ(kept["metadata"]["labels"].value(std::string(api::kRunLabel), ""), "0") << name;
  }
  json status = Status("rr");
  EXPECT_EQ(status.value("run", -1), 1);
  EXPECT_EQ(status.value("restartCount", -1), 0);
  EXPECT_EQ(ReplicaStatus("rr", "worker").value("restarts", -1), 0);
  ASSERT_EQ(status["previousRuns"].size(), 1u) << status.dump();
  const json& previous = status["previousRuns"][0];
  EXPECT_EQ(previous.value("run", -1), 0);
  EXPECT_EQ(previous.value("phase", ""), "Succeeded");
  EXPECT_EQ(previous.value("restartCount", -1), 1);
  EXPECT_EQ(previous.value("startTime", ""), first_run.value("startTime", "?"));
  EXPECT_EQ(previous.value("completionTime", ""), first_run.value("completionTime", "?"));
  EXPECT_TRUE(WaitFor([&] { return HasEvent("rr", "Rerun", "Normal"); }));
  EXPECT_EQ(Uid(*client_->Get(k8s::resources::PersistentVolumeClaims(), ns(), "rr-ckpt")),
            claim_uid);

  ASSERT_NO_FATAL_FAILURE(BindAndRun({"rr-worker-0-run1", "rr-worker-1-run1"}));
  ASSERT_NO_FATAL_FAILURE(Finish("rr-worker-0-run1", 0));
  ASSERT_NO_FATAL_FAILURE(Finish("rr-worker-1-run1", 0));
  ASSERT_TRUE(WaitFor([&] { return Phase("rr") == "Succeeded"; })) << Describe("rr");
  status = Status("rr");
  EXPECT_EQ(status.value("run", -1), 1);
  EXPECT_EQ(status["previousRuns"].size(), 1u);

  // No history: run 0's pods go, at once.
  ASSERT_TRUE(client_
                  ->Patch(k8s::resources::HybridJobs(), ns(), "rr", k8s::PatchType::kMerge,
                          R"({"spec":{"runHistoryLimit":0}})")
                  .ok());
  EXPECT_TRUE(WaitFor([&] {
    return PodsAre("rr", {"rr-worker-0-run1", "rr-worker-1-run1"});
  })) << Describe("rr");
}

// Edits while the job runs: one it does not take (a role's template and
// minimum) is named by SpecChangeIgnored and changes nothing, not even the
// member restarted afterwards; lowering maxReplicas shrinks the job.
TEST_F(JobControllerTest, EditsARunningJobTakesAndOnesItIgnores) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(NewJob("ed", "pytorch", json::array({Role("worker", 2, 4, "OnFailure")})));
  const std::vector<std::string> all = {"ed-worker-0", "ed-worker-1", "ed-worker-2", "ed-worker-3"};
  ASSERT_TRUE(WaitFor([&] { return PodNames("ed").size() == 4; })) << Describe("ed");
  ASSERT_NO_FATAL_FAILURE(BindAndRun(all));
  ASSERT_TRUE(WaitFor([&] { return ReplicaStatus("ed", "worker").value("members", -1) == 4; }))
      << Describe("ed");
  const std::map<std::string, std::string> before = UidsOf("ed");

  json roles = Job("ed")["spec"]["replicaSpecs"];
  roles[0]["minReplicas"] = 3;
  roles[0]["template"]["spec"]["containers"][0]["args"] = json::array({"--lr=0.1"});
  auto patched = client_->Patch(k8s::resources::HybridJobs(), ns(), "ed", k8s::PatchType::kMerge,
                                json{{"spec", {{"replicaSpecs", roles}}}}.dump());
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  auto ignored = [&](const char* key) {
    const json condition = Condition("ed", "SpecChangeIgnored");
    return condition.is_object() ? condition.value(key, "") : std::string();
  };
  ASSERT_TRUE(WaitFor([&] { return ignored("status") == "True"; })) << Describe("ed");
  const std::string message = ignored("message");
  EXPECT_NE(message.find("spec.replicaSpecs[worker].minReplicas"), std::string::npos) << message;
  EXPECT_NE(message.find("spec.replicaSpecs[worker].template"), std::string::npos) << message;
  EXPECT_TRUE(WaitFor([&] { return HasEvent("ed", "SpecChangeIgnored", "Warning"); }));
  EXPECT_EQ(UidsOf("ed"), before);
  EXPECT_EQ(Phase("ed"), "Running");

  const std::string failed_uid = before.at("ed-worker-1");
  ASSERT_NO_FATAL_FAILURE(Finish("ed-worker-1", 1));
  ASSERT_TRUE(WaitFor([&] {
    const std::string uid = Uid(Pod("ed-worker-1"));
    return !uid.empty() && uid != failed_uid;
  })) << Describe("ed");
  const json restarted = Pod("ed-worker-1");
  EXPECT_EQ(restarted["spec"].dump().find("--lr=0.1"), std::string::npos)
      << "restarted as the run started: " << restarted["spec"].dump();
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"ed-worker-1"}));

  // Allowed: maxReplicas down to 2. Members 2 and 3 go; the cluster spec says 2.
  roles = Job("ed")["spec"]["replicaSpecs"];
  roles[0]["maxReplicas"] = 2;
  patched = client_->Patch(k8s::resources::HybridJobs(), ns(), "ed", k8s::PatchType::kMerge,
                           json{{"spec", {{"replicaSpecs", roles}}}}.dump());
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  ASSERT_TRUE(WaitFor([&] {
    return PodsAre("ed", {"ed-worker-0", "ed-worker-1"});
  })) << Describe("ed");
  ASSERT_TRUE(WaitFor([&] {
    auto config_map = client_->Get(k8s::resources::ConfigMaps(), ns(), "ed-cluster");
    return config_map.ok() && (*config_map)["metadata"]["annotations"].value(
                                  std::string(api::kMembersAnnotation), "") == R"({"worker":2})";
  })) << Describe("ed");
  EXPECT_EQ(ReplicaStatus("ed", "worker").value("members", -1), 2);
  EXPECT_TRUE(WaitFor([&] { return HasEvent("ed", "MembershipChanged", "Normal"); }));
  // The ignored edits are still there, still ignored.
  EXPECT_EQ(ignored("status"), "True");
}

// The run's spec lives in a ControllerRevision the job owns; status.runSpec
// names it. Deleted, it is not missed while the spec is unedited; an edit
// then cannot be told from the run's spec: a Warning says so, and the run is
// recorded anew from the spec as it is.
TEST_F(JobControllerTest, TheRunsSpecIsKeptInARevisionAndALostOneIsReported) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(NewJob("rev", "pytorch", json::array({Role("worker", 2, 2, "OnFailure")})));
  ASSERT_TRUE(WaitFor([&] { return PodNames("rev").size() == 2; })) << Describe("rev");
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"rev-worker-0", "rev-worker-1"}));
  ASSERT_TRUE(WaitFor([&] { return Phase("rev") == "Running"; })) << Describe("rev");
  const json record = Job("rev")["status"]["runSpec"];
  ASSERT_TRUE(record.is_object()) << Describe("rev");
  EXPECT_FALSE(record.contains("replicaSpecs")) << "a record, not a copy: " << record.dump();
  const std::string revision = record.value("revision", "");
  auto stored = client_->Get(k8s::resources::ControllerRevisions(), ns(), revision);
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  EXPECT_EQ(k8s::ControllerUidOf(*stored), Uid(Job("rev")));
  EXPECT_EQ((*stored)["data"]["spec"]["replicaSpecs"][0]["minReplicas"], 2);

  ASSERT_TRUE(client_->Delete(k8s::resources::ControllerRevisions(), ns(), revision, {}).ok());
  json roles = Job("rev")["spec"]["replicaSpecs"];
  roles[0]["template"]["spec"]["containers"][0]["args"] = json::array({"--lr=0.1"});
  auto patched = client_->Patch(k8s::resources::HybridJobs(), ns(), "rev", k8s::PatchType::kMerge,
                                json{{"spec", {{"replicaSpecs", roles}}}}.dump());
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_TRUE(WaitFor([&] { return HasEvent("rev", "RunSpecLost", "Warning"); }))
      << Describe("rev");
  std::string renewed;
  ASSERT_TRUE(WaitFor([&] {
    renewed = Job("rev")["status"]["runSpec"].value("revision", "");
    return !renewed.empty() && renewed != revision &&
           Exists(k8s::resources::ControllerRevisions(), renewed);
  })) << Describe("rev");
  EXPECT_EQ(Phase("rev"), "Running");
  EXPECT_FALSE(Condition("rev", "SpecChangeIgnored").is_object())
      << "the spec as it is now is the run's";
}

// A private registry: a pull secret named in a role's template, or carried by
// the ServiceAccount a template names (the API server's ServiceAccount
// admission copies it onto the pod), reaches every member of that role.
TEST_F(JobControllerTest, APullSecretReachesEveryMemberFromTheTemplateOrTheServiceAccount) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  const json secret = {{"apiVersion", "v1"},
                       {"kind", "Secret"},
                       {"metadata", {{"name", "registry-cred"}}},
                       {"type", "kubernetes.io/dockerconfigjson"},
                       {"data", {{".dockerconfigjson", k8s::Base64Encode(R"({"auths":{}})")}}}};
  auto created = client_->Create(k8s::resources::Secrets(), ns(), secret);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  const json account = {{"apiVersion", "v1"},
                        {"kind", "ServiceAccount"},
                        {"metadata", {{"name", "puller"}}},
                        {"imagePullSecrets", {{{"name", "registry-cred"}}}}};
  created = client_->Create(k8s::resources::ServiceAccounts(), ns(), account);
  ASSERT_TRUE(created.ok()) << created.status().ToString();

  json ps = Role("ps", 1, 1);
  ps["template"]["spec"]["imagePullSecrets"] = {{{"name", "registry-cred"}}};
  json worker = Role("worker", 2, 3, "OnFailure");
  worker["template"]["spec"]["serviceAccountName"] = "puller";
  CreateJob(NewJob("pull", "tensorflow", json::array({ps, worker})));
  const std::set<std::string> all = {"pull-ps-0", "pull-worker-0", "pull-worker-1",
                                     "pull-worker-2"};
  ASSERT_TRUE(WaitFor([&] { return PodsAre("pull", all); })) << Describe("pull");
  for (const std::string& name : all) {
    const json pod = Pod(name);
    EXPECT_EQ(pod["spec"].value("imagePullSecrets", json::array()),
              json::array({{{"name", "registry-cred"}}}))
        << name;
  }
  EXPECT_EQ(Pod("pull-worker-0")["spec"].value("serviceAccountName", ""), "puller");
}

// A drain on a 1.26+ cluster: the Eviction API marks the member
// DisruptionTarget (EvictionByEvictionAPI) and deletes it. That is not the
// gang scheduler's reclaim (no GangEviction mark): the member comes back at
// its index, the job keeps its size, and in a TF job nobody else restarts.
TEST_F(JobControllerTest, AMemberDrainedThroughTheEvictionApiIsReplacedAtItsIndex) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(NewJob("dr", "tensorflow",
                   json::array({Role("ps", 1, 1), Role("worker", 2, 3, "OnFailure")})));
  const std::vector<std::string> all = {"dr-ps-0", "dr-worker-0", "dr-worker-1", "dr-worker-2"};
  ASSERT_TRUE(WaitFor([&] { return PodNames("dr").size() == 4; })) << Describe("dr");
  ASSERT_NO_FATAL_FAILURE(BindAndRun(all));
  ASSERT_TRUE(WaitFor([&] { return Phase("dr") == "Running"; })) << Describe("dr");
  ASSERT_EQ(ReplicaStatus("dr", "worker").value("members", -1), 3);
  const std::map<std::string, std::string> before = UidsOf("dr");

  ASSERT_NO_FATAL_FAILURE(EvictAsANewerServerDoes(
      "dr-worker-2", json::array({DisruptionTarget("EvictionByEvictionAPI")})));
  ASSERT_TRUE(WaitFor([&] { return ReplacedUnbound("dr-worker-2", before.at("dr-worker-2")); }))
      << Describe("dr");
  EXPECT_EQ(ReplicaStatus("dr", "worker").value("members", -1), 3);
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"dr-worker-2"}));
  ASSERT_TRUE(WaitFor([&] { return Phase("dr") == "Running"; })) << Describe("dr");
  EXPECT_EQ(ReplicaStatus("dr", "worker").value("members", -1), 3);
  EXPECT_EQ(Status("dr").value("restartCount", -1), 0);
  EXPECT_FALSE(HasEvent("dr", "MembershipChanged", "Normal"));
  for (const char* kept : {"dr-ps-0", "dr-worker-0", "dr-worker-1"}) {
    EXPECT_EQ(Uid(Pod(kept)), before.at(kept)) << kept << " should not have restarted";
  }
}

// The taint manager (NoExecute taint on a lost node) deletes a member with
// DisruptionTarget DeletionByTaintManager: it is replaced at its index too.
TEST_F(JobControllerTest, AMemberTheTaintManagerDeletesIsReplacedAtItsIndex) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(NewJob("tm", "pytorch", json::array({Role("worker", 2, 3, "OnFailure")})));
  ASSERT_TRUE(WaitFor([&] { return PodNames("tm").size() == 3; })) << Describe("tm");
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"tm-worker-0", "tm-worker-1", "tm-worker-2"}));
  ASSERT_TRUE(WaitFor([&] { return ReplicaStatus("tm", "worker").value("members", -1) == 3; }))
      << Describe("tm");
  const std::string old_uid = Uid(Pod("tm-worker-2"));
  ASSERT_NO_FATAL_FAILURE(EvictAsANewerServerDoes(
      "tm-worker-2", json::array({DisruptionTarget("DeletionByTaintManager")}),
      /*through_eviction_api=*/false));
  ASSERT_TRUE(WaitFor([&] { return ReplacedUnbound("tm-worker-2", old_uid); })) << Describe("tm");
  EXPECT_EQ(ReplicaStatus("tm", "worker").value("members", -1), 3);
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"tm-worker-2"}));
  ASSERT_TRUE(WaitFor([&] { return Phase("tm") == "Running"; })) << Describe("tm");
  EXPECT_EQ(ReplicaStatus("tm", "worker").value("members", -1), 3);
  EXPECT_EQ(Status("tm").value("restartCount", -1), 0);
}

// A kubelet's admission refuses bound members (another scheduler bound a pod
// onto the same GPUs first): Failed with OutOfnvidia.com/gpu before any
// container ran. Never counted as a restart, even with restartPolicy Never. A
// worker above its role's minimum is replaced alone; a refusal that leaves a
// role below its minimum re-places the whole gang, so it never runs in part.
TEST_F(JobControllerTest, MembersTheKubeletRefusedAreReplacedWithoutARestart) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(NewJob("ka", "tensorflow", json::array({Role("ps", 1, 1), Role("worker", 2, 3)})));
  const std::vector<std::string> all = {"ka-ps-0", "ka-worker-0", "ka-worker-1", "ka-worker-2"};
  ASSERT_TRUE(WaitFor([&] { return PodNames("ka").size() == 4; })) << Describe("ka");
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"ka-ps-0", "ka-worker-0", "ka-worker-1"}));
  ASSERT_NO_FATAL_FAILURE(Bind("ka-worker-2"));
  ASSERT_TRUE(WaitFor([&] { return ReplicaStatus("ka", "worker").value("members", -1) == 3; }))
      << Describe("ka");
  auto refuse = [&](const std::string& pod) {
    PatchStatus(pod, {{"status",
                       {{"phase", "Failed"},
                        {"reason", "OutOfnvidia.com/gpu"},
                        {"message",
                         "Pod was rejected: Node didn't have enough resource: nvidia.com/gpu, "
                         "requested: 1, used: 8, capacity: 8"}}}});
  };

  std::map<std::string, std::string> before = UidsOf("ka");
  refuse("ka-worker-2");
  ASSERT_TRUE(WaitFor([&] { return ReplacedUnbound("ka-worker-2", before.at("ka-worker-2")); }))
      << Describe("ka");
  EXPECT_TRUE(WaitFor([&] { return HasEvent("ka", "MemberReplaced", "Warning"); }));
  for (const char* kept : {"ka-ps-0", "ka-worker-0", "ka-worker-1"}) {
    EXPECT_EQ(Uid(Pod(kept)), before.at(kept)) << kept << " should not have restarted";
  }
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"ka-worker-2"}));
  ASSERT_TRUE(WaitFor([&] { return Phase("ka") == "Running"; })) << Describe("ka");

  before = UidsOf("ka");
  refuse("ka-ps-0");
  ASSERT_TRUE(WaitFor([&] {
    for (const std::string& name : all) {
      if (!ReplacedUnbound(name, before.at(name))) {
        return false;
      }
    }
    return true;
  })) << Describe("ka");
  EXPECT_NE(Phase("ka"), "Failed");
  EXPECT_EQ(Status("ka").value("restartCount", -1), 0);
  EXPECT_EQ(ReplicaStatus("ka", "ps").value("restarts", -1), 0);
  EXPECT_EQ(ReplicaStatus("ka", "worker").value("members", -1), 3);
  ASSERT_NO_FATAL_FAILURE(BindAndRun(all));
  ASSERT_TRUE(WaitFor([&] { return Phase("ka") == "Running"; })) << Describe("ka");
  EXPECT_EQ(Status("ka").value("restartCount", -1), 0);
}

// A pod the API server refuses (here: the Priority admission plugin, for a
// PriorityClass that does not exist) is retried, and said on the job as a
// Warning FailedCreate Event with the server's reason.
TEST_F(JobControllerTest, RefusedPodCreatesAreReportedOnTheJob) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  json job = NewJob("nq", "generic", json::array({Role("worker", 1, 1)}));
  job["spec"]["replicaSpecs"][0]["template"]["spec"]["priorityClassName"] = "no-such-class";
  CreateJob(job);
  EXPECT_TRUE(WaitFor([&] { return HasEvent("nq", "FailedCreate", "Warning"); }, 30s))
      << Describe("nq");
  EXPECT_TRUE(PodNames("nq").empty());
}

// Pods of one role refused (no such PriorityClass) while the other role's
// are created: the Created Event counts the members that exist, and each
// refusal is its own Warning in the API server's words.
TEST_F(JobControllerTest, TheCreatedEventCountsTheMembersTheApiServerCreated) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  json job = NewJob("pq", "tensorflow", json::array({Role("ps", 1, 1), Role("worker", 2, 2)}));
  job["spec"]["replicaSpecs"][1]["template"]["spec"]["priorityClassName"] = "no-such-class";
  CreateJob(job);
  ASSERT_TRUE(WaitFor([&] { return HasEvent("pq", "FailedCreate", "Warning"); }, 30s))
      << Describe("pq");
  EXPECT_TRUE(WaitFor([&] { return PodsAre("pq", {"pq-ps-0"}); })) << Describe("pq");
  const std::vector<std::string> refused = EventMessages("pq", "FailedCreate");
  ASSERT_FALSE(refused.empty());
  EXPECT_NE(refused[0].find("no PriorityClass with name no-such-class was found"),
            std::string::npos)
      << refused[0];
  ASSERT_TRUE(WaitFor([&] {
    return Condition("pq", "Created").value("reason", "") == "FailedCreate";
  })) << Describe("pq");
  // The pass that created ps-0 says so; none claims the members that were refused.
  ASSERT_TRUE(WaitFor([&] { return !EventMessages("pq", "Created").empty(); })) << Describe("pq");
  for (const std::string& message : EventMessages("pq", "Created")) {
    EXPECT_EQ(message,
              "created 1 of 3 member pods: ps 1 worker 0; the others are not created yet (see "
              "FailedCreate)");
  }
}

// The RUN column of `kubectl get hj -o wide` shows the run from the first:
// the controller writes status.run 0.
TEST_F(JobControllerTest, TheRunColumnShowsTheFirstRun) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(NewJob("first", "generic", json::array({Role("worker", 1, 1)})));
  ASSERT_TRUE(WaitFor([&] { return Phase("first") == "Queued"; })) << Describe("first");
  EXPECT_EQ(Status("first").value("run", -1), 0) << Describe("first");
  std::string run;
  EXPECT_TRUE(WaitFor(
      [&] {
        run = WideColumn("first", "RUN");
        return !run.empty();
      },
      30s));
  EXPECT_EQ(run, "0");
}

// Members that mount a ConfigMap and read another into their environment are
// not created while either is missing (they would hold their nodes in
// ContainerCreating); the job says which, and goes on once both exist.
TEST_F(JobControllerTest, NoMemberIsCreatedUntilTheConfigMapsItNeedsExist) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  json job = NewJob("cfg", "generic", json::array({Role("worker", 2, 2)}));
  json& pod_spec = job["spec"]["replicaSpecs"][0]["template"]["spec"];
  pod_spec["volumes"] = {{{"name", "config"}, {"configMap", {{"name", "cfg-settings"}}}}};
  pod_spec["containers"][0]["envFrom"] = {{{"configMapRef", {{"name", "cfg-env"}}}}};
  CreateJob(job);
  auto failure = [&](const char* field) {
    const json condition = Condition("cfg", "ReplicaFailure");
    return condition.is_object() ? condition.value(field, "") : std::string();
  };
  ASSERT_TRUE(WaitFor([&] { return failure("reason") == "MissingConfigMap"; }, 30s))
      << Describe("cfg");
  EXPECT_EQ(failure("message"),
            "the members need ConfigMap \"cfg-settings\" (volume \"config\" of role worker), "
            "ConfigMap \"cfg-env\" (environment of container \"main\" of role worker), which "
            "do not exist; no member is created until they exist (or the reference is marked "
            "optional)");
  // Events are written after the status, by the recorder's own worker.
  EXPECT_TRUE(WaitFor([&] { return HasEvent("cfg", "MissingConfigMap", "Warning"); }, 30s));
  EXPECT_EQ(Phase("cfg"), "Pending");
  EXPECT_TRUE(PodNames("cfg").empty());

  auto create = [&](const std::string& name) {
    ASSERT_TRUE(client_
                    ->Create(k8s::resources::ConfigMaps(), ns(),
                             {{"apiVersion", "v1"},
                              {"kind", "ConfigMap"},
                              {"metadata", {{"name", name}}},
                              {"data", {{"lr", "0.1"}}}})
                    .ok());
  };
  create("cfg-settings");
  ASSERT_TRUE(WaitFor(
      [&] { return failure("message").rfind("the members need ConfigMap \"cfg-env\"", 0) == 0; },
      30s))
      << Describe("cfg");
  EXPECT_TRUE(PodNames("cfg").empty());
  create("cfg-env");
  ASSERT_TRUE(WaitFor(
      [&] {
        return PodsAre("cfg", {"cfg-worker-0", "cfg-worker-1"});
      },
      30s))
      << Describe("cfg");
  EXPECT_TRUE(WaitFor([&] { return failure("reason").empty(); }, 30s)) << Describe("cfg");
}

// A member bound alone (a binding whose answer the scheduler lost) ran and
// succeeded before its gang was placed. The scheduler no longer sees it, so
// the controller rewrites the waiting member's group spec to count it; then
// the gang can be placed and the job succeeds.
TEST_F(JobControllerTest, AWaitingMemberLearnsThatAnotherSucceededAndTheJobFinishes) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(NewJob("lone", "generic", json::array({Role("worker", 2, 2)})));
  ASSERT_TRUE(WaitFor([&] { return PodsAre("lone", {"lone-worker-0", "lone-worker-1"}); }, 30s));
  auto group_spec = [&](const std::string& pod) {
    json object = Pod(pod);
    const json annotations = object.is_object() ? object["metadata"]["annotations"] : json();
    if (!annotations.is_object()) {
      return json();
    }
    const auto it = annotations.find(std::string(api::kGroupSpecAnnotation));
    return it != annotations.end() && it->is_string() ? json::parse(it->get<std::string>())
                                                      : json();
  };
  ASSERT_EQ(group_spec("lone-worker-0")["roles"][0]["min"], 2);
  const std::string uid = Uid(Pod("lone-worker-0"));

  ASSERT_NO_FATAL_FAILURE(Bind("lone-worker-1"));
  ASSERT_NO_FATAL_FAILURE(SetRunning("lone-worker-1"));
  ASSERT_NO_FATAL_FAILURE(Finish("lone-worker-1", 0));
  ASSERT_TRUE(WaitFor(
      [&] {
        const json spec = group_spec("lone-worker-0");
        return spec.is_object() && spec["roles"][0]["min"] == 1;
      },
      30s))
      << group_spec("lone-worker-0").dump() << "\n"
      << Describe("lone");
  const json spec = group_spec("lone-worker-0");
  EXPECT_EQ(spec["roles"][0]["max"], 2);
  EXPECT_EQ(spec["scheduleTimeoutSeconds"], 0);
  EXPECT_EQ(Uid(Pod("lone-worker-0")), uid) << "the waiting member is kept, not replaced";

  ASSERT_NO_FATAL_FAILURE(Bind("lone-worker-0"));
  ASSERT_NO_FATAL_FAILURE(SetRunning("lone-worker-0"));
  ASSERT_NO_FATAL_FAILURE(Finish("lone-worker-0", 0));
  EXPECT_TRUE(WaitFor([&] { return Phase("lone") == "Succeeded"; }, 30s)) << Describe("lone");
}

TEST_F(JobControllerTest, SucceedsWhenTheWorkersDoAndDeletesTheParameterServers) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(NewJob("ok", "tensorflow", json::array({Role("ps", 1, 1), Role("worker", 2, 2)})));
  const std::set<std::string> all = {"ok-ps-0", "ok-worker-0", "ok-worker-1"};
  ASSERT_TRUE(WaitFor([&] { return PodsAre("ok", all); })) << Describe("ok");
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"ok-ps-0", "ok-worker-0", "ok-worker-1"}));
  ASSERT_TRUE(WaitFor([&] { return Status("ok").value("readyMembers", "") == "3/3"; }))
      << Describe("ok");

  ASSERT_NO_FATAL_FAILURE(Finish("ok-worker-0", 0));
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(Phase("ok"), "Running") << "one worker of two is not success";
  ASSERT_NO_FATAL_FAILURE(Finish("ok-worker-1", 0));

  ASSERT_TRUE(WaitFor([&] { return Phase("ok") == "Succeeded"; })) << Describe("ok");
  EXPECT_EQ(Condition("ok", "Succeeded").value("status", ""), "True");
  EXPECT_TRUE(Status("ok").contains("completionTime"));
  // The parameter server would run forever: it is deleted; the finished
  // workers stay for their logs (cleanPodPolicy Running).
  ASSERT_TRUE(WaitFor([&] {
    return PodsAre("ok", {"ok-worker-0", "ok-worker-1"});
  })) << Describe("ok");
  EXPECT_TRUE(WaitFor([&] { return HasEvent("ok", "Succeeded", "Normal"); }));
}

TEST_F(JobControllerTest, RestartsAFailedWorkerWithTheSameNameAndIndex) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(NewJob("rs", "pytorch", json::array({Role("worker", 2, 2, "OnFailure")}),
                   {{"backoffLimit", 3}}));
  ASSERT_TRUE(WaitFor([&] { return PodsAre("rs", {"rs-worker-0", "rs-worker-1"}); }));
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"rs-worker-0", "rs-worker-1"}));
  ASSERT_TRUE(WaitFor([&] { return Status("rs").value("readyMembers", "") == "2/2"; }))
      << Describe("rs");
  const std::string first_uid = Uid(Pod("rs-worker-1"));
  const std::string other_uid = Uid(Pod("rs-worker-0"));

  ASSERT_NO_FATAL_FAILURE(Finish("rs-worker-1", 1));
  // Deleted, then after the restart backoff created again under its name.
  ASSERT_TRUE(WaitFor([&] {
    const std::string uid = Uid(Pod("rs-worker-1"));
    return !uid.empty() && uid != first_uid;
  })) << Describe("rs");
  const json replacement = Pod("rs-worker-1");
  EXPECT_EQ(replacement["metadata"]["labels"][std::string(api::kIndexLabel)], "1");
  EXPECT_EQ(replacement["spec"]["hostname"], "rs-worker-1");
  EXPECT_EQ(Uid(Pod("rs-worker-0")), other_uid) << "the healthy member was left alone";
  EXPECT_EQ(Status("rs").value("restartCount", 0), 1);
  EXPECT_TRUE(Status("rs").contains("lastRestartTime"));
  EXPECT_EQ(ReplicaStatus("rs", "worker").value("restarts", 0), 1);
  EXPECT_TRUE(WaitFor([&] { return HasEvent("rs", "Restarting", "Warning"); }));

  // The scheduler places the replacement; the job runs again.
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"rs-worker-1"}));
  ASSERT_TRUE(WaitFor([&] {
    return Phase("rs") == "Running" && Status("rs").value("readyMembers", "") == "2/2";
  })) << Describe("rs");
  // One failure, one restart: never counted twice from a stale cache.
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(Status("rs").value("restartCount", 0), 1) << Describe("rs");
  EXPECT_EQ(controller_->stats().expectations_expired.load(), 0u);
}

TEST_F(JobControllerTest, FailsOnceTheBackoffLimitIsExceeded) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(NewJob("bo", "generic", json::array({Role("worker", 1, 1, "OnFailure")}),
                   {{"backoffLimit", 1}}));
  ASSERT_TRUE(WaitFor([&] { return PodsAre("bo", {"bo-worker-0"}); }));
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"bo-worker-0"}));
  const std::string first_uid = Uid(Pod("bo-worker-0"));
  ASSERT_NO_FATAL_FAILURE(Finish("bo-worker-0", 3));
  ASSERT_TRUE(WaitFor([&] {
    const std::string uid = Uid(Pod("bo-worker-0"));
    return !uid.empty() && uid != first_uid;
  })) << Describe("bo");
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"bo-worker-0"}));
  ASSERT_NO_FATAL_FAILURE(Finish("bo-worker-0", 3));

  ASSERT_TRUE(WaitFor([&] { return Phase("bo") == "Failed"; })) << Describe("bo");
  const json failed = Condition("bo", "Failed");
  EXPECT_EQ(failed.value("status", ""), "True");
  EXPECT_EQ(failed.value("reason", ""), "BackoffLimitExceeded");
  EXPECT_NE(failed.value("message", "").find("exit code 3"), std::string::npos) << failed.dump();
  EXPECT_EQ(Status("bo").value("restartCount", 0), 1);
  EXPECT_TRUE(WaitFor([&] { return HasEvent("bo", "BackoffLimitExceeded", "Warning"); }));
  // Nothing is re-created for a failed job.
  std::this_thread::sleep_for(1500ms);
  EXPECT_EQ(Status("bo").value("restartCount", 0), 1);
  EXPECT_EQ(PodNames("bo").size(), 1u);
}

TEST_F(JobControllerTest, FailsAtTheActiveDeadlineAndStopsItsPods) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  CreateJob(
      NewJob("dl", "generic", json::array({Role("worker", 2, 2)}), {{"activeDeadlineSeconds", 3}}));
  ASSERT_TRUE(WaitFor([&] { return PodsAre("dl", {"dl-worker-0", "dl-worker-1"}); }));
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"dl-worker-0", "dl-worker-1"}));
  ASSERT_TRUE(WaitFor([&] { return Phase("dl") == "Running"; })) << Describe("dl");

  ASSERT_TRUE(WaitFor([&] { return Phase("dl") == "Failed"; }, 20s)) << Describe("dl");
  const json failed = Condition("dl", "Failed");
  EXPECT_EQ(failed.value("reason", ""), "DeadlineExceeded");
  const auto start = api::ParseTime(Status("dl").value("startTime", ""));
  const auto end = api::ParseTime(Status("dl").value("completionTime", ""));
  ASSERT_TRUE(start && end);
  EXPECT_GE(*end - *start, 3s);
  // Running members are stopped.
  ASSERT_TRUE(WaitFor([&] { return PodNames("dl").empty(); })) << Describe("dl");
  EXPECT_TRUE(WaitFor([&] { return HasEvent("dl", "DeadlineExceeded", "Warning"); }));
}

TEST_F(JobControllerTest, DeletesAFinishedJobAfterItsTtlWithItsChildrenButNotRetainedClaims) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  const json volumes = {
      {{"name", "scratch"}, {"size", "1Gi"}, {"mountPath", "/scratch"}},
      {{"name", "keep"}, {"size", "1Gi"}, {"mountPath", "/keep"}, {"retain", true}}};
  CreateJob(NewJob("ttl", "generic", json::array({Role("worker", 1, 1)}),
                   {{"ttlSecondsAfterFinished", 2}}, volumes));
  ASSERT_TRUE(WaitFor([&] { return PodsAre("ttl", {"ttl-worker-0"}); }));
  ASSERT_TRUE(WaitFor([&] {
    return Exists(k8s::resources::Services(), "ttl") &&
           Exists(k8s::resources::PersistentVolumeClaims(), "ttl-scratch") &&
           Exists(k8s::resources::PersistentVolumeClaims(), "ttl-keep");
  }));
  const json kept = *client_->Get(k8s::resources::PersistentVolumeClaims(), ns(), "ttl-keep");
  EXPECT_FALSE(kept["metadata"].contains("ownerReferences")) << kept["metadata"].dump();
  ASSERT_NO_FATAL_FAILURE(BindAndRun({"ttl-worker-0"}));
  ASSERT_NO_FATAL_FAILURE(Finish("ttl-worker-0", 0));
  ASSERT_TRUE(WaitFor([&] { return Phase("ttl") == "Succeeded"; })) << Describe("ttl");

  // The TTL deletes the job; the garbage collector takes what it owned. (It
  // learns about a new CRD's resource from discovery, every 30 s, so the
  // first job on a fresh cluster waits that long.)
  ASSERT_TRUE(WaitFor([&] { return !Exists(k8s::resources::HybridJobs(), "ttl"); }, 20s))
      << Describe("ttl");
  ASSERT_TRUE(WaitFor(
      [&] {
        return PodNames("ttl").empty() && !Exists(k8s::resources::Services(), "ttl") &&
               !Exists(k8s::resources::ConfigMaps(), "ttl-cluster");
      },
      90s))
      << Describe("ttl");
  // An owned claim is deleted too (it waits for the PVC protection finalizer,
  // which no controller removes on the local cluster); the retained one stays.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto claim = client_->Get(k8s::resources::PersistentVolumeClaims(), ns(), "ttl-scratch");
        return !claim.ok() || (*claim)["metadata"].contains("deletionTimestamp");
      },
      60s));
  auto retained = client_->Get(k8s::resources::PersistentVolumeClaims(), ns(), "ttl-keep");
  ASSERT_TRUE(retained.ok()) << retained.status().ToString();
  EXPECT_FALSE((*retained)["metadata"].contains("deletionTimestamp"));
}

TEST_F(JobControllerTest, AnInvalidJobIsMarkedInvalidWhileAValidOneProceeds) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  // The schema cannot compare two fields: minReplicas > maxReplicas passes it.
  json invalid = NewJob("bad", "generic", json::array({Role("worker", 3, 2)}));
  // Nor can it see that two containers share a name.
  invalid["spec"]["replicaSpecs"].push_back(Role("ps", 1, 1));
  invalid["spec"]["replicaSpecs"][1]["template"]["spec"]["containers"].push_back(Container());
  ASSERT_TRUE(CreateJob(invalid).is_object());
  CreateJob(NewJob("good", "generic", json::array({Role("worker", 2, 2)})));

  ASSERT_TRUE(WaitFor([&] {
    return PodsAre("good", {"good-worker-0", "good-worker-1"});
  })) << Describe("good");
  ASSERT_TRUE(WaitFor([&] { return Phase("bad") == "Failed"; })) << Describe("bad");
  const json condition = Condition("bad", "Invalid");
  EXPECT_EQ(condition.value("status", ""), "True");
  const std::string message = condition.value("message", "");
  EXPECT_NE(message.find("spec.replicaSpecs[0].maxReplicas"), std::string::npos) << message;
  EXPECT_NE(message.find("duplicate container"), std::string::npos) << message;
  EXPECT_TRUE(WaitFor([&] { return HasEvent("bad", "Invalid", "Warning"); }))
      << "no Warning Event about the invalid job";
  EXPECT_TRUE(PodNames("bad").empty());
  EXPECT_FALSE(Exists(k8s::resources::Services(), "bad"));
  // The first record of a job that waits may wait --status-batch-period.
  EXPECT_TRUE(WaitFor([&] { return Phase("good") == "Queued"; })) << Describe("good");
}

// One field used to let a tenant leave the queues: kube-scheduler places a
// job whose members name it, outside every queue's max and every gang.
TEST_F(JobControllerTest, AJobThatNamesAnotherSchedulerIsRefusedWithNoPod) {
  ASSERT_NO_FATAL_FAILURE(StartController());
  json bypass = NewJob("bypass", "generic", json::array({Role("worker", 2, 2)}));
  bypass["spec"]["schedulerName"] = "default-scheduler";
  ASSERT_TRUE(CreateJob(bypass).is_object());
  ASSERT_TRUE(WaitFor([&] { return Phase("bypass") == "Failed"; })) << Describe("bypass");
  const json condition = Condition("bypass", "Invalid");
  EXPECT_EQ(condition.value("status", ""), "True");
  const std::string message = condition.value("message", "");
  EXPECT_NE(message.find("spec.schedulerName: \"default-scheduler\" is not allowed"),
            std::string::npos)
      << message;
  EXPECT_TRUE(WaitFor([&] { return HasEvent("bypass", "Invalid", "Warning"); }))
      << "no Warning Event about the refused scheduler";
  EXPECT_TRUE(PodNames("bypass").empty());
}

}  // namespace
}  // namespace hybridjob::controller
