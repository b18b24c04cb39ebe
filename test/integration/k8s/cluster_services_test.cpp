// Leader election, Events and RBAC errors against the real kube-apiserver.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/event_recorder.h>
#include <hybridjob/k8s/leader_election.h>
#include <hybridjob/k8s/rest_client.h>

#include "test_cluster.h"

namespace hybridjob::k8s {
namespace {

using hybridjob::testing::AdminClient;
using hybridjob::testing::AdminConfig;
using hybridjob::testing::TestNamespace;
using hybridjob::testing::WaitFor;
using nlohmann::json;
using namespace std::chrono_literals;

LeaderElectionConfig FastElection(const std::string& ns, const std::string& identity) {
  LeaderElectionConfig config;
  config.lease_namespace = ns;
  config.lease_name = "test-lock";
  config.identity = identity;
  config.lease_duration = 3s;
  config.renew_deadline = 2s;
  config.retry_period = 500ms;
  return config;
}

TEST(LeaderElectionTest, ConfigValidationNamesTheProblem) {
  auto config = FastElection("ns", "a");
  EXPECT_TRUE(ValidateLeaderElectionConfig(config).ok());
  config.renew_deadline = 4s;
  EXPECT_NE(ValidateLeaderElectionConfig(config).message().find("leaseDuration"),
            std::string::npos);
  config = FastElection("ns", "");
  EXPECT_NE(ValidateLeaderElectionConfig(config).message().find("identity"), std::string::npos);
}

TEST(LeaderElectionTest, OneLeaderAndHandoverWithinLeaseDurationWhenTheLeaderDies) {
  auto client = AdminClient();
  TestNamespace ns(*client);
  std::atomic<int> a_started{0};
  std::atomic<int> b_started{0};

  auto a_config = FastElection(ns.name(), "candidate-a");
  a_config.release_on_stop = false;  // dies without a word, as after kill -9
  a_config.on_started_leading = [&] { ++a_started; };
  auto b_config = FastElection(ns.name(), "candidate-b");
  b_config.on_started_leading = [&] { ++b_started; };

  auto a = std::make_unique<LeaderElector>(*client, a_config);
  a->Start();
  ASSERT_TRUE(WaitFor([&] { return a->IsLeader(); }, 10s));
  LeaderElector b(*client, b_config);
  b.Start();
  // b campaigns for a while but never leads while a renews.
  std::this_thread::sleep_for(4s);
  EXPECT_TRUE(a->IsLeader());
  EXPECT_FALSE(b.IsLeader());
  EXPECT_EQ(b.ObservedLeader(), "candidate-a");

  const auto killed_at = std::chrono::steady_clock::now();
  a->Stop();
  a.reset();
  ASSERT_TRUE(WaitFor([&] { return b.IsLeader(); }, 10s));
  const auto handover = std::chrono::steady_clock::now() - killed_at;
  // Lease duration plus one retry period (with its jitter) at most.
  EXPECT_LT(handover, 3s + 500ms * 1.2 + 500ms) << "handover took too long";
  EXPECT_EQ(a_started.load(), 1);
  EXPECT_EQ(b_started.load(), 1);

  auto lease = client->Get(resources::Leases(), ns.name(), "test-lock");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "candidate-b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
  b.Stop();
}

TEST(LeaderElectionTest, CleanStopReleasesTheLeaseForAnImmediateHandover) {
  auto client = AdminClient();
  TestNamespace ns(*client);
  std::atomic<bool> a_stopped{false};
  auto a_config = FastElection(ns.name(), "a");
  a_config.lease_duration = 30s;  // without release, b would wait 30 s
  a_config.renew_deadline = 20s;
  a_config.on_stopped_leading = [&] { a_stopped = true; };
  LeaderElector a(*client, a_config);
  a.Start();
  ASSERT_TRUE(WaitFor([&] { return a.IsLeader(); }, 10s));
  auto b_config = FastElection(ns.name(), "b");
  b_config.lease_duration = 30s;
  b_config.renew_deadline = 20s;
  LeaderElector b(*client, b_config);
  b.Start();
  std::this_thread::sleep_for(1s);
  a.Stop();
  EXPECT_TRUE(a_stopped.load());
  EXPECT_TRUE(WaitFor([&] { return b.IsLeader(); }, 5s));
  b.Stop();
}

TEST(EventRecorderTest, WritesAndAggregatesEvents) {
  auto client = AdminClient();
  TestNamespace ns(*client);
  json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "subject"}}}};
  auto created = client->Create(resources::ConfigMaps(), ns.name(), cm);
  ASSERT_TRUE(created.ok());
  EventRecorder recorder(*client, "hybridjob-test");
  const ObjectReference ref = ReferenceTo(*created);
  EXPECT_EQ(ref.kind, "ConfigMap");
  recorder.Record(ref, EventType::kWarning, "Stuck", "it is stuck");
  recorder.Record(ref, EventType::kWarning, "Stuck", "it is stuck");
  recorder.Record(ref, EventType::kWarning, "Stuck", "it is stuck");
  recorder.Record(ref, EventType::kNormal, "Fine", "now fine");
  ASSERT_TRUE(recorder.Flush(10s));

  ListOptions by_object;
  by_object.field_selector = "involvedObject.name=subject";
  auto events = client->List(resources::Events(), ns.name(), by_object);
  ASSERT_TRUE(events.ok()) << events.status().ToString();
  ASSERT_EQ(events->items.size(), 2u);
  for (const auto& event : events->items) {
    EXPECT_EQ(event["source"]["component"], "hybridjob-test");
    EXPECT_EQ(event["involvedObject"]["uid"], (*created)["metadata"]["uid"]);
    if (event["reason"] == "Stuck") {
      EXPECT_EQ(event["count"], 3);
      EXPECT_EQ(event["type"], "Warning");
      EXPECT_EQ(event["message"], "it is stuck");
    } else {
      EXPECT_EQ(event["count"], 1);
      EXPECT_EQ(event["type"], "Normal");
    }
  }
}

