// gang-scheduler's shell against the real kube-apiserver, with simulated nodes.
// Each test has its own scheduler name and node label, so tests running side
// by side on the shared cluster never schedule each other's pods.
#include <atomic>
#include <functional>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include <gtest/gtest.h>

#include <hybridjob/api/labels.h>
#include <hybridjob/api/member_signature.h>
#include <hybridjob/api/waiting.h>
#include <hybridjob/k8s/api_status.h>
#include <hybridjob/scheduler/shell/gang_scheduler.h>
#include <hybridjob/sim/provisioner.h>
#include <hybridjob/sim/simulator.h>

#include "crd.h"
#include "test_cluster.h"

namespace hybridjob::scheduler {
namespace {

using hybridjob::testing::AdminClient;
using hybridjob::testing::TestNamespace;
using hybridjob::testing::WaitFor;
using nlohmann::json;
using namespace std::chrono_literals;

struct Role {
  std::string name;
  int min;
  int max;
  int gpus;
  int priority = 0;
};

class GangSchedulerTest : public ::testing::Test {
 protected:
  // Set before StartScheduler: members are signed and checked with these.
  api::MemberKeys member_keys_;
  static void SetUpTestSuite() {
    auto client = AdminClient();
    ASSERT_TRUE(hybridjob::testing::EnsureHybridJobCrd(*client, 60s).ok());
  }

  void SetUp() override {
    client_ = AdminClient();
    ns_ = std::make_unique<TestNamespace>(*client_, "gang");
    scheduler_name_ = "gang-" + ns_->name();
  }

  void TearDown() override {
    if (scheduler_) {
      scheduler_->Stop();
    }
    if (sim_) {
      sim_->Stop();
    }
  }

  void StartNodes(int count, int gpus) {
    sim::SimulatorOptions options;
    options.nodes.name_prefix = ns_->name();
    options.nodes.count = count;
    options.nodes.gpus_per_node = gpus;
    options.nodes.cpu = "32";
    options.nodes.memory = "128Gi";
    options.nodes.labels = {{"test-pool", ns_->name()}};
    options.heartbeat_interval = 30s;
    options.workers = 4;
    sim_ = std::make_unique<sim::Simulator>(*client_, options);
    ASSERT_TRUE(sim_->Start().ok());
  }

  SchedulerConfig BaseConfig() const {
    SchedulerConfig config;
    config.scheduler_name = scheduler_name_;
    config.gang_backoff_seconds = 1;
    config.bind_concurrency = 8;
    return config;
  }

  void StartScheduler(BindFunction bind = nullptr) {
    StartScheduler(BaseConfig(), std::move(bind));
  }

  void StartScheduler(const SchedulerConfig& config, BindFunction bind = nullptr) {
    scheduler_ = std::make_unique<GangScheduler>(*client_, config, std::move(bind));
    if (!member_keys_.empty()) {
      scheduler_->SetMemberKeys(member_keys_);
    }
    scheduler_->Start();
    ASSERT_TRUE(scheduler_->WaitForCacheSync(30s));
    scheduler_->SetActive(true);
  }

  static std::string GroupSpecJson(const std::vector<Role>& roles, const std::string& queue) {
    json spec = {{"roles", json::array()}, {"queue", queue}, {"scheduleTimeoutSeconds", 60}};
    for (const auto& role : roles) {
      spec["roles"].push_back(
          {{"name", role.name}, {"min", role.min}, {"max", role.max}, {"priority", role.priority}});
    }
    return spec.dump();
  }

  // The HybridJob whose members CreateGroup makes (no controller runs here):
  // the scheduler trusts a member's group only through it. Its uid.
  std::string EnsureJob(const std::string& job, const std::vector<Role>& roles,
                        const std::string& queue) {
    if (auto existing = client_->Get(k8s::resources::HybridJobs(), ns_->name(), job)) {
      return (*existing)["metadata"].value("uid", "");
    }
    json replica_specs = json::array();
    for (const auto& role : roles) {
      replica_specs.push_back(
          {{"name", role.name},
           {"minReplicas", role.min},
           {"maxReplicas", role.max},
           {"priority", role.priority},
           {"template",
            {{"spec",
              {{"containers", json::array({{{"name", "main"}, {"image", "trainer"}}})}}}}}});
    }
    json object = {{"apiVersion", api::kApiVersion},
                   {"kind", api::kKind},
                   {"metadata", {{"name", job}}},
                   {"spec",
                    {{"replicaSpecs", std::move(replica_specs)},
                     {"framework", framework_.empty() ? "generic" : framework_},
                     {"schedulerName", scheduler_name_},
                     {"runPolicy", {{"scheduleTimeoutSeconds", 60}}}}}};
    if (!queue.empty()) {
      object["spec"]["queue"] = queue;
    }
    auto created = client_->Create(k8s::resources::HybridJobs(), ns_->name(), object);
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return created.ok() ? (*created)["metadata"].value("uid", "") : "";
  }

  // Creates the member pods of a job the way hybridjob-controller does, and
  // the job that controls them. An empty queue: the namespace's default.
  void CreateGroup(const std::string& job, const std::vector<Role>& roles,
                   const std::string& duration = "", const std::string& queue = "default",
                   int first_index = 0, const std::string& priority_class = "") {
    const std::string spec = GroupSpecJson(roles, queue);
    const std::string uid = EnsureJob(job, roles, queue);
    for (const auto& role : roles) {
      for (int i = first_index; i < role.max; ++i) {
        json annotations = {{std::string(api::kGroupSpecAnnotation), spec}};
        if (!duration.empty()) {
          annotations[sim::kDurationAnnotation] = duration;
        }
        json container = {{"name", "main"}, {"image", "trainer"}};
        if (role.gpus > 0) {
          container["resources"] = {{"limits", {{"nvidia.com/gpu", std::to_string(role.gpus)}}}};
        }
        json volumes = json::array();
        if (claims_of_) {
          for (const std::string& claim : claims_of_(role.name, i)) {
            volumes.push_back({{"name", claim}, {"persistentVolumeClaim", {{"claimName", claim}}}});
          }
        }
        json pod = {{"apiVersion", "v1"},
                    {"kind", "Pod"},
                    {"metadata",
                     {{"name", job + "-" + role.name + "-" + std::to_string(i)},
                      {"labels",
                       {{std::string(api::kJobNameLabel), job},
                        {std::string(api::kRoleLabel), role.name},
                        {std::string(api::kIndexLabel), std::to_string(i)}}},
                      {"annotations", annotations},
                      {"ownerReferences", json::array({{{"apiVersion", api::kApiVersion},
                                                        {"kind", api::kKind},
                                                        {"name", job},
                                                        {"uid", uid},
                                                        {"controller", true}}})}}},
                    {"spec",
                     {{"schedulerName", scheduler_name_},
                      {"nodeSelector", {{"test-pool", ns_->name()}}},
                      {"volumes", std::move(volumes)},
                      {"containers", json::array({container})}}}};
        if (!priority_class.empty()) {
          pod["spec"]["priorityClassName"] = priority_class;
        }
        if (!member_keys_.empty()) {
          // Signed as hybridjob-controller signs the members it creates.
          const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
          pod["metadata"]["annotations"][std::string(api::kMemberSignatureAnnotation)] =
              api::SignMember(member_keys_,
                              {ns_->name(), pod["metadata"]["name"].get<std::string>(), uid}, now,
                              api::NewMemberNonce());
        }
        auto created = client_->Create(k8s::resources::Pods(), ns_->name(), pod);
        ASSERT_TRUE(created.ok()) << created.status().ToString();
      }
    }
  }

