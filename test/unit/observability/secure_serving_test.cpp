// The guarded endpoints as a client meets them: HTTPS with a self-signed or a
// given certificate, 401 without a known token, 403 without the permission,
// 503 when the reviewer cannot answer, and /healthz plain and open. The
// reviewer is scripted; the integration test asks the real API server.
#include <cstdio>
#include <fstream>
#include <random>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <hybridjob/observability/metrics.h>
#include <hybridjob/observability/secure_serving.h>

namespace hybridjob::observability {
namespace {

using ::testing::HasSubstr;

class ServingReviewer : public AccessReviewer {
 public:
  Result<std::optional<UserInfo>> Authenticate(std::string_view token) override {
    if (down) {
      return Unavailable("connection refused");
    }
    if (token == "reader" || token == "nobody-allowed") {
      return std::optional<UserInfo>(UserInfo{std::string(token)});
    }
    return std::optional<UserInfo>();
  }
  Result<bool> Authorize(const UserInfo& user, const AccessCheck& check) override {
    asked.push_back(user.username + ": " + check.Describe());
    return user.username == "reader" && check == AccessCheck::NonResource("get", "/metrics");
  }
  bool down = false;
  std::vector<std::string> asked;
};

struct Reply {
  int code = 0;
  std::string body;
};

// curl's answer: the HTTP status (0 when it could not connect) and the body.
Reply Curl(const std::string& arguments) {
  const std::string command = "curl -s -o - -w '\\n%{http_code}' " + arguments + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");  // NOLINT(cert-env33-c): test-only
  std::string out;
  char buffer[4096];
  while (pipe != nullptr && fgets(buffer, sizeof(buffer), pipe) != nullptr) {
    out += buffer;
  }
  if (pipe != nullptr) {
    pclose(pipe);
  }
  const size_t last = out.rfind('\n');
  Reply reply;
  if (last != std::string::npos) {
    reply.code = std::atoi(out.c_str() + last + 1);
    reply.body = out.substr(0, last);
  }
  return reply;
}

// Starts `server` on a loopback port below the kernel's ephemeral range.
int StartOnLoopback(HttpServer& server, const ServingCertificate* tls) {
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 32000);
  for (int attempt = 0; attempt < 20; ++attempt) {
    const int port = pick(random);
    if (server.Start("127.0.0.1:" + std::to_string(port), tls).ok()) {
      return port;
    }
  }
  return -1;
}

class SecureServingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    reviewer_ = std::make_shared<ServingReviewer>();
    registry_.GetCounter("hybridjob_test_total", "A counter").Inc();
    auto certificate = SelfSignedCertificate("test", {"localhost", "127.0.0.1"});
    ASSERT_TRUE(certificate.ok()) << certificate.status().ToString();
    security_.certificate = *certificate;
    security_.reviewer = reviewer_;
  }

  std::shared_ptr<ServingReviewer> reviewer_;
  Registry registry_;
  ServingSecurity security_;
};

TEST_F(SecureServingTest, MetricsNeedAKnownTokenAllowedGetOnTheMetricsUrl) {
  HttpServer server;
  server.Handle("/metrics", Guarded(reviewer_, AccessCheck::NonResource("get", "/metrics"),
                                    [this](const HttpRequest&) {
                                      return HttpReply{200, "text/plain", registry_.Render()};
                                    }));
  const int port = StartOnLoopback(server, &*security_.certificate);
  ASSERT_GT(port, 0);
  const std::string url = "https://127.0.0.1:" + std::to_string(port) + "/metrics";

  EXPECT_EQ(Curl("http://127.0.0.1:" + std::to_string(port) + "/metrics").code, 0)
      << "no plain HTTP on the HTTPS port";
  EXPECT_EQ(Curl(url).code, 0) << "the self-signed certificate is not trusted blindly";

  Reply anonymous = Curl("-k " + url);
  EXPECT_EQ(anonymous.code, 401);
  EXPECT_THAT(anonymous.body, HasSubstr("no bearer token"));
  EXPECT_EQ(Curl("-k -H 'Authorization: Bearer made-up' " + url).code, 401);
  Reply forbidden = Curl("-k -H 'Authorization: Bearer nobody-allowed' " + url);
  EXPECT_EQ(forbidden.code, 403);
  EXPECT_THAT(forbidden.body, HasSubstr("user \"nobody-allowed\" may not get /metrics"));
  Reply allowed = Curl("-k -H 'Authorization: Bearer reader' " + url);
  EXPECT_EQ(allowed.code, 200);
  EXPECT_THAT(allowed.body, HasSubstr("hybridjob_test_total 1"));
  EXPECT_EQ(reviewer_->asked,
            (std::vector<std::string>{"nobody-allowed: get /metrics", "reader: get /metrics"}));

  reviewer_->down = true;
  Reply unreviewed = Curl("-k -H 'Authorization: Bearer reader' " + url);
  EXPECT_EQ(unreviewed.code, 503);
  EXPECT_THAT(unreviewed.body, HasSubstr("connection refused"));
  server.Stop();
}

