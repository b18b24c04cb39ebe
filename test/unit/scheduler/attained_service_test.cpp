// Attained service (attained_service.h) and the AttainedService queue order in
// the policy cycle: the ledger across cycles, levels, the starvation guard,
// and who starts, grows and gives back first.
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/scheduler/core/attained_service.h>

#include "policy_fixture.h"

namespace hybridjob::scheduler {
namespace {

using testing::At;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Queue;
using testing::QueueSpecFor;

TEST(AttainedServiceTest, LevelsGrowByTheFactorFromTheFirstThreshold) {
  AttainedServiceSettings settings;
  std::vector<double> thresholds = ServiceThresholds(settings);
  EXPECT_THAT(thresholds, ElementsAre(3600, 36000, 360000));
  EXPECT_EQ(ServiceLevel(0, thresholds), 0);
  EXPECT_EQ(ServiceLevel(3599, thresholds), 0);
  EXPECT_EQ(ServiceLevel(3600 - 1e-6, thresholds), 1) << "summed spans are not exact";
  EXPECT_EQ(ServiceLevel(40000, thresholds), 2);
  EXPECT_EQ(ServiceLevel(1e12, thresholds), 3);
  settings.levels = 1;
  EXPECT_TRUE(ServiceThresholds(settings).empty());
  EXPECT_EQ(ServiceLevel(1e12, {}), 0);
}

TEST(AttainedServiceTest, RefusesSettingsOutOfRangeNamingTheField) {
  AttainedServiceSettings settings;
  EXPECT_TRUE(ValidateAttainedService(settings, "attainedService").ok());
  settings.levels = 0;
  EXPECT_EQ(ValidateAttainedService(settings, "attainedService").message(),
            "attainedService.levels: must be 1 to 16");
  settings = {};
  settings.threshold_factor = 1;
  EXPECT_THAT(ValidateAttainedService(settings, "attainedService").message(),
              HasSubstr("thresholdFactor"));
  settings = {};
  settings.first_threshold_gpu_hours = 0;
  EXPECT_THAT(ValidateAttainedService(settings, "attainedService").message(),
              HasSubstr("firstThresholdGpuHours"));
  settings = {};
  settings.promote_after_seconds = -1;
  EXPECT_THAT(ValidateAttainedService(settings, "attainedService").message(),
              HasSubstr("promoteAfterSeconds"));
}

TEST(AttainedServiceTest, AccountsWhatEachRecordHeldSinceItsLastAccount) {
  std::vector<ServiceRecord> records(2);
  records[0].gpu_seconds = 100;
  records[0].milli_gpus = 2500;  // 2.5 GPUs
  records[0].at = At(1000);
  records[1].at = At(1000);
  AccountService(records, At(1100));
  EXPECT_DOUBLE_EQ(records[0].gpu_seconds, 350);
  EXPECT_EQ(records[0].at, At(1100));
  EXPECT_DOUBLE_EQ(records[1].gpu_seconds, 0);
  AccountService(records, At(1050));  // never backwards
  EXPECT_DOUBLE_EQ(records[0].gpu_seconds, 350);
  EXPECT_EQ(FormatService(12), "12 GPU-s");
  EXPECT_EQ(FormatService(600), "10 GPU-min");
  EXPECT_EQ(FormatService(5 * 3600 + 360), "5.1 GPU-h");
}

// One queue `q` ordered by AttainedService, thresholds 1 and 10 GPU-hours.
class AttainedServiceOrderTest : public testing::PolicyTest {
 protected:
  AttainedServiceOrderTest() {
    QueueSpec queue = Queue("q");
    queue.order = QueueOrder::kAttainedService;
    policy_.queues = {queue};
    policy_.attained_service.levels = 3;
    policy_.attained_service.promote_after_seconds = 0;
  }

  void Served(const std::string& job, double gpu_seconds, int64_t last_held = 1000) {
    ServiceRecord record;
    record.namespace_name = "team";
    record.name = job;
    record.gpu_seconds = gpu_seconds;
    record.at = At(1000);
    record.last_held = At(last_held);
    state_.service.push_back(record);
  }

  static GroupSpec Rigid(int32_t members) {
    return QueueSpecFor("q", {GroupRole{"worker", members, members, 0}});
  }
  static GroupSpec Elastic(int32_t min, int32_t max) {
    return QueueSpecFor("q", {GroupRole{"worker", min, max, 0}});
  }