  // A one-GPU pod made by hand for this scheduler and test pool, with the
  // given labels, annotations and (unless null) ownerReferences.
  void CreateHandMadePod(const std::string& name, const std::string& image, const json& labels,
                         const json& annotations, const json& owners) {
    json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}, {"labels", labels}, {"annotations", annotations}}},
                {"spec",
                 {{"schedulerName", scheduler_name_},
                  {"nodeSelector", {{"test-pool", ns_->name()}}},
                  {"containers",
                   json::array({{{"name", "main"},
                                 {"image", image},
                                 {"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}})}}}};
    if (!owners.is_null()) {
      pod["metadata"]["ownerReferences"] = owners;
    }
    auto created = client_->Create(k8s::resources::Pods(), ns_->name(), pod);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  json Pod(const std::string& name) {
    auto pod = client_->Get(k8s::resources::Pods(), ns_->name(), name);
    return pod ? *pod : json();
  }

  std::string NodeOf(const std::string& name) {
    json pod = Pod(name);
    return pod.is_null() ? "" : pod["spec"].value("nodeName", "");
  }

  // PodScheduled condition: reason and message, or empty.
  std::pair<std::string, std::string> ScheduledCondition(const std::string& name) {
    json pod = Pod(name);
    if (pod.is_null() || !pod["status"].contains("conditions")) {
      return {};
    }
    for (const auto& c : pod["status"]["conditions"]) {
      if (c["type"] == "PodScheduled") {
        return {c.value("reason", ""), c.value("message", "")};
      }
    }
    return {};
  }

  // The condition of this type on a pod: status, reason and message.
  std::tuple<std::string, std::string, std::string> Condition(const std::string& name,
                                                              const std::string& type) {
    json pod = Pod(name);
    if (pod.is_null() || !pod["status"].contains("conditions")) {
      return {};
    }
    for (const auto& c : pod["status"]["conditions"]) {
      if (c["type"] == type) {
        return {c.value("status", ""), c.value("reason", ""), c.value("message", "")};
      }
    }
    return {};
  }

  int CountExisting(const std::string& prefix, int count) {
    int existing = 0;
    for (int i = 0; i < count; ++i) {
      existing += Pod(prefix + std::to_string(i)).is_null() ? 0 : 1;
    }
    return existing;
  }

  int CountEvents(const std::string& reason) {
    k8s::ListOptions options;
    options.field_selector = "reason=" + reason;
    auto list = client_->List(k8s::resources::Events(), ns_->name(), options);
    return list.ok() ? static_cast<int>(list->items.size()) : -1;
  }

  // Two queues entitled to half of the 16 GPUs each.
  SchedulerConfig TwoQueueConfig() const {
    SchedulerConfig config = BaseConfig();
    for (const char* name : {"a", "b"}) {
      QueueSpec queue;
      queue.name = name;
      queue.guaranteed.SetScalar("nvidia.com/gpu", 8);
      config.queues.push_back(queue);
    }
    return config;
  }

  int CountBound(const std::string& prefix, int count) {
    int bound = 0;
    for (int i = 0; i < count; ++i) {
      bound += NodeOf(prefix + std::to_string(i)).empty() ? 0 : 1;
    }
    return bound;
  }

  std::unique_ptr<k8s::RestClient> client_;
  std::unique_ptr<TestNamespace> ns_;
  std::string scheduler_name_;
  // spec.framework of the jobs EnsureJob makes; empty: generic.
  std::string framework_;
  // The claims CreateGroup mounts in a member (role, index), if any.
  std::function<std::vector<std::string>(const std::string&, int)> claims_of_;
  std::unique_ptr<sim::Simulator> sim_;
  std::unique_ptr<GangScheduler> scheduler_;
};

TEST_F(GangSchedulerTest, ElasticGroupBindsAtomicallyWithAsManyMembersAsFit) {
  StartNodes(2, 4);  // 8 GPUs
  StartScheduler();
  CreateGroup("tf", {{"ps", 1, 1, 0}, {"worker", 2, 10, 1}});

  ASSERT_TRUE(WaitFor([&] { return CountBound("tf-worker-", 10) == 8; }, 30s))
      << "bound workers: " << CountBound("tf-worker-", 10);
  EXPECT_FALSE(NodeOf("tf-ps-0").empty());
  // The members are indices 0..7; 8 and 9 are marked surplus.
  for (int i = 0; i < 8; ++i) {
    EXPECT_FALSE(NodeOf("tf-worker-" + std::to_string(i)).empty()) << i;
  }
  for (int i : {8, 9}) {
    const std::string name = "tf-worker-" + std::to_string(i);
    EXPECT_TRUE(NodeOf(name).empty());
    EXPECT_TRUE(WaitFor([&] { return ScheduledCondition(name).first == api::kSurplusReason; }))
        << name << " not marked surplus: " << ScheduledCondition(name).first << ": "
        << ScheduledCondition(name).second;
  }
  // Never more GPUs on a node than it has.
  std::map<std::string, int> per_node;
  for (int i = 0; i < 8; ++i) {
    ++per_node[NodeOf("tf-worker-" + std::to_string(i))];
  }
  for (const auto& [node, gpus] : per_node) {
    EXPECT_LE(gpus, 4) << node;
  }
  EXPECT_EQ(scheduler_->stats().groups_rolled_back.load(), 0u);
}

// Every member bound has its own Scheduled Event, as kube-scheduler records
// one per pod: `kubectl describe pod` of any member says where it went.
TEST_F(GangSchedulerTest, EveryBoundMemberHasItsScheduledEvent) {
  StartNodes(2, 4);
  StartScheduler();
  CreateGroup("each", {{"ps", 1, 1, 0}, {"worker", 3, 3, 1}});
  ASSERT_TRUE(WaitFor([&] { return CountBound("each-worker-", 3) == 3; }, 30s));
  for (const std::string pod : {"each-ps-0", "each-worker-0", "each-worker-1", "each-worker-2"}) {
    SCOPED_TRACE(pod);
    k8s::ListOptions options;
    options.field_selector = "involvedObject.name=" + pod + ",reason=Scheduled";
    std::vector<json> events;
    EXPECT_TRUE(WaitFor([&] {
      auto list = client_->List(k8s::resources::Events(), ns_->name(), options);
      events = list.ok() ? list->items : std::vector<json>{};
      return !events.empty();
    }));
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].value("type", ""), "Normal");
    EXPECT_EQ(events[0]["source"].value("component", ""), scheduler_name_);
    const std::string expected = "Successfully assigned " + ns_->name() + "/" + pod + " to " +
                                 NodeOf(pod) + " (gang each placed: ";
    EXPECT_EQ(events[0].value("message", "").rfind(expected, 0), 0u)
        << events[0].value("message", "");
  }
}

TEST_F(GangSchedulerTest, GroupBelowItsMinimumBindsNothingAndSaysWhy) {
  StartNodes(2, 4);  // 8 GPUs
  StartScheduler();
  CreateGroup("big", {{"worker", 10, 10, 1}});

  ASSERT_TRUE(
      WaitFor([&] { return ScheduledCondition("big-worker-0").first == "Unschedulable"; }, 30s));
  const std::string message = ScheduledCondition("big-worker-0").second;
  EXPECT_NE(message.find("worker: 8 of min 10 placeable"), std::string::npos) << message;
  EXPECT_EQ(CountBound("big-worker-", 10), 0);
  // The code a user reads, on the member that carries the gang's standing:
  // 10 one-GPU members on 8 GPUs can never fit.
  ASSERT_TRUE(WaitFor([&] {
    return std::get<1>(Condition("big-worker-0", std::string(api::kGangWaitingCondition))) ==
           "NeverFits";
  }));
  EXPECT_EQ(
      Condition("big-worker-0", std::string(api::kGangWaitingCondition)),
      std::make_tuple(std::string("True"), std::string("NeverFits"), std::string("queue default")));
  EXPECT_EQ(Condition("big-worker-1", std::string(api::kGangWaitingCondition)),
            std::make_tuple(std::string(), std::string(), std::string()));
  // And Events say so too: why it waits on the pod, that it never fits on the job.
  k8s::ListOptions events;
  events.field_selector = "reason=FailedScheduling";
  EXPECT_TRUE(WaitFor([&] {
    auto list = client_->List(k8s::resources::Events(), ns_->name(), events);
    return list.ok() && !list->items.empty();
  }));
  events.field_selector = "reason=NeverFits";
  EXPECT_TRUE(WaitFor([&] {
    auto list = client_->List(k8s::resources::Events(), ns_->name(), events);
    return list.ok() && list->items.size() == 1 &&
           list->items[0]["involvedObject"].value("kind", "") == api::kKind &&
           list->items[0]["involvedObject"].value("name", "") == "big";
  }));
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(CountBound("big-worker-", 10), 0) << "a partial gang was bound";
  auto never_fits = client_->List(k8s::resources::Events(), ns_->name(), events);
  ASSERT_TRUE(never_fits.ok());
  EXPECT_EQ(never_fits->items.size(), 1u) << "said again while nothing changed";
  EXPECT_EQ(never_fits->items[0].value("count", 1), 1);
}

TEST_F(GangSchedulerTest, GroupWaitsForCapacityThenBinds) {
  StartNodes(2, 4);
  StartScheduler();
  CreateGroup("first", {{"worker", 6, 6, 1}}, "8s");  // holds 6 GPUs for 8 s
  ASSERT_TRUE(WaitFor([&] { return CountBound("first-worker-", 6) == 6; }, 30s));
  CreateGroup("second", {{"worker", 4, 4, 1}});  // needs 4 of the 2 left
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(CountBound("second-worker-", 4), 0);
  ASSERT_TRUE(WaitFor([&] { return CountBound("second-worker-", 4) == 4; }, 40s))
      << "the second group never ran after the first finished";
}

TEST_F(GangSchedulerTest, PodsOfOtherSchedulersAreAccounted) {
  StartNodes(2, 4);
  // Bound by someone else before we start: 3 GPUs on node 0.
  json other = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", "other"}}},
      {"spec",
       {{"nodeName", ns_->name() + "-0"},
        {"containers", json::array({{{"name", "c"},
                                     {"image", "x"},
                                     {"resources", {{"limits", {{"nvidia.com/gpu", "3"}}}}}}})}}}};
  ASSERT_TRUE(client_->Create(k8s::resources::Pods(), ns_->name(), other).ok());
  StartScheduler();
  CreateGroup("fits", {{"worker", 5, 5, 1}});
  ASSERT_TRUE(WaitFor([&] { return CountBound("fits-worker-", 5) == 5; }, 30s));
  int on_node0 = 0;
  for (int i = 0; i < 5; ++i) {
    on_node0 += NodeOf("fits-worker-" + std::to_string(i)) == ns_->name() + "-0" ? 1 : 0;
  }
  EXPECT_EQ(on_node0, 1) << "node 0 had 1 GPU free";
  CreateGroup("nofit", {{"worker", 1, 1, 1}});
  ASSERT_TRUE(
      WaitFor([&] { return ScheduledCondition("nofit-worker-0").first == "Unschedulable"; }, 30s));
}

// A bind that fails part-way (here: the API server refuses one member's
// binding) rolls the whole group back: members that did bind are deleted, so
// the controller can recreate them unbound; no partial gang stays on the nodes.
TEST_F(GangSchedulerTest, FailedBindRollsTheWholeGroupBack) {
  StartNodes(2, 4);
  std::atomic<int> refused{0};
  StartScheduler([&](k8s::ApiClient& client, const std::string& ns, const std::string& pod,
                     const std::string& uid, const std::string& node,
                     const BindAnnotations& annotations) -> Status {
    if (pod == "rb-worker-2") {
      ++refused;
      return Status(StatusCode::kForbidden, "injected refusal").WithHttp(403, "Forbidden");
    }
    return k8s::BindPod(client, ns, pod, uid, node, annotations);
  });
  CreateGroup("rb", {{"worker", 4, 4, 1}});
  ASSERT_TRUE(WaitFor([&] { return scheduler_->stats().groups_rolled_back.load() >= 1; }, 30s));
  // Every member that had bound is gone; the refused one is pending again.
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i : {0, 1, 3}) {
          if (!Pod("rb-worker-" + std::to_string(i)).is_null()) {
            return false;
          }
        }
        return true;
      },
      30s))
      << "bound members of a failed gang were not rolled back";
  EXPECT_TRUE(NodeOf("rb-worker-2").empty());
  EXPECT_GE(refused.load(), 1);
  k8s::ListOptions events;
  events.field_selector = "reason=FailedBinding";
  EXPECT_TRUE(WaitFor([&] {
    auto list = client_->List(k8s::resources::Events(), ns_->name(), events);
    return list.ok() && !list->items.empty();
  }));
}

