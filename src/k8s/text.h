// Small text helpers, private to the k8s library.
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace hybridjob::k8s {

// `text` without leading and trailing white space; a view into `text`.
inline std::string_view TrimSpace(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) {
    text.remove_suffix(1);
  }
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) {
    text.remove_prefix(1);
  }
  return text;
}

}  // namespace hybridjob::k8s
