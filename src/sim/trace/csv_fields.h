// Field helpers shared by the trace's CSV readers (trace.cpp, inventory.cpp).
// Private to the trace library.
#pragma once

#include <charconv>
#include <cmath>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/status.h>
#include <hybridjob/common/strings.h>

namespace hybridjob::sim::trace {

inline std::string_view Trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\r')) {
    text.remove_prefix(1);
  }
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

// The parts of `text` between separators, each trimmed.
inline std::vector<std::string_view> SplitTrimmed(std::string_view text, char separator) {
  std::vector<std::string_view> parts = Split(text, separator);
  for (std::string_view& part : parts) {
    part = Trim(part);
  }
  return parts;
}

inline bool SkippedLine(std::string_view line) {
  line = Trim(line);
  return line.empty() || line.front() == '#';
}

inline Result<double> ParseNumber(std::string_view field, std::string_view text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size() ||
      !std::isfinite(value)) {
    return InvalidArgument(std::string(field) + ": \"" + std::string(text) + "\" is not a number");
  }
  return value;
}

inline Result<int32_t> ParseCount(std::string_view field, std::string_view text) {
  int32_t value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) {
    return InvalidArgument(std::string(field) + ": \"" + std::string(text) +
                           "\" is not an integer");
  }
  return value;
}

// "line 7: <message>".
inline Status AtLine(size_t line, const Status& status) {
  return InvalidArgument("line " + std::to_string(line) + ": " + status.message());
}

// Reads a CSV with `header` (blank lines and `#` comments skipped) and hands
// each data line's trimmed fields, exactly `field_count` of them, to
// `record`; the first error, with its line number. `what` names the file in
// the error for a text without the header ("empty trace: ...").
inline Status ForEachCsvRecord(
    std::string_view text, std::string_view header, size_t field_count, std::string_view what,
    const std::function<Status(const std::vector<std::string_view>& fields)>& record) {
  bool header_seen = false;
  size_t line_number = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_number;
    if (SkippedLine(line)) {
      continue;
    }
    line = Trim(line);
    if (!header_seen) {
      if (line != header) {
        return AtLine(line_number,
                      InvalidArgument("expected the header \"" + std::string(header) + "\""));
      }
      header_seen = true;
      continue;
    }
    std::vector<std::string_view> fields = SplitTrimmed(line, ',');
    if (fields.size() != field_count) {
      return AtLine(line_number,
                    InvalidArgument("expected " + std::to_string(field_count) + " fields, found " +
                                    std::to_string(fields.size())));
    }
    if (Status status = record(fields); !status.ok()) {
      return AtLine(line_number, status);
    }
  }
  if (!header_seen) {
    return InvalidArgument("empty " + std::string(what) + ": expected the header \"" +
                           std::string(header) + "\"");
  }
  return Status::Ok();
}

}  // namespace hybridjob::sim::trace
