#include <array>
#include <cstdint>

#include <hybridjob/k8s/base64.h>

namespace hybridjob::k8s {
namespace {

constexpr std::string_view kAlphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> MakeDecodeTable() {
  std::array<int8_t, 256> table{};
  for (auto& entry : table) {
    entry = -1;
  }
  for (size_t i = 0; i < kAlphabet.size(); ++i) {
    table[static_cast<unsigned char>(kAlphabet[i])] = static_cast<int8_t>(i);
  }
  return table;
}

constexpr auto kDecodeTable = MakeDecodeTable();

}  // namespace

std::optional<std::string> Base64Decode(std::string_view encoded) {
  std::string out;
  out.reserve(encoded.size() * 3 / 4);
  uint32_t buffer = 0;
  int bits = 0;
  size_t padding = 0;
  for (char c : encoded) {
    if (c == '\n' || c == '\r' || c == ' ' || c == '\t') {
      continue;
    }
    if (c == '=') {
      ++padding;
      continue;
    }
    if (padding > 0) {
      return std::nullopt;  // data after padding
    }
    const int8_t value = kDecodeTable[static_cast<unsigned char>(c)];
    if (value < 0) {
      return std::nullopt;
    }
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  if (padding > 2) {
    return std::nullopt;
  }
  return out;
}

std::string Base64Encode(std::string_view raw) {
  std::string out;
  out.reserve((raw.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < raw.size(); i += 3) {
    const uint32_t n = (static_cast<uint8_t>(raw[i]) << 16) |
                       (static_cast<uint8_t>(raw[i + 1]) << 8) | static_cast<uint8_t>(raw[i + 2]);
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(kAlphabet[(n >> 6) & 63]);
    out.push_back(kAlphabet[n & 63]);
  }
  if (i < raw.size()) {
    uint32_t n = static_cast<uint8_t>(raw[i]) << 16;
    if (i + 1 < raw.size()) {
      n |= static_cast<uint8_t>(raw[i + 1]) << 8;
    }
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(i + 1 < raw.size() ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  return out;
}

}  // namespace hybridjob::k8s
