#include <gtest/gtest.h>

#include <hybridjob/sim/kubelet_server.h>
#include <hybridjob/sim/node_factory.h>

namespace hybridjob::sim {
namespace {

std::string Selected(std::string_view contents, const ContainerLogOptions& options) {
  const LogByteRange range = SelectLogBytes(contents, options);
  return std::string(contents.substr(range.offset, range.length));
}

ContainerLogOptions Tail(int64_t lines) {
  ContainerLogOptions options;
  options.tail_lines = lines;
  return options;
}

TEST(ContainerLogRequestTest, ReadsThePathAndTheApiServersParameters) {
  auto parsed = ParseContainerLogRequest(
      "/containerLogs/team-a/job-worker-0/trainer",
      "follow=true&previous=true&timestamps=true&tailLines=10&limitBytes=500&sinceSeconds=60");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->request.namespace_name, "team-a");
  EXPECT_EQ(parsed->request.pod, "job-worker-0");
  EXPECT_EQ(parsed->request.container, "trainer");
  EXPECT_TRUE(parsed->request.previous);
  EXPECT_TRUE(parsed->options.follow);
  EXPECT_TRUE(parsed->options.timestamps);
  EXPECT_EQ(parsed->options.tail_lines, 10);
  EXPECT_EQ(parsed->options.limit_bytes, 500);
  EXPECT_EQ(parsed->options.since_seconds, 60);
}

TEST(ContainerLogRequestTest, NoQueryMeansTheWholeLogOnce) {
  auto parsed = ParseContainerLogRequest("/containerLogs/ns/p/c", "");
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(parsed->request.previous);
  EXPECT_FALSE(parsed->options.follow);
  EXPECT_FALSE(parsed->options.tail_lines.has_value());
  EXPECT_FALSE(parsed->options.limit_bytes.has_value());
}

TEST(ContainerLogRequestTest, DecodesEscapesAndReadsBooleansAsTheKubeletDoes) {
  auto parsed = ParseContainerLogRequest("/containerLogs/n%2Ds/p/c",
                                         "follow=0&previous=FALSE&timestamps=&sinceTime=2024-01-"
                                         "01T00%3A00%3A00Z");
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->request.namespace_name, "n-s");
  EXPECT_FALSE(parsed->options.follow);
  EXPECT_FALSE(parsed->request.previous);
  EXPECT_TRUE(parsed->options.timestamps);  // present with no value: true, as in Go
  EXPECT_EQ(parsed->options.since_time, "2024-01-01T00:00:00Z");
  // The first of repeated values counts.
  parsed = ParseContainerLogRequest("/containerLogs/ns/p/c", "tailLines=3&tailLines=5");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->options.tail_lines, 3);
}

TEST(ContainerLogRequestTest, TakesTheLegacyTailParameter) {
  auto parsed = ParseContainerLogRequest("/containerLogs/ns/p/c", "tail=7");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->options.tail_lines, 7);
  parsed = ParseContainerLogRequest("/containerLogs/ns/p/c", "tailLines=4&tail=all");
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(parsed->options.tail_lines.has_value());
}

TEST(ContainerLogRequestTest, OtherPathsAreNotFound) {
  for (const char* path : {"/", "/containerLogs/ns/p", "/containerLogs/ns/p/c/extra",
                           "/logs/ns/p/c", "/containerlogs/ns/p/c"}) {
    auto parsed = ParseContainerLogRequest(path, "");
    ASSERT_FALSE(parsed.ok()) << path;
    EXPECT_EQ(parsed.status().code(), StatusCode::kNotFound) << path;
  }
  auto empty = ParseContainerLogRequest("/containerLogs/ns//c", "");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
}

TEST(ContainerLogRequestTest, RefusesBadParametersWithTheirName) {
  struct Case {
    const char* query;
    const char* names;
  };
  for (const Case& c : {Case{"tailLines=-1", "tailLines"}, Case{"tailLines=ten", "tailLines"},
                        Case{"tailLines=1x", "tailLines"}, Case{"limitBytes=0", "limitBytes"},
                        Case{"sinceSeconds=0", "sinceSeconds"},
                        Case{"sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z", "sinceSeconds"},
                        Case{"tail=-3", "tailLines"}}) {
    auto parsed = ParseContainerLogRequest("/containerLogs/ns/p/c", c.query);
    ASSERT_FALSE(parsed.ok()) << c.query;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << c.query;
    EXPECT_NE(parsed.status().message().find(c.names), std::string::npos)
        << c.query << ": " << parsed.status().message();
  }
}

