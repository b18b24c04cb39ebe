#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/watch.h>

namespace hybridjob::k8s {

std::string_view WatchEventTypeName(WatchEventType type) {
  switch (type) {
    case WatchEventType::kAdded:
      return "ADDED";
    case WatchEventType::kModified:
      return "MODIFIED";
    case WatchEventType::kDeleted:
      return "DELETED";
    case WatchEventType::kBookmark:
      return "BOOKMARK";
    case WatchEventType::kError:
      return "ERROR";
  }
  return "UNKNOWN";
}

Result<WatchEvent> DecodeWatchEvent(std::string_view line) {
  nlohmann::json parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded() || !parsed.is_object()) {
    return Status(StatusCode::kInternal,
                  "watch: malformed event: " + std::string(line.substr(0, 200)));
  }
  auto type_it = parsed.find("type");
  auto object_it = parsed.find("object");
  if (type_it == parsed.end() || !type_it->is_string() || object_it == parsed.end() ||
      !object_it->is_object()) {
    return Status(StatusCode::kInternal, "watch: event without type or object");
  }
  const std::string& type = type_it->get_ref<const std::string&>();
  WatchEvent event;
  if (type == "ADDED") {
    event.type = WatchEventType::kAdded;
  } else if (type == "MODIFIED") {
    event.type = WatchEventType::kModified;
  } else if (type == "DELETED") {
    event.type = WatchEventType::kDeleted;
  } else if (type == "BOOKMARK") {
    event.type = WatchEventType::kBookmark;
  } else if (type == "ERROR") {
    event.type = WatchEventType::kError;
    event.error = StatusFromApiStatus(*object_it);
  } else {
    return Status(StatusCode::kInternal, "watch: unknown event type \"" + type + "\"");
  }
  event.object = std::move(*object_it);
  return event;
}

}  // namespace hybridjob::k8s
