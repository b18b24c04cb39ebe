// A small HTTP(S) server for /metrics, /healthz, /readyz and the dashboard.
// cpprestsdk stays inside the implementation.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <hybridjob/common/status.h>
#include <hybridjob/observability/tls.h>

namespace hybridjob::observability {

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
  std::map<std::string, std::string> headers;  // besides Content-Type
};

// What a handler may read of a request.
struct HttpRequest {
  std::string path;
  std::string authorization;  // the Authorization header, empty when absent
};

using HttpHandler = std::function<HttpReply(const HttpRequest&)>;

class HttpServer {
 public:
  HttpServer();
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registered before Start(); GET only.
  void Handle(const std::string& path, HttpHandler handler);
  void Handle(const std::string& path, std::function<HttpReply()> handler);
  // address: "host:port" (":port" means every interface). With a
  // certificate it serves HTTPS (TLS 1.2 and newer), else plain HTTP.
  Status Start(const std::string& address, const ServingCertificate* tls = nullptr);
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// /healthz (live while the process serves) and /readyz (ready() decides):
// plain HTTP for the kubelet's probes, with nothing a probe must not see.
void AddHealthEndpoints(HttpServer& server, std::function<bool()> ready);

}  // namespace hybridjob::observability
