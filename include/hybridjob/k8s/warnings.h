// The API server's `Warning:` response headers (Kubernetes 1.19+): deprecated
// API versions, fields it ignored. Parsed here, and said once per distinct
// text, as kubectl and client-go's default handler do.
#pragma once

#include <cstddef>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/mutex.h>

namespace hybridjob::k8s {

// The texts of a Warning header value (RFC 7234 section 5.5): one or more
// comma-separated `<code> <agent> "<text>" ["<date>"]`, each text unquoted.
// Only code 299 (miscellaneous persistent warning) carries what Kubernetes
// says; anything else, and anything malformed, is skipped.
std::vector<std::string> ParseWarningHeader(std::string_view value);

// The texts not seen before, each remembered; after `capacity` distinct texts
// new ones are no longer remembered (and so may repeat) rather than growing
// without bound. Safe to call from any thread.
class WarningDeduplicator {
 public:
  explicit WarningDeduplicator(size_t capacity = 256) : capacity_(capacity) {}
  std::vector<std::string> New(const std::vector<std::string>& texts);

 private:
  const size_t capacity_;
  Mutex mu_;
  std::set<std::string> seen_ HJ_GUARDED_BY(mu_);
};

// What a client without a handler of its own does with a new warning: logs it
// ("API server warning: ..."). Here, not in the REST client, because
// cpprestsdk's U() macro breaks the logging library's headers.
void LogServerWarning(std::string_view text);

}  // namespace hybridjob::k8s
