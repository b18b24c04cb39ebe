#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/gpu_resources.h>

namespace hybridjob::scheduler {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

ResourceList Gpus(int64_t whole, int64_t amd, int64_t mig, int64_t fpga = 0) {
  ResourceList list;
  list.SetScalar("nvidia.com/gpu", whole);
  list.SetScalar("amd.com/gpu", amd);
  list.SetScalar("nvidia.com/mig-1g.10gb", mig);
  list.SetScalar("example.com/fpga", fpga);
  return list;
}

GpuResources Weighted() {
  Result<GpuResources> gpus = GpuResources::Make(
      {{"nvidia.com/gpu", 1}, {"amd.com/gpu", 1}, {"nvidia.com/mig-1g.10gb", 0.125}},
      "gpuResources");
  EXPECT_TRUE(gpus.ok()) << gpus.status().ToString();
  return gpus.ok() ? *gpus : GpuResources();
}

TEST(GpuResourcesTest, DefaultIsOneWholeNvidiaGpu) {
  GpuResources gpus;
  EXPECT_THAT(gpus.Names(), ElementsAre("nvidia.com/gpu"));
  EXPECT_EQ(gpus.MilliGpus(Gpus(2, 3, 8)), 2000);
}

TEST(GpuResourcesTest, SumsEveryConfiguredResourceByItsWeight) {
  GpuResources gpus = Weighted();
  EXPECT_EQ(gpus.MilliGpus(Gpus(2, 3, 0)), 5000);
  // Eight slices of an eighth are one GPU; what is not configured counts nothing.
  EXPECT_EQ(gpus.MilliGpus(Gpus(0, 0, 8, 7)), 1000);
  EXPECT_EQ(gpus.MilliGpus(Gpus(1, 0, 3)), 1375);
  EXPECT_EQ(gpus.MilliGpus(ResourceList{}), 0);
  EXPECT_TRUE(gpus.AnyIn(Gpus(0, 0, 1)));
  EXPECT_FALSE(gpus.AnyIn(Gpus(0, 0, 0, 4)));
  EXPECT_EQ(GpuResources::Uniform({"amd.com/gpu"}).MilliGpus(Gpus(2, 3, 8)), 3000);
}

TEST(GpuResourcesTest, RefusesWhatCannotBeAWeightedExtendedResource) {
  auto refusal = [](std::vector<std::pair<std::string, double>> weights) {
    Result<GpuResources> gpus = GpuResources::Make(weights, "gpuResources");
    return gpus.ok() ? std::string() : gpus.status().message();
  };
  EXPECT_EQ(refusal({}), "gpuResources: name at least one resource");
  EXPECT_THAT(refusal({{"gpu", 1}}), HasSubstr("\"gpu\" is not an extended resource name"));
  EXPECT_THAT(refusal({{"nvidia.com/gpu", 1}, {"nvidia.com/gpu", 2}}),
              HasSubstr("\"nvidia.com/gpu\" is listed twice"));
  for (double weight : {0.0, -1.0, 0.0004, 1001.0, std::numeric_limits<double>::infinity(),
                        std::numeric_limits<double>::quiet_NaN()}) {
    EXPECT_EQ(refusal({{"nvidia.com/gpu", weight}}),
              "gpuResources.nvidia.com/gpu: the weight (GPUs per unit) must be between 0.001 "
              "and 1000")
        << weight;
  }
  EXPECT_EQ(refusal({{"nvidia.com/mig-1g.5gb", 1.0 / 7}}), "");
  // A seventh is kept to the nearest thousandth.
  EXPECT_EQ(
      GpuResources::Make({{"nvidia.com/mig-1g.5gb", 1.0 / 7}}, "x")->entries()[0].milli_weight,
      143);
}

TEST(GpuResourcesTest, FormatsThousandthsAsAGpuCount) {
  EXPECT_EQ(FormatMilliGpus(0), "0");
  EXPECT_EQ(FormatMilliGpus(12000), "12");
  EXPECT_EQ(FormatMilliGpus(500), "0.5");
  EXPECT_EQ(FormatMilliGpus(1125), "1.125");
  EXPECT_EQ(FormatMilliGpus(2050), "2.05");
  EXPECT_EQ(FormatMilliGpus(-1500), "-1.5");
  EXPECT_EQ(FormatGpuCount(1000), "1 GPU");
  EXPECT_EQ(FormatGpuCount(16000), "16 GPUs");
  EXPECT_EQ(FormatGpuCount(125), "0.125 GPUs");
}

}  // namespace
}  // namespace hybridjob::scheduler
