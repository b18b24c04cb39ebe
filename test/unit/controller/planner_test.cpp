#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/group_spec.h>
#include <hybridjob/api/labels.h>
#include <hybridjob/controller/children.h>
#include <hybridjob/controller/planner.h>

#include "fake_cluster.h"
#include "job_fixtures.h"
#include "shell.h"

namespace hybridjob::controller {
namespace {

using api::JobPhase;
using nlohmann::json;
using std::chrono::seconds;
using testing::ActionsOf;
using ::testing::Contains;
using testing::CreatedPods;
using testing::DeletedPods;
using ::testing::ElementsAre;
using testing::EventReasons;
using testing::FakeCluster;
using ::testing::HasSubstr;
using testing::IndexOf;
using ::testing::IsEmpty;
using ::testing::IsSupersetOf;
using ::testing::Not;
using testing::T0;
using ::testing::UnorderedElementsAre;

json TfJob() {
  return hybridjob::testing::TfJobJson();
}

// Every pod of the job exists and the scheduler placed `bound` of them; the
// rest are marked surplus.
void Place(FakeCluster& cluster, const std::vector<std::string>& bound) {
  for (const std::string& name : cluster.PodNames()) {
    if (std::find(bound.begin(), bound.end(), name) != bound.end()) {
      cluster.Bind(name);
    } else {
      cluster.MarkSurplus(name);
    }
  }
}

// Every bound pod that has not ended runs, as its kubelet starts it.
void RunAll(FakeCluster& cluster) {
  for (const std::string& name : cluster.PodNames()) {
    const json& pod = cluster.Pod(name);
    const std::string phase =
        pod.contains("status") && pod["status"].is_object() ? pod["status"].value("phase", "") : "";
    if (!pod["spec"].value("nodeName", "").empty() && phase != "Succeeded" && phase != "Failed") {
      cluster.Run(name);
    }
  }
}

// A TF job whose gang was placed with ps-0 and workers 0 and 1.
FakeCluster PlacedTfJob(json job = TfJob()) {
  FakeCluster cluster(std::move(job));
  cluster.Step(T0());
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"});
  cluster.Step(T0());
  RunAll(cluster);
  cluster.Step(T0());
  return cluster;
}

// The TF job placed with ps-0 and workers 0-2 (worker-3 left out), running
// unless `run` is false.
FakeCluster TfJobWithThreeWorkers(bool run = true) {
  FakeCluster cluster(TfJob());
  cluster.Step(T0());
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1", "mnist-worker-2"});
  cluster.Step(T0());
  if (run) {
    RunAll(cluster);
    cluster.Step(T0() + seconds(1));
  }
  return cluster;
}

std::string WorkerEnvValue(const json& config_map, int index, const std::string& variable) {
  testing::ShellResult result =
      testing::RunShell("HYBRIDJOB_INDEX=" + std::to_string(index) + "\n" +
                        config_map["data"]["worker.env"].get<std::string>() + "\nprintf '%s' \"$" +
                        variable + "\"\n");
  EXPECT_EQ(result.exit_status, 0) << result.output;
  return result.output;
}

TEST(ControllerPlannerTest, FirstPassCreatesTheWholeGang) {
  FakeCluster cluster(TfJob());
  Plan plan = cluster.Reconcile(T0());

  EXPECT_THAT(CreatedPods(plan), ElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1",
                                             "mnist-worker-2", "mnist-worker-3"));
  ASSERT_EQ(ActionsOf<CreateService>(plan).size(), 1u);
  EXPECT_EQ(ActionsOf<CreateService>(plan)[0].service["metadata"]["name"], "mnist");
  EXPECT_TRUE(ActionsOf<CreateConfigMap>(plan).empty());  // not before placement
  EXPECT_TRUE(DeletedPods(plan).empty());
  EXPECT_EQ(IndexOf<CreateRunRevision>(plan), 0) << "the run's spec is kept before anything";
  EXPECT_EQ(IndexOf<UpdateStatus>(plan), 1) << "then the status that names it";
  EXPECT_LT(IndexOf<CreateService>(plan), IndexOf<CreatePod>(plan));

  const api::HybridJobStatus status = ActionsOf<UpdateStatus>(plan)[0].status;
  EXPECT_EQ(status.phase, JobPhase::kQueued);
  EXPECT_EQ(status.start_time, "2024-05-01T12:00:00Z");
  EXPECT_EQ(status.observed_generation, 1);
  EXPECT_EQ(status.ready_members, "0/3");
  EXPECT_TRUE(status.HasTrueCondition("Created"));
  EXPECT_FALSE(status.HasTrueCondition("Scheduled"));
  ASSERT_EQ(status.replica_statuses.size(), 2u);
  EXPECT_EQ(status.FindReplicaStatus("worker")->active, 4);
  EXPECT_EQ(status.FindReplicaStatus("worker")->members, 0);
  EXPECT_THAT(EventReasons(plan), ElementsAre("Created"));
  EXPECT_GT(IndexOf<RecordEvent>(plan), IndexOf<CreatePod>(plan))
      << "the Created Event reports the creates: it follows them";
  cluster.Apply(plan);
  ASSERT_EQ(cluster.Events().size(), 1u);
  EXPECT_EQ(cluster.Events()[0].message, "created 5 member pods: ps 1 worker 4");

  const json worker3 = ActionsOf<CreatePod>(plan)[4].pod;
  EXPECT_EQ(worker3["metadata"]["labels"]["batch.hybridjob.io/index"], "3");
  EXPECT_EQ(worker3["spec"]["hostname"], "mnist-worker-3");
  EXPECT_EQ(worker3["spec"]["subdomain"], "mnist");
  EXPECT_EQ(worker3["spec"]["schedulerName"], "gang-scheduler");
  EXPECT_EQ(worker3["spec"]["restartPolicy"], "Never");
  EXPECT_EQ(worker3["metadata"]["ownerReferences"][0]["uid"], "job-uid-1");
  EXPECT_TRUE(worker3["metadata"]["annotations"].contains("batch.hybridjob.io/group-spec"));
}

json MpiJob() {
  json object = TfJob();
  object["spec"]["framework"] = "mpi";
  object["spec"]["replicaSpecs"] = {
      {{"name", "launcher"}, {"minReplicas", 1}, {"template", hybridjob::testing::PodTemplate()}},
      {{"name", "worker"},
       {"minReplicas", 2},
       {"maxReplicas", 2},
       {"template", hybridjob::testing::PodTemplate(1)}}};
  object["spec"]["successPolicy"] = {{"roles", {"launcher"}}};
  return object;
}

TEST(ControllerPlannerTest, AnMpiJobsSshKeySecretComesBeforeItsMembers) {
  FakeCluster cluster(MpiJob());
  Plan plan = cluster.Reconcile(T0());
  ASSERT_EQ(ActionsOf<CreateSshKeySecret>(plan).size(), 1u);
  const json secret = ActionsOf<CreateSshKeySecret>(plan)[0].secret;
  EXPECT_EQ(secret["metadata"]["name"], "mnist-ssh");
  EXPECT_EQ(secret["type"], "kubernetes.io/ssh-auth");
  EXPECT_EQ(secret["metadata"]["ownerReferences"][0]["uid"], "job-uid-1");
  EXPECT_FALSE(secret.contains("data")) << "the key pair is made where the Secret is created";
  EXPECT_LT(IndexOf<CreateSshKeySecret>(plan), IndexOf<CreatePod>(plan));

  // With every pod created, no pass asks again; a recreated member does.
  cluster.Step(T0());
  Place(cluster, {"mnist-launcher-0", "mnist-worker-0", "mnist-worker-1"});
  plan = cluster.Step(T0() + seconds(1));
  EXPECT_TRUE(ActionsOf<CreateSshKeySecret>(plan).empty());
  EXPECT_EQ(cluster.Secrets().size(), 1u);

  // Other frameworks have none.
  FakeCluster tf(TfJob());
  EXPECT_TRUE(ActionsOf<CreateSshKeySecret>(tf.Reconcile(T0())).empty());
}

TEST(ControllerPlannerTest, WaitsQuietlyWhilePlacementIsIncomplete) {
  FakeCluster cluster(TfJob());
  cluster.Step(T0());
  cluster.Bind("mnist-ps-0");
  cluster.Bind("mnist-worker-0");
  cluster.MarkSurplus("mnist-worker-3");
  // worker-1 and worker-2 are neither bound nor surplus: the scheduler is not done.
  Plan plan = cluster.Step(T0() + seconds(5));
  // Only the counts move: nothing is created, deleted or published yet.
  ASSERT_EQ(plan.actions.size(), 1u) << testing::Describe(plan);
  EXPECT_EQ(ActionsOf<UpdateStatus>(plan).size(), 1u);
  EXPECT_FALSE(plan.requeue_after.has_value());
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kQueued);
  EXPECT_FALSE(status.HasTrueCondition("Scheduled"));
  EXPECT_EQ(status.FindReplicaStatus("worker")->scheduled, 1);
  EXPECT_EQ(status.FindReplicaStatus("worker")->members, 0);
}

TEST(ControllerPlannerTest, SurplusIsDeletedAndTheClusterSpecListsBoundMembers) {
  FakeCluster cluster(TfJob());
  cluster.Step(T0());
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"});
  Plan plan = cluster.Step(T0() + seconds(3));

  EXPECT_THAT(DeletedPods(plan), UnorderedElementsAre("mnist-worker-2", "mnist-worker-3"));
  for (const DeletePod& removal : ActionsOf<DeletePod>(plan)) {
    EXPECT_EQ(removal.reason, "surplus");
    EXPECT_FALSE(removal.uid.empty());
  }
  EXPECT_TRUE(CreatedPods(plan).empty());
  ASSERT_EQ(ActionsOf<CreateConfigMap>(plan).size(), 1u);
  EXPECT_LT(IndexOf<CreateConfigMap>(plan), IndexOf<DeletePod>(plan))
      << "the membership is recorded before surplus pods go";

  const json config_map = ActionsOf<CreateConfigMap>(plan)[0].config_map;
  EXPECT_EQ(config_map["metadata"]["name"], "mnist-cluster");
  EXPECT_EQ(config_map["metadata"]["annotations"][std::string(api::kMembersAnnotation)],
            R"({"ps":1,"worker":2})");
  EXPECT_EQ(config_map["metadata"]["ownerReferences"][0]["uid"], "job-uid-1");
  json cluster_json = json::parse(config_map["data"]["cluster.json"].get<std::string>());
  EXPECT_EQ(cluster_json["worker"],
            json({"mnist-worker-0.mnist.team-a.svc:2222", "mnist-worker-1.mnist.team-a.svc:2222"}));

  json tf_config = json::parse(WorkerEnvValue(config_map, 1, "TF_CONFIG"));
  EXPECT_EQ(tf_config["cluster"]["worker"].size(), 2u);
  EXPECT_EQ(tf_config["cluster"]["ps"], json({"mnist-ps-0.mnist.team-a.svc:2222"}));
  EXPECT_EQ(tf_config["task"], json({{"type", "worker"}, {"index", 1}}));
  EXPECT_EQ(WorkerEnvValue(config_map, 1, "HYBRIDJOB_WORLD_SIZE"), "3");

  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kRunning);
  EXPECT_TRUE(status.HasTrueCondition("Scheduled"));
  EXPECT_THAT(status.FindCondition("Scheduled")->message,
              HasSubstr("ps 1/1 worker 2/4; deleting 2 surplus pods"));
  EXPECT_EQ(status.FindReplicaStatus("worker")->members, 2);
  EXPECT_EQ(status.FindReplicaStatus("worker")->scheduled, 2);
  EXPECT_EQ(status.FindReplicaStatus("ps")->members, 1);
  EXPECT_EQ(status.ready_members, "0/3");
  EXPECT_THAT(EventReasons(plan), ElementsAre("Scheduled", "Running"));
}

TEST(ControllerPlannerTest, SurplusIsNeverRecreated) {
  FakeCluster cluster = PlacedTfJob();
  EXPECT_THAT(cluster.PodNames(), ElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1"));
  EXPECT_EQ(cluster.Status().ready_members, "3/3");
  for (int minute = 1; minute <= 3; ++minute) {
    EXPECT_THAT(cluster.Reconcile(T0() + std::chrono::minutes(minute)).actions, IsEmpty());
  }
  // Even with the ConfigMap gone, the status still records the membership.
  cluster.RemoveConfigMap("mnist-cluster");
  Plan plan = cluster.Step(T0() + std::chrono::minutes(4));
  EXPECT_TRUE(CreatedPods(plan).empty());
  ASSERT_EQ(ActionsOf<CreateConfigMap>(plan).size(), 1u);
  EXPECT_EQ(ActionsOf<CreateConfigMap>(plan)[0]
                .config_map["metadata"]["annotations"][std::string(api::kMembersAnnotation)],
            R"({"ps":1,"worker":2})");
}

TEST(ControllerPlannerTest, EditedConfigMapIsRestored) {
  FakeCluster cluster = PlacedTfJob();
  cluster.ConfigMapRef("mnist-cluster")["data"]["worker.env"] = "export TF_CONFIG=tampered\n";
  const json observed_version =
      cluster.ConfigMap("mnist-cluster")->at("metadata").at("resourceVersion");
  Plan plan = cluster.Step(T0() + seconds(30));
  ASSERT_EQ(ActionsOf<UpdateConfigMap>(plan).size(), 1u);
  EXPECT_EQ(ActionsOf<UpdateConfigMap>(plan)[0].config_map["metadata"]["resourceVersion"],
            observed_version);
  EXPECT_TRUE(ActionsOf<UpdateStatus>(plan).empty());
  EXPECT_THAT(cluster.ConfigMap("mnist-cluster")->at("data").at("worker.env").get<std::string>(),
              HasSubstr("TF_CONFIG"));
  EXPECT_THAT(cluster.ConfigMap("mnist-cluster")->at("data").at("worker.env").get<std::string>(),
              ::testing::Not(HasSubstr("tampered")));
}

TEST(ControllerPlannerTest, MembersAreTheBoundPrefixOfEachRole) {
  json object = TfJob();
  object["spec"]["framework"] = "generic";  // learns a new membership live
  object["spec"]["replicaSpecs"][1]["minReplicas"] = 1;
  FakeCluster cluster(object);
  cluster.Step(T0());
  // Index 1 was left out but 2 was bound: only worker-0 can be a member, since
  // task indices must be 0..k-1.
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-2"});
  Plan plan = cluster.Step(T0());
  EXPECT_TRUE(DeletedPods(plan).empty()) << "worker-1 may still be bound, and 1 and 2 join";
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 1);
  cluster.Bind("mnist-worker-1");
  cluster.Step(T0() + seconds(5));
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 3);
}

// A PyTorch job placed with its master and all four workers, running.
FakeCluster RunningDdpJob() {
  json object = TfJob();
  object["metadata"]["name"] = "ddp";
  object["spec"]["framework"] = "pytorch";
  object["spec"]["replicaSpecs"][0]["name"] = "master";
  FakeCluster cluster(object);
  cluster.Step(T0());
  Place(cluster, {"ddp-master-0", "ddp-worker-0", "ddp-worker-1", "ddp-worker-2", "ddp-worker-3"});
  cluster.Step(T0());
  RunAll(cluster);
  cluster.Step(T0() + seconds(1));
  return cluster;
}

