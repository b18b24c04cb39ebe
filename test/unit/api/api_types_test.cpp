#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/api/names.h>
#include <hybridjob/api/time.h>
#include <hybridjob/api/types.h>

namespace hybridjob::api {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

TEST(ApiEnumsTest, EverySpellingRoundTrips) {
  for (std::string_view text : AllFrameworks()) {
    ASSERT_TRUE(ParseFramework(text).has_value()) << text;
    EXPECT_EQ(ToString(*ParseFramework(text)), text);
  }
  for (std::string_view text : AllRestartPolicies()) {
    ASSERT_TRUE(ParseRestartPolicy(text).has_value()) << text;
    EXPECT_EQ(ToString(*ParseRestartPolicy(text)), text);
  }
  for (std::string_view text : AllCleanPodPolicies()) {
    EXPECT_EQ(ToString(*ParseCleanPodPolicy(text)), text);
  }
  for (std::string_view text : AllSuccessOperators()) {
    EXPECT_EQ(ToString(*ParseSuccessOperator(text)), text);
  }
  for (std::string_view text : AllJobPhases()) {
    EXPECT_EQ(ToString(*ParseJobPhase(text)), text);
  }
  for (std::string_view text : AllTopologyModes()) {
    EXPECT_EQ(ToString(*ParseTopologyMode(text)), text);
  }
  EXPECT_FALSE(ParseTopologyMode("required").has_value());
}

TEST(ApiEnumsTest, SpellingsAreExact) {
  EXPECT_FALSE(ParseFramework("TensorFlow").has_value());
  EXPECT_FALSE(ParseFramework("tf").has_value());
  EXPECT_FALSE(ParseRestartPolicy("onfailure").has_value());
  EXPECT_FALSE(ParseCleanPodPolicy("").has_value());
  EXPECT_EQ(AllFrameworks().size(), 5u);
  EXPECT_EQ(AllJobPhases().size(), 7u);
}

TEST(ApiEnumsTest, TerminalPhases) {
  EXPECT_TRUE(IsTerminal(JobPhase::kSucceeded));
  EXPECT_TRUE(IsTerminal(JobPhase::kFailed));
  EXPECT_FALSE(IsTerminal(JobPhase::kRunning));
  EXPECT_FALSE(IsTerminal(JobPhase::kRestarting));
  EXPECT_FALSE(IsTerminal(JobPhase::kQueued));
  EXPECT_FALSE(IsTerminal(JobPhase::kSuspended));
}

TEST(ApiEnumsTest, FrameworkPorts) {
  EXPECT_EQ(DefaultPort(Framework::kTensorFlow), 2222);
  EXPECT_EQ(DefaultPort(Framework::kPyTorch), 23456);
  EXPECT_EQ(DefaultPort(Framework::kMXNet), 9091);
  EXPECT_EQ(DefaultPort(Framework::kMPI), 2222);
  EXPECT_EQ(DefaultPort(Framework::kGeneric), 2222);
}

TEST(ApiTimeTest, FormatsUtcWholeSeconds) {
  TimePoint epoch{};
  EXPECT_EQ(FormatTime(epoch), "1970-01-01T00:00:00Z");
  TimePoint time = std::chrono::sys_days(std::chrono::year(2024) / 2 / 29) + hours(23) +
                   std::chrono::minutes(5) + seconds(9);
  EXPECT_EQ(FormatTime(time), "2024-02-29T23:05:09Z");
}

TEST(ApiTimeTest, ParsesWhatItFormats) {
  TimePoint time =
      std::chrono::sys_days(std::chrono::year(2031) / 12 / 31) + hours(13) + seconds(59);
  std::optional<TimePoint> parsed = ParseTime(FormatTime(time));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(*parsed, time);
}

TEST(ApiTimeTest, AcceptsFractionsAndOffsets) {
  std::optional<TimePoint> base = ParseTime("2024-05-01T12:00:00Z");
  ASSERT_TRUE(base.has_value());
  EXPECT_EQ(ParseTime("2024-05-01T12:00:00.123456Z"), base);
  EXPECT_EQ(ParseTime("2024-05-01T14:00:00+02:00"), base);
  EXPECT_EQ(ParseTime("2024-05-01T07:30:00-04:30"), base);
}

TEST(ApiTimeTest, RejectsMalformedText) {
  for (const char* text :
       {"", "2024-05-01", "2024-05-01T12:00:00", "2024-13-01T00:00:00Z", "2024-02-30T00:00:00Z",
        "2024-05-01T24:00:00Z", "2024-05-01T12:00Z", "2024-05-01T12:00:00Zjunk",
        "2024-05-01T12:00:00.Z", "2024-05-01 12:00:00Z"}) {
    EXPECT_FALSE(ParseTime(text).has_value()) << text;
  }
}

TEST(ApiNamesTest, Dns1035Labels) {
  EXPECT_TRUE(IsDns1035Label("worker"));
  EXPECT_TRUE(IsDns1035Label("ps-2"));
  EXPECT_TRUE(IsDns1035Label(std::string(63, 'a')));
  EXPECT_FALSE(IsDns1035Label(std::string(64, 'a')));
  EXPECT_FALSE(IsDns1035Label(""));
  EXPECT_FALSE(IsDns1035Label("2workers"));
  EXPECT_FALSE(IsDns1035Label("Worker"));
  EXPECT_FALSE(IsDns1035Label("worker-"));
  EXPECT_FALSE(IsDns1035Label("work_er"));
  EXPECT_FALSE(IsDns1035Label("work.er"));
}

TEST(ApiNamesTest, Dns1123LabelsAndSubdomains) {
  EXPECT_TRUE(IsDns1123Label("0data"));
  EXPECT_FALSE(IsDns1123Label("-data"));
  EXPECT_TRUE(IsDns1123Subdomain("gang-scheduler"));
  EXPECT_TRUE(IsDns1123Subdomain("fast.ssd.example.com"));
  EXPECT_FALSE(IsDns1123Subdomain("fast..ssd"));
  EXPECT_FALSE(IsDns1123Subdomain(".fast"));
  EXPECT_FALSE(IsDns1123Subdomain("fast."));
  EXPECT_FALSE(IsDns1123Subdomain(std::string(254, 'a')));
}

TEST(ApiNamesTest, DerivedNames) {
  EXPECT_EQ(MemberPodName("mnist", "worker", 3), "mnist-worker-3");
  EXPECT_EQ(MemberPodName("mnist", "worker", 3, 0), "mnist-worker-3");
  EXPECT_EQ(MemberPodName("mnist", "worker", 3, 12), "mnist-worker-3-run12")
      << "a later run's pods leave the ended ones of earlier runs their names";
  EXPECT_EQ(MemberHostname("mnist", "worker", 3), "mnist-worker-3");
  EXPECT_EQ(HeadlessServiceName("mnist"), "mnist");
  EXPECT_EQ(ClusterConfigMapName("mnist"), "mnist-cluster");
  EXPECT_EQ(VolumeClaimName("mnist", "data"), "mnist-data");
  EXPECT_EQ(TensorboardName("mnist"), "mnist-tensorboard");
  EXPECT_EQ(MemberHost("mnist", "team-a", "ps", 0), "mnist-ps-0.mnist.team-a.svc");
}

}  // namespace
}  // namespace hybridjob::api
