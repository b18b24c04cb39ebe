// Reading a whole file as the binaries read their inputs (kubeconfigs,
// certificates, keys): one clear error for a missing, unreadable or directory
// path, naming what the file was for.
#pragma once

#include <string>
#include <string_view>

#include <hybridjob/common/status.h>

namespace hybridjob {

// The file's bytes; InvalidArgument "<what>: cannot read <path>" (or "... is a
// directory, not a file") otherwise.
Result<std::string> ReadFile(const std::string& path, std::string_view what);

}  // namespace hybridjob
