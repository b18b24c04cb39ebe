#include <gtest/gtest.h>

#include <hybridjob/scheduler/objects/resources.h>

namespace hybridjob::scheduler {
namespace {

using nlohmann::json;

TEST(ResourceListTest, ScalarsStaySortedAndDefaultToZero) {
  ResourceList list;
  list.SetScalar("nvidia.com/gpu", 2);
  list.SetScalar("example.com/fpga", 1);
  list.AddScalar("nvidia.com/gpu", 3);
  ASSERT_EQ(list.scalars().size(), 2u);
  EXPECT_EQ(list.scalars()[0].name, "example.com/fpga");
  EXPECT_EQ(list.Scalar("nvidia.com/gpu"), 5);
  EXPECT_EQ(list.Scalar("amd.com/gpu"), 0);
}

TEST(ResourceListTest, GetAndSetByKubernetesName) {
  ResourceList list;
  list.Set("cpu", 1500);
  list.Set("memory", 1024);
  list.Set("ephemeral-storage", 2048);
  list.Set("pods", 3);
  list.Set("hugepages-2Mi", 4);
  EXPECT_EQ(list.milli_cpu, 1500);
  EXPECT_EQ(list.memory, 1024);
  EXPECT_EQ(list.ephemeral_storage, 2048);
  EXPECT_EQ(list.pods, 3);
  EXPECT_EQ(list.Get("hugepages-2Mi"), 4);
  EXPECT_EQ(list.Get("cpu"), 1500);
}

TEST(ResourceListTest, AddSubtractAndMax) {
  ResourceList a;
  a.milli_cpu = 1000;
  a.memory = 10;
  a.SetScalar("nvidia.com/gpu", 1);
  ResourceList b;
  b.milli_cpu = 500;
  b.pods = 1;
  b.SetScalar("example.com/fpga", 2);

  ResourceList sum = a + b;
  EXPECT_EQ(sum.milli_cpu, 1500);
  EXPECT_EQ(sum.memory, 10);
  EXPECT_EQ(sum.pods, 1);
  EXPECT_EQ(sum.Scalar("nvidia.com/gpu"), 1);
  EXPECT_EQ(sum.Scalar("example.com/fpga"), 2);
  EXPECT_EQ(sum - b, a);  // zero scalars left behind compare equal to absent ones

  ResourceList max = a;
  max.SetToMax(b);
  EXPECT_EQ(max.milli_cpu, 1000);
  EXPECT_EQ(max.pods, 1);
  EXPECT_EQ(max.Scalar("example.com/fpga"), 2);
  EXPECT_EQ(max.Scalar("nvidia.com/gpu"), 1);
}

TEST(ResourceListTest, IsZeroAndToString) {
  ResourceList list;
  EXPECT_TRUE(list.IsZero());
  list.SetScalar("nvidia.com/gpu", 0);
  EXPECT_TRUE(list.IsZero());
  list.milli_cpu = 1500;
  list.memory = int64_t{16} << 30;
  list.pods = 1;
  list.SetScalar("nvidia.com/gpu", 2);
  EXPECT_FALSE(list.IsZero());
  EXPECT_EQ(list.ToString(), "cpu=1500m memory=16Gi nvidia.com/gpu=2 pods=1");
}

TEST(FirstInsufficientResourceTest, ReportsTheFirstShortResource) {
  ResourceList allocatable;
  allocatable.milli_cpu = 4000;
  allocatable.memory = 8;
  allocatable.ephemeral_storage = 8;
  allocatable.pods = 2;
  allocatable.SetScalar("nvidia.com/gpu", 4);
  ResourceList used;
  used.milli_cpu = 3000;
  used.pods = 1;
  used.SetScalar("nvidia.com/gpu", 3);

  ResourceList request;
  request.pods = 1;
  request.milli_cpu = 1000;
  request.SetScalar("nvidia.com/gpu", 1);
  EXPECT_EQ(FirstInsufficientResource(request, used, allocatable), "");

  request.SetScalar("nvidia.com/gpu", 2);
  EXPECT_EQ(FirstInsufficientResource(request, used, allocatable), "nvidia.com/gpu");
  request.milli_cpu = 1001;
  EXPECT_EQ(FirstInsufficientResource(request, used, allocatable), "cpu");
  used.pods = 2;
  EXPECT_EQ(FirstInsufficientResource(request, used, allocatable), "pods");

  ResourceList memory_request;
  memory_request.memory = 9;
  EXPECT_EQ(FirstInsufficientResource(memory_request, {}, allocatable), "memory");
  ResourceList storage_request;
  storage_request.ephemeral_storage = 9;
  EXPECT_EQ(FirstInsufficientResource(storage_request, {}, allocatable), "ephemeral-storage");
}

TEST(FirstInsufficientResourceTest, MissingScalarOnNodeCountsAsZero) {
  ResourceList request;
  request.SetScalar("example.com/fpga", 1);
  EXPECT_EQ(FirstInsufficientResource(request, {}, {}), "example.com/fpga");
  request.SetScalar("example.com/fpga", 0);
  EXPECT_EQ(FirstInsufficientResource(request, {}, {}), "");
}

TEST(ParseResourceListTest, ReadsStringsAndNumbers) {
  Result<ResourceList> parsed = ParseResourceList(json::parse(
      R"({"cpu":"1500m","memory":"16Gi","ephemeral-storage":"1G","pods":110,
          "nvidia.com/gpu":"8","example.com/fpga":2,"hugepages-2Mi":"0"})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->milli_cpu, 1500);
  EXPECT_EQ(parsed->memory, int64_t{16} << 30);
  EXPECT_EQ(parsed->ephemeral_storage, 1000000000);
  EXPECT_EQ(parsed->pods, 110);
  EXPECT_EQ(parsed->Scalar("nvidia.com/gpu"), 8);
  EXPECT_EQ(parsed->Scalar("example.com/fpga"), 2);

  Result<ResourceList> fractional = ParseResourceList(json::parse(R"({"cpu":0.5})"));
  ASSERT_TRUE(fractional.ok()) << fractional.status().ToString();
  EXPECT_EQ(fractional->milli_cpu, 500);
  EXPECT_TRUE(ParseResourceList(json()).ok());
}

TEST(ParseResourceListTest, RefusesBadInput) {
  for (const char* text : {R"([1,2])", R"({"cpu":"lots"})", R"({"cpu":true})",
                           R"({"memory":"-1Gi"})", R"({"cpu":{"a":1}})", R"("2")"}) {
    Result<ResourceList> parsed = ParseResourceList(json::parse(text));
    EXPECT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
  }
}

}  // namespace
}  // namespace hybridjob::scheduler
