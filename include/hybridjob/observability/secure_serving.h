// Serving /metrics and the dashboard to those the cluster allows: HTTPS with
// a certificate from files or a self-signed one, every request's bearer token
// reviewed by the API server (TokenReview), every permission asked of it
// (SubjectAccessReview). 401 without a known token, 403 without the right.
// Plain HTTP for everyone only with --insecure-serving.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <hybridjob/common/flags.h>
#include <hybridjob/common/status.h>
#include <hybridjob/observability/access_review.h>
#include <hybridjob/observability/http_server.h>
#include <hybridjob/observability/tls.h>

namespace hybridjob::k8s {
class ApiClient;
}

namespace hybridjob::observability {

// How a binary serves what needs authorisation.
struct ServingSecurity {
  // nullopt: plain HTTP.
  std::optional<ServingCertificate> certificate;
  // null: nobody is asked, everyone may (--insecure-serving).
  std::shared_ptr<AccessReviewer> reviewer;

  bool secure() const { return reviewer != nullptr; }
  std::string scheme() const { return certificate ? "https" : "http"; }
};

// From the serving flags: the certificate of --tls-cert-file and
// --tls-private-key-file, else a self-signed one for `hosts`; reviews through
// `client` (kept alive by the caller) with a short cache. With
// --insecure-serving: neither, and a warning in the log.
Result<ServingSecurity> MakeServingSecurity(const ServingFlags& flags, k8s::ApiClient& client,
                                            const std::string& binary,
                                            const std::vector<std::string>& hosts);

// The names a self-signed certificate is made for: localhost, 127.0.0.1, the
// host's name, and each listen address's host when it names one.
std::vector<std::string> ServingHosts(const std::vector<std::string>& listen_addresses);

// Who sent a request: nullopt user when nobody is asked (insecure serving).
struct Caller {
  std::optional<UserInfo> user;
};

// The caller, or the reply that refuses the request: 401 without a bearer
// token or with one the API server does not know, 503 when it cannot be asked.
std::variant<Caller, HttpReply> Authenticate(AccessReviewer* reviewer, const HttpRequest& request);
// Whether the caller may; an open server (no reviewer) allows everything.
Result<bool> Allowed(AccessReviewer* reviewer, const Caller& caller, const AccessCheck& check);

HttpReply UnauthorizedReply(std::string_view why);
// 403 naming the user and what it lacks.
HttpReply ForbiddenReply(const Caller& caller, std::string_view lacks);
// 503 for a review that failed (the API server unreachable or refusing).
HttpReply ReviewFailedReply(const Status& status);

// `handler` behind one check: the caller must be authenticated and allowed.
HttpHandler Guarded(std::shared_ptr<AccessReviewer> reviewer, AccessCheck check,
                    HttpHandler handler);

class Registry;

// The two listeners every binary runs. /metrics on one address, served as
// `security` says and open to callers allowed `get` on the non-resource URL
// /metrics (the metrics-reader ClusterRole); /healthz and /readyz on another,
// always plain HTTP. An empty or "0" address turns that listener off.
struct EndpointAddress {
  std::string field;    // named in errors, e.g. "--metrics-addr" or "metricsAddr"
  std::string address;  // host:port
};

class ServingEndpoints {
 public:
  Status Start(Registry& registry, const EndpointAddress& metrics, const EndpointAddress& health,
               std::function<bool()> ready, const ServingSecurity& security);
  void Stop();

 private:
  HttpServer metrics_;
  HttpServer health_;
};

// Whether a listen address turns its listener on (not empty, not "0").
bool ServingEnabled(const std::string& address);

}  // namespace hybridjob::observability
