// Field helpers shared by the trace's CSV readers (trace.cpp, inventory.cpp).
// Private to the trace library.
#pragma once

#include <algorithm>
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

// Reads a CSV whose first line is one of `headers` (blank lines and `#`
// comments skipped) and hands each data line's trimmed fields, as many as
// that header has, to `record`; the first error, with its line number.
// `what` names the file in the error for a text without a header
// ("empty trace: ...").
inline Status ForEachCsvRecord(
    std::string_view text, const std::vector<std::string_view>& headers, std::string_view what,
    const std::function<Status(const std::vector<std::string_view>& fields)>& record) {
  std::string expected;
  for (std::string_view header : headers) {
    expected += (expected.empty() ? "\"" : " or \"") + std::string(header) + "\"";
  }
  size_t field_count = 0;
  size_t line_number = 0;
  for (std::string_view line : Split(text, '\n')) {
    ++line_number;
    if (SkippedLine(line)) {
      continue;
    }
    line = Trim(line);
    if (field_count == 0) {
      auto header = std::find(headers.begin(), headers.end(), line);
      if (header == headers.end()) {
        return AtLine(line_number, InvalidArgument("expected the header " + expected));
      }
      field_count = Split(*header, ',').size();
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
  if (field_count == 0) {
    return InvalidArgument("empty " + std::string(what) + ": expected the header " + expected);
  }
  return Status::Ok();
}

}  // namespace hybridjob::sim::trace