// A binding that took although its answer was lost (the connection broke
// after the request was sent, say during an API server restart) is reported
// as failed. Rolling back must delete that member as well: left bound, it
// would run alone while its gang waits.
TEST_F(GangSchedulerTest, BindWhoseAnswerWasLostIsRolledBackToo) {
  StartNodes(2, 4);
  std::atomic<int> lost{0};
  StartScheduler([&](k8s::ApiClient& client, const std::string& ns, const std::string& pod,
                     const std::string& uid, const std::string& node,
                     const BindAnnotations& annotations) -> Status {
    Status bound = k8s::BindPod(client, ns, pod, uid, node, annotations);
    if (pod == "lost-worker-2" && bound.ok()) {
      ++lost;
      return Unavailable("BIND: Failed to connect to any resolved endpoint (injected)");
    }
    return bound;
  });
  CreateGroup("lost", {{"worker", 4, 4, 1}});
  ASSERT_TRUE(WaitFor([&] { return scheduler_->stats().groups_rolled_back.load() >= 1; }, 30s));
  EXPECT_EQ(lost.load(), 1);
  // All four are gone, the one whose binding did take included: nothing of
  // the gang is left on a node.
  EXPECT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < 4; ++i) {
          if (!Pod("lost-worker-" + std::to_string(i)).is_null()) {
            return false;
          }
        }
        return true;
      },
      30s))
      << "lost-worker-2 bound on " << NodeOf("lost-worker-2");
}

