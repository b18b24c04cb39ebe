#include <charconv>

#include <hybridjob/api/waiting.h>

namespace hybridjob::api {
namespace {

constexpr std::string_view kQueuePrefix = "queue ";
constexpr std::string_view kPositionSeparator = ", position ";

}  // namespace

std::string FormatStanding(const QueueStanding& standing) {
  std::string out = std::string(kQueuePrefix) + standing.name;
  if (standing.position > 0) {
    out += std::string(kPositionSeparator) + std::to_string(standing.position);
  }
  return out;
}

std::optional<QueueStanding> ParseStanding(std::string_view reason, std::string_view message) {
  if (reason.empty() || !message.starts_with(kQueuePrefix)) {
    return std::nullopt;
  }
  message.remove_prefix(kQueuePrefix.size());
  QueueStanding standing;
  standing.reason = std::string(reason);
  if (const size_t at = message.rfind(kPositionSeparator); at != std::string_view::npos) {
    const std::string_view digits = message.substr(at + kPositionSeparator.size());
    int32_t position = 0;
    const auto [end, error] =
        std::from_chars(digits.data(), digits.data() + digits.size(), position);
    if (error != std::errc{} || end != digits.data() + digits.size() || position <= 0) {
      return std::nullopt;
    }
    standing.position = position;
    message = message.substr(0, at);
  }
  if (message.empty()) {
    return std::nullopt;
  }
  standing.name = std::string(message);
  return standing;
}

}  // namespace hybridjob::api
