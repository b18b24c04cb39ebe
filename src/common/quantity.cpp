#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <vector>

#include <hybridjob/common/quantity.h>

namespace hybridjob {
namespace {

// Unsigned integer of any size, just large enough for exact quantity arithmetic:
// "0.1Ki" is 102.4 and must round up to 103, which floating point cannot promise.
class Magnitude {
 public:
  void MultiplyAdd(uint32_t factor, uint32_t addend) {
    uint64_t carry = addend;
    for (uint32_t& limb : limbs_) {
      uint64_t product = static_cast<uint64_t>(limb) * factor + carry;
      limb = static_cast<uint32_t>(product);
      carry = product >> 32;
    }
    if (carry != 0) {
      limbs_.push_back(static_cast<uint32_t>(carry));
    }
  }

  // Divides in place and returns the remainder.
  uint32_t Divide(uint32_t divisor) {
    uint64_t remainder = 0;
    for (size_t i = limbs_.size(); i-- > 0;) {
      uint64_t current = (remainder << 32) | limbs_[i];
      limbs_[i] = static_cast<uint32_t>(current / divisor);
      remainder = current % divisor;
    }
    while (!limbs_.empty() && limbs_.back() == 0) {
      limbs_.pop_back();
    }
    return static_cast<uint32_t>(remainder);
  }

  bool IsZero() const { return limbs_.empty(); }
  // More than 64 bits can never fit an int64 result.
  bool Exceeds64Bits() const { return limbs_.size() > 2; }

  // The value if it fits in an int64.
  bool ToInt64(int64_t* out) const {
    if (Exceeds64Bits()) {
      return false;
    }
    uint64_t value = 0;
    for (size_t i = limbs_.size(); i-- > 0;) {
      value = (value << 32) | limbs_[i];
    }
    if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return false;
    }
    *out = static_cast<int64_t>(value);
    return true;
  }