// The scheduler reclaims two workers for a waiting job and later grows the
// job back.
TEST(ControllerPlannerTest, ReclaimShrinksAndGrowthRegrowsAnElasticJob) {
  FakeCluster cluster = RunningDdpJob();
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 4);

  // Marked before the eviction: the job shrinks, nothing restarts.
  cluster.MarkReclaimed("ddp-worker-3");
  cluster.MarkReclaimed("ddp-worker-2");
  Plan plan = cluster.Step(T0() + seconds(10));
  EXPECT_TRUE(DeletedPods(plan).empty()) << "the Eviction API removes them, not the controller";
  EXPECT_TRUE(CreatedPods(plan).empty());
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 2);
  EXPECT_EQ(cluster.Status().phase, JobPhase::kRunning);
  EXPECT_EQ(cluster.Status().restart_count, 0);
  EXPECT_THAT(EventReasons(plan), Contains("MembershipChanged"));
  const json* config_map = cluster.ConfigMap("ddp-cluster");
  ASSERT_NE(config_map, nullptr);
  EXPECT_EQ(config_map->at("metadata").at("annotations").at(std::string(api::kMembersAnnotation)),
            R"({"master":1,"worker":2})");
  EXPECT_EQ(WorkerEnvValue(*config_map, 0, "WORLD_SIZE"), "3");

  // Evicted: the indices come back as pending pods the job may grow into.
  cluster.RemovePod("ddp-worker-2");
  cluster.RemovePod("ddp-worker-3");
  plan = cluster.Step(T0() + seconds(20));
  EXPECT_THAT(CreatedPods(plan), UnorderedElementsAre("ddp-worker-2", "ddp-worker-3"));
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 2);
  EXPECT_EQ(cluster.Status().phase, JobPhase::kRunning);

  // Capacity is idle again: the scheduler binds them and the job grows.
  cluster.Bind("ddp-worker-2");
  cluster.Bind("ddp-worker-3");
  plan = cluster.Step(T0() + seconds(30));
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 4);
  EXPECT_THAT(EventReasons(plan), Contains("MembershipChanged"));
  EXPECT_EQ(WorkerEnvValue(*cluster.ConfigMap("ddp-cluster"), 0, "WORLD_SIZE"), "5");
  EXPECT_TRUE(DeletedPods(plan).empty());
}

// The same reclaim, but the evicted pods are gone before the controller looks
// again (no grace period): their last state, kept when they were deleted,
// still says they were evicted, so the job shrinks instead of restarting them.
TEST(ControllerPlannerTest, MembersEvictedAndGoneBeforeTheNextPassStillShrinkTheJob) {
  FakeCluster cluster = RunningDdpJob();

  cluster.EvictAndRemove("ddp-worker-3");
  cluster.EvictAndRemove("ddp-worker-2");
  const Plan plan = cluster.Step(T0() + seconds(10));
  const api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.FindReplicaStatus("worker")->members, 2);
  EXPECT_EQ(status.phase, JobPhase::kRunning);
  EXPECT_EQ(status.restart_count, 0);
  EXPECT_THAT(EventReasons(plan), Contains("MembershipChanged"));
  EXPECT_EQ(cluster.ConfigMap("ddp-cluster")
                ->at("metadata")
                .at("annotations")
                .at(std::string(api::kMembersAnnotation)),
            R"({"master":1,"worker":2})");
  // The indices come back as pending pods the job may grow into.
  EXPECT_THAT(CreatedPods(plan), UnorderedElementsAre("ddp-worker-2", "ddp-worker-3"));
}

// Kubernetes 1.26+ marks every disruption with DisruptionTarget: a drain
// (the Eviction API handler), the taint manager, the kubelet. Without the
// gang scheduler's own GangEviction condition that is not a reclaim: the
// member is replaced at the same index, the job keeps its size and nothing
// else restarts.
TEST(ControllerPlannerTest, AMemberDrainedByTheClusterIsReplacedAtItsIndex) {
  for (const char* reason : {"EvictionByEvictionAPI", "DeletionByTaintManager"}) {
    SCOPED_TRACE(reason);
    FakeCluster cluster = RunningDdpJob();
    cluster.MarkDisruptedBy("ddp-worker-3", reason);
    cluster.MarkTerminating("ddp-worker-3");
    Plan plan = cluster.Step(T0() + seconds(10));
    EXPECT_THAT(DeletedPods(plan), IsEmpty());
    EXPECT_THAT(EventReasons(plan), Not(Contains("MembershipChanged")));
    EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 4);

    cluster.RemovePod("ddp-worker-3");
    plan = cluster.Step(T0() + seconds(20));
    EXPECT_THAT(CreatedPods(plan), ElementsAre("ddp-worker-3"));
    EXPECT_THAT(DeletedPods(plan), IsEmpty());
    EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 4);
    EXPECT_EQ(cluster.Status().restart_count, 0);
    EXPECT_EQ(WorkerEnvValue(*cluster.ConfigMap("ddp-cluster"), 0, "WORLD_SIZE"), "5");

    cluster.Bind("ddp-worker-3");
    cluster.Run("ddp-worker-3");
    cluster.Step(T0() + seconds(30));
    EXPECT_EQ(cluster.Status().phase, JobPhase::kRunning);
    EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 4);
  }
}

// A TF job reads its cluster spec only at start: a drained worker comes back
// under the same name, so the others keep running (no membership restart).
TEST(ControllerPlannerTest, ADrainedMemberOfARigidFrameworkRestartsNobodyElse) {
  FakeCluster cluster = TfJobWithThreeWorkers();
  cluster.MarkDisruptedBy("mnist-worker-2", "EvictionByEvictionAPI");
  cluster.RemovePod("mnist-worker-2");
  Plan plan = cluster.Step(T0() + seconds(10));
  EXPECT_THAT(DeletedPods(plan), IsEmpty());
  EXPECT_THAT(CreatedPods(plan), ElementsAre("mnist-worker-2"));
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 3);
  EXPECT_EQ(cluster.Status().restart_count, 0);
}

// Node-pressure eviction by the kubelet: the pod ends Failed (reason Evicted,
// DisruptionTarget TerminationByKubelet). The ps role never restarts
// (restartPolicy Never), yet the job does not fail: the member is replaced.
TEST(ControllerPlannerTest, AMemberEvictedByItsKubeletIsReplacedWithoutARestart) {
  FakeCluster cluster = TfJobWithThreeWorkers();
  cluster.Exit("mnist-ps-0", 137);
  cluster.PodRef("mnist-ps-0")["status"]["reason"] = "Evicted";
  cluster.MarkDisruptedBy("mnist-ps-0", "TerminationByKubelet");
  // The replacement follows on the next pass, once the old pod is gone.
  Plan plan = cluster.Reconcile(T0() + seconds(10));
  cluster.Apply(plan);
  EXPECT_THAT(DeletedPods(plan), ElementsAre("mnist-ps-0"));
  for (const DeletePod& removal : ActionsOf<DeletePod>(plan)) {
    EXPECT_EQ(removal.reason, "replace");
  }
  EXPECT_THAT(EventReasons(plan), Contains("MemberReplaced"));
  api::HybridJobStatus status = cluster.Status();
  EXPECT_NE(status.phase, JobPhase::kFailed);
  EXPECT_EQ(status.restart_count, 0);
  EXPECT_EQ(status.FindReplicaStatus("ps")->restarts, 0);
  // The old pod is gone; its index comes back at once (no restart back-off).
  plan = cluster.Step(T0() + seconds(11));
  EXPECT_THAT(CreatedPods(plan), ElementsAre("mnist-ps-0"));
}

// A kubelet that refuses a bound pod at admission (two schedulers bound onto
// one node at once): the placement did not take. No restart is counted. A
// worker above the role's minimum comes back pending at its index for the
// scheduler to place again; the others are left alone.
TEST(ControllerPlannerTest, AMemberRefusedByTheKubeletIsReplacedWithoutARestart) {
  for (const char* reason : {"OutOfnvidia.com/gpu", "OutOfcpu", "UnexpectedAdmissionError",
                             "NodeAffinity", "NodeLost"}) {
    SCOPED_TRACE(reason);
    FakeCluster cluster = TfJobWithThreeWorkers(/*run=*/false);
    cluster.RefuseAdmission("mnist-worker-2", reason);
    Plan plan = cluster.Reconcile(T0() + seconds(1));
    cluster.Apply(plan);
    EXPECT_THAT(DeletedPods(plan), ElementsAre("mnist-worker-2"));
    EXPECT_THAT(EventReasons(plan), Contains("MemberReplaced"));
    api::HybridJobStatus status = cluster.Status();
    EXPECT_NE(status.phase, JobPhase::kFailed);
    EXPECT_EQ(status.restart_count, 0);
    EXPECT_FALSE(status.last_restart_time.has_value());
    plan = cluster.Step(T0() + seconds(2));
    EXPECT_THAT(CreatedPods(plan), ElementsAre("mnist-worker-2"));
    EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 3);
  }
}

// A refusal that leaves a role below its minimum would leave the rest of the
// gang waiting on its nodes: the whole gang is re-placed as a unit, still
// without a restart counted (the ps role has restartPolicy Never).
TEST(ControllerPlannerTest, ARefusalBelowTheMinimumReplacesTheWholeGang) {
  FakeCluster cluster = TfJobWithThreeWorkers(/*run=*/false);
  cluster.Run("mnist-worker-0");
  cluster.RefuseAdmission("mnist-ps-0", "OutOfnvidia.com/gpu");
  Plan plan = cluster.Reconcile(T0() + seconds(1));
  cluster.Apply(plan);
  EXPECT_THAT(DeletedPods(plan), UnorderedElementsAre("mnist-ps-0", "mnist-worker-0",
                                                      "mnist-worker-1", "mnist-worker-2"));
  for (const DeletePod& removal : ActionsOf<DeletePod>(plan)) {
    EXPECT_EQ(removal.reason, "replace");
  }
  const std::vector<RecordEvent> events = ActionsOf<RecordEvent>(plan);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "MemberReplaced");
  EXPECT_THAT(events[0].message, HasSubstr("re-placing the whole gang: member mnist-ps-0"));
  EXPECT_THAT(events[0].message, HasSubstr("ps has 0 of its minimum 1"));
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kRestarting);
  EXPECT_EQ(status.restart_count, 0);
  // Every member comes back at once, unbound, with the committed membership.
  plan = cluster.Step(T0() + seconds(2));
  EXPECT_THAT(CreatedPods(plan), UnorderedElementsAre("mnist-ps-0", "mnist-worker-0",
                                                      "mnist-worker-1", "mnist-worker-2"));
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 3);
}

// The same reason after a container ran is the job's own failure.
TEST(ControllerPlannerTest, AFailureAfterAContainerRanIsNotAnAdmissionRefusal) {
  FakeCluster cluster = TfJobWithThreeWorkers();
  cluster.Exit("mnist-ps-0", 1);
  cluster.PodRef("mnist-ps-0")["status"]["reason"] = "OutOfmemory";
  cluster.Step(T0() + seconds(1));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kFailed);
}

TEST(ControllerPlannerTest, ReclaimNeverShrinksARoleBelowItsMinimum) {
  json object = TfJob();
  object["spec"]["framework"] = "pytorch";
  FakeCluster cluster(object);
  cluster.Step(T0());
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1", "mnist-worker-2"});
  cluster.Step(T0());
  // The whole gang preempted: its members come back, the job restarts.
  for (const char* name : {"mnist-worker-0", "mnist-worker-1", "mnist-worker-2"}) {
    cluster.MarkReclaimed(name);
  }
  cluster.Step(T0() + seconds(5));
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 2) << "min is 2";
}

TEST(ControllerPlannerTest, FrameworkThatReadsItsClusterSpecAtStartRestartsOnShrink) {
  FakeCluster cluster = TfJobWithThreeWorkers();
  cluster.MarkReclaimed("mnist-worker-2");
  Plan plan = cluster.Reconcile(T0() + seconds(10));
  cluster.Apply(plan);
  // TF_CONFIG is fixed when a task starts: every member restarts with the new one.
  EXPECT_THAT(DeletedPods(plan),
              UnorderedElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1"));
  for (const DeletePod& removal : ActionsOf<DeletePod>(plan)) {
    EXPECT_EQ(removal.reason, "membership");
  }
  EXPECT_LT(IndexOf<UpdateConfigMap>(plan), IndexOf<DeletePod>(plan))
      << "the new cluster spec is written before the members restart";
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.FindReplicaStatus("worker")->members, 2);
  EXPECT_EQ(status.phase, JobPhase::kRestarting);
  EXPECT_THAT(status.FindCondition("Restarting")->message,
              HasSubstr("reads its cluster spec only at start"));
  EXPECT_EQ(status.restart_count, 0) << "a membership change is not a failure";
  // The members come back, reading the new cluster spec.
  cluster.RemovePod("mnist-worker-2");
  plan = cluster.Step(T0() + seconds(11));
  EXPECT_THAT(CreatedPods(plan),
              UnorderedElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1"))
      << "worker-2 left the job; it never grows back, since that would restart it again";
  // The restarted gang is complete with these pods: its shape is the membership.
  const json group_spec = json::parse(
      cluster
          .Pod("mnist-worker-0")["metadata"]["annotations"][std::string(api::kGroupSpecAnnotation)]
          .get<std::string>());
  EXPECT_EQ(group_spec["roles"][1],
            json({{"name", "worker"}, {"min", 2}, {"max", 2}, {"priority", 0}}));
}

// One reclaim decision that takes members of two roles: the scheduler marks
// every victim before it evicts any, so the first pass that sees the marks
// restarts the job once, with both roles' new sizes.
TEST(ControllerPlannerTest, OneReclaimOfTwoRolesRestartsARigidFrameworkOnce) {
  json object = TfJob();
  object["spec"]["replicaSpecs"][0]["maxReplicas"] = 2;  // ps: 1..2
  FakeCluster cluster(std::move(object));
  cluster.Step(T0());
  Place(cluster, {"mnist-ps-0", "mnist-ps-1", "mnist-worker-0", "mnist-worker-1",
                  "mnist-worker-2"});
  cluster.Step(T0());
  RunAll(cluster);
  cluster.Step(T0() + seconds(1));

  cluster.MarkReclaimed("mnist-ps-1");
  cluster.MarkReclaimed("mnist-worker-2");
  Plan plan = cluster.Reconcile(T0() + seconds(10));
  cluster.Apply(plan);
  EXPECT_THAT(DeletedPods(plan),
              UnorderedElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1"));
  const std::vector<std::string> reasons = EventReasons(plan);
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "MembershipChanged"), 1);
  EXPECT_THAT(cluster.Status().FindCondition("Restarting")->message,
              HasSubstr("ps 2 -> 1, worker 3 -> 2"));

  // The evicted pods go, the members come back: nothing restarts again.
  cluster.RemovePod("mnist-ps-1");
  cluster.RemovePod("mnist-worker-2");
  plan = cluster.Step(T0() + seconds(11));
  EXPECT_THAT(CreatedPods(plan),
              UnorderedElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1"));
  EXPECT_THAT(DeletedPods(plan), IsEmpty());
  EXPECT_EQ(cluster.Status().restart_count, 0);
}

json GroupSpecOf(FakeCluster& cluster, const std::string& pod) {
  return json::parse(
      cluster.Pod(pod)["metadata"]["annotations"][std::string(api::kGroupSpecAnnotation)]
          .get<std::string>());
}

std::vector<std::string> PatchedPods(const Plan& plan) {
  std::vector<std::string> names;
  for (const PatchPodGroupSpec& patch : ActionsOf<PatchPodGroupSpec>(plan)) {
    names.push_back(patch.name);
  }
  return names;
}

// A member ran and succeeded before its gang was placed (a binding whose
// answer was lost, rolled back only in part): the scheduler no longer sees it,
// so the members still waiting are told it counts toward the minimum, or their
// gang would wait for it forever.
TEST(ControllerPlannerTest, WaitingMembersLearnThatAMemberSucceededBeforeTheGangWasPlaced) {
  FakeCluster cluster(TfJob());
  cluster.Step(T0());
  const json created = GroupSpecOf(cluster, "mnist-worker-0");
  EXPECT_THAT(PatchedPods(cluster.Step(T0() + seconds(1))), IsEmpty())
      << "nothing changed, nothing to tell";

  cluster.Bind("mnist-worker-1");
  cluster.Exit("mnist-worker-1", 0);
  const Plan plan = cluster.Step(T0() + seconds(5));
  EXPECT_THAT(PatchedPods(plan), UnorderedElementsAre("mnist-ps-0", "mnist-worker-0",
                                                      "mnist-worker-2", "mnist-worker-3"));
  for (const PatchPodGroupSpec& patch : ActionsOf<PatchPodGroupSpec>(plan)) {
    EXPECT_EQ(patch.uid, cluster.Pod(patch.name)["metadata"].value("uid", ""));
  }
  const json shaped = GroupSpecOf(cluster, "mnist-worker-0");
  EXPECT_EQ(shaped["roles"][0], json({{"name", "ps"}, {"min", 1}, {"max", 1}, {"priority", 0}}));
  EXPECT_EQ(shaped["roles"][1],
            json({{"name", "worker"}, {"min", 1}, {"max", 4}, {"priority", 0}, {"completed", {1}}}))
      << "was " << created["roles"][1] << "; index 1 holds its place without a pod";
  EXPECT_EQ(shaped["scheduleTimeoutSeconds"], 0) << "index 1 will never have a pod again";
  EXPECT_EQ(GroupSpecOf(cluster, "mnist-ps-0"), shaped);
}

// The same when the member that succeeded is the only one of its role, whose
// maxReplicas is unset: the maximum stays 1 while the minimum drops to 0.
TEST(ControllerPlannerTest, ARoleWithoutMaxReplicasKeepsItsMaximumWhenItsMemberSucceeded) {
  FakeCluster cluster(TfJob());
  cluster.Step(T0());
  cluster.Bind("mnist-ps-0");
  cluster.Exit("mnist-ps-0", 0);
  const Plan plan = cluster.Step(T0() + seconds(5));
  EXPECT_THAT(PatchedPods(plan), UnorderedElementsAre("mnist-worker-0", "mnist-worker-1",
                                                      "mnist-worker-2", "mnist-worker-3"));
  EXPECT_EQ(GroupSpecOf(cluster, "mnist-worker-3")["roles"][0],
            json({{"name", "ps"}, {"min", 0}, {"max", 1}, {"priority", 0}, {"completed", {0}}}));
}

TEST(ControllerPlannerTest, QueuedConditionSaysWhyTheSchedulerWaits) {
  FakeCluster cluster(TfJob());
  cluster.Step(T0());
  cluster.MarkWaiting("mnist-worker-0", "UnknownQueue",
                      "queue \"research\" is not configured; configured queues: default");
  cluster.Step(T0() + seconds(2));
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kQueued);
  ASSERT_TRUE(status.HasTrueCondition("Queued"));
  EXPECT_EQ(status.FindCondition("Queued")->reason, "UnknownQueue");
  EXPECT_THAT(status.FindCondition("Queued")->message, HasSubstr("not configured"));

  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"});
  cluster.Step(T0() + seconds(5));
  EXPECT_FALSE(cluster.Status().HasTrueCondition("Queued"));
}