// A client whose RBAC lacks a verb gets Forbidden with the server's message,
// not a hang or a crash.
TEST(RbacTest, ForbiddenVerbIsReportedClearly) {
  auto admin = AdminClient();
  TestNamespace ns(*admin);
  json sa = {{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "reader"}}}};
  ASSERT_TRUE(admin->Create(resources::ServiceAccounts(), ns.name(), sa).ok());
  Resource roles{"rbac.authorization.k8s.io", "v1", "roles", true};
  Resource bindings{"rbac.authorization.k8s.io", "v1", "rolebindings", true};
  json role = json::parse(R"({"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role",
    "metadata":{"name":"cm-reader"},
    "rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list"]}]})");
  ASSERT_TRUE(admin->Create(roles, ns.name(), role).ok());
  json binding = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "RoleBinding"},
      {"metadata", {{"name", "reader"}}},
      {"roleRef",
       {{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "Role"}, {"name", "cm-reader"}}},
      {"subjects",
       json::array({{{"kind", "ServiceAccount"}, {"name", "reader"}, {"namespace", ns.name()}}})}};
  ASSERT_TRUE(admin->Create(bindings, ns.name(), binding).ok());

  // A bound token from the TokenRequest API.
  json request = {{"apiVersion", "authentication.k8s.io/v1"},
                  {"kind", "TokenRequest"},
                  {"spec", {{"expirationSeconds", 600}}}};
  auto token =
      admin->CreateSubresource(resources::ServiceAccounts(), ns.name(), "reader", "token", request);
  ASSERT_TRUE(token.ok()) << token.status().ToString();
  auto config = AdminConfig();
  ASSERT_TRUE(config.ok());
  config->bearer_token = (*token)["status"]["token"];
  auto reader = RestClient::Create(*config);
  ASSERT_TRUE(reader.ok());

  EXPECT_TRUE((*reader)->List(resources::ConfigMaps(), ns.name(), {}).ok());
  json cm = {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", "nope"}}}};
  auto denied = (*reader)->Create(resources::ConfigMaps(), ns.name(), cm);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.status().code(), StatusCode::kForbidden);
  EXPECT_EQ(denied.status().http_status(), 403);
  EXPECT_NE(denied.status().message().find("cannot create resource \"configmaps\""),
            std::string::npos)
      << denied.status().message();
  EXPECT_FALSE(denied.status().IsRetriable());

  // An invalid token is Unauthorized.
  config->bearer_token = "not-a-token";
  auto stranger = RestClient::Create(*config);
  ASSERT_TRUE(stranger.ok());
  EXPECT_EQ((*stranger)->List(resources::ConfigMaps(), ns.name(), {}).status().code(),
            StatusCode::kUnauthorized);
}

TEST(TlsTest, ServerIsVerifiedAgainstTheConfiguredCa) {
  auto config = AdminConfig();
  ASSERT_TRUE(config.ok());
  // Trusting only the system roots, the throwaway CA's server must be refused.
  config->ca_pem.clear();
  auto untrusting = RestClient::Create(*config);
  ASSERT_TRUE(untrusting.ok());
  auto result = (*untrusting)->List(resources::Namespaces(), "", {});
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), StatusCode::kUnavailable);

  config->ca_pem = "-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n";
  auto broken = RestClient::Create(*config);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(broken.status().message().find("TLS"), std::string::npos);
}

// tls-server-name: the name checked in the server's certificate when the URL
// names the server otherwise (here by address; the certificate also names
// kubernetes.default.svc, as an in-cluster one does).
TEST(TlsTest, TlsServerNameIsTheNameVerified) {
  auto config = AdminConfig();
  ASSERT_TRUE(config.ok());
  ASSERT_NE(config->server.find("127.0.0.1"), std::string::npos) << config->server;
  config->tls_server_name = "kubernetes.default.svc";
  auto named = RestClient::Create(*config);
  ASSERT_TRUE(named.ok()) << named.status().ToString();
  auto listed = (*named)->List(resources::Namespaces(), "", {});
  EXPECT_TRUE(listed.ok()) << listed.status().ToString();

  config->tls_server_name = "not-the-server.example";
  auto misnamed = RestClient::Create(*config);
  ASSERT_TRUE(misnamed.ok());
  auto refused = (*misnamed)->List(resources::Namespaces(), "", {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("not trusted"), std::string::npos)
      << refused.status().message();

  // By name, with no override: localhost is in the certificate too.
  config->tls_server_name.clear();
  const size_t at = config->server.find("127.0.0.1");
  config->server.replace(at, 9, "localhost");
  auto by_name = RestClient::Create(*config);
  ASSERT_TRUE(by_name.ok());
  auto again = (*by_name)->List(resources::Namespaces(), "", {});
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

}  // namespace
}  // namespace hybridjob::k8s