  const ServiceRecord* Record(const std::string& job) const {
    for (const ServiceRecord& record : state_.service) {
      if (record.name == job) {
        return &record;
      }
    }
    return nullptr;
  }
};

TEST_F(AttainedServiceOrderTest, TheLeastServedStartsFirstWhateverItsAge) {
  AddNodes("n", 1, 8);
  Served("old", 2 * 3600);  // level 1
  AddPending("old", Rigid(1), "worker", 0, 1, 8, /*created=*/10);
  AddPending("new", Rigid(1), "worker", 0, 1, 8, /*created=*/500);
  PolicyCycleResult result = Run();
  ASSERT_NE(Find(result, "new"), nullptr);
  EXPECT_TRUE(Find(result, "new")->plan.placed());
  EXPECT_FALSE(Find(result, "old")->plan.placed());
  EXPECT_EQ(Find(result, "old")->queue_position, 1);
}

TEST_F(AttainedServiceOrderTest, WithinALevelTheOldestGoesFirst) {
  AddNodes("n", 1, 8);
  Served("old", 600);  // still level 0
  AddPending("old", Rigid(1), "worker", 0, 1, 8, 10);
  AddPending("new", Rigid(1), "worker", 0, 1, 8, 500);
  PolicyCycleResult result = Run();
  EXPECT_TRUE(Find(result, "old")->plan.placed());
  EXPECT_FALSE(Find(result, "new")->plan.placed());
}

TEST_F(AttainedServiceOrderTest, OtherOrdersIgnoreTheService) {
  policy_.queues[0].order = QueueOrder::kBestEffortFifo;
  AddNodes("n", 1, 8);
  Served("old", 2 * 3600);
  AddPending("old", Rigid(1), "worker", 0, 1, 8, 10);
  AddPending("new", Rigid(1), "worker", 0, 1, 8, 500);
  PolicyCycleResult result = Run();
  EXPECT_TRUE(Find(result, "old")->plan.placed());
  EXPECT_TRUE(result.state.service.empty()) << "no queue orders by service: no ledger";
}

TEST_F(AttainedServiceOrderTest, AGroupThatWaitedLongEnoughIsPromotedToTheFirstLevel) {
  policy_.attained_service.promote_after_seconds = 600;
  AddNodes("n", 1, 8);
  Served("old", 2 * 3600, /*last_held=*/300);  // off the cluster for 700 s at t=1000
  AddPending("old", Rigid(1), "worker", 0, 1, 8, 10);
  AddPending("new", Rigid(1), "worker", 0, 1, 8, 500);
  PolicyCycleResult result = Run();
  EXPECT_TRUE(Find(result, "old")->plan.placed()) << "level 0 by the guard, and older";
  EXPECT_FALSE(Find(result, "new")->plan.placed());
}

TEST_F(AttainedServiceOrderTest, TheLedgerCountsWhatGroupsHoldAcrossCycles) {
  AddNodes("n", 1, 8);
  AddPending("a", Rigid(2), "worker", 0, 2, 2, 10);  // 4 GPUs
  Run(At(1000));
  ASSERT_NE(Record("a"), nullptr);
  EXPECT_DOUBLE_EQ(Record("a")->gpu_seconds, 0);
  EXPECT_EQ(Record("a")->milli_gpus, 4000);
  Run(At(1100));  // nothing pending: the record is kept and accounted
  EXPECT_DOUBLE_EQ(Record("a")->gpu_seconds, 400);
  // Its pods gone (the job ended): dropped once it held nothing for a while.
  ASSERT_TRUE(snapshot_.RemovePod("team", "a-worker-0").ok());
  ASSERT_TRUE(snapshot_.RemovePod("team", "a-worker-1").ok());
  Forget("a-worker-0");
  Forget("a-worker-1");
  Run(At(1200));
  ASSERT_NE(Record("a"), nullptr);
  EXPECT_DOUBLE_EQ(Record("a")->gpu_seconds, 800) << "held 4 GPUs until the pods went";
  // Last seen holding at t=1100.
  Run(At(1100 + kServiceForgetAfterSeconds - 1));
  EXPECT_NE(Record("a"), nullptr);
  Run(At(1100 + kServiceForgetAfterSeconds));
  EXPECT_EQ(Record("a"), nullptr);
}

TEST_F(AttainedServiceOrderTest, TheLeastServedGrowsFirst) {
  AddNodes("n", 1, 8);
  Served("more", 2 * 3600);
  Served("less", 60);
  AddRunning("more", Elastic(1, 4), "worker", 0, 1, 2, "n0", 0, 10);
  AddRunning("less", Elastic(1, 4), "worker", 0, 1, 2, "n0", 0, 500);
  AddPending("more", Elastic(1, 4), "worker", 1, 3, 2, 10);
  AddPending("less", Elastic(1, 4), "worker", 1, 3, 2, 500);
  PolicyCycleResult result = Run();
  // 4 GPUs free: both grow, the less served first, to its maximum.
  EXPECT_EQ(Find(result, "less")->grown, 2);
  EXPECT_EQ(Find(result, "more")->grown, 0);
}

TEST_F(AttainedServiceOrderTest, InItsQueueOnlyTheMoreServedGiveBack) {
  AddNodes("n", 1, 8);
  Served("long", 5 * 3600);  // level 1
  Served("short", 60);       // level 0
  AddRunning("long", Elastic(1, 2), "worker", 0, 2, 2, "n0", 0, 10);
  AddRunning("short", Elastic(1, 2), "worker", 0, 2, 2, "n0", 0, 20);
  // A new gang of 2 GPUs at level 0: the long-served job gives a member back.
  AddPending("new", Rigid(1), "worker", 0, 1, 2, 500);
  PolicyCycleResult result = Run();
  EXPECT_THAT(Evicted(result), ElementsAre("long-worker-1"));

  // A gang at level 1 waits: nobody of its level or below gives back to it.
  state_ = {};
  Served("long", 5 * 3600);
  Served("short", 60);
  Served("late", 4 * 3600, /*last_held=*/1000);
  ApplyEvictions(result);
  Forget("new-worker-0");
  AddRunning("long", Elastic(1, 2), "worker", 1, 1, 2, "n0", 0, 10);
  AddRunning("new", Rigid(1), "worker", 0, 1, 2, "n0", 0, 500);
  AddPending("late", Rigid(1), "worker", 0, 1, 2, 600);
  PolicyCycleResult second = Run();
  EXPECT_THAT(Evicted(second), ::testing::IsEmpty());
  EXPECT_FALSE(Find(second, "late")->plan.placed());
}

}  // namespace
}  // namespace hybridjob::scheduler
