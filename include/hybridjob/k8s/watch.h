// Watch events and the decoder of the API server's newline-delimited stream.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include <hybridjob/common/status.h>

namespace hybridjob::k8s {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

std::string_view WatchEventTypeName(WatchEventType type);

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;  // the object; for kError the metav1.Status
  Status error;           // for kError: the Status the server sent (410 -> kGone)
};

// Decodes one line of a watch response ({"type":..., "object":...}). Never
// throws: malformed input gives an error Status.
Result<WatchEvent> DecodeWatchEvent(std::string_view line);

// One open watch. Next() blocks until the next event; it returns nullopt when
// the server closed the stream normally (timeoutSeconds elapsed) and an error
// Status when the connection broke or the stream was cancelled.
class WatchStream {
 public:
  virtual ~WatchStream() = default;
  virtual Result<std::optional<WatchEvent>> Next() = 0;
  // Unblocks a pending Next() from another thread; safe to call repeatedly.
  virtual void Cancel() = 0;
};

}  // namespace hybridjob::k8s
