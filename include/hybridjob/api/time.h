// Timestamps as the Kubernetes API writes them (RFC 3339, UTC, whole seconds).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace hybridjob::api {

using Clock = std::chrono::system_clock;
using TimePoint = std::chrono::sys_seconds;

// "2024-05-01T12:00:00Z".
std::string FormatTime(TimePoint time);
// The same for a clock reading, its fraction of a second dropped.
std::string FormatTime(Clock::time_point time);
// Accepts "2024-05-01T12:00:00Z", fractional seconds (dropped) and numeric
// offsets ("+02:00"); nullopt for anything else.
std::optional<TimePoint> ParseTime(std::string_view text);

}  // namespace hybridjob::api