TEST(ControllerPlannerTest, StatusShowsTheQueueStandingTheSchedulerWrote) {
  FakeCluster cluster(TfJob());
  cluster.Step(T0());
  const std::string numbers = "worker: 1 of min 2 placeable; 3 GPUs free, largest node has 1";
  for (const char* member : {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"}) {
    cluster.MarkWaiting(member, "Unschedulable", numbers);
  }
  // An older standing left on another member, and the one the scheduler
  // wrote last: the newest is what the job shows.
  cluster.MarkStanding("mnist-worker-1", {"research", 7, "InsufficientCapacity"},
                       "2024-05-01T12:00:01Z");
  cluster.MarkStanding("mnist-ps-0", {"research", 3, "Fragmented"}, "2024-05-01T12:00:09Z");
  cluster.Step(T0() + seconds(2));
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kQueued);
  ASSERT_TRUE(status.queue.has_value());
  EXPECT_EQ(*status.queue, (api::QueueStanding{"research", 3, "Fragmented"}));
  ASSERT_TRUE(status.HasTrueCondition("Queued"));
  EXPECT_EQ(status.FindCondition("Queued")->reason, "Fragmented");
  EXPECT_EQ(status.FindCondition("Queued")->message, numbers);

  // Placed: no longer queued, and no standing left in the status.
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"});
  cluster.Step(T0() + seconds(5));
  EXPECT_FALSE(cluster.Status().queue.has_value());
  EXPECT_FALSE(cluster.Status().HasTrueCondition("Queued"));
}

TEST(ControllerPlannerTest, AStandingTheSchedulerDidNotWriteIsIgnored) {
  FakeCluster cluster(TfJob());
  cluster.Step(T0());
  cluster.MarkWaiting("mnist-worker-0", "Unschedulable", "0/3 nodes are available");
  cluster.MarkStanding("mnist-worker-0", {"", 0, "NeverFits"}, "2024-05-01T12:00:01Z");
  cluster.Step(T0() + seconds(2));
  EXPECT_FALSE(cluster.Status().queue.has_value());
  EXPECT_EQ(cluster.Status().FindCondition("Queued")->reason, "Unschedulable");
}

TEST(ControllerPlannerTest, PodsLeftOutOfALiveFrameworkWaitToGrowIt) {
  json object = TfJob();
  object["spec"]["framework"] = "generic";
  FakeCluster cluster(object);
  cluster.Step(T0());
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"});
  Plan plan = cluster.Step(T0() + seconds(3));
  EXPECT_TRUE(DeletedPods(plan).empty()) << "worker-2 and worker-3 may still be bound";
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 2);
  EXPECT_EQ(cluster.Status().phase, JobPhase::kRunning);
  for (int minute = 1; minute <= 3; ++minute) {
    EXPECT_THAT(cluster.Reconcile(T0() + std::chrono::minutes(minute)).actions, IsEmpty());
  }
  EXPECT_EQ(cluster.PodNames().size(), 5u);
}

TEST(ControllerPlannerTest, PlacementBelowAMinimumIsNotCommitted) {
  FakeCluster cluster(TfJob());
  cluster.Step(T0());
  Place(cluster, {"mnist-ps-0", "mnist-worker-0"});  // workers need 2
  Plan plan = cluster.Step(T0());
  EXPECT_TRUE(DeletedPods(plan).empty());
  EXPECT_TRUE(ActionsOf<CreateConfigMap>(plan).empty());
  EXPECT_EQ(cluster.Status().phase, JobPhase::kQueued);
}

// A pod of the job as the scheduler will read its group-spec annotation.
api::GroupSpec GroupSpecOn(const FakeCluster& cluster, const std::string& pod) {
  Result<api::GroupSpec> spec = api::ParseGroupSpec(
      cluster.Pod(pod)["metadata"]["annotations"]["batch.hybridjob.io/group-spec"]
          .get<std::string>());
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : api::GroupSpec{};
}

// The Created Event counts the pods that exist, not the creates planned: a
// quota that refuses some leaves it saying how many of the members exist,
// beside the refusals' own FailedCreate; one that refuses every pod leaves no
// Created Event at all.
TEST(ControllerPlannerTest, TheCreatedEventCountsOnlyThePodsTheApiServerCreated) {
  FakeCluster cluster(TfJob());
  cluster.SetPodQuota(3);
  cluster.Apply(cluster.Reconcile(T0()));
  ASSERT_EQ(cluster.PodNames().size(), 3u);
  ASSERT_EQ(cluster.Events().size(), 1u);
  EXPECT_EQ(cluster.Events()[0].reason, "Created");
  EXPECT_EQ(cluster.Events()[0].type, EventType::kNormal);
  EXPECT_EQ(cluster.Events()[0].message,
            "created 3 of 5 member pods: ps 1 worker 2; the others are not created yet (see "
            "FailedCreate)");

  FakeCluster refused(TfJob());
  refused.SetPodQuota(0);
  refused.Apply(refused.Reconcile(T0()));
  EXPECT_TRUE(refused.PodNames().empty());
  EXPECT_TRUE(refused.Events().empty()) << refused.Events()[0].message;
}

TEST(CreatedEventOnceAppliedTest, AsPlannedWhenEveryCreateTookElseCountingWhatExists) {
  RecordEvent planned{
      EventType::kNormal, "Created", "created 4 member pods: ps 1 worker 3",
      CreatedMembers{
          {{"ps", 1}, {"worker", 3}}, {{"j-worker-1", "worker"}, {"j-worker-2", "worker"}}, false}};
  std::optional<RecordEvent> all = CreatedEventOnceApplied(planned, {"j-worker-1", "j-worker-2"});
  ASSERT_TRUE(all.has_value());
  EXPECT_EQ(all->message, "created 4 member pods: ps 1 worker 3");

  std::optional<RecordEvent> some = CreatedEventOnceApplied(planned, {"j-worker-1"});
  ASSERT_TRUE(some.has_value());
  EXPECT_EQ(some->reason, "Created");
  EXPECT_EQ(some->message,
            "created 3 of 4 member pods: ps 1 worker 2; the others are not created yet (see "
            "FailedCreate)");
  EXPECT_FALSE(some->created.has_value());

  EXPECT_FALSE(CreatedEventOnceApplied(planned, {}).has_value())
      << "nothing this pass created: no Created Event";

  const RecordEvent other{EventType::kWarning, "Restarting", "restarting member x", std::nullopt};
  ASSERT_TRUE(CreatedEventOnceApplied(other, {}).has_value());
  EXPECT_EQ(CreatedEventOnceApplied(other, {})->message, "restarting member x");

  EXPECT_EQ(CreatedMessage(CreatedMembers{{{"ps", 1}, {"worker", 2}}, {}, true}),
            "created 3 member pods: ps 1 worker 2 (the API server refused the others)");
}

// A quota that admits only the minimum (ps 1, workers 2 of 4): the job tells
// the scheduler it is complete with what it has, runs at its minimum, and its
// cluster spec lists exactly those members.
TEST(ControllerPlannerTest, AQuotaThatAdmitsOnlyTheMinimumRunsTheJobAtItsMinimum) {
  FakeCluster cluster(TfJob());
  cluster.SetPodQuota(3);
  cluster.Apply(cluster.Reconcile(T0()));
  EXPECT_THAT(cluster.PodNames(), ElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1"));
  EXPECT_EQ(GroupSpecOn(cluster, "mnist-worker-0").FindRole("worker")->max_replicas, 4);

  Plan capped = cluster.Reconcile(T0() + seconds(1));
  cluster.Apply(capped);
  EXPECT_THAT(CreatedPods(capped), ElementsAre("mnist-worker-2", "mnist-worker-3"))
      << "refused pods are asked for again, last";
  EXPECT_EQ(ActionsOf<PatchPodGroupSpec>(capped).size(), 3u);
  for (const std::string pod : {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"}) {
    const api::GroupSpec spec = GroupSpecOn(cluster, pod);
    EXPECT_EQ(spec.FindRole("worker")->max_replicas, 2) << pod;
    EXPECT_EQ(spec.FindRole("worker")->min_replicas, 2) << pod;
    EXPECT_EQ(spec.FindRole("ps")->max_replicas, 1) << pod;
  }
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kQueued);
  ASSERT_NE(status.FindCondition("Created"), nullptr);
  EXPECT_EQ(status.FindCondition("Created")->message,
            "created 3 member pods: ps 1 worker 2 (the API server refused the others)");
  const api::Condition* failure = status.FindCondition("ReplicaFailure");
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ(failure->status, "True");
  EXPECT_EQ(failure->reason, "FailedCreate");
  EXPECT_THAT(failure->message, HasSubstr("the API server refused member pod mnist-worker-2: pods "
                                          "\"mnist-worker-2\" is forbidden: exceeded quota: pods"));
  EXPECT_THAT(failure->message, HasSubstr("every role has its minimum, so the gang goes on with "
                                          "the members it has: ps 1 worker 2"));

  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"});
  Plan placed = cluster.Reconcile(T0() + seconds(2));
  cluster.Apply(placed);
  EXPECT_THAT(CreatedPods(placed), IsEmpty()) << "a TF job's membership is fixed once placed";
  EXPECT_THAT(DeletedPods(placed), IsEmpty());
  const json* config_map = cluster.ConfigMap("mnist-cluster");
  ASSERT_NE(config_map, nullptr);
  EXPECT_EQ((*config_map)["metadata"]["annotations"]["batch.hybridjob.io/members"],
            R"({"ps":1,"worker":2})");
  EXPECT_THAT((*config_map)["data"].dump(), HasSubstr("mnist-worker-1.mnist"));
  EXPECT_THAT((*config_map)["data"].dump(), Not(HasSubstr("mnist-worker-2")));
  status = cluster.Status();
  EXPECT_EQ(status.FindReplicaStatus("worker")->members, 2);
  EXPECT_EQ(status.FindCondition("ReplicaFailure"), nullptr)
      << "nothing the job still wants is refused";
  RunAll(cluster);
  cluster.Step(T0() + seconds(3));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kRunning);
  EXPECT_EQ(cluster.Status().ready_members, "3/3");
}

// A quota below the minimum: nothing is placed and the job says why.
TEST(ControllerPlannerTest, AQuotaBelowTheMinimumKeepsTheJobWaitingAndSaysWhy) {
  FakeCluster cluster(TfJob());
  cluster.SetPodQuota(2);
  cluster.Apply(cluster.Reconcile(T0()));
  Plan plan = cluster.Reconcile(T0() + seconds(1));
  cluster.Apply(plan);
  EXPECT_THAT(CreatedPods(plan), ElementsAre("mnist-worker-1", "mnist-worker-2", "mnist-worker-3"));
  EXPECT_THAT(ActionsOf<PatchPodGroupSpec>(plan), IsEmpty());
  EXPECT_EQ(GroupSpecOn(cluster, "mnist-worker-0").FindRole("worker")->max_replicas, 4);
  const api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kPending);
  ASSERT_NE(status.FindCondition("ReplicaFailure"), nullptr);
  EXPECT_THAT(status.FindCondition("ReplicaFailure")->message,
              HasSubstr("the API server refused member pod mnist-worker-1: pods \"mnist-worker-1\" "
                        "is forbidden: exceeded quota: pods, requested: pods=1, used: pods=2, "
                        "limited: pods=2; the job waits until it admits every role's minimum: ps "
                        "1 of 1 worker 1 of 2"));

  // The quota is raised: the job is created whole and the condition goes.
  cluster.SetPodQuota(10);
  cluster.Apply(cluster.Reconcile(T0() + seconds(2)));
  EXPECT_EQ(cluster.PodNames().size(), 5u);
  cluster.Step(T0() + seconds(3));
  EXPECT_EQ(cluster.Status().FindCondition("ReplicaFailure"), nullptr);
  EXPECT_EQ(cluster.Status().phase, JobPhase::kQueued);
}

// Members a minimum needs are created before the others, across roles: a
// quota admits the minimum before it admits growth.
TEST(ControllerPlannerTest, MinimumMembersOfEveryRoleAreCreatedFirst) {
  json object = TfJob();
  object["spec"]["replicaSpecs"].push_back({{"name", "evaluator"},
                                            {"minReplicas", 1},
                                            {"maxReplicas", 2},
                                            {"template", hybridjob::testing::PodTemplate()}});
  FakeCluster cluster(object);
  EXPECT_THAT(CreatedPods(cluster.Reconcile(T0())),
              ElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1", "mnist-evaluator-0",
                          "mnist-worker-2", "mnist-worker-3", "mnist-evaluator-1"));
}

