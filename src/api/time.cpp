#include <cstdio>

#include <hybridjob/api/time.h>

namespace hybridjob::api {
namespace {

bool ReadDigits(std::string_view text, size_t pos, size_t count, int* out) {
  if (pos + count > text.size()) {
    return false;
  }
  int value = 0;
  for (size_t i = pos; i < pos + count; ++i) {
    if (text[i] < '0' || text[i] > '9') {
      return false;
    }
    value = value * 10 + (text[i] - '0');
  }
  *out = value;
  return true;
}

bool Expect(std::string_view text, size_t pos, char c) {
  return pos < text.size() && text[pos] == c;
}

}  // namespace

std::string FormatTime(Clock::time_point time) {
  return FormatTime(std::chrono::time_point_cast<std::chrono::seconds>(time));
}

std::string FormatTime(TimePoint time) {
  std::chrono::sys_days day = std::chrono::floor<std::chrono::days>(time);
  std::chrono::year_month_day date(day);
  std::chrono::hh_mm_ss clock(time - day);
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%04d-%02u-%02uT%02d:%02d:%02dZ",
                static_cast<int>(date.year()), static_cast<unsigned>(date.month()),
                static_cast<unsigned>(date.day()), static_cast<int>(clock.hours().count()),
                static_cast<int>(clock.minutes().count()),
                static_cast<int>(clock.seconds().count()));
  return buffer;
}

std::optional<TimePoint> ParseTime(std::string_view text) {
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
  if (!ReadDigits(text, 0, 4, &year) || !Expect(text, 4, '-') || !ReadDigits(text, 5, 2, &month) ||
      !Expect(text, 7, '-') || !ReadDigits(text, 8, 2, &day) ||
      !(Expect(text, 10, 'T') || Expect(text, 10, 't')) || !ReadDigits(text, 11, 2, &hour) ||
      !Expect(text, 13, ':') || !ReadDigits(text, 14, 2, &minute) || !Expect(text, 16, ':') ||
      !ReadDigits(text, 17, 2, &second)) {
    return std::nullopt;
  }
  size_t pos = 19;
  if (Expect(text, pos, '.')) {
    ++pos;
    size_t digits_start = pos;
    while (pos < text.size() && text[pos] >= '0' && text[pos] <= '9') {
      ++pos;
    }
    if (pos == digits_start) {
      return std::nullopt;
    }
  }
  std::chrono::seconds offset{0};
  if (Expect(text, pos, 'Z') || Expect(text, pos, 'z')) {
    ++pos;
  } else if (Expect(text, pos, '+') || Expect(text, pos, '-')) {
    int sign = text[pos] == '-' ? -1 : 1;
    int offset_hours = 0, offset_minutes = 0;
    if (!ReadDigits(text, pos + 1, 2, &offset_hours) || !Expect(text, pos + 3, ':') ||
        !ReadDigits(text, pos + 4, 2, &offset_minutes) || offset_hours > 23 ||
        offset_minutes > 59) {
      return std::nullopt;
    }
    offset = sign * (std::chrono::hours(offset_hours) + std::chrono::minutes(offset_minutes));
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != text.size() || hour > 23 || minute > 59 || second > 59) {
    return std::nullopt;
  }
  std::chrono::year_month_day date{std::chrono::year(year),
                                   std::chrono::month(static_cast<unsigned>(month)),
                                   std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok()) {
    return std::nullopt;
  }
  return std::chrono::sys_days(date) + std::chrono::hours(hour) + std::chrono::minutes(minute) +
         std::chrono::seconds(second) - offset;
}

}  // namespace hybridjob::api
