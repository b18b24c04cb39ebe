// HTTP/1.1 over TCP, with TLS through OpenSSL, done on the calling thread:
// a request costs its own system calls and no hand-off to another thread.
// Connections are kept alive and reused; a watch holds one of its own for as
// long as it streams.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/status.h>
#include <hybridjob/k8s/http_wire.h>
#include <hybridjob/k8s/proxy.h>

namespace hybridjob::k8s::http {

// Where the server is, from a kubeconfig's `server` URL.
struct Endpoint {
  bool tls = true;
  std::string host;         // a name or an address, without IPv6 brackets
  std::string port;         // 443 or 80 when the URL names none
  std::string host_header;  // host[:port] as the URL spells it
  std::string path_prefix;  // a path the URL carries ("/k8s/clusters/c1"), no trailing slash
};
Result<Endpoint> ParseServerUrl(std::string_view url);

struct TlsOptions {
  std::string ca_pem;  // PEM bundle to trust; empty: the system's roots
  std::string client_cert_pem;
  std::string client_key_pem;
  bool insecure_skip_verify = false;
  std::string server_name;  // the name to check in the server's certificate and to send as SNI
};

struct Request {
  std::string_view method;
  std::string_view target;  // path and query, below the endpoint's path prefix
  std::vector<Header> headers;
  std::string_view body;
};

struct Response {
  ResponseHead head;
  std::string body;
};

// The body of a streamed response, read as it arrives.
class BodyReader {
 public:
  virtual ~BodyReader() = default;
  // Appends at least one byte of the body to `out`, waiting for it; false at
  // the end of the body. Cancelled once Cancel ran.
  virtual Result<bool> ReadSome(std::string& out) = 0;
  // Makes a ReadSome blocked in another thread return; safe from any thread
  // while the reader exists.
  virtual void Cancel() = 0;
};

// The rest of a body, for error answers to a stream.
Result<std::string> ReadAll(BodyReader& body);

struct StreamedResponse {
  ResponseHead head;
  std::unique_ptr<BodyReader> body;
};

class Transport {
 public:
  // Fails on a malformed URL or unusable TLS material (OpenSSL's reason in the message).
  // With a proxy, connections to an https server are tunnelled through it
  // (CONNECT), and requests to an http server are sent to it.
  static Result<std::unique_ptr<Transport>> Create(std::string_view server_url,
                                                   const TlsOptions& tls, size_t max_idle,
                                                   std::optional<Proxy> proxy = std::nullopt);
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  // One request and its whole response. `timeout` bounds connecting and
  // each wait for the server. Transport failures are Unavailable.
  Result<Response> RoundTrip(const Request& request, std::chrono::milliseconds timeout);

  // A request whose body is read as it streams (watches). `head_timeout`
  // bounds the wait for the response head, `read_timeout` each later read.
  Result<StreamedResponse> OpenStream(const Request& request,
                                      std::chrono::milliseconds head_timeout,
                                      std::chrono::milliseconds read_timeout);

 private:
  class Impl;
  explicit Transport(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace hybridjob::k8s::http