// Pods above a minimum that took the quota a minimum member needs (writes
// that went out together) give it up, and the minimum gets it.
TEST(ControllerPlannerTest, PodsAboveTheMinimumYieldTheQuotaToAMinimumMember) {
  FakeCluster cluster(TfJob());
  cluster.SetPodQuota(3);
  Plan first = cluster.Reconcile(T0());
  // worker-2's create won the race for the last pod of the quota.
  for (const CreatePod& create : ActionsOf<CreatePod>(first)) {
    const std::string name = create.pod["metadata"]["name"];
    if (name != "mnist-worker-1" && name != "mnist-worker-3") {
      cluster.Apply(Plan{{create}, std::nullopt});
    }
  }
  cluster.Apply(Plan{{ActionsOf<CreatePod>(first)[2]}, std::nullopt});  // worker-1: refused
  ASSERT_THAT(cluster.PodNames(), ElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-2"));

  Plan yield = cluster.Reconcile(T0() + seconds(1));
  EXPECT_THAT(DeletedPods(yield), ElementsAre("mnist-worker-2"));
  cluster.Apply(yield);
  cluster.Apply(cluster.Reconcile(T0() + seconds(2)));
  EXPECT_THAT(cluster.PodNames(), ElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1"));
  cluster.Apply(cluster.Reconcile(T0() + seconds(3)));
  EXPECT_EQ(GroupSpecOn(cluster, "mnist-worker-1").FindRole("worker")->max_replicas, 2);
}

// A framework that learns its membership live keeps asking for the refused
// pods after it is placed, and grows into them once the quota admits them.
TEST(ControllerPlannerTest, AnElasticJobGrowsIntoPodsTheQuotaAdmitsLater) {
  json object = TfJob();
  object["spec"]["framework"] = "pytorch";
  object["spec"]["replicaSpecs"][0]["name"] = "master";
  FakeCluster cluster(object);
  cluster.SetPodQuota(3);
  cluster.Apply(cluster.Reconcile(T0()));
  cluster.Apply(cluster.Reconcile(T0() + seconds(1)));
  Place(cluster, {"mnist-master-0", "mnist-worker-0", "mnist-worker-1"});
  cluster.Apply(cluster.Reconcile(T0() + seconds(2)));
  ASSERT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 2);
  EXPECT_EQ(cluster.Status().phase, JobPhase::kRunning);

  Plan retry = cluster.Reconcile(T0() + seconds(3));
  EXPECT_THAT(CreatedPods(retry), ElementsAre("mnist-worker-2", "mnist-worker-3"));
  cluster.Apply(retry);
  ASSERT_NE(cluster.Status().FindCondition("ReplicaFailure"), nullptr);
  EXPECT_THAT(cluster.Status().FindCondition("ReplicaFailure")->message,
              HasSubstr("they are created once it admits them"));

  cluster.SetPodQuota(5);
  cluster.Apply(cluster.Reconcile(T0() + seconds(4)));
  ASSERT_TRUE(cluster.HasPod("mnist-worker-3"));
  EXPECT_EQ(GroupSpecOn(cluster, "mnist-worker-3").FindRole("worker")->max_replicas, 4);
  cluster.Bind("mnist-worker-2");
  cluster.Apply(cluster.Reconcile(T0() + seconds(5)));
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 3);
  EXPECT_EQ(cluster.Status().FindCondition("ReplicaFailure"), nullptr);
}

// A member would wait in ContainerCreating on its node for a ConfigMap that
// does not exist: none is created until it does.
TEST(ControllerPlannerTest, NoMemberIsCreatedWhileAConfigMapItNeedsIsMissing) {
  FakeCluster cluster(TfJob());
  Observed observed = cluster.Observe();
  observed.missing = {{"train-config", "volume \"config\" of role worker"}};
  Plan plan = PlanJob(cluster.Job(), observed, T0(), {});
  EXPECT_THAT(CreatedPods(plan), IsEmpty());
  EXPECT_EQ(ActionsOf<CreateService>(plan).size(), 1u);
  ASSERT_TRUE(plan.requeue_after.has_value());
  EXPECT_LE(*plan.requeue_after, seconds(5));
  const api::HybridJobStatus status = ActionsOf<UpdateStatus>(plan)[0].status;
  EXPECT_EQ(status.phase, JobPhase::kPending);
  const api::Condition* failure = status.FindCondition("ReplicaFailure");
  ASSERT_NE(failure, nullptr);
  EXPECT_EQ(failure->reason, "MissingConfigMap");
  EXPECT_EQ(failure->message,
            "the members need ConfigMap \"train-config\" (volume \"config\" of role worker), "
            "which does not exist; no member is created until it exists (or the reference is "
            "marked optional)");
  ASSERT_EQ(ActionsOf<RecordEvent>(plan).size(), 1u);
  EXPECT_EQ(ActionsOf<RecordEvent>(plan)[0].type, EventType::kWarning);
  EXPECT_EQ(ActionsOf<RecordEvent>(plan)[0].reason, "MissingConfigMap");
  cluster.Apply(plan);
  Observed again = cluster.Observe();
  again.missing = observed.missing;
  EXPECT_THAT(PlanJob(cluster.Job(), again, T0() + seconds(5), {}).actions, IsEmpty())
      << "said once";

  Plan created = cluster.Step(T0() + seconds(10));  // it exists now
  EXPECT_EQ(CreatedPods(created).size(), 5u);
  EXPECT_EQ(cluster.Status().FindCondition("ReplicaFailure"), nullptr);
}

TEST(ControllerPlannerTest, ReplacementLeftOutByTheSchedulerIsKept) {
  FakeCluster cluster = PlacedTfJob();
  cluster.Exit("mnist-worker-1", 1);
  cluster.Step(T0() + seconds(10));
  cluster.Step(T0() + seconds(20));
  ASSERT_TRUE(cluster.HasPod("mnist-worker-1"));
  cluster.MarkSurplus("mnist-worker-1");
  Plan plan = cluster.Step(T0() + seconds(30));
  EXPECT_TRUE(DeletedPods(plan).empty()) << "a member is never surplus";
  EXPECT_EQ(cluster.Status().phase, JobPhase::kRestarting);
}

TEST(ControllerPlannerTest, PytorchElasticWorldSize) {
  json object = TfJob();
  object["metadata"]["name"] = "ddp";
  object["spec"]["framework"] = "pytorch";
  object["spec"]["replicaSpecs"][0]["name"] = "master";
  FakeCluster cluster(object);
  cluster.Step(T0());
  Place(cluster, {"ddp-master-0", "ddp-worker-0", "ddp-worker-1"});
  Plan plan = cluster.Step(T0());
  EXPECT_TRUE(DeletedPods(plan).empty());
  const json config_map = *cluster.ConfigMap("ddp-cluster");
  EXPECT_EQ(WorkerEnvValue(config_map, 1, "WORLD_SIZE"), "3");
  EXPECT_EQ(WorkerEnvValue(config_map, 0, "RANK"), "1");
  EXPECT_EQ(WorkerEnvValue(config_map, 1, "RANK"), "2");
  EXPECT_EQ(WorkerEnvValue(config_map, 1, "MASTER_ADDR"), "ddp-master-0.ddp.team-a.svc");
  EXPECT_EQ(WorkerEnvValue(config_map, 1, "MASTER_PORT"), "23456");
}

TEST(ControllerPlannerTest, StaticJobKnowsItsMembershipUpfront) {
  json object = TfJob();
  object["spec"]["replicaSpecs"][1]["maxReplicas"] = 2;
  FakeCluster cluster(object);
  Plan plan = cluster.Step(T0());
  ASSERT_EQ(CreatedPods(plan).size(), 3u);
  const json worker = ActionsOf<CreatePod>(plan)[2].pod;
  json tf_config;
  for (const json& entry : worker["spec"]["containers"][0]["env"]) {
    if (entry["name"] == "TF_CONFIG") {
      tf_config = json::parse(entry["value"].get<std::string>());
    }
  }
  EXPECT_EQ(tf_config["task"], json({{"type", "worker"}, {"index", 1}}));
  EXPECT_EQ(tf_config["cluster"]["worker"].size(), 2u);
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"});
  plan = cluster.Step(T0());
  EXPECT_TRUE(DeletedPods(plan).empty());
  EXPECT_EQ(ActionsOf<CreateConfigMap>(plan).size(), 1u);
}

TEST(ControllerPlannerTest, SuccessDeletesTheParameterServers) {
  FakeCluster cluster = PlacedTfJob();
  cluster.Exit("mnist-worker-0", 0);
  Plan partial = cluster.Step(T0() + seconds(50));  // one worker is not enough
  EXPECT_TRUE(DeletedPods(partial).empty());
  EXPECT_EQ(cluster.Status().phase, JobPhase::kRunning);
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->succeeded, 1);
  EXPECT_EQ(cluster.Status().ready_members, "2/3");
  cluster.Exit("mnist-worker-1", 0);
  Plan plan = cluster.Step(T0() + seconds(60));

  EXPECT_THAT(DeletedPods(plan), ElementsAre("mnist-ps-0"));
  EXPECT_EQ(ActionsOf<DeletePod>(plan)[0].reason, "cleanup");
  EXPECT_THAT(cluster.PodNames(), ElementsAre("mnist-worker-0", "mnist-worker-1"));
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kSucceeded);
  EXPECT_EQ(status.completion_time, "2024-05-01T12:01:00Z");
  EXPECT_TRUE(status.HasTrueCondition("Succeeded"));
  EXPECT_FALSE(status.HasTrueCondition("Running"));
  EXPECT_THAT(status.FindCondition("Succeeded")->message,
              HasSubstr("all 2 members of worker succeeded"));
  EXPECT_EQ(status.FindReplicaStatus("worker")->succeeded, 2);
  EXPECT_EQ(status.FindReplicaStatus("ps")->active, 0);
  EXPECT_THAT(EventReasons(plan), ElementsAre("Succeeded"));
  // Finished: nothing more, ever.
  EXPECT_THAT(cluster.Reconcile(T0() + std::chrono::hours(5)).actions, IsEmpty());
}

TEST(ControllerPlannerTest, CleanPodPolicyAllAndNone) {
  json all = TfJob();
  all["spec"]["runPolicy"] = {{"cleanPodPolicy", "All"}};
  FakeCluster cluster = PlacedTfJob(all);
  cluster.Exit("mnist-worker-0", 0);
  cluster.Exit("mnist-worker-1", 0);
  Plan plan = cluster.Step(T0() + seconds(60));
  EXPECT_THAT(DeletedPods(plan),
              UnorderedElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1"));
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->succeeded, 2) << "counted before cleanup";

  json none = TfJob();
  none["spec"]["runPolicy"] = {{"cleanPodPolicy", "None"}};
  FakeCluster kept = PlacedTfJob(none);
  kept.Exit("mnist-worker-0", 0);
  kept.Exit("mnist-worker-1", 0);
  plan = kept.Step(T0() + seconds(60));
  EXPECT_TRUE(DeletedPods(plan).empty());
  EXPECT_EQ(kept.Status().phase, JobPhase::kSucceeded);
}

TEST(ControllerPlannerTest, PlacementAndSuccessSeenInOnePass) {
  json object = TfJob();
  object["spec"]["runPolicy"] = {{"cleanPodPolicy", "None"}};
  FakeCluster cluster(object);
  cluster.Step(T0());
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"});
  cluster.Run("mnist-ps-0");
  cluster.Exit("mnist-worker-0", 0);
  cluster.Exit("mnist-worker-1", 0);
  Plan plan = cluster.Step(T0() + seconds(5));
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kSucceeded);
  EXPECT_TRUE(status.HasTrueCondition("Scheduled"));
  EXPECT_EQ(status.FindReplicaStatus("worker")->members, 2);
  // Surplus pods go; members stay (cleanPodPolicy None), now and later.
  EXPECT_THAT(DeletedPods(plan), UnorderedElementsAre("mnist-worker-2", "mnist-worker-3"));
  EXPECT_THAT(cluster.Reconcile(T0() + seconds(60)).actions, IsEmpty());
  EXPECT_THAT(cluster.PodNames(), ElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1"));
}

TEST(ControllerPlannerTest, ChiefDecidesSuccess) {
  json object = TfJob();
  object["spec"]["replicaSpecs"].push_back(
      {{"name", "chief"}, {"minReplicas", 1}, {"template", hybridjob::testing::PodTemplate()}});
  FakeCluster cluster(object);
  cluster.Step(T0());
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1", "mnist-chief-0"});
  cluster.Step(T0());
  RunAll(cluster);
  cluster.Step(T0());
  cluster.Exit("mnist-chief-0", 0);
  Plan plan = cluster.Step(T0() + seconds(10));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kSucceeded);
  EXPECT_THAT(DeletedPods(plan),
              UnorderedElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1"));
}

TEST(ControllerPlannerTest, FailedWorkerIsRecreatedWithTheSameIndex) {
  FakeCluster cluster = PlacedTfJob();
  cluster.Exit("mnist-worker-1", 1);  // OnFailure
  const std::string old_uid = cluster.Pod("mnist-worker-1")["metadata"]["uid"];

  Plan plan = cluster.Step(T0() + seconds(100));
  EXPECT_EQ(IndexOf<UpdateStatus>(plan), 0);
  EXPECT_LT(IndexOf<UpdateStatus>(plan), IndexOf<DeletePod>(plan))
      << "the restart is counted before the pod goes";
  ASSERT_THAT(DeletedPods(plan), ElementsAre("mnist-worker-1"));
  EXPECT_EQ(ActionsOf<DeletePod>(plan)[0].uid, old_uid);
  EXPECT_EQ(ActionsOf<DeletePod>(plan)[0].reason, "restart");
  EXPECT_TRUE(CreatedPods(plan).empty()) << "never two pods for one member";
  EXPECT_EQ(plan.requeue_after, seconds(10));
  EXPECT_THAT(EventReasons(plan), ElementsAre("Restarting"));
  EXPECT_THAT(ActionsOf<RecordEvent>(plan)[0].message, HasSubstr("mnist-worker-1"));
  EXPECT_THAT(ActionsOf<RecordEvent>(plan)[0].message, HasSubstr("exit code 1"));
  EXPECT_EQ(ActionsOf<RecordEvent>(plan)[0].type, EventType::kWarning);

  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kRestarting);
  EXPECT_EQ(status.restart_count, 1);
  EXPECT_EQ(status.last_restart_time, "2024-05-01T12:01:40Z");
  EXPECT_EQ(status.FindReplicaStatus("worker")->restarts, 1);
  EXPECT_TRUE(status.HasTrueCondition("Restarting"));
  EXPECT_FALSE(status.HasTrueCondition("Running"));

  // Within the backoff: wait.
  plan = cluster.Step(T0() + seconds(105));
  EXPECT_THAT(plan.actions, IsEmpty());
  EXPECT_EQ(plan.requeue_after, seconds(5));

  // After it: the same member comes back, same name and index, same cluster spec.
  plan = cluster.Step(T0() + seconds(110));
  ASSERT_THAT(CreatedPods(plan), ElementsAre("mnist-worker-1"));
  const json pod = ActionsOf<CreatePod>(plan)[0].pod;
  EXPECT_EQ(pod["metadata"]["labels"]["batch.hybridjob.io/index"], "1");
  EXPECT_EQ(pod["spec"]["hostname"], "mnist-worker-1");
  EXPECT_NE(cluster.Pod("mnist-worker-1")["metadata"]["uid"], old_uid);
  EXPECT_TRUE(ActionsOf<CreateConfigMap>(plan).empty());
  EXPECT_EQ(cluster.Status().phase, JobPhase::kRestarting);

  cluster.Bind("mnist-worker-1");
  cluster.Run("mnist-worker-1");
  plan = cluster.Step(T0() + seconds(120));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kRunning);
  EXPECT_FALSE(cluster.Status().HasTrueCondition("Restarting"));
  EXPECT_THAT(EventReasons(plan), ElementsAre("Running"));
  EXPECT_EQ(cluster.CreateCount("mnist-worker-1"), 2);
}

