// Base64 for kubeconfig *-data fields; private to the k8s library.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace hybridjob::k8s {

std::optional<std::string> Base64Decode(std::string_view encoded);
std::string Base64Encode(std::string_view raw);

}  // namespace hybridjob::k8s