TEST(StreamingRequestTest, ReadsTheKubeletsStreamingPaths) {
  struct Case {
    const char* path;
    StreamingKind kind;
    const char* container;
  };
  for (const Case& c : {Case{"/exec/ns/p/c", StreamingKind::kExec, "c"},
                        Case{"/exec/ns/p/uid-1/c", StreamingKind::kExec, "c"},
                        Case{"/attach/ns/p/c", StreamingKind::kAttach, "c"},
                        Case{"/attach/ns/p/uid-1/c", StreamingKind::kAttach, "c"},
                        Case{"/run/ns/p/c", StreamingKind::kRun, "c"},
                        Case{"/portForward/ns/p", StreamingKind::kPortForward, ""},
                        Case{"/portForward/ns/p/uid-1", StreamingKind::kPortForward, ""}}) {
    auto parsed = ParseStreamingRequest(c.path);
    ASSERT_TRUE(parsed.ok()) << c.path << ": " << parsed.status().ToString();
    EXPECT_EQ(parsed->kind, c.kind) << c.path;
    EXPECT_EQ(parsed->namespace_name, "ns") << c.path;
    EXPECT_EQ(parsed->pod, "p") << c.path;
    EXPECT_EQ(parsed->container, c.container) << c.path;
  }
  auto escaped = ParseStreamingRequest("/exec/n%2Ds/p/c%2D1");
  ASSERT_TRUE(escaped.ok());
  EXPECT_EQ(escaped->namespace_name, "n-s");
  EXPECT_EQ(escaped->container, "c-1");
}

TEST(StreamingRequestTest, OtherPathsAreNotFound) {
  for (const char* path :
       {"/", "/exec/ns/p", "/exec/ns/p/u/c/extra", "/portForward/ns", "/portForward/ns/p/u/x",
        "/containerLogs/ns/p/c", "/Exec/ns/p/c", "/stats/summary"}) {
    auto parsed = ParseStreamingRequest(path);
    ASSERT_FALSE(parsed.ok()) << path;
    EXPECT_EQ(parsed.status().code(), StatusCode::kNotFound) << path;
  }
  auto empty = ParseStreamingRequest("/exec/ns//c");
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
}

TEST(StreamingRefusalTest, SaysWhatEachModeSupportsInstead) {
  const StreamingRequest exec{StreamingKind::kExec, "ns", "job-worker-0", "trainer"};
  const std::string simulated = StreamingRefusalMessage(exec, KubeletMode::kSimulated);
  EXPECT_EQ(simulated,
            "cannot exec into container \"trainer\" of pod \"job-worker-0\": this member is "
            "simulated by hybridjob-sim and no process runs, so there is nothing to exec into; "
            "kubectl logs job-worker-0 -c trainer shows what the member was given, and "
            "hybridjob-sim --exec runs members as local processes");
  const std::string processes = StreamingRefusalMessage(exec, KubeletMode::kExec);
  EXPECT_EQ(processes,
            "cannot exec into container \"trainer\" of pod \"job-worker-0\": hybridjob-sim "
            "--exec runs this member as local processes but does not implement the kubelet's "
            "exec, attach and port-forward streaming; kubectl logs job-worker-0 -c trainer shows "
            "its output");

  const StreamingRequest attach{StreamingKind::kAttach, "ns", "p", "c"};
  EXPECT_EQ(StreamingRefusalMessage(attach, KubeletMode::kSimulated)
                .find("cannot attach to container \"c\" of pod \"p\""),
            0u);
  const StreamingRequest forward{StreamingKind::kPortForward, "ns", "p", ""};
  const std::string refused = StreamingRefusalMessage(forward, KubeletMode::kExec);
  EXPECT_EQ(refused.find("cannot forward ports to pod \"p\": "), 0u) << refused;
  EXPECT_NE(refused.find("kubectl logs p shows its output"), std::string::npos) << refused;
  EXPECT_NE(refused.find("listen on the pod's IP"), std::string::npos) << refused;
}

