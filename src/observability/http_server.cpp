#include <cpprest/http_listener.h>

#include <hybridjob/observability/http_server.h>
#include <hybridjob/observability/metrics.h>

namespace hybridjob::observability {

class HttpServer::Impl {
 public:
  std::map<std::string, HttpHandler> handlers;
  std::unique_ptr<web::http::experimental::listener::http_listener> listener;
};

HttpServer::HttpServer() : impl_(std::make_unique<Impl>()) {}

HttpServer::~HttpServer() {
  Stop();
}

void HttpServer::Handle(const std::string& path, HttpHandler handler) {
  impl_->handlers[path] = std::move(handler);
}

Status HttpServer::Start(const std::string& address) {
  std::string host_port = address;
  if (!host_port.empty() && host_port.front() == ':') {
    host_port = "0.0.0.0" + host_port;
  }
  if (host_port.find(':') == std::string::npos) {
    return InvalidArgument("listen address \"" + address + "\" must be host:port");
  }
  try {
    impl_->listener =
        std::make_unique<web::http::experimental::listener::http_listener>("http://" + host_port);
    impl_->listener->support(web::http::methods::GET, [this](web::http::http_request request) {
      const std::string path = request.relative_uri().path();
      auto it = impl_->handlers.find(path);
      try {
        if (it == impl_->handlers.end()) {
          request.reply(web::http::status_codes::NotFound, "not found\n").wait();
          return;
        }
        const HttpReply reply = it->second();
        web::http::http_response response(static_cast<web::http::status_code>(reply.status));
        response.set_body(reply.body, reply.content_type);
        request.reply(response).wait();
      } catch (const std::exception&) {
        // The client went away mid-reply: nothing to do.
      }
    });
    impl_->listener->open().wait();
  } catch (const std::exception& e) {
    impl_->listener.reset();
    return Unavailable("listen on " + address + ": " + e.what());
  }
  return Status::Ok();
}

void HttpServer::Stop() {
  if (impl_ && impl_->listener) {
    try {
      impl_->listener->close().wait();
    } catch (const std::exception&) {
    }
    impl_->listener.reset();
  }
}

namespace {
bool Enabled(const std::string& address) {
  return !address.empty() && address != "0";
}
}  // namespace

Status ServingEndpoints::Start(Registry& registry, const EndpointAddress& metrics,
                               const EndpointAddress& health, std::function<bool()> ready) {
  if (Enabled(metrics.address)) {
    metrics_.Handle("/metrics", [&registry] {
      return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", registry.Render()};
    });
    if (Status status = metrics_.Start(metrics.address); !status.ok()) {
      return Status(status.code(), metrics.field + ": " + status.message());
    }
  }
  if (Enabled(health.address)) {
    AddStandardEndpoints(health_, registry, std::move(ready));
    if (Status status = health_.Start(health.address); !status.ok()) {
      metrics_.Stop();
      return Status(status.code(), health.field + ": " + status.message());
    }
  }
  return Status::Ok();
}

void ServingEndpoints::Stop() {
  metrics_.Stop();
  health_.Stop();
}

void AddStandardEndpoints(HttpServer& server, Registry& registry, std::function<bool()> ready) {
  server.Handle("/healthz", [] { return HttpReply{200, "text/plain; charset=utf-8", "ok\n"}; });
  server.Handle("/readyz", [ready = std::move(ready)] {
    return ready() ? HttpReply{200, "text/plain; charset=utf-8", "ok\n"}
                   : HttpReply{503, "text/plain; charset=utf-8", "not ready\n"};
  });
  server.Handle("/metrics", [&registry] {
    return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", registry.Render()};
  });
}

}  // namespace hybridjob::observability
