#include <spdlog/spdlog.h>

#include <hybridjob/k8s/warnings.h>

namespace hybridjob::k8s {
namespace {

// Reads a quoted-string at `pos` (which must be '"'); moves past it.
bool ReadQuoted(std::string_view value, size_t& pos, std::string& out) {
  if (pos >= value.size() || value[pos] != '"') {
    return false;
  }
  ++pos;
  out.clear();
  while (pos < value.size()) {
    const char c = value[pos++];
    if (c == '"') {
      return true;
    }
    if (c == '\\') {
      if (pos >= value.size()) {
        return false;
      }
      out.push_back(value[pos++]);
      continue;
    }
    out.push_back(c);
  }
  return false;  // unterminated
}

void SkipSpaces(std::string_view value, size_t& pos) {
  while (pos < value.size() && (value[pos] == ' ' || value[pos] == '\t')) {
    ++pos;
  }
}

// Reads a token up to the next space; empty when there is none.
std::string_view ReadToken(std::string_view value, size_t& pos) {
  const size_t start = pos;
  while (pos < value.size() && value[pos] != ' ' && value[pos] != '\t' && value[pos] != ',') {
    ++pos;
  }
  return value.substr(start, pos - start);
}

}  // namespace

std::vector<std::string> ParseWarningHeader(std::string_view value) {
  std::vector<std::string> texts;
  size_t pos = 0;
  while (pos < value.size()) {
    SkipSpaces(value, pos);
    const std::string_view code = ReadToken(value, pos);
    SkipSpaces(value, pos);
    const std::string_view agent = ReadToken(value, pos);
    SkipSpaces(value, pos);
    std::string text;
    const bool well_formed = !code.empty() && !agent.empty() && ReadQuoted(value, pos, text);
    if (well_formed) {
      SkipSpaces(value, pos);
      std::string date;
      if (pos < value.size() && value[pos] == '"' && !ReadQuoted(value, pos, date)) {
        break;
      }
      if (code == "299" && !text.empty()) {
        texts.push_back(std::move(text));
      }
    }
    // On to the next warning: past the comma that ends this one.
    while (pos < value.size() && value[pos] != ',') {
      if (value[pos] == '"') {
        std::string skipped;
        if (!ReadQuoted(value, pos, skipped)) {
          return texts;
        }
        continue;
      }
      ++pos;
    }
    if (pos < value.size()) {
      ++pos;
    }
  }
  return texts;
}

void LogServerWarning(std::string_view text) {
  spdlog::warn("API server warning: {}", text);
}

std::vector<std::string> WarningDeduplicator::New(const std::vector<std::string>& texts) {
  std::vector<std::string> fresh;
  MutexLock lock(mu_);
  for (const std::string& text : texts) {
    if (seen_.count(text) != 0) {
      continue;
    }
    if (seen_.size() < capacity_) {
      seen_.insert(text);
    }
    fresh.push_back(text);
  }
  return fresh;
}

}  // namespace hybridjob::k8s
