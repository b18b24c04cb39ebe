#include <charconv>

#include <nlohmann/json.hpp>

#include <hybridjob/k8s/base64.h>
#include <hybridjob/k8s/exec_credential.h>

namespace hybridjob::k8s {
namespace {

constexpr std::string_view kKind = "ExecCredential";
constexpr std::chrono::seconds kMaxRefreshMargin{10};

// Reads exactly `width` digits at text[*pos], advancing pos.
std::optional<int> Digits(std::string_view text, size_t* pos, size_t width) {
  if (*pos + width > text.size()) {
    return std::nullopt;
  }
  int value = 0;
  for (size_t i = 0; i < width; ++i) {
    const char c = text[*pos + i];
    if (c < '0' || c > '9') {
      return std::nullopt;
    }
    value = value * 10 + (c - '0');
  }
  *pos += width;
  return value;
}

bool Expect(std::string_view text, size_t* pos, char c) {
  if (*pos < text.size() && (text[*pos] == c || std::tolower(text[*pos]) == c)) {
    ++*pos;
    return true;
  }
  return false;
}

// A field that must be a string when present.
Result<std::string> OptionalString(const nlohmann::json& object, const char* key,
                                   std::string_view where) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) {
    return std::string();
  }
  if (!it->is_string()) {
    return InvalidArgument(std::string(where) + ": " + key + " must be a string");
  }
  return it->get<std::string>();
}

}  // namespace

std::string EncodeExecCredentialRequest(const ExecConfig& exec, const ClientConfig& cluster) {
  nlohmann::json spec = {{"interactive", false}};
  if (exec.provide_cluster_info) {
    nlohmann::json info = {{"server", cluster.server}};
    if (!cluster.ca_pem.empty()) {
      info["certificate-authority-data"] = Base64Encode(cluster.ca_pem);
    }
    if (cluster.insecure_skip_tls_verify) {
      info["insecure-skip-tls-verify"] = true;
    }
    if (!cluster.tls_server_name.empty()) {
      info["tls-server-name"] = cluster.tls_server_name;
    }
    // A plugin that calls the cluster itself goes through the same proxy.
    if (!cluster.proxy_url.empty()) {
      info["proxy-url"] = cluster.proxy_url;
    }
    spec["cluster"] = std::move(info);
  }
  const nlohmann::json request = {
      {"apiVersion", exec.api_version}, {"kind", kKind}, {"spec", std::move(spec)}};
  return request.dump();
}

Result<ExecCredential> DecodeExecCredential(std::string_view output, std::string_view api_version) {
  const nlohmann::json parsed = nlohmann::json::parse(output, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return InvalidArgument("exec plugin output is not a JSON ExecCredential object");
  }
  const std::string got_version = parsed.value("apiVersion", nlohmann::json()).is_string()
                                      ? parsed["apiVersion"].get<std::string>()
                                      : std::string();
  const std::string got_kind = parsed.value("kind", nlohmann::json()).is_string()
                                   ? parsed["kind"].get<std::string>()
                                   : std::string();
  if (got_version != api_version || got_kind != kKind) {
    return InvalidArgument("exec plugin is configured to use API version " +
                           std::string(api_version) + ", plugin returned apiVersion \"" +
                           got_version + "\" kind \"" + got_kind + "\"");
  }
  const auto status = parsed.find("status");
  if (status == parsed.end() || !status->is_object()) {
    return InvalidArgument("exec plugin didn't return a status field");
  }
  constexpr std::string_view kWhere = "exec plugin status";
  auto token = OptionalString(*status, "token", kWhere);
  auto cert = OptionalString(*status, "clientCertificateData", kWhere);
  auto key = OptionalString(*status, "clientKeyData", kWhere);
  auto expiry = OptionalString(*status, "expirationTimestamp", kWhere);
  for (const Status& failure : {token.status(), cert.status(), key.status(), expiry.status()}) {
    if (!failure.ok()) {
      return failure;
    }
  }
  if (token->empty() && cert->empty() && key->empty()) {
    return InvalidArgument("exec plugin didn't return a token or cert/key pair");
  }
  if (cert->empty() != key->empty()) {
    return InvalidArgument("exec plugin returned only a certificate or a key, not both");
  }
  ExecCredential credential;
  credential.token = std::move(*token);
  credential.client_cert_pem = std::move(*cert);
  credential.client_key_pem = std::move(*key);
  if (!expiry->empty()) {
    auto time = ParseRfc3339(*expiry);
    if (!time) {
      return InvalidArgument("exec plugin status.expirationTimestamp: " + time.status().message());
    }
    credential.expiry = *time;
  }
  return credential;
}

