#include <algorithm>

#include <hybridjob/api/names.h>

namespace hybridjob::api {
namespace {

bool IsLowerAlpha(char c) {
  return c >= 'a' && c <= 'z';
}
bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}
bool IsLowerAlnum(char c) {
  return IsLowerAlpha(c) || IsDigit(c);
}

bool IsLabelBody(std::string_view value) {
  if (value.empty() || value.size() > kMaxDnsLabelLength) {
    return false;
  }
  for (char c : value) {
    if (!IsLowerAlnum(c) && c != '-') {
      return false;
    }
  }
  return IsLowerAlnum(value.front()) && IsLowerAlnum(value.back());
}

}  // namespace

bool IsDns1035Label(std::string_view value) {
  return IsLabelBody(value) && IsLowerAlpha(value.front());
}

bool IsDns1123Label(std::string_view value) {
  return IsLabelBody(value);
}

bool IsDns1123Subdomain(std::string_view value) {
  if (value.empty() || value.size() > kMaxDnsSubdomainLength) {
    return false;
  }
  size_t start = 0;
  while (true) {
    size_t dot = value.find('.', start);
    std::string_view label = value.substr(start, dot == std::string_view::npos ? dot : dot - start);
    if (!IsLabelBody(label)) {
      return false;
    }
    if (dot == std::string_view::npos) {
      return true;
    }
    start = dot + 1;
  }
}

std::string MemberHostname(std::string_view job, std::string_view role, int64_t index) {
  std::string name(job);
  name += '-';
  name += role;
  name += '-';
  name += std::to_string(index);
  return name;
}

std::string MemberPodName(std::string_view job, std::string_view role, int64_t index, int64_t run) {
  std::string name = MemberHostname(job, role, index);
  if (run != 0) {
    name += "-run";
    name += std::to_string(run);
  }
  return name;
}

std::string HeadlessServiceName(std::string_view job) {
  return std::string(job);
}

std::string ArtifactsPodName(std::string_view job) {
  return std::string(job) + "-artifacts";
}

std::string SshSecretName(std::string_view job) {
  return std::string(job) + "-ssh";
}

std::string ClusterConfigMapName(std::string_view job) {
  return std::string(job) + "-cluster";
}

std::string VolumeClaimName(std::string_view job, std::string_view volume) {
  return std::string(job) + "-" + std::string(volume);
}

std::string TensorboardName(std::string_view job) {
  return std::string(job) + "-tensorboard";
}

std::string MemberHost(std::string_view job, std::string_view ns, std::string_view role,
                       int64_t index) {
  std::string host = MemberHostname(job, role, index);
  host += '.';
  host += HeadlessServiceName(job);
  host += '.';
  host += ns;
  host += ".svc";
  return host;
}

namespace {

bool IsAlphanumeric(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

}  // namespace

bool IsQualifiedNamePart(std::string_view value) {
  if (value.empty() || value.size() > kMaxDnsLabelLength || !IsAlphanumeric(value.front()) ||
      !IsAlphanumeric(value.back())) {
    return false;
  }
  return std::all_of(value.begin(), value.end(),
                     [](char c) { return IsAlphanumeric(c) || c == '-' || c == '_' || c == '.'; });
}

bool IsQualifiedName(std::string_view key) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) {
    return IsQualifiedNamePart(key);
  }
  return IsDns1123Subdomain(key.substr(0, slash)) && IsQualifiedNamePart(key.substr(slash + 1));
}

}  // namespace hybridjob::api
