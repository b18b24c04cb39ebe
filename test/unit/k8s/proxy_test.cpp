// Which proxy a request goes through, by client-go's (and Go's net/http)
// rules.
#include <gtest/gtest.h>

#include <hybridjob/k8s/proxy.h>

namespace hybridjob::k8s::http {
namespace {

TEST(ProxyUrlTest, HttpProxiesWithOrWithoutSchemeAndCredentials) {
  auto plain = ParseProxyUrl("http://proxy.corp:3128");
  ASSERT_TRUE(plain.ok()) << plain.status().ToString();
  EXPECT_EQ(plain->host, "proxy.corp");
  EXPECT_EQ(plain->port, "3128");
  EXPECT_EQ(plain->authorization, "");
  EXPECT_EQ(plain->url, "http://proxy.corp:3128");

  auto bare = ParseProxyUrl(" proxy.corp ");  // Go takes a bare host as http://, port 80
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(bare->host, "proxy.corp");
  EXPECT_EQ(bare->port, "80");

  auto with_user = ParseProxyUrl("http://alice:s3cret@[fd00::1]:8080/");
  ASSERT_TRUE(with_user.ok()) << with_user.status().ToString();
  EXPECT_EQ(with_user->host, "fd00::1");
  EXPECT_EQ(with_user->port, "8080");
  EXPECT_EQ(with_user->authorization, "Basic YWxpY2U6czNjcmV0");
  EXPECT_EQ(with_user->url, "http://alice:***@[fd00::1]:8080") << "no password in messages";
}

TEST(ProxyUrlTest, UnsupportedOrMalformedProxiesAreClearErrors) {
  auto message = [](std::string_view url) { return ParseProxyUrl(url).status().message(); };
  EXPECT_NE(message("socks5://proxy:1080").find("socks5:// proxies are not supported"),
            std::string::npos);
  EXPECT_NE(message("https://proxy:443").find("https:// proxies are not supported"),
            std::string::npos);
  EXPECT_NE(message("ftp://proxy").find("unknown scheme \"ftp\""), std::string::npos);
  EXPECT_NE(message("http://proxy:99999").find("bad port"), std::string::npos);
  EXPECT_NE(message("http://:3128").find("names no host"), std::string::npos);
  EXPECT_NE(message("").find("empty"), std::string::npos);
}

TEST(NoProxyTest, LoopbackAndLocalhostAreNeverProxied) {
  EXPECT_TRUE(BypassesProxy("localhost", "6443", ""));
  EXPECT_TRUE(BypassesProxy("LocalHost", "6443", ""));
  EXPECT_TRUE(BypassesProxy("127.0.0.1", "6443", ""));
  EXPECT_TRUE(BypassesProxy("127.9.9.9", "6443", ""));
  EXPECT_TRUE(BypassesProxy("::1", "6443", ""));
  EXPECT_FALSE(BypassesProxy("10.0.0.1", "6443", ""));
  EXPECT_FALSE(BypassesProxy("api.example.com", "6443", ""));
}

TEST(NoProxyTest, EntriesMatchAsGoMatchesThem) {
  const std::string list =
      " example.com, .internal ,*.corp.net, 10.1.0.0/16, 192.168.1.5, "
      "fd00::/16, cluster.local:6443, [fd11::5]:443 ";
  // A domain and its subdomains.
  EXPECT_TRUE(BypassesProxy("example.com", "443", list));
  EXPECT_TRUE(BypassesProxy("API.Example.com", "443", list));
  EXPECT_FALSE(BypassesProxy("notexample.com", "443", list));
  // Subdomains only.
  EXPECT_TRUE(BypassesProxy("api.internal", "443", list));
  EXPECT_FALSE(BypassesProxy("internal", "443", list));
  EXPECT_TRUE(BypassesProxy("a.corp.net", "443", list));
  EXPECT_FALSE(BypassesProxy("corp.net", "443", list));
  // Addresses and ranges.
  EXPECT_TRUE(BypassesProxy("10.1.200.3", "6443", list));
  EXPECT_FALSE(BypassesProxy("10.2.0.1", "6443", list));
  EXPECT_TRUE(BypassesProxy("192.168.1.5", "6443", list));
  EXPECT_FALSE(BypassesProxy("192.168.1.6", "6443", list));
  EXPECT_TRUE(BypassesProxy("fd00::42", "6443", list));
  // Entries with a port match that port only.
  EXPECT_TRUE(BypassesProxy("api.cluster.local", "6443", list));
  EXPECT_FALSE(BypassesProxy("api.cluster.local", "443", list));
  EXPECT_TRUE(BypassesProxy("fd11::5", "443", list));
  EXPECT_FALSE(BypassesProxy("fd11::5", "6443", list));
  // Everything.
  EXPECT_TRUE(BypassesProxy("anything.example.org", "443", "*"));
  EXPECT_FALSE(BypassesProxy("anything.example.org", "443", ",, "));
}

TEST(ChooseProxyTest, TheKubeconfigsProxyWinsThenTheEnvironmentByScheme) {
  ProxyEnvironment env{"http://secure-proxy:3128", "http://plain-proxy:3128", "skip.example"};
  // proxy-url: every request, loopback and NO_PROXY included (client-go).
  auto chosen = ChooseProxy(true, "127.0.0.1", "6443", "http://kube-proxy:8888", env);
  ASSERT_TRUE(chosen.ok());
  ASSERT_TRUE(chosen->has_value());
  EXPECT_EQ((*chosen)->host, "kube-proxy");

  chosen = ChooseProxy(true, "api.example", "6443", "", env);
  ASSERT_TRUE(chosen.ok());
  ASSERT_TRUE(chosen->has_value());
  EXPECT_EQ((*chosen)->host, "secure-proxy");
  chosen = ChooseProxy(false, "api.example", "8080", "", env);
  ASSERT_TRUE(chosen.ok());
  ASSERT_TRUE(chosen->has_value());
  EXPECT_EQ((*chosen)->host, "plain-proxy");

  for (const char* direct : {"skip.example", "127.0.0.1", "localhost"}) {
    chosen = ChooseProxy(true, direct, "6443", "", env);
    ASSERT_TRUE(chosen.ok());
    EXPECT_FALSE(chosen->has_value()) << direct;
  }
  chosen = ChooseProxy(true, "api.example", "6443", "", ProxyEnvironment{});
  ASSERT_TRUE(chosen.ok());
  EXPECT_FALSE(chosen->has_value());

  auto bad = ChooseProxy(true, "api.example", "6443", "socks5://x:1080", env);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("kubeconfig proxy-url: "), std::string::npos);
  bad = ChooseProxy(true, "api.example", "6443", "", ProxyEnvironment{"ftp://x", "", ""});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("HTTPS_PROXY: "), std::string::npos);
}

TEST(ChooseProxyTest, TheConnectRequestNamesTheServer) {
  EXPECT_EQ(FormatConnectRequest("api.example", "6443", ""),
            "CONNECT api.example:6443 HTTP/1.1\r\nHost: api.example:6443\r\n\r\n");
  EXPECT_EQ(FormatConnectRequest("fd00::1", "443", "Basic eDp5"),
            "CONNECT [fd00::1]:443 HTTP/1.1\r\nHost: [fd00::1]:443\r\n"
            "Proxy-Authorization: Basic eDp5\r\n\r\n");
}

}  // namespace
}  // namespace hybridjob::k8s::http
