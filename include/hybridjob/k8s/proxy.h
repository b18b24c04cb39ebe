// Which HTTP proxy a request to the API server goes through, as client-go
// chooses it: a cluster's `proxy-url` in the kubeconfig, else HTTPS_PROXY /
// HTTP_PROXY with NO_PROXY (Go's net/http rules). Pure: the environment is
// passed in.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <hybridjob/common/status.h>

namespace hybridjob::k8s::http {

// An HTTP proxy: requests to https servers tunnel through CONNECT, requests
// to http servers are sent to it with the absolute URL.
struct Proxy {
  std::string host;  // a name or an address, without IPv6 brackets
  std::string port;  // 80 when the URL names none, as Go's proxy dialer does
  // "Basic ..." for a URL with user information; empty otherwise.
  std::string authorization;
  std::string url;  // as given, for messages (without its password)
};

// http://[user[:password]@]host[:port][/], or host[:port] alone (taken as
// http://, as Go takes it). https:// and socks5:// proxies are refused with a
// clear message: only plain HTTP proxies are supported.
Result<Proxy> ParseProxyUrl(std::string_view url);

// The proxy variables of a process's environment: the upper-case name first,
// then the lower-case one.
struct ProxyEnvironment {
  std::string https_proxy;
  std::string http_proxy;
  std::string no_proxy;

  static ProxyEnvironment FromProcess();
};

// Whether NO_PROXY, or Go's own rule, sends a request to host:port directly:
// "localhost" and loopback addresses always; "*"; an address, a CIDR range,
// a domain and its subdomains ("example.com"), or only the subdomains
// (".example.com" or "*.example.com"), each optionally with ":port".
bool BypassesProxy(std::string_view host, std::string_view port, std::string_view no_proxy);

// The proxy for a server at host:port (`tls`: https), or none. A kubeconfig
// `proxy-url` is used for every request when set; otherwise the environment
// decides. A malformed proxy URL is an error naming where it came from.
Result<std::optional<Proxy>> ChooseProxy(bool tls, std::string_view host, std::string_view port,
                                         std::string_view kubeconfig_proxy_url,
                                         const ProxyEnvironment& env);

// The request that opens a tunnel to host:port through a proxy.
std::string FormatConnectRequest(std::string_view host, std::string_view port,
                                 std::string_view authorization);

}  // namespace hybridjob::k8s::http