Result<WallClock::time_point> ParseRfc3339(std::string_view text) {
  const auto bad = [&] {
    return InvalidArgument("\"" + std::string(text.substr(0, 64)) +
                           "\" is not an RFC 3339 time (like 2024-05-01T10:00:00Z)");
  };
  size_t pos = 0;
  const auto year = Digits(text, &pos, 4);
  if (!year || !Expect(text, &pos, '-')) {
    return bad();
  }
  const auto month = Digits(text, &pos, 2);
  if (!month || !Expect(text, &pos, '-')) {
    return bad();
  }
  const auto day = Digits(text, &pos, 2);
  if (!day || !Expect(text, &pos, 't')) {
    return bad();
  }
  const auto hour = Digits(text, &pos, 2);
  if (!hour || !Expect(text, &pos, ':')) {
    return bad();
  }
  const auto minute = Digits(text, &pos, 2);
  if (!minute || !Expect(text, &pos, ':')) {
    return bad();
  }
  const auto second = Digits(text, &pos, 2);
  if (!second || *hour > 23 || *minute > 59 || *second > 60) {
    return bad();
  }
  std::chrono::nanoseconds fraction{0};
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    const size_t start = pos;
    int64_t nanos = 0;
    int digits = 0;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      if (digits < 9) {
        nanos = nanos * 10 + (text[pos] - '0');
        ++digits;
      }
      ++pos;
    }
    if (pos == start) {
      return bad();
    }
    for (; digits < 9; ++digits) {
      nanos *= 10;
    }
    fraction = std::chrono::nanoseconds(nanos);
  }
  std::chrono::minutes offset{0};
  if (Expect(text, &pos, 'z')) {
    // UTC
  } else if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    const int sign = text[pos] == '-' ? -1 : 1;
    ++pos;
    const auto offset_hours = Digits(text, &pos, 2);
    if (!offset_hours || !Expect(text, &pos, ':')) {
      return bad();
    }
    const auto offset_minutes = Digits(text, &pos, 2);
    if (!offset_minutes || *offset_hours > 23 || *offset_minutes > 59) {
      return bad();
    }
    offset = sign * (std::chrono::hours(*offset_hours) + std::chrono::minutes(*offset_minutes));
  } else {
    return bad();
  }
  if (pos != text.size()) {
    return bad();
  }
  const std::chrono::year_month_day date{std::chrono::year(*year),
                                         std::chrono::month(static_cast<unsigned>(*month)),
                                         std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok()) {
    return bad();
  }
  const auto local = std::chrono::sys_days(date) + std::chrono::hours(*hour) +
                     std::chrono::minutes(*minute) + std::chrono::seconds(*second) + fraction;
  // "+02:00" means local time is ahead of UTC: subtract to get UTC.
  return std::chrono::time_point_cast<WallClock::duration>(local - offset);
}

std::optional<WallClock::time_point> RefreshTime(const ExecCredential& credential,
                                                 WallClock::time_point obtained) {
  if (!credential.expiry) {
    return std::nullopt;
  }
  const auto lifetime = *credential.expiry - obtained;
  if (lifetime <= WallClock::duration::zero()) {
    return *credential.expiry;  // already expired: use it once, refresh next time
  }
  const auto margin = std::min<WallClock::duration>(lifetime / 10, kMaxRefreshMargin);
  return *credential.expiry - margin;
}

}  // namespace hybridjob::k8s