// A binding the API server refuses with 409 for a pod that stays unbound (on
// 1.30+ the binding of a pod that is still gated answers "pod ... has
// non-empty .spec.schedulingGates"): the gang is rolled back, but the refused
// pod is read back, found unbound, and kept. A delete would make its
// controller recreate it, gated again, over and over.
TEST_F(GangSchedulerTest, ARefusedBindOfAnUnboundPodIsNotRolledBackByDeletingIt) {
  StartNodes(2, 4);
  std::atomic<int> refused{0};
  StartScheduler([&](k8s::ApiClient& client, const std::string& ns, const std::string& pod,
                     const std::string& uid, const std::string& node,
                     const BindAnnotations& annotations) -> Status {
    if (pod == "gate-worker-1" && refused.load() == 0) {
      ++refused;
      return Status(StatusCode::kConflict,
                    "Operation cannot be fulfilled on pods/binding \"gate-worker-1\": pod "
                    "gate-worker-1 has non-empty .spec.schedulingGates")
          .WithHttp(409, "Conflict");
    }
    return k8s::BindPod(client, ns, pod, uid, node, annotations);
  });
  CreateGroup("gate", {{"worker", 2, 2, 1}});
  const std::string uid = Pod("gate-worker-1")["metadata"].value("uid", "");
  ASSERT_FALSE(uid.empty());
  ASSERT_TRUE(WaitFor([&] { return scheduler_->stats().groups_rolled_back.load() >= 1; }, 30s));
  // worker-0 bound and was rolled back; worker-1 is the same pod, unbound.
  EXPECT_TRUE(WaitFor([&] { return Pod("gate-worker-0").is_null(); }, 30s))
      << "gate-worker-0 on " << NodeOf("gate-worker-0");
  const json kept = Pod("gate-worker-1");
  ASSERT_FALSE(kept.is_null()) << "the refused member was deleted";
  EXPECT_EQ(kept["metadata"].value("uid", ""), uid);
  EXPECT_EQ(refused.load(), 1);
  // Never bound on its own: while worker-0 was being deleted the gang was
  // not taken for a running one that could grow.
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(NodeOf("gate-worker-1").empty()) << "bound alone, a partial gang";
  EXPECT_EQ(scheduler_->stats().groups_grown.load(), 0u);
}

// Queue a borrows every GPU while b is idle; when b submits, a gives back the
// 8 GPUs b is guaranteed, through the Eviction API, highest indices first; and
// when b is done, a grows back into the capacity again.
TEST_F(GangSchedulerTest, QueueBorrowsIdleCapacityGivesItBackAndGrowsAgain) {
  StartNodes(2, 8);  // 16 GPUs
  StartScheduler(TwoQueueConfig());
  CreateGroup("el", {{"worker", 4, 16, 1}}, "", "a");
  ASSERT_TRUE(WaitFor([&] { return CountBound("el-worker-", 16) == 16; }, 30s))
      << "queue a should borrow all 16 GPUs: " << CountBound("el-worker-", 16);

  CreateGroup("bj", {{"worker", 8, 8, 1}}, "6s", "b");
  ASSERT_TRUE(WaitFor([&] { return CountBound("bj-worker-", 8) == 8; }, 60s))
      << "queue b never got its guarantee back";
  // Exactly the 8 highest-indexed members went; the survivors are 0..7.
  for (int i = 0; i < 16; ++i) {
    const std::string name = "el-worker-" + std::to_string(i);
    if (i < 8) {
      EXPECT_FALSE(NodeOf(name).empty()) << name << " should have survived";
    } else {
      EXPECT_TRUE(Pod(name).is_null()) << name << " should have been evicted";
    }
  }
  EXPECT_EQ(scheduler_->stats().evictions.load(), 8u);
  EXPECT_TRUE(WaitFor([&] { return CountEvents("Reclaimed") == 8; }, 10s))
      << "Reclaimed events: " << CountEvents("Reclaimed");
  auto reports = scheduler_->QueueReports();
  auto queue_a = std::find_if(reports.begin(), reports.end(),
                              [](const QueueReport& r) { return r.status.name == "a"; });
  ASSERT_NE(queue_a, reports.end());
  EXPECT_EQ(queue_a->reclaimed_pods, 8u);

  // The controller would recreate the evicted members as pending pods; they
  // wait while b runs, then the group grows back to 16.
  CreateGroup("el", {{"worker", 4, 16, 1}}, "", "a", 8);
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(CountBound("el-worker-", 16), 8) << "grew into capacity b is using";
  ASSERT_TRUE(WaitFor([&] { return CountBound("el-worker-", 16) == 16; }, 60s))
      << "the group did not grow back after b finished: " << CountBound("el-worker-", 16);
  EXPECT_GE(scheduler_->stats().groups_grown.load(), 1u);
}

