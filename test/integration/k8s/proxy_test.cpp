// The API client through a real HTTP proxy (Debian's tinyproxy) to the real
// API server: a kubeconfig's proxy-url tunnels every request, a watch too, in
// the library and in the kubectl plugin; the proxy's refusals are clear
// errors; HTTPS_PROXY leaves a loopback server alone, as client-go does.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include <hybridjob/k8s/config.h>
#include <hybridjob/k8s/resource.h>
#include <hybridjob/k8s/rest_client.h>

#include "child_process.h"
#include "crd.h"
#include "test_cluster.h"
#include "tinyproxy.h"

namespace hybridjob::k8s {
namespace {

using hybridjob::testing::BinaryDir;
using hybridjob::testing::ChildProcess;
using hybridjob::testing::FreeLoopbackPort;
using hybridjob::testing::KubeconfigPath;
using hybridjob::testing::RunCommand;
using hybridjob::testing::Tinyproxy;
using hybridjob::testing::WaitFor;

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The API server's port, from the shared cluster's kubeconfig.
std::string ApiServerPort() {
  auto config = LoadKubeconfigFile(KubeconfigPath());
  EXPECT_TRUE(config.ok()) << config.status().ToString();
  return config.ok() ? config->server.substr(config->server.rfind(':') + 1) : "";
}

// The shared cluster's kubeconfig with `proxy-url` added to its cluster.
std::string ProxiedKubeconfig(const std::string& proxy_url, const std::string& dir) {
  std::string text = ReadText(KubeconfigPath());
  const size_t server = text.find("    server: ");
  EXPECT_NE(server, std::string::npos) << text;
  text.insert(server, "    proxy-url: " + proxy_url + "\n");
  std::ofstream(dir + "/kubeconfig") << text;
  return dir + "/kubeconfig";
}

TEST(ProxyTest, EveryRequestAndWatchOfAKubeconfigWithProxyUrlGoesThroughTheProxy) {
  Tinyproxy proxy(ApiServerPort());
  ASSERT_TRUE(proxy.ready()) << proxy.Log();
  auto config = LoadKubeconfigFile(ProxiedKubeconfig(proxy.url(), proxy.dir()));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->proxy_url, proxy.url());
  auto client = RestClient::Create(*config);
  ASSERT_TRUE(client.ok()) << client.status().ToString();

  auto namespaces = (*client)->List(resources::Namespaces(), "", {});
  ASSERT_TRUE(namespaces.ok()) << namespaces.status().ToString() << "\n" << proxy.Log();
  EXPECT_FALSE(namespaces->items.empty());
  EXPECT_GE(proxy.Tunnels(), 1) << proxy.Log();
  EXPECT_NE(proxy.Log().find("127.0.0.1:" + ApiServerPort()), std::string::npos) << proxy.Log();

  // A watch streams through a tunnel of its own, and sees what happens.
  const int before = proxy.Tunnels();
  {
    hybridjob::testing::TestNamespace ns(**client, "proxy");
    auto listed = (*client)->List(resources::ConfigMaps(), ns.name(), {});
    ASSERT_TRUE(listed.ok()) << listed.status().ToString();
    WatchOptions options;
    options.resource_version = listed->resource_version;
    options.timeout = std::chrono::seconds(30);
    auto watch = (*client)->Watch(resources::ConfigMaps(), ns.name(), options);
    ASSERT_TRUE(watch.ok()) << watch.status().ToString() << "\n" << proxy.Log();
    const nlohmann::json map = {{"apiVersion", "v1"},
                                {"kind", "ConfigMap"},
                                {"metadata", {{"name", "through-the-proxy"}}},
                                {"data", {{"k", "v"}}}};
    auto created = (*client)->Create(resources::ConfigMaps(), ns.name(), map);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    auto event = (*watch)->Next();
    ASSERT_TRUE(event.ok()) << event.status().ToString();
    ASSERT_TRUE(event->has_value());
    EXPECT_EQ((*event)->object["metadata"]["name"], "through-the-proxy");
    (*watch)->Cancel();
  }
  EXPECT_GT(proxy.Tunnels(), before) << proxy.Log();

  // The kubectl plugin reads the same kubeconfig the same way.
  ASSERT_TRUE(hybridjob::testing::EnsureHybridJobCrd(**client).ok());
  std::string output;
  const int tunnels = proxy.Tunnels();
  EXPECT_EQ(RunCommand(BinaryDir() + "/kubectl-hybridjob nodes --kubeconfig " + proxy.dir() +
                           "/kubeconfig",
                       &output),
            0)
      << output;
  EXPECT_GT(proxy.Tunnels(), tunnels) << proxy.Log();
}

TEST(ProxyTest, TheProxysCredentialsAreSentAndItsRefusalsAreClear) {
  Tinyproxy proxy(ApiServerPort(), "alice s3cret");
  ASSERT_TRUE(proxy.ready()) << proxy.Log();
  const std::string address = proxy.url().substr(7);

  auto refused_config = LoadKubeconfigFile(ProxiedKubeconfig(proxy.url(), proxy.dir()));
  ASSERT_TRUE(refused_config.ok()) << refused_config.status().ToString();
  auto refused = RestClient::Create(*refused_config);
  ASSERT_TRUE(refused.ok()) << refused.status().ToString();
  auto denied = (*refused)->List(resources::Namespaces(), "", {});
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.status().message().find("proxy " + proxy.url() + " refused the tunnel to " +
                                           "127.0.0.1:" + ApiServerPort() + ": HTTP 407"),
            std::string::npos)
      << denied.status().message();

  std::filesystem::remove(proxy.dir() + "/kubeconfig");
  auto config =
      LoadKubeconfigFile(ProxiedKubeconfig("http://alice:s3cret@" + address, proxy.dir()));
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto client = RestClient::Create(*config);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto namespaces = (*client)->List(resources::Namespaces(), "", {});
  EXPECT_TRUE(namespaces.ok()) << namespaces.status().ToString() << "\n" << proxy.Log();
}

TEST(ProxyTest, HttpsProxyLeavesALoopbackServerAloneAsClientGoDoes) {
  Tinyproxy proxy(ApiServerPort());
  ASSERT_TRUE(proxy.ready()) << proxy.Log();
  ::setenv("HTTPS_PROXY", proxy.url().c_str(), 1);  // NOLINT(concurrency-mt-unsafe)
  auto config = LoadKubeconfigFile(KubeconfigPath());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  auto client = RestClient::Create(*config);
  ::unsetenv("HTTPS_PROXY");  // NOLINT(concurrency-mt-unsafe)
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto namespaces = (*client)->List(resources::Namespaces(), "", {});
  ASSERT_TRUE(namespaces.ok()) << namespaces.status().ToString();
  EXPECT_EQ(proxy.Tunnels(), 0) << proxy.Log();
}

}  // namespace
}  // namespace hybridjob::k8s
