// Base64, as kubeconfig *-data fields and Secret data are written.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hybridjob::k8s {

std::optional<std::string> Base64Decode(std::string_view encoded);
std::string Base64Encode(std::string_view raw);

}  // namespace hybridjob::k8s