// A TensorFlow gang restarts (the controller deletes every member and makes
// them anew, as after a change of membership): until its new members are
// placed, nobody's growth takes the nodes it left, so it lands where it was.
TEST_F(GangSchedulerTest, ARestartingRigidGangKeepsItsNodesFromAnothersGrowth) {
  StartNodes(2, 8);  // 16 GPUs
  StartScheduler();
  framework_ = "tensorflow";
  CreateGroup("tf", {{"worker", 8, 8, 1}});
  ASSERT_TRUE(WaitFor([&] { return CountBound("tf-worker-", 8) == 8; }, 30s));
  std::set<std::string> tf_nodes;
  for (int i = 0; i < 8; ++i) {
    tf_nodes.insert(NodeOf("tf-worker-" + std::to_string(i)));
  }
  framework_.clear();
  CreateGroup("el", {{"worker", 1, 16, 1}});
  ASSERT_TRUE(WaitFor([&] { return CountBound("el-worker-", 16) == 8; }, 30s));

  for (int i = 0; i < 8; ++i) {
    k8s::DeleteOptions now;
    now.grace_period_seconds = 0;
    ASSERT_TRUE(client_
                    ->Delete(k8s::resources::Pods(), ns_->name(),
                             "tf-worker-" + std::to_string(i), now)
                    .ok());
  }
  ASSERT_TRUE(WaitFor([&] { return CountExisting("tf-worker-", 8) == 0; }, 30s));
  // Several cycles (el's pending members keep the loop busy): el stays at 8.
  std::this_thread::sleep_for(3s);
  EXPECT_EQ(CountBound("el-worker-", 16), 8) << "el grew into the nodes tf left";

  framework_ = "tensorflow";
  CreateGroup("tf", {{"worker", 8, 8, 1}});
  ASSERT_TRUE(WaitFor([&] { return CountBound("tf-worker-", 8) == 8; }, 30s))
      << "the restarted gang waits: " << ScheduledCondition("tf-worker-0").second;
  std::set<std::string> again;
  for (int i = 0; i < 8; ++i) {
    again.insert(NodeOf("tf-worker-" + std::to_string(i)));
  }
  EXPECT_EQ(again, tf_nodes);
  EXPECT_EQ(scheduler_->stats().evictions.load(), 0u) << "nothing had to be taken back";
}

// A PodDisruptionBudget that forbids the eviction: the victim stays, says why,
// and the waiting group keeps waiting.
TEST_F(GangSchedulerTest, EvictionRefusedByADisruptionBudgetLeavesTheVictimRunning) {
  StartNodes(1, 8);
  json budget = {{"apiVersion", "policy/v1beta1"},
                 {"kind", "PodDisruptionBudget"},
                 {"metadata", {{"name", "keep-all"}}},
                 {"spec",
                  {{"minAvailable", 8},
                   {"selector", {{"matchLabels", {{std::string(api::kJobNameLabel), "el"}}}}}}}};
  k8s::Resource budgets{"policy", "v1beta1", "poddisruptionbudgets", true};
  ASSERT_TRUE(client_->Create(budgets, ns_->name(), budget).ok());
  SchedulerConfig config = TwoQueueConfig();
  for (auto& queue : config.queues) {
    queue.guaranteed = ResourceList();
    queue.guaranteed.SetScalar("nvidia.com/gpu", 4);
  }
  StartScheduler(config);
  CreateGroup("el", {{"worker", 2, 8, 1}}, "", "a");
  ASSERT_TRUE(WaitFor([&] { return CountBound("el-worker-", 8) == 8; }, 30s));
  // The budget's controller (disruption) does not run on this cluster: the
  // API server refuses every eviction of a covered pod until it has status.
  CreateGroup("bj", {{"worker", 4, 4, 1}}, "", "b");
  ASSERT_TRUE(WaitFor([&] { return scheduler_->stats().evictions_refused.load() >= 1; }, 30s));
  // The refusals shield el for a back-off (10 s by default): the cycles that
  // follow, one per condition update at least, do not try it again.
  std::this_thread::sleep_for(4s);
  EXPECT_LE(scheduler_->stats().evictions_refused.load(), 4u)
      << "evictions were retried inside the back-off";
  EXPECT_EQ(CountExisting("el-worker-", 8), 8) << "a refused eviction removed a pod";
  EXPECT_EQ(CountBound("bj-worker-", 4), 0);
  EXPECT_TRUE(WaitFor([&] {
    for (int i = 0; i < 8; ++i) {
      auto [status, reason, message] =
          Condition("el-worker-" + std::to_string(i), "DisruptionTarget");
      if (status == "False" && reason == "EvictionRefused") {
        return true;
      }
    }
    return false;
  }));
  EXPECT_GE(CountEvents("EvictionRefused"), 1);
}

// A group naming a queue the configuration lacks waits and says so; once the
// configuration (reloaded, no restart) has the queue, the group runs.
TEST_F(GangSchedulerTest, UnknownQueueWaitsUntilAReloadAddsIt) {
  StartNodes(1, 4);
  StartScheduler(TwoQueueConfig());
  CreateGroup("rs", {{"worker", 2, 2, 1}}, "", "research");
  ASSERT_TRUE(
      WaitFor([&] { return ScheduledCondition("rs-worker-0").first == "UnknownQueue"; }, 30s));
  EXPECT_NE(ScheduledCondition("rs-worker-0").second.find("research"), std::string::npos)
      << ScheduledCondition("rs-worker-0").second;
  EXPECT_EQ(CountBound("rs-worker-", 2), 0);

  SchedulerConfig reloaded = TwoQueueConfig();
  QueueSpec research;
  research.name = "research";
  reloaded.queues.push_back(research);
  EXPECT_TRUE(scheduler_->Reconfigure(reloaded).empty()) << "nothing here needs a restart";
  ASSERT_TRUE(WaitFor([&] { return CountBound("rs-worker-", 2) == 2; }, 30s));

  reloaded.bind_concurrency = 2;
  EXPECT_EQ(scheduler_->Reconfigure(reloaded), std::vector<std::string>{"bindConcurrency"});
}

// Tenancy: a queue reserved for other namespaces never takes this
// namespace's job, and says why; a reload that admits the namespace lets it run.
TEST_F(GangSchedulerTest, AQueueReservedForAnotherNamespaceNeverBindsAndSaysWhy) {
  StartNodes(1, 4);
  SchedulerConfig config = BaseConfig();
  QueueSpec vip;
  vip.name = "vip";
  vip.namespaces = {"team-vip"};
  config.queues.push_back(vip);
  StartScheduler(config);
  CreateGroup("sneak", {{"worker", 2, 2, 1}}, "", "vip");
  ASSERT_TRUE(WaitFor(
      [&] { return ScheduledCondition("sneak-worker-0").first == "NotAllowedInQueue"; }, 30s))
      << ScheduledCondition("sneak-worker-0").first;
  const std::string message = ScheduledCondition("sneak-worker-0").second;
  EXPECT_NE(message.find("\"vip\""), std::string::npos) << message;
  EXPECT_NE(message.find("\"" + ns_->name() + "\""), std::string::npos) << message;
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(CountBound("sneak-worker-", 2), 0);

  vip.namespaces.push_back(ns_->name());
  config.queues = {vip};
  EXPECT_TRUE(scheduler_->Reconfigure(config).empty());
  ASSERT_TRUE(WaitFor([&] { return CountBound("sneak-worker-", 2) == 2; }, 30s));
}

