// The simulated kubelet's log endpoint, alone and behind the real
// kube-apiserver (pods/log, as kubectl logs reads it).
// cpprestsdk's U() macro would break fmt (spdlog) templates.
#define _TURN_OFF_PLATFORM_STRING  // NOLINT(bugprone-reserved-identifier): cpprestsdk's name

#include <array>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include <cpprest/http_client.h>
#include <gtest/gtest.h>

#include <hybridjob/sim/kubelet_server.h>
#include <hybridjob/sim/node_factory.h>

#include "test_cluster.h"

namespace hybridjob::sim {
namespace {

using hybridjob::testing::AdminClient;
using hybridjob::testing::TestNamespace;
using hybridjob::testing::WaitFor;
using nlohmann::json;
using namespace std::chrono_literals;

// A log file and a running flag per known container, the way the sim's
// runtime would answer for its processes.
class FakeLogs {
 public:
  FakeLogs() {
    std::random_device random;
    dir_ = std::filesystem::temp_directory_path() /
           ("kubelet-logs-test-" + std::to_string(random()) + std::to_string(random()));
    std::filesystem::create_directories(dir_);
  }
  ~FakeLogs() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Known: namespace `ns`, pod `pod`, container `container`.
  void Add(const std::string& ns, const std::string& pod, const std::string& container) {
    known_ = {ns, pod, container};
  }
  void Append(const std::string& text) {
    std::ofstream out(file(), std::ios::app | std::ios::binary);
    out << text;
  }
  std::filesystem::path file() const { return dir_ / "c.log"; }
  std::atomic<bool> running{true};
  std::atomic<int> lookups{0};

  ContainerLogLookup Lookup() {
    return [this](const ContainerLogRequest& request) -> Result<ContainerLogSource> {
      ++lookups;
      if (request.namespace_name != known_[0] || request.pod != known_[1]) {
        return NotFound("pod \"" + request.pod + "\" does not exist");
      }
      if (request.container != known_[2]) {
        return NotFound("container \"" + request.container + "\" not found in pod \"" +
                        request.pod + "\"");
      }
      if (request.previous) {
        return InvalidArgument("previous terminated container \"" + request.container +
                               "\" in pod \"" + request.pod + "\" not found");
      }
      return ContainerLogSource{file(), [this] { return running.load(); }};
    };
  }

 private:
  std::filesystem::path dir_;
  std::array<std::string, 3> known_;
};

struct DirectReply {
  int status = 0;
  std::string body;
};

// A request straight to the kubelet, not verifying its self-signed
// certificate (as the API server does not).
DirectReply DirectRequest(int port, const web::http::method& method,
                          const std::string& path_and_query) {
  web::http::client::http_client_config config;
  config.set_validate_certificates(false);
  config.set_timeout(std::chrono::seconds(20));
  web::http::client::http_client client("https://127.0.0.1:" + std::to_string(port), config);
  auto response = client.request(method, path_and_query).get();
  return {response.status_code(), response.extract_utf8string(true).get()};
}

DirectReply DirectGet(int port, const std::string& path_and_query) {
  return DirectRequest(port, web::http::methods::GET, path_and_query);
}

TEST(KubeletServerTest, ServesLogsOverTlsWithTheKubeletsStatusCodes) {
  FakeLogs logs;
  logs.Add("ns", "p", "c");
  logs.Append("one\ntwo\nthree\n");
  KubeletServer server({}, logs.Lookup());
  ASSERT_TRUE(server.Start().ok());
  ASSERT_GT(server.port(), 0);

  auto reply = DirectGet(server.port(), "/containerLogs/ns/p/c");
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "one\ntwo\nthree\n");
  reply = DirectGet(server.port(), "/containerLogs/ns/p/c?tailLines=2&limitBytes=5");
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "two\nt");
  reply = DirectGet(server.port(), "/containerLogs/ns/p/other");
  EXPECT_EQ(reply.status, 404);
  EXPECT_EQ(reply.body, "container \"other\" not found in pod \"p\"");
  reply = DirectGet(server.port(), "/containerLogs/ns/p/c?previous=true");
  EXPECT_EQ(reply.status, 400);
  reply = DirectGet(server.port(), "/containerLogs/ns/p/c?tailLines=-1");
  EXPECT_EQ(reply.status, 400);
  reply = DirectGet(server.port(), "/stats/summary");
  EXPECT_EQ(reply.status, 404);
  // A follow of a container that already finished is the file, then the end.
  logs.running = false;
  reply = DirectGet(server.port(), "/containerLogs/ns/p/c?follow=true&tailLines=1");
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "three\n");
  server.Stop();
  EXPECT_EQ(server.port(), 0);
}