TEST(ControllerPlannerTest, AFetcherThatFailedSaysWhatTheStoreAnswered) {
  FakeCluster cluster = PlacedTfJob();
  json& pod = cluster.PodRef("mnist-ps-0");  // ps: Never
  pod["status"]["phase"] = "Failed";
  pod["status"]["containerStatuses"] = {
      {{"name", "main"}, {"state", {{"waiting", {{"reason", "PodInitializing"}}}}}}};
  pod["status"]["initContainerStatuses"] = {
      {{"name", "hybridjob-code"},
       {"state",
        {{"terminated",
          {{"exitCode", 1},
           {"message",
            "curl: (22) The requested URL returned error: 404\n"
            "hybridjob-code: could not fetch s3://code/x.tgz: the server answered NoSuchKey: "
            "The specified key does not exist.\n"}}}}}}};
  cluster.Step(T0() + seconds(30));
  const api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kFailed);
  EXPECT_THAT(status.FindCondition("Failed")->message,
              HasSubstr("mnist-ps-0 failed in init container hybridjob-code with exit code 1: "
                        "hybridjob-code: could not fetch s3://code/x.tgz: the server answered "
                        "NoSuchKey: The specified key does not exist."));

  // A role that retries: the member is created again, and the restart says why.
  json object = TfJob();
  object["spec"]["replicaSpecs"][1]["restartPolicy"] = "OnFailure";
  FakeCluster retrying = PlacedTfJob(object);
  json& worker = retrying.PodRef("mnist-worker-0");
  worker["status"] = pod["status"];
  retrying.Step(T0() + seconds(30));
  const api::HybridJobStatus retrying_status = retrying.Status();
  const api::Condition* restarting = retrying_status.FindCondition("Restarting");
  ASSERT_NE(restarting, nullptr);
  EXPECT_THAT(restarting->message,
              HasSubstr("mnist-worker-0 failed in init container hybridjob-code with exit code 1: "
                        "hybridjob-code: could not fetch s3://code/x.tgz: the server answered "
                        "NoSuchKey"));
}

TEST(ControllerPlannerTest, RestartPolicyNeverFailsTheJob) {
  FakeCluster cluster = PlacedTfJob();
  cluster.Exit("mnist-ps-0", 2);  // ps: Never
  Plan plan = cluster.Step(T0() + seconds(30));
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kFailed);
  EXPECT_EQ(status.FindCondition("Failed")->reason, "MemberFailed");
  EXPECT_THAT(status.FindCondition("Failed")->message,
              HasSubstr("mnist-ps-0 failed with exit code 2; role ps has restartPolicy Never"));
  EXPECT_EQ(status.FindReplicaStatus("ps")->failed, 1);
  // cleanPodPolicy Running: the running workers stop, the failed pod stays for its logs.
  EXPECT_THAT(DeletedPods(plan), UnorderedElementsAre("mnist-worker-0", "mnist-worker-1"));
  EXPECT_THAT(EventReasons(plan), ElementsAre("MemberFailed"));
  EXPECT_EQ(ActionsOf<RecordEvent>(plan)[0].type, EventType::kWarning);
}

TEST(ControllerPlannerTest, ExitCodePolicyRetriesOnlySignals) {
  json object = TfJob();
  object["spec"]["replicaSpecs"][1]["restartPolicy"] = "ExitCode";
  FakeCluster cluster = PlacedTfJob(object);
  cluster.Exit("mnist-worker-0", 137);
  Plan plan = cluster.Step(T0() + seconds(30));
  EXPECT_THAT(DeletedPods(plan), ElementsAre("mnist-worker-0"));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kRestarting);

  cluster.Exit("mnist-worker-1", 127);
  plan = cluster.Step(T0() + seconds(31));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kFailed);
  EXPECT_EQ(cluster.Status().FindCondition("Failed")->reason, "MemberFailed");
  EXPECT_THAT(cluster.Status().FindCondition("Failed")->message, HasSubstr("exit code 127"));
}

TEST(ControllerPlannerTest, FailureWithoutExitCodeIsRetriedUnderExitCode) {
  json object = TfJob();
  object["spec"]["replicaSpecs"][1]["restartPolicy"] = "ExitCode";
  FakeCluster cluster = PlacedTfJob(object);
  // The pod's activeDeadlineSeconds ran out: Failed with no exit code.
  cluster.PodRef("mnist-worker-0")["status"] = {{"phase", "Failed"},
                                                {"reason", "DeadlineExceeded"}};
  Plan plan = cluster.Step(T0() + seconds(30));
  EXPECT_THAT(DeletedPods(plan), ElementsAre("mnist-worker-0"));
  EXPECT_THAT(ActionsOf<RecordEvent>(plan)[0].message, HasSubstr("(DeadlineExceeded)"));
  EXPECT_EQ(cluster.Status().restart_count, 1);
}

TEST(ControllerPlannerTest, AlwaysRestartsSucceededMembersToo) {
  json object = TfJob();
  object["spec"]["replicaSpecs"][0]["restartPolicy"] = "Always";
  FakeCluster cluster = PlacedTfJob(object);
  cluster.Exit("mnist-ps-0", 0);
  Plan plan = cluster.Step(T0() + seconds(30));
  EXPECT_THAT(DeletedPods(plan), ElementsAre("mnist-ps-0"));
  EXPECT_EQ(cluster.Status().restart_count, 1);
  EXPECT_EQ(cluster.Status().FindReplicaStatus("ps")->restarts, 1);
}

TEST(ControllerPlannerTest, BackoffDoublesAndIsCapped) {
  PlannerOptions options;
  EXPECT_EQ(RestartBackoff(0, options), seconds(0));
  EXPECT_EQ(RestartBackoff(1, options), seconds(10));
  EXPECT_EQ(RestartBackoff(2, options), seconds(20));
  EXPECT_EQ(RestartBackoff(3, options), seconds(40));
  EXPECT_EQ(RestartBackoff(6, options), seconds(320));
  EXPECT_EQ(RestartBackoff(7, options), seconds(360));
  EXPECT_EQ(RestartBackoff(1000, options), seconds(360));
  options.restart_backoff_base = seconds(1);
  options.restart_backoff_cap = seconds(5);
  EXPECT_EQ(RestartBackoff(3, options), seconds(4));
  EXPECT_EQ(RestartBackoff(4, options), seconds(5));
}

TEST(ControllerPlannerTest, CrashLoopEndsAtTheBackoffLimit) {
  json object = TfJob();
  object["spec"]["runPolicy"] = {{"backoffLimit", 3}};
  FakeCluster cluster = PlacedTfJob(object);
  api::TimePoint now = T0() + seconds(60);
  std::vector<seconds> waits;
  for (int failure = 1; failure <= 4; ++failure) {
    cluster.Exit("mnist-worker-0", 1);
    Plan plan = cluster.Step(now);
    if (failure == 4) {
      EXPECT_EQ(cluster.Status().phase, JobPhase::kFailed);
      EXPECT_EQ(cluster.Status().FindCondition("Failed")->reason, "BackoffLimitExceeded");
      EXPECT_THAT(EventReasons(plan), ElementsAre("BackoffLimitExceeded"));
      EXPECT_THAT(cluster.Status().FindCondition("Failed")->message,
                  HasSubstr("after 3 restarts; backoffLimit is 3"));
      break;
    }
    ASSERT_TRUE(plan.requeue_after.has_value());
    waits.push_back(*plan.requeue_after);
    EXPECT_FALSE(cluster.HasPod("mnist-worker-0"));
    now += *plan.requeue_after;
    plan = cluster.Step(now);
    ASSERT_THAT(CreatedPods(plan), ElementsAre("mnist-worker-0"));
    cluster.Bind("mnist-worker-0");
    cluster.Run("mnist-worker-0");
    cluster.Step(now);
    EXPECT_LE(cluster.PodNames().size(), 3u) << "dead pods never pile up";
  }
  EXPECT_THAT(waits, ElementsAre(seconds(10), seconds(20), seconds(40)));
  EXPECT_EQ(cluster.Status().restart_count, 3);
  EXPECT_EQ(cluster.CreateCount("mnist-worker-0"), 4);
}

TEST(ControllerPlannerTest, SimultaneousFailuresCountSeparately) {
  json object = TfJob();
  object["spec"]["runPolicy"] = {{"backoffLimit", 1}};
  FakeCluster cluster = PlacedTfJob(object);
  cluster.Exit("mnist-worker-0", 1);
  cluster.Exit("mnist-worker-1", 1);
  cluster.Step(T0() + seconds(30));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kFailed);
  EXPECT_EQ(cluster.Status().FindCondition("Failed")->reason, "BackoffLimitExceeded");
}

TEST(ControllerPlannerTest, DeadlineStopsEverything) {
  json object = TfJob();
  object["spec"]["runPolicy"] = {{"activeDeadlineSeconds", 600}, {"cleanPodPolicy", "None"}};
  FakeCluster cluster = PlacedTfJob(object);
  Plan plan = cluster.Reconcile(T0() + seconds(599));
  EXPECT_THAT(plan.actions, IsEmpty());
  EXPECT_EQ(plan.requeue_after, seconds(1));

  plan = cluster.Step(T0() + seconds(600));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kFailed);
  EXPECT_EQ(cluster.Status().FindCondition("Failed")->reason, "DeadlineExceeded");
  EXPECT_THAT(DeletedPods(plan),
              UnorderedElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1"));
  EXPECT_EQ(ActionsOf<DeletePod>(plan)[0].reason, "deadline");
  EXPECT_THAT(EventReasons(plan), ElementsAre("DeadlineExceeded"));
  EXPECT_THAT(cluster.PodNames(), IsEmpty());
}

TEST(ControllerPlannerTest, DeadlineAlsoEndsAJobThatNeverGotPlaced) {
  json object = TfJob();
  object["spec"]["runPolicy"] = {{"activeDeadlineSeconds", 60}};
  FakeCluster cluster(object);
  cluster.Step(T0());
  cluster.Bind("mnist-ps-0");  // partly bound, never completed
  Plan plan = cluster.Step(T0() + seconds(60));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kFailed);
  EXPECT_THAT(cluster.PodNames(), IsEmpty()) << testing::Describe(plan);
}

TEST(ControllerPlannerTest, SuspendDeletesEveryMemberAndTheRunsClusterSpecAndKeepsTheRest) {
  FakeCluster cluster = RunningDdpJob();
  ASSERT_NE(cluster.ConfigMap("ddp-cluster"), nullptr);
  const size_t services = cluster.Services().size();
  cluster.Job()["spec"]["suspend"] = true;
  Plan plan = cluster.Step(T0() + seconds(10));
  EXPECT_THAT(DeletedPods(plan),
              UnorderedElementsAre("ddp-master-0", "ddp-worker-0", "ddp-worker-1", "ddp-worker-2",
                                   "ddp-worker-3"));
  for (const DeletePod& removal : ActionsOf<DeletePod>(plan)) {
    EXPECT_EQ(removal.reason, "suspend");
  }
  EXPECT_EQ(cluster.ConfigMap("ddp-cluster"), nullptr) << testing::Describe(plan);
  EXPECT_EQ(cluster.Services().size(), services);
  EXPECT_THAT(CreatedPods(plan), IsEmpty());
  const api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kSuspended);
  EXPECT_FALSE(status.start_time.has_value());
  EXPECT_TRUE(status.HasTrueCondition(api::kConditionSuspended));
  EXPECT_EQ(status.FindCondition(api::kConditionSuspended)->reason, "JobSuspended");
  EXPECT_FALSE(status.HasTrueCondition(api::kConditionScheduled));
  EXPECT_FALSE(status.HasTrueCondition(api::kConditionRunning));
  EXPECT_EQ(status.restart_count, 0) << "a suspension is not a restart";
  EXPECT_THAT(EventReasons(plan), Contains("JobSuspended"));
  // Suspended, it stays so: nothing is created, however long it waits.
  EXPECT_THAT(cluster.Step(T0() + seconds(3600)).actions, IsEmpty());
}

TEST(ControllerPlannerTest, AResumedJobIsPlacedAfreshAtAnotherSize) {
  FakeCluster cluster = RunningDdpJob();  // master and 4 workers
  cluster.Job()["spec"]["suspend"] = true;
  cluster.Step(T0() + seconds(10));
  cluster.Job()["spec"]["suspend"] = false;
  Plan plan = cluster.Step(T0() + seconds(100));
  EXPECT_THAT(CreatedPods(plan),
              UnorderedElementsAre("ddp-master-0", "ddp-worker-0", "ddp-worker-1", "ddp-worker-2",
                                   "ddp-worker-3"));
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kQueued);
  EXPECT_EQ(status.FindCondition(api::kConditionSuspended)->status, "False");
  EXPECT_EQ(status.FindCondition(api::kConditionSuspended)->reason, "JobResumed");
  EXPECT_EQ(status.start_time, api::FormatTime(T0() + seconds(100)));
  EXPECT_THAT(EventReasons(plan), Contains("JobResumed"));
  EXPECT_EQ(cluster.ConfigMap("ddp-cluster"), nullptr) << "members wait for their own spec";

  // Less is free now: the scheduler places the master and two workers.
  Place(cluster, {"ddp-master-0", "ddp-worker-0", "ddp-worker-1"});
  plan = cluster.Step(T0() + seconds(110));
  status = cluster.Status();
  EXPECT_TRUE(status.HasTrueCondition(api::kConditionScheduled));
  EXPECT_EQ(status.FindReplicaStatus("worker")->members, 2);
  const json* config_map = cluster.ConfigMap("ddp-cluster");
  ASSERT_NE(config_map, nullptr);
  EXPECT_EQ(WorkerEnvValue(*config_map, 0, "WORLD_SIZE"), "3");
  EXPECT_EQ(status.restart_count, 0);
}

TEST(ControllerPlannerTest, TheDeadlineDoesNotRunWhileSuspendedAndRestartsOnResume) {
  json object = TfJob();
  object["spec"]["runPolicy"] = {{"activeDeadlineSeconds", 60}};
  FakeCluster cluster = PlacedTfJob(object);
  cluster.Job()["spec"]["suspend"] = true;
  EXPECT_FALSE(cluster.Step(T0() + seconds(30)).requeue_after.has_value());
  cluster.Step(T0() + seconds(500));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kSuspended);

  cluster.Job()["spec"]["suspend"] = false;
  Plan plan = cluster.Step(T0() + seconds(500));
  EXPECT_EQ(plan.requeue_after, seconds(60));
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"});
  cluster.Step(T0() + seconds(559));
  EXPECT_NE(cluster.Status().phase, JobPhase::kFailed);
  cluster.Step(T0() + seconds(560));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kFailed);
  EXPECT_EQ(cluster.Status().FindCondition(api::kConditionFailed)->reason, "DeadlineExceeded");
}