// A namespace labelled with a default queue: its jobs that name no queue are
// accounted there (the queue's ceiling holds the second one back).
TEST_F(GangSchedulerTest, ANamespacesDefaultQueueTakesItsJobs) {
  StartNodes(1, 8);
  SchedulerConfig config = BaseConfig();
  QueueSpec research;
  research.name = "research";
  research.max.Set("nvidia.com/gpu", 2);
  config.queues.push_back(research);
  json labels = {{"metadata", {{"labels", {{"batch.hybridjob.io/default-queue", "research"}}}}}};
  ASSERT_TRUE(client_
                  ->Patch(k8s::resources::Namespaces(), "", ns_->name(), k8s::PatchType::kMerge,
                          labels.dump())
                  .ok());
  StartScheduler(config);
  CreateGroup("first", {{"worker", 2, 2, 1}}, "", "");
  ASSERT_TRUE(WaitFor([&] { return CountBound("first-worker-", 2) == 2; }, 30s));
  CreateGroup("second", {{"worker", 1, 1, 1}}, "", "");
  ASSERT_TRUE(
      WaitFor([&] { return ScheduledCondition("second-worker-0").first == "OverQueueMax"; }, 30s))
      << ScheduledCondition("second-worker-0").first << ": "
      << ScheduledCondition("second-worker-0").second;
  EXPECT_NE(ScheduledCondition("second-worker-0").second.find("research"), std::string::npos);
  EXPECT_EQ(CountBound("second-worker-", 1), 0);
}

// Pods made by hand with a real member's labels and group-spec annotation are
// never part of that job's gang: the job's own members bind, the copies stay
// Pending with a reason and an Event, whether they name the job as controller
// (under another member's name) or not at all.
TEST_F(GangSchedulerTest, AForgedPodWithAMembersLabelsNeverJoinsItsGang) {
  StartNodes(1, 4);
  StartScheduler();
  CreateGroup("real", {{"worker", 2, 2, 1}});
  ASSERT_TRUE(WaitFor([&] { return CountBound("real-worker-", 2) == 2; }, 30s));

  json member = Pod("real-worker-0");
  ASSERT_FALSE(member.is_null());
  auto forge = [&](const std::string& name, bool keep_owner) {
    ASSERT_NO_FATAL_FAILURE(CreateHandMadePod(
        name, "trainer", member["metadata"]["labels"], member["metadata"]["annotations"],
        keep_owner ? member["metadata"]["ownerReferences"] : json()));
  };
  forge("forged", false);
  forge("real-worker-7", true);
  for (const char* name : {"forged", "real-worker-7"}) {
    ASSERT_TRUE(WaitFor([&] { return ScheduledCondition(name).first == "UntrustedMember"; }, 30s))
        << name << ": " << ScheduledCondition(name).first;
  }
  EXPECT_NE(ScheduledCondition("forged").second.find("not controlled by HybridJob"),
            std::string::npos)
      << ScheduledCondition("forged").second;
  EXPECT_NE(ScheduledCondition("real-worker-7").second.find("is not named as member"),
            std::string::npos)
      << ScheduledCondition("real-worker-7").second;
  EXPECT_TRUE(WaitFor([&] { return CountEvents("UntrustedMember") >= 2; }, 10s));
  std::this_thread::sleep_for(2s);
  EXPECT_TRUE(NodeOf("forged").empty());
  EXPECT_TRUE(NodeOf("real-worker-7").empty());
  EXPECT_EQ(CountBound("real-worker-", 2), 2);
  EXPECT_EQ(scheduler_->stats().evictions.load(), 0u);
}

// With member keys, the gap the labels and ownerReference leave is closed: a
// pod made by hand under a vacant member name, with the job's uid, is never
// placed, whether it carries no signature, another member's, or the very one
// the member before it had.
TEST_F(GangSchedulerTest, AForgedMemberUnderAVacantNameWithTheJobsUidNeverJoins) {
  member_keys_ = api::MemberKeys{{std::string(64, 'k')}};
  StartNodes(1, 4);
  StartScheduler();
  CreateGroup("real", {{"worker", 1, 2, 1}});
  ASSERT_TRUE(WaitFor([&] { return CountBound("real-worker-", 2) == 2; }, 30s));
  const json first = Pod("real-worker-0");
  const json second = Pod("real-worker-1");
  ASSERT_FALSE(first.is_null() || second.is_null());
  ASSERT_TRUE(client_->Delete(k8s::resources::Pods(), ns_->name(), "real-worker-1", {}).ok());
  ASSERT_TRUE(WaitFor([&] { return Pod("real-worker-1").is_null(); }, 30s));

  auto forge = [&](const json& annotations) {
    ASSERT_NO_FATAL_FAILURE(CreateHandMadePod("real-worker-1", "mine",
                                              second["metadata"]["labels"], annotations,
                                              second["metadata"]["ownerReferences"]));
  };
  json unsigned_annotations = second["metadata"]["annotations"];
  unsigned_annotations.erase(std::string(api::kMemberSignatureAnnotation));
  for (const auto& [annotations, why] :
       {std::pair{unsigned_annotations, std::string("carries no batch.hybridjob.io/member-signature")},
        std::pair{first["metadata"]["annotations"], std::string("not made for this pod")},
        std::pair{second["metadata"]["annotations"],
                  std::string("made for another pod, which used it first")}}) {
    SCOPED_TRACE(why);
    ASSERT_NO_FATAL_FAILURE(forge(annotations));
    ASSERT_TRUE(WaitFor([&] { return ScheduledCondition("real-worker-1").first == "UntrustedMember"; },
                        30s))
        << ScheduledCondition("real-worker-1").first;
    EXPECT_NE(ScheduledCondition("real-worker-1").second.find(why), std::string::npos)
        << ScheduledCondition("real-worker-1").second;
    std::this_thread::sleep_for(1s);
    EXPECT_TRUE(NodeOf("real-worker-1").empty()) << "the forged member was placed";
    ASSERT_TRUE(client_->Delete(k8s::resources::Pods(), ns_->name(), "real-worker-1", {}).ok());
    ASSERT_TRUE(WaitFor([&] { return Pod("real-worker-1").is_null(); }, 30s));
  }
  EXPECT_EQ(NodeOf("real-worker-0"), first["spec"].value("nodeName", ""));
  EXPECT_EQ(scheduler_->stats().evictions.load(), 0u);
}

