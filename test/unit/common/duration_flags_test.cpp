#include <gtest/gtest.h>

#include <hybridjob/common/duration.h>
#include <hybridjob/common/flags.h>

namespace hybridjob {
namespace {

using std::chrono::milliseconds;

TEST(DurationTest, ParsesGoStyleDurations) {
  EXPECT_EQ(*ParseDuration("0"), milliseconds(0));
  EXPECT_EQ(*ParseDuration("300ms"), milliseconds(300));
  EXPECT_EQ(*ParseDuration("1.5s"), milliseconds(1500));
  EXPECT_EQ(*ParseDuration("2m30s"), milliseconds(150000));
  EXPECT_EQ(*ParseDuration("1h"), milliseconds(3600000));
  EXPECT_EQ(*ParseDuration("1h2m3s"), milliseconds(3723000));
  EXPECT_EQ(*ParseDuration("1500us"), milliseconds(2));  // rounded
  EXPECT_EQ(*ParseDuration("+5s"), milliseconds(5000));
}

TEST(DurationTest, RejectsBadInputWithTheText) {
  for (const char* bad : {"", "5", "s", "-1s", "1x", "1.2.3s", "abc", "1h-2m", ".s"}) {
    auto parsed = ParseDuration(bad);
    EXPECT_FALSE(parsed.ok()) << bad;
  }
  EXPECT_NE(ParseDuration("10parsecs").status().message().find("unknown unit"), std::string::npos);
}

TEST(DurationTest, NumbersBeyondADoubleAreRefusedNotThrown) {
  // A 400-digit number overflows a double; it used to escape as std::out_of_range.
  auto huge = ParseDuration(std::string(400, '9') + "s");
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.status().message().find("too long"), std::string::npos);
  // Too small for a double: rounds to zero instead of throwing.
  EXPECT_EQ(*ParseDuration("0." + std::string(400, '0') + "1s"), milliseconds(0));
}

TEST(DurationTest, FormatsShortestForm) {
  EXPECT_EQ(FormatDuration(milliseconds(0)), "0s");
  EXPECT_EQ(FormatDuration(milliseconds(250)), "250ms");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1.5s");
  EXPECT_EQ(FormatDuration(milliseconds(3723000)), "1h2m3s");
  EXPECT_EQ(FormatDuration(milliseconds(7200000)), "2h");
  EXPECT_EQ(*ParseDuration(FormatDuration(milliseconds(3723450))), milliseconds(3723450));
}

TEST(FlagSetTest, ParsesEveryKindAndPositionals) {
  std::string kubeconfig;
  int64_t nodes = 10;
  double qps = 5;
  bool keep = false;
  milliseconds every{1000};
  FlagSet flags("tool");
  flags.String("kubeconfig", &kubeconfig, "path");
  flags.Int("nodes", &nodes, "count");
  flags.Double("qps", &qps, "rate");
  flags.Bool("keep", &keep, "keep");
  flags.Duration("every", &every, "period");
  const char* argv[] = {"tool",  "run", "--kubeconfig", "/k",         "--nodes=20",
                        "--qps", "2.5", "--keep",       "--every=3s", "extra"};
  ASSERT_TRUE(flags.Parse(10, argv).ok());
  EXPECT_EQ(kubeconfig, "/k");
  EXPECT_EQ(nodes, 20);
  EXPECT_DOUBLE_EQ(qps, 2.5);
  EXPECT_TRUE(keep);
  EXPECT_EQ(every, milliseconds(3000));
  EXPECT_EQ(flags.positional(), (std::vector<std::string>{"run", "extra"}));
  EXPECT_TRUE(flags.WasSet("nodes"));
  EXPECT_FALSE(flags.help_requested());
}

// As kubectl create's "-- COMMAND": what follows "--" is kept apart, flags
// or not.
TEST(FlagSetTest, WhatFollowsADoubleDashIsACommand) {
  std::string port;
  FlagSet flags("tool");
  flags.String("port", &port, "port");
  const char* argv[] = {"tool", "serve", "job", "--port=80", "--", "python3", "-m", "--port=9"};
  ASSERT_TRUE(flags.Parse(8, argv).ok());
  EXPECT_EQ(port, "80");
  EXPECT_EQ(flags.positional(), (std::vector<std::string>{"serve", "job"}));
  EXPECT_EQ(flags.after_dash_dash(), (std::vector<std::string>{"python3", "-m", "--port=9"}));
}

TEST(FlagSetTest, ShorthandsTakeTheirValueAsKubectlDoes) {
  std::string ns = "default";
  std::string output;
  bool all = false;
  FlagSet flags("tool");
  flags.String("namespace", &ns, "namespace");
  flags.String("output", &output, "format");
  flags.Bool("all-namespaces", &all, "all");
  flags.Shorthand('n', "namespace");
  flags.Shorthand('o', "output");
  flags.Shorthand('A', "all-namespaces");
  const char* argv[] = {"tool", "status", "-n", "team-a", "-ojson", "-A", "job", "-"};
  ASSERT_TRUE(flags.Parse(8, argv).ok());
  EXPECT_EQ(ns, "team-a");
  EXPECT_EQ(output, "json");
  EXPECT_TRUE(all);
  EXPECT_EQ(flags.positional(), (std::vector<std::string>{"status", "job", "-"}));
  const char* equals[] = {"tool", "-n=team-b"};
  ASSERT_TRUE(flags.Parse(2, equals).ok());
  EXPECT_EQ(ns, "team-b");
  EXPECT_NE(flags.Usage().find("-n, --namespace value"), std::string::npos) << flags.Usage();

  const char* unknown[] = {"tool", "-x"};
  EXPECT_NE(flags.Parse(2, unknown).message().find("unknown flag -x"), std::string::npos);
  const char* missing[] = {"tool", "-n"};
  EXPECT_NE(flags.Parse(2, missing).message().find("--namespace needs a value"), std::string::npos);
}

TEST(FlagSetTest, ErrorsNameTheFlag) {
  int64_t nodes = 1;
  bool keep = false;
  FlagSet flags("tool");
  flags.Int("nodes", &nodes, "count");
  flags.Bool("keep", &keep, "keep");
  {
    const char* argv[] = {"tool", "--nodes", "many"};
    auto s = flags.Parse(3, argv);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find("--nodes"), std::string::npos);
  }
  {
    const char* argv[] = {"tool", "--nope"};
    EXPECT_NE(flags.Parse(2, argv).message().find("unknown flag --nope"), std::string::npos);
  }
  {
    const char* argv[] = {"tool", "--nodes"};
    EXPECT_NE(flags.Parse(2, argv).message().find("needs a value"), std::string::npos);
  }
  {
    const char* argv[] = {"tool", "--keep=maybe"};
    EXPECT_FALSE(flags.Parse(2, argv).ok());
  }
  {
    const char* argv[] = {"tool", "-h"};
    ASSERT_TRUE(flags.Parse(2, argv).ok());
    EXPECT_TRUE(flags.help_requested());
    EXPECT_NE(flags.Usage().find("--nodes value"), std::string::npos);
    EXPECT_NE(flags.Usage().find("(default 1)"), std::string::npos);
  }
}