 private:
  std::vector<uint32_t> limbs_;  // least significant first, no leading zero limbs
};

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

// The suffix alphabet resource.Quantity accepts before an optional exponent.
bool IsSuffixChar(char c) {
  static constexpr std::string_view kSuffixChars = "eEinumkKMGTP";
  return kSuffixChars.find(c) != std::string_view::npos;
}

// A suffix means value * 10^decimal_exponent * 2^binary_exponent.
struct SuffixScale {
  int64_t decimal_exponent = 0;
  int64_t binary_exponent = 0;
};

// Exponents beyond this overflow (or underflow to the smallest unit) anyway;
// clamping keeps the arithmetic bounded for hostile input like "1e999999999".
constexpr int64_t kExponentClamp = 4096;

bool InterpretSuffix(std::string_view suffix, SuffixScale* scale) {
  struct Named {
    std::string_view name;
    SuffixScale scale;
  };
  static constexpr std::array<Named, 16> kNamed = {{
      {"", {0, 0}},
      {"n", {-9, 0}},
      {"u", {-6, 0}},
      {"m", {-3, 0}},
      {"k", {3, 0}},
      {"M", {6, 0}},
      {"G", {9, 0}},
      {"T", {12, 0}},
      {"P", {15, 0}},
      {"E", {18, 0}},
      {"Ki", {0, 10}},
      {"Mi", {0, 20}},
      {"Gi", {0, 30}},
      {"Ti", {0, 40}},
      {"Pi", {0, 50}},
      {"Ei", {0, 60}},
  }};
  for (const Named& named : kNamed) {
    if (named.name == suffix) {
      *scale = named.scale;
      return true;
    }
  }
  // Decimal exponent form: "e3", "E-2", "e+6".
  if (suffix.size() < 2 || (suffix[0] != 'e' && suffix[0] != 'E')) {
    return false;
  }
  size_t pos = 1;
  bool negative = false;
  if (suffix[pos] == '+' || suffix[pos] == '-') {
    negative = suffix[pos] == '-';
    ++pos;
  }
  if (pos == suffix.size()) {
    return false;
  }
  int64_t exponent = 0;
  for (; pos < suffix.size(); ++pos) {
    if (!IsDigit(suffix[pos])) {
      return false;
    }
    exponent = std::min<int64_t>(exponent * 10 + (suffix[pos] - '0'), kExponentClamp);
  }
  scale->decimal_exponent = negative ? -exponent : exponent;
  scale->binary_exponent = 0;
  return true;
}

Status Malformed(std::string_view text, std::string_view why) {
  return InvalidArgument("quantity \"" + std::string(text) + "\": " + std::string(why));
}

// value * 10^unit_exponent, rounded away from zero to an integer.
Result<int64_t> ParseScaled(std::string_view text, int64_t unit_exponent) {
  if (text.empty()) {
    return Malformed(text, "empty");
  }
  // Longer input is never a real quantity; the bound keeps the work bounded.
  if (text.size() > 256) {
    return Malformed(text, "too long");
  }
  size_t pos = 0;
  bool negative = false;
  if (text[pos] == '+' || text[pos] == '-') {
    negative = text[pos] == '-';
    ++pos;
  }

  Magnitude mantissa;
  size_t digit_count = 0;
  int64_t fraction_digits = 0;
  for (; pos < text.size() && IsDigit(text[pos]); ++pos, ++digit_count) {
    mantissa.MultiplyAdd(10, static_cast<uint32_t>(text[pos] - '0'));
  }
  if (pos < text.size() && text[pos] == '.') {
    ++pos;
    for (; pos < text.size() && IsDigit(text[pos]); ++pos, ++digit_count, ++fraction_digits) {
      mantissa.MultiplyAdd(10, static_cast<uint32_t>(text[pos] - '0'));
    }
  }
  if (digit_count == 0) {
    return Malformed(text, "no digits");
  }

  // Same shape as resource.Quantity: suffix letters, then an optional signed exponent.
  size_t suffix_start = pos;
  while (pos < text.size() && IsSuffixChar(text[pos])) {
    ++pos;
  }
  if (pos < text.size() && (text[pos] == '+' || text[pos] == '-')) {
    ++pos;
  }
  while (pos < text.size() && IsDigit(text[pos])) {
    ++pos;
  }
  if (pos != text.size()) {
    return Malformed(text, "unexpected character");
  }
  SuffixScale scale;
  if (!InterpretSuffix(text.substr(suffix_start), &scale)) {
    return Malformed(text, "unknown suffix \"" + std::string(text.substr(suffix_start)) + "\"");
  }

  for (int64_t i = 0; i < scale.binary_exponent; ++i) {
    mantissa.MultiplyAdd(2, 0);
  }
  int64_t decimal_exponent = scale.decimal_exponent - fraction_digits + unit_exponent;
  bool inexact = false;
  if (decimal_exponent >= 0) {
    for (int64_t i = 0; i < decimal_exponent && !mantissa.IsZero(); ++i) {
      mantissa.MultiplyAdd(10, 0);
      if (mantissa.Exceeds64Bits()) {
        return Malformed(text, "out of range");
      }
    }
  } else {
    for (int64_t i = 0; i < -decimal_exponent && !mantissa.IsZero(); ++i) {
      inexact = mantissa.Divide(10) != 0 || inexact;
    }
  }
  if (inexact) {
    mantissa.MultiplyAdd(1, 1);  // round the magnitude up
  }
  int64_t magnitude = 0;
  if (!mantissa.ToInt64(&magnitude)) {
    return Malformed(text, "out of range");
  }
  return negative ? -magnitude : magnitude;
}

}  // namespace

Result<int64_t> ParseQuantity(std::string_view text) {
  return ParseScaled(text, 0);
}

Result<int64_t> ParseQuantityMilli(std::string_view text) {
  return ParseScaled(text, 3);
}

std::string FormatMilliQuantity(int64_t milli) {
  if (milli % 1000 == 0) {
    return std::to_string(milli / 1000);
  }
  return std::to_string(milli) + "m";
}

std::string FormatBinaryQuantity(int64_t value) {
  static constexpr std::array<std::string_view, 6> kSuffixes = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  if (value == 0) {
    return "0";
  }
  int exponent = 0;
  int64_t scaled = value;
  while (exponent < static_cast<int>(kSuffixes.size()) && scaled % 1024 == 0) {
    scaled /= 1024;
    ++exponent;
  }
  if (exponent == 0) {
    return std::to_string(value);
  }
  return std::to_string(scaled) + std::string(kSuffixes[exponent - 1]);
}

}  // namespace hybridjob