// Preemption compares PriorityClasses: a high class takes the node from a low
// one; a class with preemptionPolicy Never waits instead, whatever its value.
TEST_F(GangSchedulerTest, APriorityClassDecidesPreemption) {
  const std::string low = "low-" + ns_->name();
  const std::string never = "never-" + ns_->name();
  const std::string high = "high-" + ns_->name();
  k8s::Resource classes = k8s::resources::PriorityClasses();
  for (const auto& [name, value, policy] :
       {std::tuple{low, 10, "PreemptLowerPriority"}, std::tuple{never, 5000, "Never"},
        std::tuple{high, 1000, "PreemptLowerPriority"}}) {
    json object = {{"apiVersion", "scheduling.k8s.io/v1"},
                   {"kind", "PriorityClass"},
                   {"metadata", {{"name", name}, {"labels", {{"hybridjob.io/test", "true"}}}}},
                   {"value", value},
                   {"preemptionPolicy", policy}};
    auto created = client_->Create(classes, "", object);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }
  struct DeleteClasses {
    k8s::ApiClient& client;
    std::vector<std::string> names;
    ~DeleteClasses() {
      for (const auto& name : names) {
        (void)client.Delete(k8s::resources::PriorityClasses(), "", name);
      }
    }
  } cleanup{*client_, {low, never, high}};

  StartNodes(1, 4);
  SchedulerConfig config = BaseConfig();
  config.preemption.enabled = true;
  StartScheduler(config);
  CreateGroup("low", {{"worker", 2, 2, 2}}, "", "default", 0, low);
  ASSERT_TRUE(WaitFor([&] { return CountBound("low-worker-", 2) == 2; }, 30s));

  CreateGroup("never", {{"worker", 2, 2, 2}}, "", "default", 0, never);
  ASSERT_TRUE(WaitFor([&] { return !ScheduledCondition("never-worker-0").first.empty(); }, 30s));
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(scheduler_->stats().evictions.load(), 0u) << "a Never class preempted";
  EXPECT_EQ(CountBound("low-worker-", 2), 2);

  CreateGroup("high", {{"worker", 2, 2, 2}}, "", "default", 0, high);
  ASSERT_TRUE(WaitFor([&] { return CountBound("high-worker-", 2) == 2; }, 60s))
      << "the higher PriorityClass did not preempt: " << ScheduledCondition("high-worker-0").second;
  EXPECT_EQ(CountBound("never-worker-", 2), 0);
  EXPECT_GE(scheduler_->stats().evictions.load(), 2u);
}

// Volume binding, as the PV controller of kube-controller-manager (the
// cluster fixture runs it) and the sim's provisioner complete it.
class VolumeBindingTest : public GangSchedulerTest {
 protected:
  void TearDown() override {
    GangSchedulerTest::TearDown();
    if (provisioner_) {
      provisioner_->Stop();
    }
    // Cluster-scoped, so removed by hand; the claims go with the namespace.
    for (const std::string& volume : volumes_) {
      (void)client_->Delete(k8s::resources::PersistentVolumes(), "", volume);
    }
    if (!class_name_.empty()) {
      (void)client_->Delete(k8s::resources::StorageClasses(), "", class_name_);
    }
  }

  std::string NodeName(int index) const { return ns_->name() + "-" + std::to_string(index); }

  // A WaitForFirstConsumer class of this test, with the given provisioner.
  void CreateClass(const std::string& provisioner) {
    class_name_ = "wffc-" + ns_->name();
    json storage_class = sim::MakeStorageClass(class_name_, false);
    storage_class["provisioner"] = provisioner;
    ASSERT_TRUE(client_->Create(k8s::resources::StorageClasses(), "", storage_class).ok());
  }

  // A static local volume on one node, as an admin or a static provisioner makes it.
  void CreateLocalVolume(const std::string& name, const std::string& node) {
    const std::string full_name = name + "-" + ns_->name();
    json volume = {{"apiVersion", "v1"},
                   {"kind", "PersistentVolume"},
                   {"metadata", {{"name", full_name}}},
                   {"spec",
                    {{"capacity", {{"storage", "10Gi"}}},
                     {"accessModes", json::array({"ReadWriteOnce"})},
                     {"storageClassName", class_name_},
                     {"persistentVolumeReclaimPolicy", "Retain"},
                     {"local", {{"path", "/mnt/disks/" + name}}},
                     {"nodeAffinity", sim::HostnameNodeAffinity(node)}}}};
    ASSERT_TRUE(client_->Create(k8s::resources::PersistentVolumes(), "", volume).ok());
    volumes_.push_back(full_name);
  }