TEST(KubeletServerTest, RefusesStreamingWithAStatusKubectlPrints) {
  FakeLogs logs;
  KubeletServerOptions options;
  options.mode = KubeletMode::kExec;
  KubeletServer server(options, logs.Lookup());
  ASSERT_TRUE(server.Start().ok());
  // As the API server forwards `kubectl exec` (POST) and `port-forward` (GET).
  for (const auto& [method, path] :
       {std::pair{web::http::methods::POST, "/exec/ns/p/c?command=true&stdout=true"},
        std::pair{web::http::methods::GET, "/portForward/ns/p"}}) {
    const DirectReply reply = DirectRequest(server.port(), method, path);
    EXPECT_EQ(reply.status, 400) << path;
    const json status = json::parse(reply.body, nullptr, false);
    ASSERT_TRUE(status.is_object()) << reply.body;
    EXPECT_EQ(status["kind"], "Status");
    EXPECT_EQ(status["reason"], "BadRequest");
    EXPECT_EQ(status["code"], 400);
    const std::string message = status.value("message", "");
    EXPECT_NE(message.find("hybridjob-sim --exec runs this member as local processes"),
              std::string::npos)
        << message;
  }
  EXPECT_EQ(DirectRequest(server.port(), web::http::methods::PUT, "/containerLogs/ns/p/c").status,
            405);
  EXPECT_EQ(DirectRequest(server.port(), web::http::methods::POST, "/stats/summary").status, 405);
  EXPECT_EQ(logs.lookups.load(), 0);
}

TEST(KubeletServerTest, ServesATextLogWholeEvenToAFollow) {
  KubeletServer server({}, [](const ContainerLogRequest&) -> Result<ContainerLogSource> {
    ContainerLogSource source;
    source.text = "given\nlifecycle\n";
    return source;
  });
  ASSERT_TRUE(server.Start().ok());
  auto reply = DirectGet(server.port(), "/containerLogs/ns/p/c?follow=true");
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "given\nlifecycle\n");
  reply = DirectGet(server.port(), "/containerLogs/ns/p/c?tailLines=1");
  EXPECT_EQ(reply.body, "lifecycle\n");
}

TEST(KubeletServerTest, StopEndsTheFollowStreamsItServes) {
  FakeLogs logs;
  logs.Add("ns", "p", "c");
  logs.Append("before\n");
  KubeletServer server({}, logs.Lookup());
  ASSERT_TRUE(server.Start().ok());
  DirectReply reply;
  std::thread reader(
      [&] { reply = DirectGet(server.port(), "/containerLogs/ns/p/c?follow=true"); });
  ASSERT_TRUE(WaitFor([&] { return logs.lookups.load() == 1; }));
  logs.Append("after\n");
  std::this_thread::sleep_for(500ms);
  const auto stop_began = std::chrono::steady_clock::now();
  server.Stop();  // the container still runs: only Stop ends the stream
  reader.join();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_began, 5s);
  EXPECT_EQ(reply.status, 200);
  EXPECT_EQ(reply.body, "before\nafter\n");
}

