// Process-wide logging setup for the binaries: level and text/JSON format.
#pragma once

#include <string>

#include <hybridjob/common/status.h>

namespace hybridjob {

// level: trace, debug, info, warn, error; format: text or json.
Status ConfigureLogging(const std::string& level, const std::string& format,
                        const std::string& component);

}  // namespace hybridjob