  void CreateClaim(const std::string& name) {
    json claim = {{"apiVersion", "v1"},
                  {"kind", "PersistentVolumeClaim"},
                  {"metadata", {{"name", name}}},
                  {"spec",
                   {{"storageClassName", class_name_},
                    {"accessModes", json::array({"ReadWriteOnce"})},
                    {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
    ASSERT_TRUE(client_->Create(k8s::resources::PersistentVolumeClaims(), ns_->name(), claim).ok());
  }

  json Claim(const std::string& name) {
    auto claim = client_->Get(k8s::resources::PersistentVolumeClaims(), ns_->name(), name);
    return claim ? *claim : json();
  }

  bool ClaimBound(const std::string& name) {
    json claim = Claim(name);
    return !claim.is_null() && claim.value("status", json::object()).value("phase", "") == "Bound";
  }

  // The hostname a PV's node affinity pins it to.
  std::string VolumeNode(const std::string& volume_name) {
    auto volume = client_->Get(k8s::resources::PersistentVolumes(), "", volume_name);
    if (!volume) {
      return {};
    }
    return (*volume)["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"]
                    [0]["values"][0];
  }

  int CountRunning(const std::string& prefix, int count) {
    int running = 0;
    for (int i = 0; i < count; ++i) {
      json pod = Pod(prefix + std::to_string(i));
      running += !pod.is_null() && pod["status"].value("phase", "") == "Running" ? 1 : 0;
    }
    return running;
  }

  std::string class_name_;
  std::vector<std::string> volumes_;
  std::unique_ptr<sim::Provisioner> provisioner_;
};

// Static local volumes on one node of three: a gang sharing one claim lands
// there whole, the claim is bound to a volume there, and the members run.
TEST_F(VolumeBindingTest, AGangSharingOneLocalClaimLandsOnTheNodeWithTheVolume) {
  StartNodes(3, 4);
  CreateClass(std::string(kNoProvisioner));
  CreateLocalVolume("disk-a", NodeName(1));
  CreateLocalVolume("disk-b", NodeName(1));
  CreateClaim("shared");
  claims_of_ = [](const std::string&, int) { return std::vector<std::string>{"shared"}; };
  StartScheduler();
  CreateGroup("train", {{"worker", 4, 4, 1}});

  ASSERT_TRUE(WaitFor([&] { return CountBound("train-worker-", 4) == 4; }, 60s))
      << "bound: " << CountBound("train-worker-", 4) << "; "
      << ScheduledCondition("train-worker-0").second;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(NodeOf("train-worker-" + std::to_string(i)), NodeName(1)) << i;
  }
  EXPECT_TRUE(ClaimBound("shared"));
  const std::string volume = Claim("shared")["spec"].value("volumeName", "");
  EXPECT_TRUE(volume == volumes_[0] || volume == volumes_[1]) << volume;
  EXPECT_TRUE(WaitFor([&] { return CountRunning("train-worker-", 4) == 4; }, 30s));
}

// Dynamic provisioning through the sim's provisioner: each member's claim is
// provisioned on the node its member was placed on, before any is bound.
TEST_F(VolumeBindingTest, EachMembersClaimIsProvisionedOnItsMembersNode) {
  StartNodes(3, 1);  // one GPU a node: the members spread
  CreateClass(std::string(sim::kSimProvisioner));
  const auto names = sim_->NodeNames();
  provisioner_ = std::make_unique<sim::Provisioner>(
      *client_, class_name_, false, std::set<std::string>(names.begin(), names.end()));
  ASSERT_TRUE(provisioner_->Start().ok());
  for (int i = 0; i < 3; ++i) {
    CreateClaim("data-" + std::to_string(i));
  }
  claims_of_ = [](const std::string&, int index) {
    return std::vector<std::string>{"data-" + std::to_string(index)};
  };
  StartScheduler();
  CreateGroup("train", {{"worker", 3, 3, 1}});

  ASSERT_TRUE(WaitFor([&] { return CountBound("train-worker-", 3) == 3; }, 60s))
      << "bound: " << CountBound("train-worker-", 3) << "; "
      << ScheduledCondition("train-worker-0").second;
  std::set<std::string> nodes;
  for (int i = 0; i < 3; ++i) {
    const std::string claim = "data-" + std::to_string(i);
    ASSERT_TRUE(ClaimBound(claim)) << "a member was bound before its claim";
    const std::string volume = Claim(claim)["spec"].value("volumeName", "");
    volumes_.push_back(volume);
    const std::string node = NodeOf("train-worker-" + std::to_string(i));
    EXPECT_EQ(VolumeNode(volume), node) << claim;
    EXPECT_EQ(
        Claim(claim)["metadata"]["annotations"].value(std::string(kAnnotationSelectedNode), ""),
        node);
    nodes.insert(node);
  }
  EXPECT_EQ(nodes.size(), 3u);
  EXPECT_TRUE(WaitFor([&] { return CountRunning("train-worker-", 3) == 3; }, 30s));
}

// No volume anywhere and no provisioner: the gang waits naming the claim, and
// nothing is bound, reserved or selected.
TEST_F(VolumeBindingTest, AGangWhoseVolumesFitNowhereWaitsNamingTheClaim) {
  StartNodes(2, 4);
  CreateClass(std::string(kNoProvisioner));
  CreateLocalVolume("elsewhere", "a-node-of-no-one");
  CreateClaim("data");
  claims_of_ = [](const std::string&, int) { return std::vector<std::string>{"data"}; };
  StartScheduler();
  CreateGroup("train", {{"worker", 2, 2, 1}});

  ASSERT_TRUE(WaitFor(
      [&] { return ScheduledCondition("train-worker-0").first == api::kWaitingReason; }, 30s));
  const std::string message = ScheduledCondition("train-worker-0").second;
  EXPECT_NE(message.find("claim \"data\""), std::string::npos) << message;
  std::this_thread::sleep_for(2s);
  EXPECT_EQ(CountBound("train-worker-", 2), 0);
  const json claim = Claim("data");
  EXPECT_FALSE(claim["metadata"]
                   .value("annotations", json::object())
                   .contains(std::string(kAnnotationSelectedNode)));
  EXPECT_FALSE(ClaimBound("data"));
  auto volume = client_->Get(k8s::resources::PersistentVolumes(), "", volumes_[0]);
  ASSERT_TRUE(volume.ok());
  EXPECT_FALSE((*volume)["spec"].contains("claimRef"));
}

// The documented way to hand a Released volume (its claim gone, reclaim
// policy Retain) to one named new claim: the claim names the volume, then the
// volume's claimRef is pointed at the claim. No other claim can take it
// meanwhile, and a gang mounting the claim goes where the volume is.
TEST_F(VolumeBindingTest, AReleasedVolumeGoesToTheClaimItIsGivenToAndItsGangFollows) {
  StartNodes(3, 4);
  CreateClass(std::string(kNoProvisioner));
  CreateLocalVolume("kept", NodeName(2));
  const std::string volume = volumes_[0];
  // The state a deleted job leaves: bound to a claim that is gone.
  const json old_ref = {{"spec",
                         {{"claimRef",
                           {{"kind", "PersistentVolumeClaim"},
                            {"namespace", ns_->name()},
                            {"name", "old-job-data"},
                            {"uid", "0b4c7d7e-0000-4000-8000-000000000000"}}}}}};
  ASSERT_TRUE(client_
                  ->Patch(k8s::resources::PersistentVolumes(), "", volume, k8s::PatchType::kMerge,
                          old_ref.dump())
                  .ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        auto object = client_->Get(k8s::resources::PersistentVolumes(), "", volume);
        return object.ok() && (*object)["status"].value("phase", "") == "Released";
      },
      30s));

  CreateClaim("other");  // fits the volume, but must not get it
  json reuse = {{"apiVersion", "v1"},
                {"kind", "PersistentVolumeClaim"},
                {"metadata", {{"name", "new-job-data"}}},
                {"spec",
                 {{"storageClassName", class_name_},
                  {"volumeName", volume},
                  {"accessModes", json::array({"ReadWriteOnce"})},
                  {"resources", {{"requests", {{"storage", "1Gi"}}}}}}}};
  ASSERT_TRUE(client_->Create(k8s::resources::PersistentVolumeClaims(), ns_->name(), reuse).ok());
  const json handed =
      json::array({{{"op", "replace"},
                    {"path", "/spec/claimRef"},
                    {"value", {{"namespace", ns_->name()}, {"name", "new-job-data"}}}}});
  ASSERT_TRUE(client_
                  ->Patch(k8s::resources::PersistentVolumes(), "", volume, k8s::PatchType::kJson,
                          handed.dump())
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return ClaimBound("new-job-data"); }, 30s));
  EXPECT_EQ(Claim("new-job-data")["spec"].value("volumeName", ""), volume);
  EXPECT_FALSE(ClaimBound("other"));

  claims_of_ = [](const std::string&, int) { return std::vector<std::string>{"new-job-data"}; };
  StartScheduler();
  CreateGroup("resumed", {{"worker", 2, 2, 1}});
  ASSERT_TRUE(WaitFor([&] { return CountBound("resumed-worker-", 2) == 2; }, 30s))
      << ScheduledCondition("resumed-worker-0").second;
  EXPECT_EQ(NodeOf("resumed-worker-0"), NodeName(2));
  EXPECT_EQ(NodeOf("resumed-worker-1"), NodeName(2));
  EXPECT_FALSE(ClaimBound("other"));
}

}  // namespace
}  // namespace hybridjob::scheduler
