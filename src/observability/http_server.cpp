// cpprestsdk's U() macro would break fmt (spdlog) templates.
#define _TURN_OFF_PLATFORM_STRING  // NOLINT(bugprone-reserved-identifier): cpprestsdk's name

#include <boost/asio/ssl.hpp>
#include <cpprest/http_listener.h>

#include <hybridjob/observability/http_server.h>

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

void HttpServer::Handle(const std::string& path, std::function<HttpReply()> handler) {
  impl_->handlers[path] = [handler = std::move(handler)](const HttpRequest&) { return handler(); };
}

Status HttpServer::Start(const std::string& address, const ServingCertificate* tls) {
  std::string host_port = address;
  if (!host_port.empty() && host_port.front() == ':') {
    host_port = "0.0.0.0" + host_port;
  }
  if (host_port.find(':') == std::string::npos) {
    return InvalidArgument("listen address \"" + address + "\" must be host:port");
  }
  web::http::experimental::listener::http_listener_config config;
  if (tls != nullptr) {
    // Copied: the callback runs when the listener opens and on each accept.
    config.set_ssl_context_callback([pem = *tls](boost::asio::ssl::context& ctx) {
      ctx.set_options(boost::asio::ssl::context::default_workarounds |
                      boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                      boost::asio::ssl::context::no_tlsv1 | boost::asio::ssl::context::no_tlsv1_1);
      ctx.use_certificate_chain(boost::asio::buffer(pem.certificate.data(), pem.certificate.size()));
      ctx.use_private_key(boost::asio::buffer(pem.private_key.data(), pem.private_key.size()),
                          boost::asio::ssl::context::pem);
    });
  }
  try {
    impl_->listener = std::make_unique<web::http::experimental::listener::http_listener>(
        (tls != nullptr ? "https://" : "http://") + host_port, config);
    impl_->listener->support(web::http::methods::GET, [this](web::http::http_request request) {
      HttpRequest info;
      info.path = request.relative_uri().path();
      auto it = impl_->handlers.find(info.path);
      try {
        if (it == impl_->handlers.end()) {
          request.reply(web::http::status_codes::NotFound, "not found\n").wait();
          return;
        }
        const auto& headers = request.headers();
        if (auto found = headers.find(web::http::header_names::authorization);
            found != headers.end()) {
          info.authorization = found->second;
        }
        const HttpReply reply = it->second(info);
        web::http::http_response response(static_cast<web::http::status_code>(reply.status));
        response.set_body(reply.body, reply.content_type);
        for (const auto& [name, value] : reply.headers) {
          response.headers().add(name, value);
        }
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

void AddHealthEndpoints(HttpServer& server, std::function<bool()> ready) {
  server.Handle("/healthz", [] { return HttpReply{200, "text/plain; charset=utf-8", "ok\n"}; });
  server.Handle("/readyz", [ready = std::move(ready)] {
    return ready() ? HttpReply{200, "text/plain; charset=utf-8", "ok\n"}
                   : HttpReply{503, "text/plain; charset=utf-8", "not ready\n"};
  });
}

}  // namespace hybridjob::observability