// Both binaries declare their listeners with one helper, so their help says
// the same thing: each default, and what "0" does.
TEST(FlagSetTest, ServingFlagsGiveTheirDefaultsAndSayZeroDisablesThem) {
  ServingFlags serving{"0.0.0.0:10251", "0.0.0.0:10252"};
  FlagSet flags("controller");
  AddServingFlags(flags, &serving);
  const std::string usage = flags.Usage();
  EXPECT_NE(usage.find("--metrics-addr value      host:port of /metrics; \"0\" disables it "
                       "(default 0.0.0.0:10251)\n"),
            std::string::npos)
      << usage;
  EXPECT_NE(usage.find("--health-addr value       host:port of /healthz and /readyz; \"0\" "
                       "disables it (default 0.0.0.0:10252)\n"),
            std::string::npos)
      << usage;

  const char* argv[] = {"controller", "--metrics-addr", "0"};
  ASSERT_TRUE(flags.Parse(3, argv).ok());
  EXPECT_EQ(serving.metrics_addr, "0");
  EXPECT_EQ(serving.health_addr, "0.0.0.0:10252");
}

TEST(FlagSetTest, OverrideFlagsSayTheConfigurationFileSetsTheirDefault) {
  ServingFlags serving{"0.0.0.0:10261", "0.0.0.0:10262"};
  FlagSet flags("scheduler");
  AddServingOverrideFlags(flags, &serving, "--config");
  const std::string usage = flags.Usage();
  EXPECT_NE(usage.find("disables it (default metricsAddr of --config, else 0.0.0.0:10261)\n"),
            std::string::npos)
      << usage;
  EXPECT_NE(usage.find("disables it (default healthAddr of --config, else 0.0.0.0:10262)\n"),
            std::string::npos)
      << usage;
  const char* argv[] = {"scheduler"};
  ASSERT_TRUE(flags.Parse(1, argv).ok());
  EXPECT_FALSE(flags.WasSet("metrics-addr")) << "unset, the file's value stands";
}

TEST(FlagSetTest, ADescribedDefaultReplacesAnEmptyOne) {
  std::string kubeconfig;
  FlagSet flags("tool");
  flags.String("kubeconfig", &kubeconfig, "kubeconfig file");
  EXPECT_EQ(flags.Usage().find("(default"), std::string::npos);
  flags.DescribeDefault("kubeconfig", "$KUBECONFIG, else in-cluster");
  EXPECT_NE(flags.Usage().find("kubeconfig file (default $KUBECONFIG, else in-cluster)\n"),
            std::string::npos)
      << flags.Usage();
}

}  // namespace
}  // namespace hybridjob
