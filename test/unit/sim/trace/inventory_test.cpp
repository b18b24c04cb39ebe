#include <string>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/sim/trace/inventory.h>

namespace hybridjob::sim::trace {
namespace {

using ::testing::HasSubstr;

constexpr char kHeader[] = "name,gpus,cpu,memory,labels\n";

TEST(InventoryTest, ReadsNodesWithQuantitiesAndLabels) {
  auto nodes =
      ParseInventoryCsv(std::string("# two models, two racks\n") + kHeader +
                        "a100-0, 8, 96, 1Ti, example.com/rack=r0;nvidia.com/gpu.product=A100\n"
                        "\n"
                        "t4-0,4,32500m,256Gi,example.com/rack=r1\r\n"
                        "cpu-0,0,16,64Gi,\n");
  ASSERT_TRUE(nodes.ok()) << nodes.status().ToString();
  ASSERT_EQ(nodes->size(), 3u);
  const InventoryNode& a100 = (*nodes)[0];
  EXPECT_EQ(a100.name, "a100-0");
  EXPECT_EQ(a100.gpus, 8);
  EXPECT_EQ(a100.milli_cpu, 96000);
  EXPECT_EQ(a100.memory_bytes, int64_t{1} << 40);
  EXPECT_EQ(a100.labels.at("example.com/rack"), "r0");
  EXPECT_EQ(a100.labels.at("nvidia.com/gpu.product"), "A100");
  EXPECT_EQ((*nodes)[1].milli_cpu, 32500);
  EXPECT_EQ((*nodes)[1].labels.size(), 1u);
  EXPECT_TRUE((*nodes)[2].labels.empty());
  EXPECT_EQ(TotalGpus(*nodes), 12);
  EXPECT_EQ(LargestNodeGpus(*nodes), 8);
}

TEST(InventoryTest, BadLinesAreRefusedNamingTheLineAndField) {
  auto error = [](const std::string& body) {
    auto nodes = ParseInventoryCsv(std::string(kHeader) + body);
    return nodes.ok() ? std::string("accepted") : nodes.status().message();
  };
  EXPECT_EQ(error("n0,8,96,1Ti\n"), "line 2: expected 5 fields, found 4");
  EXPECT_EQ(error("N_0,8,96,1Ti,\n"), "line 2: name: \"N_0\" is not a DNS subdomain");
  EXPECT_EQ(error("n0,eight,96,1Ti,\n"), "line 2: gpus: \"eight\" is not an integer");
  EXPECT_EQ(error("n0,2000,96,1Ti,\n"), "line 2: gpus: must be in 0..1024");
  EXPECT_EQ(error("n0,8,0,1Ti,\n"), "line 2: cpu: \"0\" is not a positive quantity");
  EXPECT_EQ(error("n0,8,96,lots,\n"), "line 2: memory: \"lots\" is not a positive quantity");
  EXPECT_EQ(error("n0,8,96,1Ti,rack\n"), "line 2: labels: \"rack\" is not key=value");
  EXPECT_EQ(error("n0,8,96,1Ti,bad key=x\n"), "line 2: labels: \"bad key\" is not a label key");
  EXPECT_EQ(error("n0,8,96,1Ti,k=$(reboot)\n"),
            "line 2: labels: \"$(reboot)\" is not a label value (key k)");
  EXPECT_EQ(error("n0,8,96,1Ti,k=a;k=b\n"), "line 2: labels: k is given twice");
  EXPECT_EQ(error("n0,8,96,1Ti,\nn0,4,96,1Ti,\n"), "line 3: name: n0 is listed twice");
  EXPECT_THAT(ParseInventoryCsv("name,gpus\nn0,8\n").status().message(),
              HasSubstr("line 1: expected the header \"name,gpus,cpu,memory,labels\""));
  EXPECT_THAT(ParseInventoryCsv("# nothing\n").status().message(), HasSubstr("empty inventory"));
  EXPECT_EQ(ParseInventoryCsv(kHeader).status().message(), "the inventory lists no node");
}

}  // namespace
}  // namespace hybridjob::sim::trace
