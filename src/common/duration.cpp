#include <cmath>
#include <cstdint>
#include <cstdlib>

#include <hybridjob/common/duration.h>

namespace hybridjob {

Result<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  const std::string original(text);
  if (text.empty()) {
    return InvalidArgument("empty duration");
  }
  if (text == "0") {
    return std::chrono::milliseconds(0);
  }
  if (text.front() == '-') {
    return InvalidArgument("duration \"" + original + "\" is negative");
  }
  if (text.front() == '+') {
    text.remove_prefix(1);
  }
  double total_ns = 0;
  while (!text.empty()) {
    size_t digits = 0;
    bool seen_dot = false;
    while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) ||
                                    (text[digits] == '.' && !seen_dot))) {
      seen_dot = seen_dot || text[digits] == '.';
      ++digits;
    }
    if (digits == 0 || (digits == 1 && text[0] == '.')) {
      return InvalidArgument("duration \"" + original + "\": expected a number");
    }
    // strtod, not stod: a number too large (or too small) for a double must
    // not throw. Too large reads as infinity and is refused below.
    const double value = std::strtod(std::string(text.substr(0, digits)).c_str(), nullptr);
    text.remove_prefix(digits);
    size_t unit_len = 0;
    while (unit_len < text.size() && !std::isdigit(static_cast<unsigned char>(text[unit_len])) &&
           text[unit_len] != '.') {
      ++unit_len;
    }
    const std::string_view unit = text.substr(0, unit_len);
    text.remove_prefix(unit_len);
    double scale;
    if (unit == "ns") {
      scale = 1;
    } else if (unit == "us" || unit == "\xC2\xB5s" || unit == "\xCE\xBCs") {
      scale = 1e3;
    } else if (unit == "ms") {
      scale = 1e6;
    } else if (unit == "s") {
      scale = 1e9;
    } else if (unit == "m") {
      scale = 60e9;
    } else if (unit == "h") {
      scale = 3600e9;
    } else if (unit.empty()) {
      return InvalidArgument("duration \"" + original + "\": missing unit (ms, s, m, h)");
    } else {
      return InvalidArgument("duration \"" + original + "\": unknown unit \"" + std::string(unit) +
                             "\"");
    }
    total_ns += value * scale;
  }
  if (!(total_ns <= 9.2e18)) {
    return InvalidArgument("duration \"" + original + "\" is too long");
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total_ns / 1e6)));
}

std::string FormatDuration(std::chrono::milliseconds duration) {
  int64_t ms = duration.count();
  if (ms == 0) {
    return "0s";
  }
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  if (ms < 1000) {
    return out + std::to_string(ms) + "ms";
  }
  const int64_t hours = ms / 3600000;
  const int64_t minutes = (ms / 60000) % 60;
  const int64_t seconds = (ms / 1000) % 60;
  const int64_t millis = ms % 1000;
  if (hours > 0) {
    out += std::to_string(hours) + "h";
  }
  if (minutes > 0) {
    out += std::to_string(minutes) + "m";
  }
  if (seconds > 0 || millis > 0) {
    out += std::to_string(seconds);
    if (millis > 0) {
      char fraction[8];
      std::snprintf(fraction, sizeof(fraction), ".%03lld", static_cast<long long>(millis));
      std::string f(fraction);
      while (f.back() == '0') {
        f.pop_back();
      }
      out += f;
    }
    out += "s";
  }
  return out;
}

}  // namespace hybridjob
