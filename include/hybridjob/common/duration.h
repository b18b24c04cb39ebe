// Durations as Kubernetes and Go write them: "300ms", "1.5s", "2m30s", "1h".
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <hybridjob/common/status.h>

namespace hybridjob {

// Units: ns, us (or µs), ms, s, m, h; components may repeat ("1h2m3s") and
// carry fractions ("1.5h"). A bare "0" is zero. Negative durations are refused.
Result<std::chrono::milliseconds> ParseDuration(std::string_view text);

// "1h2m3s", "250ms", "0s": the shortest exact form.
std::string FormatDuration(std::chrono::milliseconds duration);

}  // namespace hybridjob
