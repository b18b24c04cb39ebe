#include <algorithm>
#include <arpa/inet.h>
#include <array>
#include <cctype>
#include <charconv>
#include <cstdlib>

#include <hybridjob/k8s/base64.h>
#include <hybridjob/k8s/http_wire.h>
#include <hybridjob/k8s/proxy.h>

namespace hybridjob::k8s::http {
namespace {

std::string Lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string_view Trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  return text;
}

std::string Getenv(const char* upper, const char* lower) {
  for (const char* name : {upper, lower}) {
    const char* value = std::getenv(name);  // NOLINT(concurrency-mt-unsafe)
    if (value != nullptr && *value != '\0') {
      return value;
    }
  }
  return "";
}

// An IPv4 or IPv6 address in network order (16 bytes; v4 uses the first 4).
struct Address {
  int family = 0;
  std::array<unsigned char, 16> bytes{};
  size_t size() const { return family == AF_INET ? 4 : 16; }
};

std::optional<Address> ParseAddress(std::string_view text) {
  const std::string copy(text);
  Address address;
  if (inet_pton(AF_INET, copy.c_str(), address.bytes.data()) == 1) {
    address.family = AF_INET;
    return address;
  }
  if (inet_pton(AF_INET6, copy.c_str(), address.bytes.data()) == 1) {
    address.family = AF_INET6;
    return address;
  }
  return std::nullopt;
}

bool IsLoopback(const Address& address) {
  if (address.family == AF_INET) {
    return address.bytes[0] == 127;
  }
  static constexpr std::array<unsigned char, 16> kOne{0, 0, 0, 0, 0, 0, 0, 0,
                                                      0, 0, 0, 0, 0, 0, 0, 1};
  return address.bytes == kOne;
}

bool SameAddress(const Address& a, const Address& b) {
  return a.family == b.family &&
         std::equal(a.bytes.begin(), a.bytes.begin() + a.size(), b.bytes.begin());
}

// Whether `address` lies in `cidr` ("10.0.0.0/8", "fd00::/8"); false for
// anything that is not a CIDR range.
bool InRange(const Address& address, std::string_view cidr) {
  const size_t slash = cidr.find('/');
  if (slash == std::string_view::npos) {
    return false;
  }
  const std::optional<Address> base = ParseAddress(cidr.substr(0, slash));
  int bits = -1;
  const std::string_view length = cidr.substr(slash + 1);
  const auto [end, error] = std::from_chars(length.data(), length.data() + length.size(), bits);
  if (!base || error != std::errc() || end != length.data() + length.size() || bits < 0 ||
      bits > static_cast<int>(base->size() * 8) || base->family != address.family) {
    return false;
  }
  for (int bit = 0; bit < bits; ++bit) {
    const int byte = bit / 8;
    const int mask = 0x80 >> (bit % 8);
    if ((address.bytes[byte] & mask) != (base->bytes[byte] & mask)) {
      return false;
    }
  }
  return true;
}

// host[:port] of a NO_PROXY entry; an IPv6 address with a port is bracketed.
void SplitEntry(std::string_view entry, std::string_view* host, std::string_view* port) {
  *port = {};
  if (entry.starts_with('[')) {
    const size_t close = entry.find(']');
    *host = entry.substr(1, close == std::string_view::npos ? entry.npos : close - 1);
    if (close != std::string_view::npos && close + 1 < entry.size() && entry[close + 1] == ':') {
      *port = entry.substr(close + 2);
    }
    return;
  }
  const size_t colon = entry.rfind(':');
  if (colon != std::string_view::npos && entry.find(':') == colon) {
    *host = entry.substr(0, colon);
    *port = entry.substr(colon + 1);
    return;
  }
  *host = entry;  // no port, or a bare IPv6 address
}

}  // namespace

