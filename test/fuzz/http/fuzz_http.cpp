// Fuzzes what the API client's hand-written HTTP/1.1 reads from the network
// and from its proxy settings: a response head (to a GET, a HEAD, and a
// proxy's answer to CONNECT), a chunked body fed whole and byte by byte, and
// the first line as a proxy URL with the rest as NO_PROXY.
//
// Contracts checked besides crashes: a parsed status is 100-999; an answer to
// HEAD and a 2xx answer to CONNECT have no body; a chunked body decodes alike
// whole and byte by byte and is never consumed past its end; an accepted
// proxy URL has a host and a port of 1-65535, and never shows its password.
#include <charconv>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>

#include <hybridjob/k8s/http_wire.h>
#include <hybridjob/k8s/proxy.h>

namespace {

namespace http = hybridjob::k8s::http;

[[noreturn]] void Fail(std::string_view what, std::string_view input) {
  std::cerr << "contract broken: " << what << "\n" << input << "\n";
  std::abort();
}

void CheckHead(std::string_view bytes) {
  const size_t head_length = http::HeadLength(bytes);
  if (head_length == 0) {
    return;
  }
  const std::string_view head = bytes.substr(0, head_length);
  for (std::string_view method : {"GET", "HEAD", "CONNECT"}) {
    auto parsed = http::ParseResponseHead(head, method);
    if (!parsed.ok()) {
      if (parsed.status().message().empty()) {
        Fail("a refused head without a message", bytes);
      }
      continue;
    }
    if (parsed->status < 100 || parsed->status > 999) {
      Fail("response head with a status outside 100-999", bytes);
    }
    if (method == "HEAD" && parsed->framing != http::BodyFraming::kNone) {
      Fail("an answer to HEAD framed with a body", bytes);
    }
    if (method == "CONNECT" && parsed->status >= 200 && parsed->status <= 299 &&
        parsed->framing != http::BodyFraming::kNone) {
      Fail("a 2xx answer to CONNECT framed with a body", bytes);
    }
  }
}

void CheckChunked(std::string_view bytes) {
  http::ChunkedDecoder whole;
  std::string whole_out;
  auto whole_consumed = whole.Feed(bytes, whole_out);
  http::ChunkedDecoder split;
  std::string split_out;
  size_t split_consumed = 0;
  hybridjob::Status split_error;
  for (size_t i = 0; i < bytes.size() && !split.done(); ++i) {
    auto one = split.Feed(bytes.substr(i, 1), split_out);
    if (!one.ok()) {
      split_error = one.status();
      break;
    }
    split_consumed += *one;
  }
  if (whole_consumed.ok() != split_error.ok()) {
    Fail("chunked body decoded differently whole and byte by byte", bytes);
  }
  if (whole_consumed.ok() && (*whole_consumed != split_consumed || whole_out != split_out ||
                              whole.done() != split.done())) {
    Fail("chunked body decoded differently whole and byte by byte", bytes);
  }
  if (whole_consumed.ok() && *whole_consumed > bytes.size()) {
    Fail("chunked decoder consumed more than it was given", bytes);
  }
}

void CheckProxy(std::string_view bytes) {
  const size_t newline = bytes.find('\n');
  const std::string_view url = bytes.substr(0, newline);
  const std::string_view no_proxy =
      newline == std::string_view::npos ? std::string_view() : bytes.substr(newline + 1);
  auto proxy = http::ParseProxyUrl(url);
  if (proxy.ok()) {
    int port = 0;
    const std::string& text = proxy->port;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), port);
    if (proxy->host.empty() || error != std::errc() || end != text.data() + text.size() ||
        port < 1 || port > 65535) {
      Fail("an accepted proxy URL without a host or a valid port", bytes);
    }
    // The user information as the parser finds it: after the scheme, in the
    // authority (up to the first '/'), before its last '@'.
    std::string_view authority = url;
    if (const size_t scheme = authority.find("://"); scheme != std::string_view::npos) {
      authority.remove_prefix(scheme + 3);
    }
    authority = authority.substr(0, authority.find('/'));
    const size_t at = authority.rfind('@');
    if (at != std::string_view::npos) {
      const std::string_view userinfo = authority.substr(0, at);
      const size_t colon = userinfo.find(':');
      if (colon != std::string_view::npos &&
          proxy->url.find(":" + std::string(userinfo.substr(colon + 1)) + "@") !=
              std::string::npos &&
          userinfo.substr(colon + 1) != "***") {
        Fail("a proxy URL shown with its password", bytes);
      }
    }
    (void)http::BypassesProxy(proxy->host, proxy->port, no_proxy);
  } else if (proxy.status().message().empty()) {
    Fail("a refused proxy URL without a message", bytes);
  }
  (void)http::BypassesProxy(url, "443", no_proxy);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  CheckHead(bytes);
  CheckChunked(bytes);
  CheckProxy(bytes);
  return 0;
}