TEST(StreamingRefusalTest, TheBodyIsAStatusClientGoDecodes) {
  const nlohmann::json status =
      nlohmann::json::parse(FailureStatusJson(400, "BadRequest", "cannot \"exec\""));
  EXPECT_EQ(status, (nlohmann::json{{"kind", "Status"},
                                    {"apiVersion", "v1"},
                                    {"metadata", nlohmann::json::object()},
                                    {"status", "Failure"},
                                    {"message", "cannot \"exec\""},
                                    {"reason", "BadRequest"},
                                    {"code", 400}}));
}

TEST(LogBytesTest, WithoutOptionsEverything) {
  EXPECT_EQ(Selected("a\nb\n", {}), "a\nb\n");
  EXPECT_EQ(Selected("", {}), "");
}

TEST(LogBytesTest, TailLinesCountsLinesFromTheEnd) {
  EXPECT_EQ(Selected("a\nb\nc\n", Tail(1)), "c\n");
  EXPECT_EQ(Selected("a\nb\nc\n", Tail(2)), "b\nc\n");
  EXPECT_EQ(Selected("a\nb\nc\n", Tail(3)), "a\nb\nc\n");
  EXPECT_EQ(Selected("a\nb\nc\n", Tail(10)), "a\nb\nc\n");
  EXPECT_EQ(Selected("a\nb\nc\n", Tail(0)), "");
  EXPECT_EQ(Selected("", Tail(3)), "");
  EXPECT_EQ(Selected("\n", Tail(1)), "\n");
  EXPECT_EQ(Selected("a\n\n\n", Tail(2)), "\n\n");
}

TEST(LogBytesTest, AnUnfinishedLastLineIsALine) {
  EXPECT_EQ(Selected("a\nb\nhalf", Tail(1)), "half");
  EXPECT_EQ(Selected("a\nb\nhalf", Tail(2)), "b\nhalf");
  EXPECT_EQ(Selected("half", Tail(1)), "half");
}

TEST(LogBytesTest, LimitBytesCutsWhatTailLinesChose) {
  ContainerLogOptions options = Tail(2);
  options.limit_bytes = 3;
  EXPECT_EQ(Selected("one\ntwo\nthree\n", options), "two");
  options.tail_lines.reset();
  EXPECT_EQ(Selected("one\ntwo\n", options), "one");
  options.limit_bytes = 100;
  EXPECT_EQ(Selected("one\ntwo\n", options), "one\ntwo\n");
  const LogByteRange range = SelectLogBytes("one\ntwo\nthree\n", Tail(1));
  EXPECT_EQ(range.offset, 8u);
  EXPECT_EQ(range.length, 6u);
}

TEST(NodeFactoryTest, AKubeletEndpointGivesTheNodeItsAddressAndPort) {
  NodePoolSpec spec;
  spec.kubelet_port = 10250;
  nlohmann::json node = MakeNode(spec, 3);
  EXPECT_EQ(node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"], 10250);
  EXPECT_EQ(node["status"]["addresses"][0]["type"], "InternalIP");
  EXPECT_EQ(node["status"]["addresses"][0]["address"], "127.0.0.1");
  EXPECT_EQ(NodeAddress(spec, 3), "127.0.0.1");
  EXPECT_TRUE(ValidateNodePool(spec).ok());

  NodePoolSpec without;
  node = MakeNode(without, 3);
  EXPECT_FALSE(node["status"].contains("daemonEndpoints"));
  EXPECT_EQ(node["status"]["addresses"][0]["address"], NodeAddress(3));
  EXPECT_EQ(NodeAddress(without, 3), NodeAddress(3));

  spec.kubelet_port = 70000;
  EXPECT_FALSE(ValidateNodePool(spec).ok());
  spec.kubelet_port = 10250;
  spec.kubelet_address.clear();
  EXPECT_FALSE(ValidateNodePool(spec).ok());
}

}  // namespace
}  // namespace hybridjob::sim