TEST(ControllerPlannerTest, AJobCreatedSuspendedCreatesNothingUntilResumed) {
  json object = TfJob();
  object["spec"]["suspend"] = true;
  FakeCluster cluster(object);
  Plan plan = cluster.Step(T0());
  EXPECT_THAT(cluster.PodNames(), IsEmpty());
  EXPECT_TRUE(cluster.Services().empty()) << testing::Describe(plan);
  EXPECT_EQ(cluster.Status().phase, JobPhase::kSuspended);
  EXPECT_THAT(EventReasons(plan), ElementsAre("JobSuspended"));

  cluster.Job()["spec"].erase("suspend");
  plan = cluster.Step(T0() + seconds(5));
  EXPECT_THAT(CreatedPods(plan),
              UnorderedElementsAre("mnist-ps-0", "mnist-worker-0", "mnist-worker-1",
                                   "mnist-worker-2", "mnist-worker-3"));
  EXPECT_FALSE(cluster.Services().empty());
  EXPECT_THAT(EventReasons(plan), Contains("JobResumed"));
}

json& WorkerTemplate(FakeCluster& cluster) {
  return cluster.Job()["spec"]["replicaSpecs"][1]["template"];
}

TEST(ControllerPlannerTest, AnEditTheRunDoesNotTakeIsReportedAndChangesNothing) {
  FakeCluster cluster = PlacedTfJob();
  ASSERT_TRUE(cluster.Status().run_spec.has_value()) << "the run records the spec it started with";
  ASSERT_EQ(cluster.Revisions().size(), 1u) << "whole, in a ControllerRevision";
  EXPECT_EQ(cluster.Revisions().begin()->first, cluster.Status().run_spec->revision);
  const json started_template = WorkerTemplate(cluster);
  WorkerTemplate(cluster)["spec"]["containers"][0]["args"] = {"--lr=0.1"};
  cluster.Job()["spec"]["queue"] = "elsewhere";
  Plan plan = cluster.Step(T0() + seconds(10));
  EXPECT_THAT(CreatedPods(plan), IsEmpty());
  EXPECT_THAT(DeletedPods(plan), IsEmpty());
  EXPECT_TRUE(ActionsOf<PatchPodGroupSpec>(plan).empty());
  api::HybridJobStatus status = cluster.Status();
  ASSERT_TRUE(status.HasTrueCondition(api::kConditionSpecChangeIgnored));
  const std::string message = status.FindCondition(api::kConditionSpecChangeIgnored)->message;
  EXPECT_THAT(message, HasSubstr("spec.replicaSpecs[worker].template"));
  EXPECT_THAT(message, HasSubstr("spec.queue"));
  EXPECT_THAT(EventReasons(plan), ElementsAre("SpecChangeIgnored"));
  EXPECT_EQ(status.phase, JobPhase::kRunning);

  // A restarted member comes back as the run started, not half-edited.
  cluster.Exit("mnist-worker-1", 1);
  cluster.Step(T0() + seconds(20));
  cluster.Step(T0() + seconds(40));
  ASSERT_TRUE(cluster.HasPod("mnist-worker-1"));
  const json worker = cluster.Pod("mnist-worker-1");
  EXPECT_EQ(worker["spec"].dump().find("--lr=0.1"), std::string::npos) << worker["spec"].dump();
  const auto group = api::ParseGroupSpec(
      worker["metadata"]["annotations"][std::string(api::kGroupSpecAnnotation)].get<std::string>());
  ASSERT_TRUE(group.ok());
  EXPECT_EQ(group->queue, "") << "the queue the run started with";
  EXPECT_EQ(cluster.Status().FindCondition(api::kConditionSpecChangeIgnored)->message, message);

  // Taken back, the condition goes.
  WorkerTemplate(cluster) = started_template;
  cluster.Job()["spec"].erase("queue");
  cluster.Step(T0() + seconds(50));
  EXPECT_EQ(cluster.Status().FindCondition(api::kConditionSpecChangeIgnored), nullptr);
}

TEST(ControllerPlannerTest, ARunWhoseRevisionIsLostGoesOnWithTheSpecAsItIsAndSaysSo) {
  FakeCluster cluster = PlacedTfJob();
  const std::string lost = cluster.Status().run_spec->revision;
  cluster.Revisions().clear();
  Plan plan = cluster.Step(T0() + seconds(5));
  EXPECT_THAT(EventReasons(plan), IsEmpty()) << "unedited, the revision is not needed";

  WorkerTemplate(cluster)["spec"]["containers"][0]["args"] = {"--lr=0.1"};
  plan = cluster.Step(T0() + seconds(10));
  EXPECT_THAT(EventReasons(plan), Contains("RunSpecLost"));
  const api::HybridJobStatus status = cluster.Status();
  ASSERT_TRUE(status.run_spec.has_value());
  EXPECT_NE(status.run_spec->revision, lost);
  EXPECT_EQ(cluster.Revisions().count(status.run_spec->revision), 1u) << "recorded anew";
  EXPECT_EQ(status.FindCondition(api::kConditionSpecChangeIgnored), nullptr);
  EXPECT_EQ(status.phase, JobPhase::kRunning);
}

TEST(ControllerPlannerTest, TheRecordedGangFollowsTheEditsTheRunTakes) {
  FakeCluster cluster = RunningDdpJob();
  ASSERT_EQ(cluster.Status().run_spec->group.FindRole("worker")->max_replicas, 4);
  Result<api::HybridJob> job = api::ParseHybridJob(cluster.Job());
  ASSERT_TRUE(job.ok());
  EXPECT_FALSE(api::NeedsStartedSpec(*job)) << "unedited, the spec is the run's";
  cluster.Job()["spec"]["replicaSpecs"][1]["maxReplicas"] = 6;
  cluster.Step(T0() + seconds(10));
  EXPECT_EQ(cluster.Status().run_spec->group.FindRole("worker")->max_replicas, 6)
      << "what the gang scheduler trusts";
}

TEST(ControllerPlannerTest, LoweringMaxReplicasShrinksARunningElasticJob) {
  FakeCluster cluster = RunningDdpJob();  // master and 4 workers (2..4)
  cluster.Job()["spec"]["replicaSpecs"][1]["maxReplicas"] = 2;
  Plan plan = cluster.Step(T0() + seconds(10));
  EXPECT_THAT(DeletedPods(plan), UnorderedElementsAre("ddp-worker-2", "ddp-worker-3"));
  EXPECT_THAT(CreatedPods(plan), IsEmpty());
  const json* config_map = cluster.ConfigMap("ddp-cluster");
  ASSERT_NE(config_map, nullptr);
  EXPECT_EQ((*config_map)["metadata"]["annotations"][std::string(api::kMembersAnnotation)],
            R"({"master":1,"worker":2})");
  EXPECT_EQ(WorkerEnvValue(*config_map, 0, "WORLD_SIZE"), "3");
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.FindReplicaStatus("worker")->members, 2);
  EXPECT_EQ(status.restart_count, 0);
  EXPECT_EQ(status.FindCondition(api::kConditionSpecChangeIgnored), nullptr);
  EXPECT_THAT(EventReasons(plan), Contains("MembershipChanged"));
  for (const RecordEvent& event : ActionsOf<RecordEvent>(plan)) {
    if (event.reason == "MembershipChanged") {
      EXPECT_THAT(event.message, HasSubstr("maxReplicas was lowered: worker 4 -> 2"));
    }
  }
}

TEST(ControllerPlannerTest, RaisingMaxReplicasGivesAnElasticJobPodsToGrowInto) {
  FakeCluster cluster = RunningDdpJob();
  cluster.Job()["spec"]["replicaSpecs"][1]["maxReplicas"] = 6;
  Plan plan = cluster.Step(T0() + seconds(10));
  EXPECT_THAT(CreatedPods(plan), UnorderedElementsAre("ddp-worker-4", "ddp-worker-5"));
  const auto group = api::ParseGroupSpec(
      cluster.Pod("ddp-worker-5")["metadata"]["annotations"][std::string(api::kGroupSpecAnnotation)]
          .get<std::string>());
  ASSERT_TRUE(group.ok());
  EXPECT_EQ(group->FindRole("worker")->max_replicas, 6);
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 4)
      << "until the scheduler binds";
}

TEST(ControllerPlannerTest, LoweringMaxReplicasBelowTheMinimumIsIgnored) {
  FakeCluster cluster = RunningDdpJob();
  cluster.Job()["spec"]["replicaSpecs"][1]["maxReplicas"] = 1;
  Plan plan = cluster.Step(T0() + seconds(10));
  EXPECT_THAT(DeletedPods(plan), IsEmpty());
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kRunning) << "an edit never fails a running job";
  ASSERT_TRUE(status.HasTrueCondition(api::kConditionSpecChangeIgnored));
  EXPECT_THAT(status.FindCondition(api::kConditionSpecChangeIgnored)->message,
              HasSubstr("spec.replicaSpecs[worker].maxReplicas: "));
}

TEST(ControllerPlannerTest, ASuspendedJobResumesWithTheSpecAsItIsThen) {
  FakeCluster cluster = PlacedTfJob();
  WorkerTemplate(cluster)["spec"]["containers"][0]["args"] = {"--lr=0.1"};
  cluster.Step(T0() + seconds(10));
  ASSERT_TRUE(cluster.Status().HasTrueCondition(api::kConditionSpecChangeIgnored));
  cluster.Job()["spec"]["suspend"] = true;
  cluster.Step(T0() + seconds(20));
  EXPECT_THAT(cluster.PodNames(), IsEmpty());
  EXPECT_FALSE(cluster.Status().run_spec.has_value());
  EXPECT_TRUE(cluster.Revisions().empty()) << "the suspended run's revision goes with it";
  EXPECT_EQ(cluster.Status().FindCondition(api::kConditionSpecChangeIgnored), nullptr);

  cluster.Job()["spec"]["suspend"] = false;
  cluster.Step(T0() + seconds(30));
  ASSERT_TRUE(cluster.HasPod("mnist-worker-0"));
  EXPECT_NE(cluster.Pod("mnist-worker-0")["spec"].dump().find("--lr=0.1"), std::string::npos)
      << "the elastic role's wrapper passes the new arguments on";
  EXPECT_EQ(cluster.Status().FindCondition(api::kConditionSpecChangeIgnored), nullptr);
}

// A TF job that succeeded with workers 0 and 1 after worker-1 restarted once.
FakeCluster SucceededTfJobAfterARestart() {
  FakeCluster cluster = PlacedTfJob();
  cluster.Exit("mnist-worker-1", 1);  // OnFailure
  cluster.Step(T0() + seconds(10));
  cluster.Step(T0() + seconds(20));
  cluster.Bind("mnist-worker-1");
  cluster.Run("mnist-worker-1");
  cluster.Step(T0() + seconds(21));
  cluster.Exit("mnist-worker-0", 0);
  cluster.Exit("mnist-worker-1", 0);
  cluster.Step(T0() + seconds(60));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kSucceeded);
  EXPECT_EQ(cluster.Status().restart_count, 1);
  return cluster;
}

json& WorkerCommand(FakeCluster& cluster) {
  return cluster.Job()["spec"]["replicaSpecs"][1]["template"]["spec"]["containers"][0]["command"];
}

TEST(ControllerPlannerTest, ARerunStartsAFreshRunFromTheSpecAsItIsNow) {
  FakeCluster cluster = SucceededTfJobAfterARestart();
  ASSERT_THAT(cluster.PodNames(), ElementsAre("mnist-worker-0", "mnist-worker-1"));
  const api::HybridJobStatus finished = cluster.Status();
  WorkerCommand(cluster) = {"python3", "train.py", "--lr=0.01"};
  cluster.Job()["spec"]["runPolicy"]["rerun"] = 1;

  Plan plan = cluster.StepOnce(T0() + seconds(100));
  EXPECT_THAT(DeletedPods(plan), IsEmpty())
      << "the finished run's ended members stay for their logs (runHistoryLimit 1)";
  EXPECT_THAT(CreatedPods(plan), IsEmpty()) << "the next pass starts the run";
  EXPECT_EQ(IndexOf<UpdateStatus>(plan), 0) << "the finished run is recorded first";
  EXPECT_THAT(EventReasons(plan), ElementsAre("Rerun"));
  EXPECT_THAT(ActionsOf<RecordEvent>(plan)[0].message, HasSubstr("run 0 ended Succeeded"));
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kPending);
  EXPECT_EQ(status.run, 1);
  EXPECT_EQ(status.restart_count, 0);
  EXPECT_FALSE(status.start_time.has_value());
  EXPECT_FALSE(status.completion_time.has_value());
  EXPECT_THAT(status.conditions, IsEmpty());
  ASSERT_EQ(status.previous_runs.size(), 1u);
  const api::PreviousRun& previous = status.previous_runs[0];
  EXPECT_EQ(previous.run, 0);
  EXPECT_EQ(previous.phase, JobPhase::kSucceeded);
  EXPECT_EQ(previous.reason, finished.FindCondition(api::kConditionSucceeded)->reason);
  EXPECT_THAT(previous.message, HasSubstr("all 2 members of worker succeeded"));
  EXPECT_EQ(previous.start_time, finished.start_time);
  EXPECT_EQ(previous.completion_time, finished.completion_time);
  EXPECT_EQ(previous.restart_count, 1);

  plan = cluster.Step(T0() + seconds(101));
  EXPECT_THAT(CreatedPods(plan),
              UnorderedElementsAre("mnist-ps-0-run1", "mnist-worker-0-run1", "mnist-worker-1-run1",
                                   "mnist-worker-2-run1", "mnist-worker-3-run1"));
  for (const CreatePod& create : ActionsOf<CreatePod>(plan)) {
    EXPECT_EQ(create.pod["metadata"]["labels"][std::string(api::kRunLabel)], "1");
    // The run's pod has its own name; the member keeps its hostname.
    const std::string name = create.pod["metadata"]["name"];
    EXPECT_EQ(create.pod["spec"]["hostname"], name.substr(0, name.size() - 5));
  }
  EXPECT_THAT(DeletedPods(plan), IsEmpty());
  // The elastic role's env-file wrapper runs the new command.
  const json command = cluster.Pod("mnist-worker-3-run1")["spec"]["containers"][0]["command"];
  ASSERT_GE(command.size(), 3u);
  EXPECT_EQ(json(std::vector<json>(command.end() - 3, command.end())),
            json({"python3", "train.py", "--lr=0.01"}));
  status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kQueued);
  EXPECT_EQ(status.start_time, api::FormatTime(T0() + seconds(101)));

  // Placed afresh at another size, it runs to its end as run 1.
  Place(cluster,
        {"mnist-ps-0-run1", "mnist-worker-0-run1", "mnist-worker-1-run1", "mnist-worker-2-run1"});
  cluster.Step(T0() + seconds(110));
  const json* config_map = cluster.ConfigMap("mnist-cluster");
  ASSERT_NE(config_map, nullptr);
  EXPECT_EQ((*config_map)["metadata"]["labels"][std::string(api::kRunLabel)], "1");
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->members, 3)
      << "the ended run-0 workers are never counted";
  RunAll(cluster);
  cluster.Step(T0() + seconds(111));
  for (const char* worker : {"mnist-worker-0-run1", "mnist-worker-1-run1", "mnist-worker-2-run1"}) {
    cluster.Exit(worker, 0);
  }
  cluster.Step(T0() + seconds(200));
  status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kSucceeded);
  EXPECT_EQ(status.run, 1);
  EXPECT_EQ(status.previous_runs.size(), 1u);
  EXPECT_THAT(cluster.Reconcile(T0() + std::chrono::hours(5)).actions, IsEmpty())
      << "run 1 is the run asked for";
}