TEST_F(SecureServingTest, EndpointsServeMetricsSecurelyAndHealthPlainly) {
  ServingEndpoints endpoints;
  std::mt19937 random(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 32000);
  int metrics_port = -1;
  int health_port = -1;
  for (int attempt = 0; attempt < 20 && metrics_port < 0; ++attempt) {
    const int a = pick(random);
    const int b = a + 1;
    if (endpoints
            .Start(
                registry_, {"--metrics-addr", "127.0.0.1:" + std::to_string(a)},
                {"--health-addr", "127.0.0.1:" + std::to_string(b)}, [] { return true; }, security_)
            .ok()) {
      metrics_port = a;
      health_port = b;
    }
  }
  ASSERT_GT(metrics_port, 0);
  const std::string health = "http://127.0.0.1:" + std::to_string(health_port);
  EXPECT_EQ(Curl(health + "/healthz").code, 200);
  EXPECT_EQ(Curl(health + "/readyz").code, 200);
  EXPECT_EQ(Curl(health + "/metrics").code, 404) << "the probes' port shows no metrics";
  const std::string metrics = "https://127.0.0.1:" + std::to_string(metrics_port) + "/metrics";
  EXPECT_EQ(Curl("-k " + metrics).code, 401);
  EXPECT_EQ(Curl("-k -H 'Authorization: Bearer reader' " + metrics).code, 200);
  endpoints.Stop();
}

TEST_F(SecureServingTest, InsecureServingIsPlainAndOpen) {
  HttpServer server;
  server.Handle("/metrics", Guarded(nullptr, AccessCheck::NonResource("get", "/metrics"),
                                    [](const HttpRequest&) {
                                      return HttpReply{200, "text/plain", "open\n"};
                                    }));
  const int port = StartOnLoopback(server, nullptr);
  ASSERT_GT(port, 0);
  Reply reply = Curl("http://127.0.0.1:" + std::to_string(port) + "/metrics");
  EXPECT_EQ(reply.code, 200);
  EXPECT_EQ(reply.body, "open\n");
  server.Stop();
}

TEST(ServingCertificateTest, AGivenPairIsServedAndAMismatchedOneRefused) {
  const std::string dir = ::testing::TempDir();
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + name) << text;
    return dir + name;
  };
  auto first = SelfSignedCertificate("first", {"127.0.0.1"});
  auto second = SelfSignedCertificate("second", {"127.0.0.1"});
  ASSERT_TRUE(first.ok() && second.ok());
  const std::string cert = write("serving.crt", first->certificate);
  const std::string key = write("serving.key", first->private_key);
  const std::string other_key = write("other.key", second->private_key);

  auto read = ReadServingCertificate(cert, key);
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  HttpServer server;
  server.Handle("/", [] { return HttpReply{200, "text/plain", "hello\n"}; });
  const int port = StartOnLoopback(server, &*read);
  ASSERT_GT(port, 0);
  // Trusting exactly the given certificate works: it is the one served.
  Reply reply = Curl("--cacert " + cert + " https://127.0.0.1:" + std::to_string(port) + "/");
  EXPECT_EQ(reply.code, 200) << reply.body;
  server.Stop();

  auto mismatched = ReadServingCertificate(cert, other_key);
  ASSERT_FALSE(mismatched.ok());
  EXPECT_THAT(mismatched.status().message(), HasSubstr("is not the key of the certificate"));
  auto half = ReadServingCertificate(cert, "");
  ASSERT_FALSE(half.ok());
  EXPECT_THAT(half.status().message(), HasSubstr("go together"));
  auto missing = ReadServingCertificate(dir + "absent.crt", key);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("cannot be read"));
  auto not_pem = ReadServingCertificate(write("junk.crt", "junk"), key);
  ASSERT_FALSE(not_pem.ok());
  EXPECT_THAT(not_pem.status().message(), HasSubstr("holds no PEM certificate"));
}

TEST(ServingHostsTest, NamesLoopbackTheHostAndSpecificListenHosts) {
  auto hosts = ServingHosts({"0.0.0.0:10251", "10.1.2.3:8443", "[::1]:9000", "0"});
  EXPECT_EQ(hosts[0], "localhost");
  EXPECT_EQ(hosts[1], "127.0.0.1");
  EXPECT_NE(std::find(hosts.begin(), hosts.end(), "10.1.2.3"), hosts.end());
  EXPECT_NE(std::find(hosts.begin(), hosts.end(), "::1"), hosts.end());
  EXPECT_EQ(std::find(hosts.begin(), hosts.end(), "0.0.0.0"), hosts.end());
}

}  // namespace
}  // namespace hybridjob::observability