Result<Proxy> ParseProxyUrl(std::string_view url) {
  std::string_view rest = Trim(url);
  const std::string given(rest);
  if (rest.empty()) {
    return InvalidArgument("proxy URL is empty");
  }
  const size_t scheme_end = rest.find("://");
  if (scheme_end != std::string_view::npos) {
    const std::string scheme = Lower(rest.substr(0, scheme_end));
    if (scheme == "https" || scheme == "socks5" || scheme == "socks5h") {
      return InvalidArgument("proxy \"" + given + "\": " + scheme +
                             ":// proxies are not supported; use an http:// proxy");
    }
    if (scheme != "http") {
      return InvalidArgument("proxy \"" + given + "\": unknown scheme \"" + scheme +
                             "\"; use http://host:port");
    }
    rest.remove_prefix(scheme_end + 3);
  }
  // The authority ends at the first '/'; a path is allowed and ignored, as
  // Go ignores it.
  std::string_view authority = rest.substr(0, rest.find('/'));
  if (authority.find_first_of("?#") != std::string_view::npos) {
    return InvalidArgument("proxy \"" + given + "\": a query or fragment is not allowed");
  }
  Proxy proxy;
  std::string shown = "http://";
  const size_t at = authority.rfind('@');
  if (at != std::string_view::npos) {
    const std::string_view userinfo = authority.substr(0, at);
    authority.remove_prefix(at + 1);
    proxy.authorization = "Basic " + Base64Encode(userinfo);
    const std::string_view user = userinfo.substr(0, userinfo.find(':'));
    shown += std::string(user) + (user.size() < userinfo.size() ? ":***@" : "@");
  }
  shown += std::string(authority);
  switch (SplitAuthority(authority, "80", &proxy.host, &proxy.port)) {
    case AuthorityProblem::kNone:
      break;
    case AuthorityProblem::kBadIpv6:
      return InvalidArgument("proxy \"" + given + "\": bad IPv6 address");
    case AuthorityProblem::kBadAddress:
      return InvalidArgument("proxy \"" + given + "\": bad address");
    case AuthorityProblem::kNoHost:
      return InvalidArgument("proxy \"" + given + "\" names no host");
    case AuthorityProblem::kBadPort:
      return InvalidArgument("proxy \"" + given + "\": bad port");
  }
  proxy.url = std::move(shown);
  return proxy;
}

ProxyEnvironment ProxyEnvironment::FromProcess() {
  return {Getenv("HTTPS_PROXY", "https_proxy"), Getenv("HTTP_PROXY", "http_proxy"),
          Getenv("NO_PROXY", "no_proxy")};
}

bool BypassesProxy(std::string_view host, std::string_view port, std::string_view no_proxy) {
  const std::string name = Lower(host);
  if (name == "localhost") {
    return true;
  }
  const std::optional<Address> address = ParseAddress(name);
  if (address && IsLoopback(*address)) {
    return true;
  }
  while (!no_proxy.empty()) {
    const size_t comma = no_proxy.find(',');
    const std::string entry = Lower(Trim(no_proxy.substr(0, comma)));
    no_proxy.remove_prefix(comma == std::string_view::npos ? no_proxy.size() : comma + 1);
    if (entry.empty()) {
      continue;
    }
    if (entry == "*") {
      return true;
    }
    if (address && InRange(*address, entry)) {
      return true;
    }
    std::string_view entry_host;
    std::string_view entry_port;
    SplitEntry(entry, &entry_host, &entry_port);
    if (!entry_port.empty() && entry_port != port) {
      continue;
    }
    if (const std::optional<Address> entry_address = ParseAddress(entry_host)) {
      if (address && SameAddress(*address, *entry_address)) {
        return true;
      }
      continue;
    }
    // "*.example.com" and ".example.com": subdomains only; "example.com":
    // the domain and its subdomains.
    std::string suffix(entry_host);
    bool domain_itself = false;
    if (suffix.starts_with("*.")) {
      suffix.erase(0, 1);
    } else if (!suffix.starts_with('.')) {
      domain_itself = true;
      suffix.insert(0, ".");
    }
    if (suffix.size() > 1 &&
        (name.ends_with(suffix) || (domain_itself && name == suffix.substr(1)))) {
      return true;
    }
  }
  return false;
}

Result<std::optional<Proxy>> ChooseProxy(bool tls, std::string_view host, std::string_view port,
                                         std::string_view kubeconfig_proxy_url,
                                         const ProxyEnvironment& env) {
  if (!kubeconfig_proxy_url.empty()) {
    auto proxy = ParseProxyUrl(kubeconfig_proxy_url);
    if (!proxy) {
      return Status(proxy.status().code(), "kubeconfig proxy-url: " + proxy.status().message());
    }
    return std::optional<Proxy>(std::move(*proxy));
  }
  const std::string& from_env = tls ? env.https_proxy : env.http_proxy;
  if (from_env.empty() || BypassesProxy(host, port, env.no_proxy)) {
    return std::optional<Proxy>();
  }
  auto proxy = ParseProxyUrl(from_env);
  if (!proxy) {
    return Status(proxy.status().code(), std::string(tls ? "HTTPS_PROXY" : "HTTP_PROXY") + ": " +
                                             proxy.status().message());
  }
  return std::optional<Proxy>(std::move(*proxy));
}

std::string FormatConnectRequest(std::string_view host, std::string_view port,
                                 std::string_view authorization) {
  const bool ipv6 = host.find(':') != std::string_view::npos;
  const std::string authority =
      (ipv6 ? "[" + std::string(host) + "]" : std::string(host)) + ":" + std::string(port);
  std::string request = "CONNECT " + authority + " HTTP/1.1\r\nHost: " + authority + "\r\n";
  if (!authorization.empty()) {
    request += "Proxy-Authorization: " + std::string(authorization) + "\r\n";
  }
  request += "\r\n";
  return request;
}

}  // namespace hybridjob::k8s::http
