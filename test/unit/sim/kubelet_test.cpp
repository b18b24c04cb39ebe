#include <gtest/gtest.h>

#include <hybridjob/sim/kubelet.h>
#include <hybridjob/sim/node_factory.h>

namespace hybridjob::sim {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

json Pod(json annotations = json::object(), json status = json::object()) {
  return {{"metadata",
           {{"name", "p"}, {"namespace", "ns"}, {"uid", "u1"}, {"annotations", annotations}}},
          {"spec",
           {{"nodeName", "sim-node-0"},
            {"initContainers", json::array({{{"name", "fetch"}, {"image", "fetcher"}}})},
            {"containers", json::array({{{"name", "trainer"}, {"image", "tf"}},
                                        {{"name", "sidecar"}, {"image", "log"}}})}}},
          {"status", status}};
}

const WallClock::time_point kNow = WallClock::time_point(std::chrono::seconds(1800000000));

TEST(KubeletTest, BoundPodStartsRunningWithStatuses) {
  auto pod = DecodeSimPod(Pod({{kDurationAnnotation, "30s"}}));
  ASSERT_TRUE(pod.ok());
  auto decision = DecideKubeletStep(*pod, kNow, "10.244.0.5", "10.200.0.1");
  ASSERT_EQ(decision.step, KubeletStep::kStart);
  const json& status = decision.status_patch["status"];
  EXPECT_EQ(status["phase"], "Running");
  EXPECT_EQ(status["podIP"], "10.244.0.5");
  EXPECT_EQ(status["hostIP"], "10.200.0.1");
  EXPECT_EQ(status["containerStatuses"].size(), 2u);
  EXPECT_TRUE(status["containerStatuses"][0]["state"].contains("running"));
  EXPECT_EQ(status["initContainerStatuses"][0]["state"]["terminated"]["exitCode"], 0);
  ASSERT_TRUE(decision.wake_at.has_value());
  EXPECT_EQ(*decision.wake_at, kNow + 30s);
}

TEST(KubeletTest, RunningPodFinishesAfterItsDurationWithItsExitCode) {
  const std::string started = "2027-01-15T08:00:00Z";
  auto pod = DecodeSimPod(Pod({{kDurationAnnotation, "1m"}, {kExitCodeAnnotation, "137"}},
                              {{"phase", "Running"}, {"startTime", started}}));
  ASSERT_TRUE(pod.ok());
  const auto start = *pod->start_time;
  auto early = DecideKubeletStep(*pod, start + 59s, "ip", "host");
  EXPECT_EQ(early.step, KubeletStep::kNothing);
  ASSERT_TRUE(early.wake_at.has_value());
  EXPECT_EQ(*early.wake_at, start + 60s);

  auto done = DecideKubeletStep(*pod, start + 60s, "ip", "host");
  ASSERT_EQ(done.step, KubeletStep::kFinish);
  const json& status = done.status_patch["status"];
  EXPECT_EQ(status["phase"], "Failed");
  EXPECT_EQ(status["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
  EXPECT_EQ(status["containerStatuses"][0]["state"]["terminated"]["reason"], "Error");
  EXPECT_EQ(status["containerStatuses"][1]["state"]["terminated"]["exitCode"], 0);
}

TEST(KubeletTest, ZeroExitCodeSucceeds) {
  auto pod = DecodeSimPod(Pod({{kDurationAnnotation, "1s"}},
                              {{"phase", "Running"}, {"startTime", "2027-01-15T08:00:00Z"}}));
  ASSERT_TRUE(pod.ok());
  auto done = DecideKubeletStep(*pod, *pod->start_time + 5s, "ip", "host");
  ASSERT_EQ(done.step, KubeletStep::kFinish);
  EXPECT_EQ(done.status_patch["status"]["phase"], "Succeeded");
}

TEST(KubeletTest, PodWithoutDurationRunsForever) {
  auto pod = DecodeSimPod(Pod({}, {{"phase", "Running"}, {"startTime", "2027-01-15T08:00:00Z"}}));
  ASSERT_TRUE(pod.ok());
  auto decision = DecideKubeletStep(*pod, kNow + 1000h, "ip", "host");
  EXPECT_EQ(decision.step, KubeletStep::kNothing);
  EXPECT_FALSE(decision.wake_at.has_value());
}

TEST(KubeletTest, FinishedPodsAreLeftAloneAndDeletingPodsRemoved) {
  auto finished = DecodeSimPod(Pod({}, {{"phase", "Succeeded"}}));
  EXPECT_EQ(DecideKubeletStep(*finished, kNow, "ip", "host").step, KubeletStep::kNothing);
  json deleting = Pod({}, {{"phase", "Running"}});
  deleting["metadata"]["deletionTimestamp"] = "2027-01-15T08:00:30Z";
  auto pod = DecodeSimPod(deleting);
  ASSERT_TRUE(pod.ok());
  EXPECT_TRUE(pod->deleting);
  EXPECT_EQ(DecideKubeletStep(*pod, kNow, "ip", "host").step, KubeletStep::kRemove);
}

TEST(KubeletTest, BadAnnotationsFailThePodSayingWhy) {
  for (const auto& annotations :
       {json{{kDurationAnnotation, "soon"}}, json{{kExitCodeAnnotation, "300"}},
        json{{kExitCodeAnnotation, "x"}}}) {
    auto pod = DecodeSimPod(Pod(annotations));
    ASSERT_TRUE(pod.ok());
    EXPECT_FALSE(pod->annotation_error.empty());
    auto start = DecideKubeletStep(*pod, kNow, "ip", "host");
    ASSERT_EQ(start.step, KubeletStep::kStart);
    json running = Pod(annotations, {{"phase", "Running"}, {"startTime", "2027-01-15T08:00:00Z"}});
    auto failed = DecideKubeletStep(*DecodeSimPod(running), kNow, "ip", "host");
    ASSERT_EQ(failed.step, KubeletStep::kFinish);
    EXPECT_EQ(failed.status_patch["status"]["phase"], "Failed");
    EXPECT_EQ(failed.status_patch["status"]["reason"], "InvalidSimulation");
  }
}

// A pod's requests as the kubelet's admission counts them.
TEST(KubeletAdmissionTest, PodsAreDecodedWithTheirRequests) {
  json pod = Pod();
  pod["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "2"}}},
                                               {"requests", {{"cpu", "1500m"}}}};
  auto decoded = DecodeSimPod(pod);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->requests.Scalar("nvidia.com/gpu"), 2);
  EXPECT_EQ(decoded->requests.milli_cpu, 1500);
  EXPECT_EQ(decoded->requests.pods, 1);
}

TEST(KubeletAdmissionTest, APodThatDoesNotFitBesideTheAdmittedOnesIsRefused) {
  scheduler::ResourceList allocatable;
  allocatable.milli_cpu = 8000;
  allocatable.memory = int64_t{64} << 30;
  allocatable.pods = 110;
  allocatable.SetScalar("nvidia.com/gpu", 4);
  scheduler::ResourceList admitted;
  admitted.pods = 2;
  admitted.milli_cpu = 2000;
  admitted.SetScalar("nvidia.com/gpu", 3);
  scheduler::ResourceList request;
  request.pods = 1;
  request.milli_cpu = 1000;
  request.SetScalar("nvidia.com/gpu", 1);
  EXPECT_FALSE(AdmitPod(request, admitted, allocatable).has_value()) << "the last GPU fits";

  request.SetScalar("nvidia.com/gpu", 2);
  auto refusal = AdmitPod(request, admitted, allocatable);
  ASSERT_TRUE(refusal.has_value());
  EXPECT_EQ(refusal->reason, "OutOfnvidia.com/gpu");
  EXPECT_EQ(refusal->message,
            "Node didn't have enough resource: nvidia.com/gpu, requested: 2, used: 3, capacity: 4");
  const json status = RefusalStatusPatch(*refusal)["status"];
  EXPECT_EQ(status["phase"], "Failed");
  EXPECT_EQ(status["reason"], "OutOfnvidia.com/gpu");
  EXPECT_EQ(status["message"], "Pod was rejected: " + refusal->message);

  request.SetScalar("nvidia.com/gpu", 0);
  request.milli_cpu = 6001;
  EXPECT_EQ(AdmitPod(request, admitted, allocatable)->reason, "OutOfcpu");
  request.milli_cpu = 0;
  admitted.pods = 110;
  EXPECT_EQ(AdmitPod(request, admitted, allocatable)->reason, "OutOfpods");
}

TEST(NodeFactoryTest, NodesCarryCapacityLabelsAndOnlyConfiguredTaints) {
  NodePoolSpec spec;
  spec.gpus_per_node = 4;
  spec.labels = {{"zone", "a"}};
  spec.taints = {{"dedicated", "ml", "NoSchedule"}};
  json node = MakeNode(spec, 7);
  EXPECT_EQ(node["metadata"]["name"], "sim-node-7");
  EXPECT_EQ(node["metadata"]["labels"]["zone"], "a");
  EXPECT_EQ(node["metadata"]["labels"]["kubernetes.io/hostname"], "sim-node-7");
  EXPECT_EQ(node["status"]["allocatable"]["nvidia.com/gpu"], "4");
  EXPECT_EQ(node["status"]["capacity"]["pods"], "110");
  EXPECT_EQ(node["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(node["status"]["conditions"][0]["status"], "True");
  ASSERT_EQ(node["spec"]["taints"].size(), 1u);
  EXPECT_EQ(node["spec"]["taints"][0]["key"], "dedicated");
  EXPECT_NE(NodeAddress(0), NodeAddress(250));
}

TEST(NodeFactoryTest, ParsesLabelsAndTaintsAndRejectsNonsense) {
  auto labels = ParseLabels("a=b,c=d");
  ASSERT_TRUE(labels.ok());
  EXPECT_EQ(labels->at("c"), "d");
  EXPECT_FALSE(ParseLabels("novalue").ok());
  auto taints = ParseTaints("gpu=true:NoSchedule,spot:PreferNoSchedule");
  ASSERT_TRUE(taints.ok());
  ASSERT_EQ(taints->size(), 2u);
  EXPECT_EQ((*taints)[0].value, "true");
  EXPECT_EQ((*taints)[1].key, "spot");
  EXPECT_TRUE((*taints)[1].value.empty());
  EXPECT_NE(ParseTaints("a=b:Sometimes").status().message().find("effect"), std::string::npos);
  EXPECT_FALSE(ParseTaints("a=b").ok());
  NodePoolSpec bad;
  bad.cpu = "lots";
  EXPECT_NE(ValidateNodePool(bad).message().find("--cpu"), std::string::npos);
}

TEST(NodeFactoryTest, ALayoutLabelsZonesAndRacksInOrder) {
  NodePoolSpec spec;
  spec.gpus_per_node = 4;
  spec.layout = NodeLayout{2, 2, 2};  // 2 zones x 2 racks x 2 nodes
  spec.count = spec.layout.node_count();
  spec.gpu_product = "NVIDIA-A100-SXM4-80GB";
  ASSERT_TRUE(ValidateNodePool(spec).ok());
  const std::string zone = "topology.kubernetes.io/zone";
  const std::string rack = "topology.hybridjob.io/rack";
  EXPECT_EQ(NodeLabels(spec, 0).at(zone), "zone-0");
  EXPECT_EQ(NodeLabels(spec, 0).at(rack), "zone-0-rack-0");
  EXPECT_EQ(NodeLabels(spec, 1).at(rack), "zone-0-rack-0");
  EXPECT_EQ(NodeLabels(spec, 2).at(rack), "zone-0-rack-1");
  EXPECT_EQ(NodeLabels(spec, 5).at(zone), "zone-1");
  EXPECT_EQ(NodeLabels(spec, 5).at(rack), "zone-1-rack-0");
  EXPECT_EQ(NodeLabels(spec, 7).at(rack), "zone-1-rack-1");
  json node = MakeNode(spec, 6);
  EXPECT_EQ(node["metadata"]["labels"][rack], "zone-1-rack-1");
  EXPECT_EQ(node["metadata"]["labels"]["nvidia.com/gpu.product"], "NVIDIA-A100-SXM4-80GB");

  spec.labels = {{rack, "override"}};
  EXPECT_EQ(NodeLabels(spec, 0).at(rack), "override") << "--node-labels win";
  spec.gpus_per_node = 0;
  EXPECT_EQ(NodeLabels(spec, 0).count("nvidia.com/gpu.product"), 0u) << "no GPUs, no GPU model";

  NodePoolSpec none;
  EXPECT_TRUE(NodeLabels(none, 3).empty());

  NodePoolSpec mismatch = spec;
  mismatch.count = 5;
  EXPECT_NE(
      ValidateNodePool(mismatch).message().find("--nodes 5 does not match --zones 2 x "
                                                "--racks-per-zone 2 x --nodes-per-rack 2 = 8"),
      std::string::npos);
  NodePoolSpec no_racks = spec;
  no_racks.layout.racks_per_zone = 0;
  EXPECT_NE(ValidateNodePool(no_racks).message().find("--racks-per-zone"), std::string::npos);
  NodePoolSpec bad_product = spec;
  bad_product.gpu_product = "A100 80GB";
  EXPECT_NE(ValidateNodePool(bad_product).message().find("--gpu-product"), std::string::npos);
}

// The objects a pod's volumes name: claims (generic ephemeral ones by their
// <pod>-<volume> name), and ConfigMaps and Secrets unless optional.
TEST(KubeletTest, MountsAreTheClaimsConfigMapsAndSecretsAPodNeeds) {
  json pod = Pod();
  pod["spec"]["volumes"] = json::parse(R"([
    {"name": "data", "persistentVolumeClaim": {"claimName": "train-data"}},
    {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
    {"name": "cluster", "configMap": {"name": "train-cluster"}},
    {"name": "extra", "configMap": {"name": "maybe", "optional": true}},
    {"name": "ssh", "secret": {"secretName": "train-ssh"}},
    {"name": "tmp", "emptyDir": {}}])");
  auto decoded = DecodeSimPod(pod);
  ASSERT_TRUE(decoded.ok());
  ASSERT_EQ(decoded->mounts.size(), 4u);
  EXPECT_EQ(decoded->mounts[0].kind, SimMount::Kind::kClaim);
  EXPECT_EQ(decoded->mounts[0].object, "train-data");
  EXPECT_EQ(decoded->mounts[1].object, "p-scratch");
  EXPECT_EQ(decoded->mounts[2].kind, SimMount::Kind::kConfigMap);
  EXPECT_EQ(decoded->mounts[2].object, "train-cluster");
  EXPECT_EQ(decoded->mounts[3].kind, SimMount::Kind::kSecret);
  EXPECT_EQ(decoded->mounts[3].object, "train-ssh");

  EXPECT_EQ(MountFailureMessage(decoded->mounts[0], MountState::kUnbound),
            "Unable to attach or mount volumes: unmounted volumes=[data]: persistentvolumeclaim "
            "\"train-data\" is not bound");
  EXPECT_EQ(MountFailureMessage(decoded->mounts[2], MountState::kMissing),
            "MountVolume.SetUp failed for volume \"cluster\" : configmap \"train-cluster\" not "
            "found");
}

// Waiting for its volumes, an admitted pod is Pending with every container
// in ContainerCreating, as kubectl shows it.
TEST(KubeletTest, APodWaitingForItsVolumesIsContainerCreating) {
  auto pod = DecodeSimPod(Pod());
  ASSERT_TRUE(pod.ok());
  const json status = ContainerCreatingStatusPatch(*pod, kNow, "10.200.0.1")["status"];
  EXPECT_EQ(status["phase"], "Pending");
  EXPECT_EQ(status["hostIP"], "10.200.0.1");
  ASSERT_EQ(status["containerStatuses"].size(), 2u);
  EXPECT_EQ(status["containerStatuses"][0]["state"]["waiting"]["reason"], "ContainerCreating");
  EXPECT_FALSE(status.contains("podIP"));
  bool ready = true;
  for (const json& condition : status["conditions"]) {
    if (condition["type"] == "Ready") {
      ready = condition["status"] == "True";
    }
  }
  EXPECT_FALSE(ready);
}

}  // namespace
}  // namespace hybridjob::sim