TEST(ControllerPlannerTest, WithNoRunHistoryAReRunDeletesTheFinishedRunsPods) {
  FakeCluster cluster = SucceededTfJobAfterARestart();
  const json succeeded_worker = cluster.Pod("mnist-worker-0");
  cluster.Job()["spec"]["runHistoryLimit"] = 0;
  cluster.Job()["spec"]["runPolicy"]["rerun"] = 1;
  Plan plan = cluster.StepOnce(T0() + seconds(100));
  EXPECT_THAT(DeletedPods(plan), UnorderedElementsAre("mnist-worker-0", "mnist-worker-1"));
  for (const DeletePod& removal : ActionsOf<DeletePod>(plan)) {
    EXPECT_EQ(removal.reason, "rerun");
  }
  // The informer still shows the finished run's worker-0.
  cluster.AddPod(succeeded_worker);
  plan = cluster.StepOnce(T0() + seconds(101));
  EXPECT_THAT(DeletedPods(plan), ElementsAre("mnist-worker-0"));
  EXPECT_EQ(ActionsOf<DeletePod>(plan)[0].reason, "rerun");
  EXPECT_THAT(CreatedPods(plan), Contains("mnist-worker-0-run1")) << "a name of its own";
  EXPECT_EQ(cluster.Status().FindReplicaStatus("worker")->succeeded, 0);
  EXPECT_NE(cluster.Status().phase, JobPhase::kSucceeded);
}

// The newest spec.runHistoryLimit finished runs keep their ended members:
// a run that ends pushes the oldest kept one out, and a lower limit, taken
// at once, deletes what it no longer keeps.
TEST(ControllerPlannerTest, EndedMembersOfTheNewestFinishedRunsStayForTheirLogs) {
  FakeCluster cluster = SucceededTfJobAfterARestart();
  cluster.Job()["spec"]["runPolicy"]["rerun"] = 1;
  cluster.StepOnce(T0() + seconds(100));
  cluster.Step(T0() + seconds(101));
  Place(cluster, {"mnist-ps-0-run1", "mnist-worker-0-run1", "mnist-worker-1-run1"});
  cluster.Step(T0() + seconds(110));
  RunAll(cluster);
  cluster.Step(T0() + seconds(111));
  cluster.Exit("mnist-worker-0-run1", 0);
  cluster.Exit("mnist-worker-1-run1", 0);
  cluster.Step(T0() + seconds(120));
  ASSERT_EQ(cluster.Status().phase, JobPhase::kSucceeded);
  ASSERT_EQ(cluster.Status().run, 1);
  EXPECT_THAT(DeletedPods(cluster.Step(T0() + seconds(121))), IsEmpty())
      << "run 0 is the one finished run kept";

  cluster.Job()["spec"]["runPolicy"]["rerun"] = 2;
  Plan plan = cluster.StepOnce(T0() + seconds(200));
  EXPECT_THAT(DeletedPods(plan), UnorderedElementsAre("mnist-worker-0", "mnist-worker-1"))
      << "run 1 is now the newest finished run; run 0 goes";
  plan = cluster.Step(T0() + seconds(201));
  EXPECT_THAT(CreatedPods(plan), Contains("mnist-worker-0-run2"));
  EXPECT_THAT(cluster.PodNames(), IsSupersetOf({"mnist-worker-0-run1", "mnist-worker-1-run1"}));

  cluster.Job()["spec"]["runHistoryLimit"] = 0;
  plan = cluster.Step(T0() + seconds(202));
  EXPECT_THAT(DeletedPods(plan),
              UnorderedElementsAre("mnist-worker-0-run1", "mnist-worker-1-run1"));
}

// A member of an earlier run that still runs or waits (cleanPodPolicy None)
// would hold what the next run needs: it goes, kept run or not.
TEST(ControllerPlannerTest, ARerunDeletesTheFinishedRunsActiveMembers) {
  json object = TfJob();
  object["spec"]["runPolicy"] = {{"cleanPodPolicy", "None"}};
  FakeCluster cluster = PlacedTfJob(object);
  cluster.Exit("mnist-worker-0", 0);
  cluster.Exit("mnist-worker-1", 0);
  cluster.Step(T0() + seconds(60));
  ASSERT_EQ(cluster.Status().phase, JobPhase::kSucceeded);
  ASSERT_EQ(cluster.PodRef("mnist-ps-0")["status"]["phase"], "Running");
  cluster.Job()["spec"]["runPolicy"]["rerun"] = 1;
  Plan plan = cluster.StepOnce(T0() + seconds(100));
  EXPECT_THAT(DeletedPods(plan), ElementsAre("mnist-ps-0"));
}

TEST(ControllerPlannerTest, ARerunAskedForWhileTheJobRunsWaitsForItsEnd) {
  FakeCluster cluster = PlacedTfJob();
  cluster.Job()["spec"]["runPolicy"]["rerun"] = 1;
  Plan plan = cluster.Step(T0() + seconds(10));
  EXPECT_THAT(DeletedPods(plan), IsEmpty());
  EXPECT_EQ(cluster.Status().run, 0);
  EXPECT_EQ(cluster.Status().phase, JobPhase::kRunning);

  cluster.Exit("mnist-worker-0", 0);
  cluster.Exit("mnist-worker-1", 0);
  cluster.StepOnce(T0() + seconds(60));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kSucceeded);
  plan = cluster.StepOnce(T0() + seconds(61));
  EXPECT_THAT(EventReasons(plan), ElementsAre("Rerun"));
  EXPECT_EQ(cluster.Status().run, 1);
}

TEST(ControllerPlannerTest, AJobCreatedWithARerunStartsAtThatRunAndLowerValuesDoNothing) {
  json object = TfJob();
  object["spec"]["runPolicy"] = {{"rerun", 3}};
  FakeCluster cluster(object);
  Plan plan = cluster.Step(T0());
  EXPECT_EQ(cluster.Status().run, 3);
  EXPECT_EQ(ActionsOf<CreatePod>(plan)[0].pod["metadata"]["labels"][std::string(api::kRunLabel)],
            "3");
  Place(cluster, {"mnist-ps-0-run3", "mnist-worker-0-run3", "mnist-worker-1-run3"});
  cluster.Step(T0());
  RunAll(cluster);
  cluster.Exit("mnist-ps-0-run3", 2);  // Never: the job fails
  cluster.Step(T0() + seconds(5));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kFailed);
  cluster.Job()["spec"]["runPolicy"]["rerun"] = 2;
  EXPECT_THAT(cluster.Step(T0() + seconds(6)).actions, IsEmpty());
}

TEST(ControllerPlannerTest, PreviousRunsKeepTheNewestTen) {
  FakeCluster cluster = SucceededTfJobAfterARestart();
  api::HybridJobStatus status = cluster.Status();
  status.run = 20;
  for (int64_t run = 10; run < 20; ++run) {
    status.previous_runs.push_back({.run = run, .phase = JobPhase::kFailed});
  }
  cluster.Job()["status"] = api::ToJson(status);
  cluster.Job()["spec"]["runPolicy"]["rerun"] = 21;
  cluster.StepOnce(T0() + seconds(100));
  const std::vector<api::PreviousRun>& runs = cluster.Status().previous_runs;
  ASSERT_EQ(runs.size(), api::kMaxPreviousRuns);
  EXPECT_EQ(runs.front().run, 11);
  EXPECT_EQ(runs.back().run, 20);
  EXPECT_EQ(runs.back().phase, JobPhase::kSucceeded);
  EXPECT_EQ(cluster.Status().run, 21);
}

TEST(ControllerPlannerTest, FinishedJobIsOnlyRequeuedForItsTtl) {
  json object = TfJob();
  object["spec"]["runPolicy"] = {{"activeDeadlineSeconds", 600}};
  FakeCluster cluster = PlacedTfJob(object);
  EXPECT_EQ(cluster.Reconcile(T0() + seconds(100)).requeue_after, seconds(500));
  cluster.Exit("mnist-worker-0", 0);
  cluster.Exit("mnist-worker-1", 0);
  Plan plan = cluster.Step(T0() + seconds(100));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kSucceeded);
  EXPECT_FALSE(plan.requeue_after.has_value());
  // The deadline no longer applies to a finished job.
  EXPECT_THAT(cluster.Reconcile(T0() + seconds(700)).actions, IsEmpty());
}

TEST(ControllerPlannerTest, TtlDeletesTheFinishedJob) {
  json object = TfJob();
  object["spec"]["runPolicy"] = {{"ttlSecondsAfterFinished", 300}};
  FakeCluster cluster = PlacedTfJob(object);
  cluster.Exit("mnist-worker-0", 0);
  cluster.Exit("mnist-worker-1", 0);
  Plan plan = cluster.Step(T0() + seconds(100));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kSucceeded);
  EXPECT_EQ(plan.requeue_after, seconds(300));

  plan = cluster.Reconcile(T0() + seconds(399));
  EXPECT_THAT(plan.actions, IsEmpty());
  EXPECT_EQ(plan.requeue_after, seconds(1));

  plan = cluster.Reconcile(T0() + seconds(400));
  ASSERT_EQ(ActionsOf<DeleteJob>(plan).size(), 1u);
  EXPECT_EQ(ActionsOf<DeleteJob>(plan)[0].uid, "job-uid-1");
  cluster.Apply(plan);
  EXPECT_TRUE(cluster.JobDeleted());
}

// The TF job with a checkpoint volume for workers, uploaded after success.
json TfJobWithArtifacts() {
  json object = TfJob();
  object["spec"]["volumes"] = {
      {{"name", "ckpt"}, {"size", "1Gi"}, {"mountPath", "/ckpt"}, {"roles", {"worker"}}}};
  object["spec"]["artifacts"] = {
      {"volume", "ckpt"}, {"paths", {"model"}}, {"destination", "https://store.example/runs/1"}};
  object["spec"]["runPolicy"] = {{"ttlSecondsAfterFinished", 60}};
  return object;
}

api::Condition UploadCondition(const FakeCluster& cluster) {
  const api::HybridJobStatus status = cluster.Status();
  const api::Condition* condition = status.FindCondition("ArtifactsUploaded");
  return condition != nullptr ? *condition : api::Condition{};
}

TEST(ControllerPlannerTest, ArtifactsAreUploadedFromTheVolumesNodeAfterSuccess) {
  FakeCluster cluster = PlacedTfJob(TfJobWithArtifacts());
  EXPECT_FALSE(cluster.HasPod("mnist-artifacts")) << "nothing before success";
  cluster.Exit("mnist-worker-0", 0);
  cluster.Exit("mnist-worker-1", 0);
  Plan plan = cluster.Step(T0() + seconds(100));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kSucceeded);
  // In the same pass, while the members still show where the volume is.
  std::vector<CreatePod> creates = ActionsOf<CreatePod>(plan);
  ASSERT_EQ(creates.size(), 1u);
  const json& uploader = creates[0].pod;
  EXPECT_EQ(uploader["metadata"]["name"], "mnist-artifacts");
  EXPECT_EQ(uploader["spec"]["nodeName"], "node-1");
  EXPECT_EQ(uploader["spec"]["restartPolicy"], "OnFailure");
  EXPECT_EQ(uploader["spec"]["activeDeadlineSeconds"], 3600);
  EXPECT_EQ(uploader["spec"]["containers"][0]["terminationMessagePolicy"], "FallbackToLogsOnError");
  EXPECT_EQ(uploader["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"], "mnist-ckpt");
  EXPECT_FALSE(uploader["spec"].contains("schedulerName")) << "not a gang member";
  EXPECT_EQ(UploadCondition(cluster).status, "False");
  EXPECT_EQ(UploadCondition(cluster).reason, "Uploading");
  // The TTL waits for the upload: the claim goes with the job.
  EXPECT_TRUE(ActionsOf<DeleteJob>(cluster.Reconcile(T0() + seconds(500))).empty());

  // A failed run that the kubelet retries.
  json& pod = cluster.PodRef("mnist-artifacts");
  pod["status"] = {{"phase", "Running"},
                   {"containerStatuses",
                    {{{"name", "upload"},
                      {"restartCount", 1},
                      {"lastState",
                       {{"terminated",
                         {{"exitCode", 1},
                          {"message",
                           "curl: (22) The requested URL returned error: 403\n"
                           "hybridjob-artifacts: could not upload model/w.bin to "
                           "https://store.example/runs/1/model/w.bin: the server answered "
                           "AccessDenied: Access Denied\n"}}}}},
                      {"state", {{"running", json::object()}}}}}}};
  cluster.Step(T0() + seconds(110));
  EXPECT_EQ(UploadCondition(cluster).reason, "Retrying");
  // What the store answered, from the uploader's last words.
  EXPECT_THAT(UploadCondition(cluster).message,
              HasSubstr("attempt 1 failed with exit code 1 (hybridjob-artifacts: could not upload "
                        "model/w.bin to https://store.example/runs/1/model/w.bin: the server "
                        "answered AccessDenied: Access Denied); the kubelet retries"));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kSucceeded);

  cluster.Exit("mnist-artifacts", 0);
  plan = cluster.Step(T0() + seconds(120));
  EXPECT_EQ(UploadCondition(cluster).status, "True");
  EXPECT_EQ(UploadCondition(cluster).reason, "Uploaded");
  EXPECT_THAT(EventReasons(plan), Contains("Uploaded"));
  // Settled: no new uploader, and the TTL counts from the completion again.
  cluster.RemovePod("mnist-artifacts");
  plan = cluster.Reconcile(T0() + seconds(200));
  EXPECT_TRUE(ActionsOf<CreatePod>(plan).empty());
  EXPECT_EQ(ActionsOf<DeleteJob>(plan).size(), 1u);
}

TEST(ControllerPlannerTest, AnUploadGivenUpNeverFailsTheJob) {
  FakeCluster cluster = PlacedTfJob(TfJobWithArtifacts());
  cluster.Exit("mnist-worker-0", 0);
  cluster.Exit("mnist-worker-1", 0);
  cluster.Step(T0() + seconds(100));
  json& pod = cluster.PodRef("mnist-artifacts");
  pod["status"] = {{"phase", "Failed"}, {"reason", "DeadlineExceeded"}};
  Plan plan = cluster.Reconcile(T0() + seconds(4000));
  cluster.Apply(plan);
  EXPECT_EQ(cluster.Status().phase, JobPhase::kSucceeded);
  EXPECT_EQ(UploadCondition(cluster).reason, "UploadFailed");
  EXPECT_THAT(UploadCondition(cluster).message, HasSubstr("DeadlineExceeded"));
  EXPECT_THAT(EventReasons(plan), Contains("UploadFailed"));
  // Given up for good: the TTL applies, and no second uploader.
  EXPECT_EQ(ActionsOf<DeleteJob>(plan).size(), 1u);
  EXPECT_TRUE(ActionsOf<CreatePod>(plan).empty());
}