// A node whose kubelet is a KubeletServer and a pod bound to it, in a
// namespace of the test's own; removed afterwards.
class KubeletLogsThroughApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    logs_.Append("first line\nsecond line\nthird line\n");
    ASSERT_TRUE(server_.Start().ok());

    NodePoolSpec pool;
    pool.name_prefix = "logs-" + ns_.name();
    pool.kubelet_port = server_.port();
    node_name_ = NodeName(pool, 0);
    auto node = client_->Create(k8s::resources::Nodes(), "", MakeNode(pool, 0));
    ASSERT_TRUE(node.ok()) << node.status().ToString();
    ASSERT_EQ((*node)["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"], server_.port());

    logs_.Add(ns_.name(), kPod, "c");
    const json pod = {
        {"apiVersion", "v1"},
        {"kind", "Pod"},
        {"metadata", {{"name", kPod}}},
        {"spec",
         {{"nodeName", node_name_},
          {"containers", json::array({{{"name", "c"}, {"image", "busybox"}},
                                      {{"name", "sidecar"}, {"image", "busybox"}}})}}}};
    auto created = client_->Create(k8s::resources::Pods(), ns_.name(), pod);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
  }

  void TearDown() override {
    server_.Stop();
    // No kubelet confirms a graceful delete: remove the pod at once.
    k8s::DeleteOptions now;
    now.grace_period_seconds = 0;
    (void)client_->Delete(k8s::resources::Pods(), ns_.name(), kPod, now);
    if (!node_name_.empty()) {
      (void)client_->Delete(k8s::resources::Nodes(), "", node_name_);
    }
  }

  std::string LogPath(const std::string& query) const {
    return "/api/v1/namespaces/" + ns_.name() + "/pods/" + kPod + "/log?" + query;
  }

  static constexpr const char* kPod = "trainer";
  std::unique_ptr<k8s::RestClient> client_ = AdminClient();
  TestNamespace ns_{*client_, "logs"};
  FakeLogs logs_;
  KubeletServer server_{{}, logs_.Lookup()};
  std::string node_name_;
};

TEST_F(KubeletLogsThroughApiServerTest, ReadsTheWholeLogAndItsTail) {
  auto body = client_->GetRaw(LogPath("container=c"));
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, "first line\nsecond line\nthird line\n");

  body = client_->GetRaw(LogPath("container=c&tailLines=2"));
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, "second line\nthird line\n");

  body = client_->GetRaw(LogPath("container=c&limitBytes=5"));
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, "first");
}

TEST_F(KubeletLogsThroughApiServerTest, FollowGetsWhatIsAppendedUntilTheContainerStops) {
  Result<std::string> body = Internal("not read");
  const int lookups_before = logs_.lookups.load();
  std::thread reader([&] { body = client_->GetRaw(LogPath("container=c&follow=true")); });
  // Append only once the kubelet has the request, so these lines are
  // streamed rather than read with the file.
  ASSERT_TRUE(WaitFor([&] { return logs_.lookups.load() > lookups_before; }));
  std::this_thread::sleep_for(300ms);
  logs_.Append("fourth line\n");
  std::this_thread::sleep_for(300ms);
  logs_.Append("fifth line\n");
  logs_.running = false;
  reader.join();
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, "first line\nsecond line\nthird line\nfourth line\nfifth line\n");
}

TEST_F(KubeletLogsThroughApiServerTest, UnknownContainersAreRefused) {
  // In the pod but unknown to the kubelet: the kubelet's 404, passed on.
  auto body = client_->GetRaw(LogPath("container=sidecar"));
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().http_status(), 404) << body.status().ToString();
  EXPECT_EQ(body.status().code(), StatusCode::kNotFound);
  // Not in the pod at all: the API server refuses it before asking the kubelet.
  body = client_->GetRaw(LogPath("container=nope"));
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().http_status(), 400) << body.status().ToString();
}

TEST_F(KubeletLogsThroughApiServerTest, KubectlLogsReadsIt) {
  const std::string kubectl = hybridjob::testing::KubernetesBinDir() + "/kubectl --kubeconfig " +
                              hybridjob::testing::KubeconfigPath() + " -n " + ns_.name();
  std::string output;
  ASSERT_EQ(hybridjob::testing::RunCommand(kubectl + " logs " + kPod + " -c c --tail=1", &output),
            0)
      << output;
  EXPECT_EQ(output, "third line\n");
  logs_.running = false;
  ASSERT_EQ(hybridjob::testing::RunCommand(kubectl + " logs -f " + kPod + " -c c", &output), 0)
      << output;
  EXPECT_EQ(output, "first line\nsecond line\nthird line\n");
}

}  // namespace
}  // namespace hybridjob::sim
