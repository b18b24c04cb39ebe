// A small HTTP server for /metrics, /healthz and /readyz. cpprestsdk stays
// inside the implementation.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include <hybridjob/common/status.h>

namespace hybridjob::observability {

struct HttpReply {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpHandler = std::function<HttpReply()>;

class HttpServer {
 public:
  HttpServer();
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Registered before Start(); GET only.
  void Handle(const std::string& path, HttpHandler handler);
  // address: "host:port" (":port" means every interface).
  Status Start(const std::string& address);
  void Stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

// The standard endpoints: /healthz (live while the process serves), /readyz
// (ready() decides), /metrics (the registry's text).
class Registry;
void AddStandardEndpoints(HttpServer& server, Registry& registry, std::function<bool()> ready);

// The two listeners every binary runs: /metrics on one address, the standard
// endpoints on another. An empty or "0" address turns that listener off.
struct EndpointAddress {
  std::string field;    // named in errors, e.g. "--metrics-addr" or "metricsAddr"
  std::string address;  // host:port
};

class ServingEndpoints {
 public:
  Status Start(Registry& registry, const EndpointAddress& metrics, const EndpointAddress& health,
               std::function<bool()> ready);
  void Stop();

 private:
  HttpServer metrics_;
  HttpServer health_;
};

}  // namespace hybridjob::observability