TEST(ControllerPlannerTest, ARerunWaitsForTheUploadAndUploadsItsOwnFilesAgain) {
  FakeCluster cluster = PlacedTfJob(TfJobWithArtifacts());
  cluster.Exit("mnist-worker-0", 0);
  cluster.Exit("mnist-worker-1", 0);
  cluster.Step(T0() + seconds(100));
  ASSERT_TRUE(cluster.HasPod("mnist-artifacts"));
  cluster.Job()["spec"]["runPolicy"]["rerun"] = 1;
  Plan plan = cluster.Step(T0() + seconds(101));
  EXPECT_THAT(DeletedPods(plan), IsEmpty()) << "the uploader reads the finished run's files";
  EXPECT_EQ(cluster.Status().run, 0);

  cluster.Exit("mnist-artifacts", 0);
  cluster.StepOnce(T0() + seconds(110));
  EXPECT_EQ(UploadCondition(cluster).reason, "Uploaded");
  plan = cluster.StepOnce(T0() + seconds(111));
  EXPECT_THAT(DeletedPods(plan), ElementsAre("mnist-artifacts"))
      << "the ended workers stay for their logs";
  EXPECT_EQ(cluster.Status().run, 1);
  EXPECT_EQ(cluster.Status().FindCondition("ArtifactsUploaded"), nullptr);

  // Run 1 succeeds: its own upload runs, however the last one ended.
  cluster.Step(T0() + seconds(112));
  Place(cluster, {"mnist-ps-0-run1", "mnist-worker-0-run1", "mnist-worker-1-run1"});
  cluster.Step(T0() + seconds(113));
  RunAll(cluster);
  cluster.Exit("mnist-worker-0-run1", 0);
  cluster.Exit("mnist-worker-1-run1", 0);
  plan = cluster.Step(T0() + seconds(200));
  ASSERT_EQ(ActionsOf<CreatePod>(plan).size(), 1u);
  EXPECT_EQ(ActionsOf<CreatePod>(plan)[0].pod["metadata"]["labels"][std::string(api::kRunLabel)],
            "1");
  EXPECT_EQ(UploadCondition(cluster).reason, "Uploading");
}

TEST(ControllerPlannerTest, AFailedJobUploadsNothing) {
  FakeCluster cluster = PlacedTfJob(TfJobWithArtifacts());
  cluster.Exit("mnist-ps-0", 1);
  Plan plan = cluster.Step(T0() + seconds(100));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kFailed);
  EXPECT_TRUE(ActionsOf<CreatePod>(plan).empty());
  EXPECT_EQ(cluster.Status().FindCondition("ArtifactsUploaded"), nullptr);
}

TEST(ControllerPlannerTest, ZeroTtlDeletesRightAway) {
  json object = TfJob();
  object["spec"]["runPolicy"] = {{"ttlSecondsAfterFinished", 0}};
  FakeCluster cluster = PlacedTfJob(object);
  cluster.Exit("mnist-ps-0", 1);
  Plan plan = cluster.Reconcile(T0() + seconds(100));
  EXPECT_EQ(IndexOf<UpdateStatus>(plan), 0);
  EXPECT_EQ(IndexOf<DeleteJob>(plan), static_cast<int>(plan.actions.size()) - 1);
}

TEST(ControllerPlannerTest, InvalidJobIsReportedAndCreatesNothing) {
  json object = TfJob();
  object["spec"]["replicaSpecs"][1]["minReplicas"] = 5;  // > maxReplicas 4
  FakeCluster cluster(object);
  Plan plan = cluster.Step(T0());
  EXPECT_TRUE(CreatedPods(plan).empty());
  EXPECT_TRUE(ActionsOf<CreateService>(plan).empty());
  ASSERT_EQ(ActionsOf<UpdateStatus>(plan).size(), 1u);
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(status.phase, JobPhase::kFailed);
  ASSERT_TRUE(status.HasTrueCondition("Invalid"));
  EXPECT_EQ(status.FindCondition("Invalid")->reason, "Invalid");
  EXPECT_THAT(status.FindCondition("Invalid")->message,
              HasSubstr("spec.replicaSpecs[1].maxReplicas: must be greater than or equal to "
                        "minReplicas (5)"));
  EXPECT_EQ(status.FindCondition("Failed")->reason, "Invalid");
  ASSERT_EQ(ActionsOf<RecordEvent>(plan).size(), 1u);
  EXPECT_EQ(ActionsOf<RecordEvent>(plan)[0].type, EventType::kWarning);
  EXPECT_EQ(ActionsOf<RecordEvent>(plan)[0].reason, "Invalid");
  EXPECT_THAT(cluster.PodNames(), IsEmpty());
  EXPECT_THAT(cluster.Services(), IsEmpty());
}

// spec.schedulerName: default-scheduler would let kube-scheduler place the
// members outside every queue; the controller refuses it before the start.
TEST(ControllerPlannerTest, ASchedulerNameNotAllowedMakesTheJobInvalidWithNoPod) {
  json object = TfJob();
  object["spec"]["schedulerName"] = "default-scheduler";
  FakeCluster cluster(object);
  Plan plan = cluster.Step(T0());
  EXPECT_TRUE(CreatedPods(plan).empty());
  EXPECT_EQ(cluster.Status().phase, JobPhase::kFailed);
  ASSERT_TRUE(cluster.Status().HasTrueCondition("Invalid"));
  EXPECT_THAT(cluster.Status().FindCondition("Invalid")->message,
              HasSubstr("spec.schedulerName: \"default-scheduler\" is not allowed on this "
                        "cluster (the controller's --allowed-scheduler-names: gang-scheduler)"));
  EXPECT_THAT(EventReasons(plan), ElementsAre("Invalid"));
  EXPECT_THAT(cluster.PodNames(), IsEmpty());

  // Another scheduler the admin allows is fine.
  PlannerOptions options;
  options.allowed_scheduler_names = {"gang-scheduler", "default-scheduler"};
  FakeCluster allowed(object, options);
  EXPECT_FALSE(CreatedPods(allowed.Step(T0())).empty());
}

// A job that started under a wider list keeps running when the list narrows.
TEST(ControllerPlannerTest, ANarrowerSchedulerListDoesNotFailAJobThatStarted) {
  json object = TfJob();
  object["spec"]["schedulerName"] = "other-scheduler";
  object["status"] = {{"startTime", "2026-01-01T00:00:00Z"}};
  FakeCluster cluster(object);
  Plan plan = cluster.Step(T0());
  EXPECT_NE(cluster.Status().phase, JobPhase::kFailed);
  EXPECT_FALSE(CreatedPods(plan).empty());
}

TEST(ControllerPlannerTest, UnparseableJobIsReportedToo) {
  json object = TfJob();
  object["spec"]["replicaSpecs"][1]["minReplicas"] = "two";
  FakeCluster cluster(object);
  Plan plan = cluster.Step(T0());
  EXPECT_TRUE(CreatedPods(plan).empty());
  EXPECT_EQ(cluster.Status().phase, JobPhase::kFailed);
  EXPECT_THAT(cluster.Status().FindCondition("Invalid")->message,
              HasSubstr("spec.replicaSpecs[1].minReplicas: must be an integer"));
  EXPECT_THAT(EventReasons(plan), ElementsAre("Invalid"));
  EXPECT_NO_THROW(PlanJob(json("garbage"), {}, T0()));
  EXPECT_NO_THROW(PlanJob(json::array(), {}, T0()));
}

TEST(ControllerPlannerTest, JobBeingDeletedIsLeftToTheGarbageCollector) {
  json object = TfJob();
  object["metadata"]["deletionTimestamp"] = "2024-05-01T12:00:00Z";
  FakeCluster cluster(object);
  Plan plan = cluster.Reconcile(T0());
  EXPECT_THAT(plan.actions, IsEmpty());
}

TEST(ControllerPlannerTest, PodsOfAnotherIncarnationBlockTheirNames) {
  FakeCluster cluster(TfJob());
  json stale = {{"metadata",
                 {{"name", "mnist-worker-0"},
                  {"uid", "old"},
                  {"labels",
                   {{"batch.hybridjob.io/job-name", "mnist"},
                    {"batch.hybridjob.io/role", "worker"},
                    {"batch.hybridjob.io/index", "0"}}},
                  {"ownerReferences", {{{"uid", "previous-job"}, {"controller", true}}}}}}};
  cluster.AddPod(stale);
  Plan plan = cluster.Reconcile(T0());
  EXPECT_THAT(CreatedPods(plan), ::testing::Not(Contains("mnist-worker-0")));
  EXPECT_TRUE(DeletedPods(plan).empty()) << "never delete what is not ours";
  EXPECT_EQ(ActionsOf<UpdateStatus>(plan)[0].status.phase, JobPhase::kPending);
  cluster.Apply(plan);
  cluster.RemovePod("mnist-worker-0");  // the garbage collector took it
  plan = cluster.Step(T0() + seconds(1));
  EXPECT_THAT(CreatedPods(plan), ElementsAre("mnist-worker-0"));
  EXPECT_EQ(cluster.Status().phase, JobPhase::kQueued);
}

TEST(ControllerPlannerTest, TerminatingPodIsNotReplacedUntilGone) {
  FakeCluster cluster = PlacedTfJob();
  cluster.MarkTerminating("mnist-worker-1");
  Plan plan = cluster.Step(T0() + seconds(10));
  EXPECT_TRUE(CreatedPods(plan).empty());
  EXPECT_EQ(cluster.Status().phase, JobPhase::kRestarting);
  cluster.RemovePod("mnist-worker-1");
  plan = cluster.Step(T0() + seconds(11));
  EXPECT_THAT(CreatedPods(plan), ElementsAre("mnist-worker-1"));
}

TEST(ControllerPlannerTest, VolumesAndTensorboardAreCreated) {
  json object = TfJob();
  object["spec"]["volumes"] = {
      {{"name", "data"}, {"size", "10Gi"}, {"mountPath", "/data"}},
      {{"name", "keep"}, {"size", "1Gi"}, {"mountPath", "/keep"}, {"retain", true}},
      {{"name", "shared"}, {"existingClaim", "team"}, {"mountPath", "/shared"}}};
  object["spec"]["tensorboard"] = {{"logDir", "/data/logs"}};
  FakeCluster cluster(object);
  Plan plan = cluster.Step(T0());
  std::vector<std::string> claims;
  for (const CreatePVC& create : ActionsOf<CreatePVC>(plan)) {
    claims.push_back(create.claim["metadata"]["name"]);
  }
  EXPECT_THAT(claims, ElementsAre("mnist-data", "mnist-keep"));
  EXPECT_FALSE(ActionsOf<CreatePVC>(plan)[1].claim["metadata"].contains("ownerReferences"));
  EXPECT_LT(IndexOf<CreatePVC>(plan), IndexOf<CreatePod>(plan));
  EXPECT_EQ(ActionsOf<CreateService>(plan).size(), 2u);
  EXPECT_EQ(cluster.Services().size(), 2u);
  EXPECT_EQ(cluster.Claims().size(), 2u);
  // TensorBoard reads /data/logs from the claim mnist-data: not before the
  // gang is placed, or with WaitForFirstConsumer it would pick the claim's
  // node for the gang.
  EXPECT_TRUE(ActionsOf<CreateDeployment>(plan).empty());
  EXPECT_TRUE(ActionsOf<CreateDeployment>(cluster.Step(T0() + seconds(5))).empty());
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"});
  plan = cluster.Step(T0() + seconds(10));
  ASSERT_EQ(ActionsOf<CreateDeployment>(plan).size(), 1u);
  const json pod_spec = ActionsOf<CreateDeployment>(plan)[0].deployment["spec"]["template"]["spec"];
  EXPECT_EQ(pod_spec["volumes"][0]["persistentVolumeClaim"]["claimName"], "mnist-data");
  EXPECT_EQ(cluster.Deployments().size(), 1u);
}

TEST(ControllerPlannerTest, TensorboardWithoutAVolumeStartsAtOnce) {
  json object = TfJob();
  object["spec"]["tensorboard"] = {{"logDir", "gs://bucket/logs"}};
  FakeCluster cluster(object);
  Plan plan = cluster.Step(T0());
  EXPECT_EQ(ActionsOf<CreateDeployment>(plan).size(), 1u);
}

TEST(ControllerPlannerTest, ConditionTimesMoveOnlyOnTransitions) {
  FakeCluster cluster(TfJob());
  cluster.Step(T0());
  const api::Condition created = *cluster.Status().FindCondition("Created");
  Place(cluster, {"mnist-ps-0", "mnist-worker-0", "mnist-worker-1"});
  cluster.Step(T0() + seconds(20));
  api::HybridJobStatus status = cluster.Status();
  EXPECT_EQ(*status.FindCondition("Created"), created);
  EXPECT_EQ(status.FindCondition("Scheduled")->last_transition_time, "2024-05-01T12:00:20Z");
  EXPECT_EQ(status.FindCondition("Running")->last_transition_time, "2024-05-01T12:00:20Z");
  RunAll(cluster);
  cluster.Step(T0() + seconds(40));  // pods running: counts change, conditions do not
  EXPECT_EQ(cluster.Status().FindCondition("Running")->last_transition_time,
            "2024-05-01T12:00:20Z");
  EXPECT_EQ(cluster.Status().ready_members, "3/3");
}

TEST(ControllerPlannerTest, ObservedGenerationFollowsTheSpec) {
  FakeCluster cluster = PlacedTfJob();
  cluster.Job()["metadata"]["generation"] = 2;
  Plan plan = cluster.Step(T0() + seconds(5));
  ASSERT_EQ(ActionsOf<UpdateStatus>(plan).size(), 1u);
  EXPECT_EQ(cluster.Status().observed_generation, 2);
}

TEST(ControllerPlannerTest, WholeLifeConvergesAndEveryStepIsIdempotent) {
  for (const char* framework : {"tensorflow", "pytorch", "mxnet", "mpi", "generic"}) {
    SCOPED_TRACE(framework);
    json object = TfJob();
    object["spec"]["framework"] = framework;
    json roles = json::array();
    auto role = [](const std::string& name, int min, int max) {
      return json{{"name", name},
                  {"minReplicas", min},
                  {"maxReplicas", max},
                  {"restartPolicy", "OnFailure"},
                  {"template", hybridjob::testing::PodTemplate(1)}};
    };
    const std::string lead = std::string(framework) == "mxnet" ? "scheduler"
                             : std::string(framework) == "mpi" ? "launcher"
                                                               : "ps";
    roles.push_back(role(lead, 1, 1));
    roles.push_back(role("worker", 1, 5));
    object["spec"]["replicaSpecs"] = roles;
    object["spec"]["successPolicy"] = {{"roles", {"worker"}}};
    FakeCluster cluster(object);

    api::TimePoint now = T0();
    cluster.Step(now);
    // The scheduler fits the lead and three of five workers.
    Place(cluster, {"mnist-" + lead + "-0", "mnist-worker-0", "mnist-worker-1", "mnist-worker-2"});
    cluster.Step(now += seconds(1));
    // Frameworks that learn a new membership live keep the two left-out
    // workers pending, to grow into; the others delete them.
    const bool live = std::string(framework) == "pytorch" || std::string(framework) == "generic";
    EXPECT_EQ(cluster.PodNames().size(), live ? 6u : 4u);
    RunAll(cluster);
    cluster.Step(now += seconds(1));
    EXPECT_EQ(cluster.Status().ready_members, "4/4");
    cluster.Exit("mnist-worker-2", 143);
    Plan plan = cluster.Step(now += seconds(1));
    now += *plan.requeue_after;
    cluster.Step(now);
    cluster.Bind("mnist-worker-2");
    cluster.Run("mnist-worker-2");
    cluster.Step(now += seconds(1));
    EXPECT_EQ(cluster.Status().phase, JobPhase::kRunning);
    for (const char* worker : {"mnist-worker-0", "mnist-worker-1", "mnist-worker-2"}) {
      cluster.Exit(worker, 0);
    }
    cluster.Step(now += seconds(1));
    EXPECT_EQ(cluster.Status().phase, JobPhase::kSucceeded);
    EXPECT_FALSE(cluster.HasPod("mnist-" + lead + "-0"));
    EXPECT_EQ(cluster.Status().restart_count, 1);
    const json* config_map = cluster.ConfigMap("mnist-cluster");
    ASSERT_NE(config_map, nullptr);
    EXPECT_EQ((*config_map)["metadata"]["annotations"][std::string(api::kMembersAnnotation)],
              "{\"" + lead + "\":1,\"worker\":3}");
  }
}

}  // namespace
}  // namespace hybridjob::controller
