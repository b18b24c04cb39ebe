#include <algorithm>
#include <unistd.h>
#include <utility>

#include <spdlog/spdlog.h>

#include <hybridjob/observability/metrics.h>
#include <hybridjob/observability/secure_serving.h>

namespace hybridjob::observability {

Result<ServingSecurity> MakeServingSecurity(const ServingFlags& flags, k8s::ApiClient& client,
                                            const std::string& binary,
                                            const std::vector<std::string>& hosts) {
  if (flags.insecure_serving) {
    if (!flags.tls_cert_file.empty() || !flags.tls_private_key_file.empty()) {
      return InvalidArgument(
          "--insecure-serving serves plain HTTP: drop --tls-cert-file and --tls-private-key-file, "
          "or drop --insecure-serving");
    }
    spdlog::warn(
        "--insecure-serving: /metrics and the dashboard are plain HTTP and answer anyone who "
        "reaches their port, with every namespace's jobs; never use it where others can connect");
    return ServingSecurity{};
  }
  ServingSecurity security;
  if (!flags.tls_cert_file.empty() || !flags.tls_private_key_file.empty()) {
    auto read = ReadServingCertificate(flags.tls_cert_file, flags.tls_private_key_file);
    if (!read.ok()) {
      return read.status();
    }
    security.certificate = std::move(*read);
  } else {
    auto made = SelfSignedCertificate(binary, hosts);
    if (!made.ok()) {
      return made.status();
    }
    security.certificate = std::move(*made);
    spdlog::info(
        "the HTTPS listeners (/metrics, the dashboard) use a self-signed certificate (no "
        "--tls-cert-file)");
  }
  security.reviewer = CachingAccessReviewer(ApiServerAccessReviewer(client));
  return security;
}

std::vector<std::string> ServingHosts(const std::vector<std::string>& listen_addresses) {
  std::vector<std::string> hosts = {"localhost", "127.0.0.1"};
  auto add = [&hosts](std::string host) {
    if (!host.empty() && host != "0.0.0.0" && host != "::" &&
        std::find(hosts.begin(), hosts.end(), host) == hosts.end()) {
      hosts.push_back(std::move(host));
    }
  };
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) == 0) {
    add(name);
  }
  for (const std::string& address : listen_addresses) {
    const size_t colon = address.rfind(':');
    if (colon == std::string::npos) {
      continue;
    }
    std::string host = address.substr(0, colon);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
      host = host.substr(1, host.size() - 2);
    }
    add(std::move(host));
  }
  return hosts;
}

HttpReply UnauthorizedReply(std::string_view why) {
  HttpReply reply{401, "text/plain; charset=utf-8", "Unauthorized: " + std::string(why) + "\n"};
  reply.headers["WWW-Authenticate"] = "Bearer realm=\"hybridjob\"";
  return reply;
}

HttpReply ForbiddenReply(const Caller& caller, std::string_view lacks) {
  const std::string who = caller.user ? "user \"" + caller.user->username + "\"" : "the caller";
  return {403, "text/plain; charset=utf-8",
          "Forbidden: " + who + " may not " + std::string(lacks) + "\n"};
}

HttpReply ReviewFailedReply(const Status& status) {
  return {503, "text/plain; charset=utf-8",
          "the API server could not review the request: " + status.ToString() + "\n"};
}

std::variant<Caller, HttpReply> Authenticate(AccessReviewer* reviewer, const HttpRequest& request) {
  if (reviewer == nullptr) {
    return Caller{};
  }
  const std::string token = BearerToken(request.authorization);
  if (token.empty()) {
    return UnauthorizedReply("no bearer token (Authorization: Bearer <token>)");
  }
  auto user = reviewer->Authenticate(token);
  if (!user.ok()) {
    spdlog::warn("authenticating a request to {}: {}", request.path, user.status().ToString());
    return ReviewFailedReply(user.status());
  }
  if (!user->has_value()) {
    return UnauthorizedReply("the API server does not accept the token");
  }
  return Caller{std::move(*user)};
}

Result<bool> Allowed(AccessReviewer* reviewer, const Caller& caller, const AccessCheck& check) {
  if (reviewer == nullptr || !caller.user) {
    return reviewer == nullptr;
  }
  return reviewer->Authorize(*caller.user, check);
}

HttpHandler Guarded(std::shared_ptr<AccessReviewer> reviewer, AccessCheck check,
                    HttpHandler handler) {
  return [reviewer = std::move(reviewer), check = std::move(check),
          handler = std::move(handler)](const HttpRequest& request) {
    auto caller = Authenticate(reviewer.get(), request);
    if (auto* refusal = std::get_if<HttpReply>(&caller)) {
      return *refusal;
    }
    auto allowed = Allowed(reviewer.get(), std::get<Caller>(caller), check);
    if (!allowed.ok()) {
      spdlog::warn("authorising a request to {}: {}", request.path, allowed.status().ToString());
      return ReviewFailedReply(allowed.status());
    }
    if (!*allowed) {
      return ForbiddenReply(std::get<Caller>(caller), check.Describe());
    }
    return handler(request);
  };
}

bool ServingEnabled(const std::string& address) {
  return !address.empty() && address != "0";
}

Status ServingEndpoints::Start(Registry& registry, const EndpointAddress& metrics,
                               const EndpointAddress& health, std::function<bool()> ready,
                               const ServingSecurity& security) {
  if (ServingEnabled(metrics.address)) {
    metrics_.Handle(
        "/metrics",
        Guarded(
            security.reviewer, AccessCheck::NonResource("get", "/metrics"),
            [&registry](const HttpRequest&) {
              return HttpReply{200, "text/plain; version=0.0.4; charset=utf-8", registry.Render()};
            }));
    const ServingCertificate* tls = security.certificate ? &*security.certificate : nullptr;
    if (Status status = metrics_.Start(metrics.address, tls); !status.ok()) {
      return Status(status.code(), metrics.field + ": " + status.message());
    }
  }
  if (ServingEnabled(health.address)) {
    AddHealthEndpoints(health_, std::move(ready));
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

}  // namespace hybridjob::observability
