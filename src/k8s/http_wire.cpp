#include <algorithm>
#include <charconv>

#include <hybridjob/k8s/http_wire.h>

#include "text.h"

namespace hybridjob::k8s::http {
namespace {

constexpr size_t kMaxChunkLine = 4096;
constexpr size_t kMaxTrailerLine = 16 * 1024;

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(),
                                            [&](char x, char y) { return lower(x) == lower(y); });
}

// Whether the comma-separated header value lists `token`.
bool ListsToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    const size_t comma = value.find(',');
    if (EqualsIgnoreCase(TrimSpace(value.substr(0, comma)), token)) {
      return true;
    }
    if (comma == std::string_view::npos) {
      break;
    }
    value.remove_prefix(comma + 1);
  }
  return false;
}

bool IsTokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string ResponseHead::Get(std::string_view name) const {
  std::string joined;
  for (const Header& header : headers) {
    if (EqualsIgnoreCase(header.name, name)) {
      if (!joined.empty()) {
        joined += ", ";
      }
      joined += header.value;
    }
  }
  return joined;
}

bool ResponseHead::Has(std::string_view name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const Header& header) { return EqualsIgnoreCase(header.name, name); });
}

size_t HeadLength(std::string_view buffer) {
  const size_t end = buffer.find("\r\n\r\n");
  return end == std::string_view::npos ? 0 : end + 4;
}

Result<ResponseHead> ParseResponseHead(std::string_view head, std::string_view request_method) {
  auto line_end = [&head] {
    const size_t eol = head.find("\r\n");
    return eol == std::string_view::npos ? head.size() : eol;
  };
  size_t eol = line_end();
  const std::string_view status_line = head.substr(0, eol);
  head.remove_prefix(std::min(head.size(), eol + 2));

  // HTTP/1.x SP 3DIGIT [SP reason]
  if (status_line.size() < 12 || !status_line.starts_with("HTTP/1.") || status_line[8] != ' ' ||
      (status_line.size() > 12 && status_line[12] != ' ')) {
    return Internal("malformed HTTP status line: \"" + std::string(status_line.substr(0, 80)) +
                    "\"");
  }
  const bool http10 = status_line[7] == '0';
  ResponseHead parsed;
  const std::string_view code = status_line.substr(9, 3);
  if (std::from_chars(code.data(), code.data() + 3, parsed.status).ptr != code.data() + 3 ||
      parsed.status < 100 || parsed.status > 999) {
    return Internal("malformed HTTP status code: \"" + std::string(code) + "\"");
  }

  while (!head.empty()) {
    eol = line_end();
    const std::string_view line = head.substr(0, eol);
    head.remove_prefix(std::min(head.size(), eol + 2));
    if (line.empty()) {
      break;  // the blank line that ends the head
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 ||
        !std::all_of(line.begin(), line.begin() + static_cast<long>(colon), IsTokenChar)) {
      return Internal("malformed HTTP header line: \"" + std::string(line.substr(0, 80)) + "\"");
    }
    parsed.headers.push_back(
        Header{std::string(line.substr(0, colon)), std::string(TrimSpace(line.substr(colon + 1)))});
  }

  const std::string connection = parsed.Get("Connection");
  parsed.keep_alive =
      http10 ? ListsToken(connection, "keep-alive") : !ListsToken(connection, "close");

  // A 2xx answer to CONNECT is the start of the tunnel, not a body (RFC 9110
  // 9.3.6: its Content-Length and Transfer-Encoding are ignored).
  const bool tunnel =
      EqualsIgnoreCase(request_method, "CONNECT") && parsed.status >= 200 && parsed.status <= 299;
  if (EqualsIgnoreCase(request_method, "HEAD") || tunnel || parsed.status < 200 ||
      parsed.status == 204 || parsed.status == 304) {
    parsed.framing = BodyFraming::kNone;
    return parsed;
  }
  const std::string transfer_encoding = parsed.Get("Transfer-Encoding");
  if (!transfer_encoding.empty()) {
    if (!ListsToken(transfer_encoding, "chunked")) {
      return Internal("unsupported Transfer-Encoding \"" + transfer_encoding + "\"");
    }
    parsed.framing = BodyFraming::kChunked;
    return parsed;
  }
  if (parsed.Has("Content-Length")) {
    const std::string length = parsed.Get("Content-Length");
    const auto [end, error] =
        std::from_chars(length.data(), length.data() + length.size(), parsed.content_length);
    if (error != std::errc() || end != length.data() + length.size()) {
      return Internal("malformed Content-Length \"" + length.substr(0, 40) + "\"");
    }
    parsed.framing = BodyFraming::kContentLength;
    return parsed;
  }
  parsed.framing = BodyFraming::kUntilClose;
  parsed.keep_alive = false;
  return parsed;
}

AuthorityProblem SplitAuthority(std::string_view authority, std::string_view default_port,
                                std::string* host, std::string* port) {
  std::string_view given_port;
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      return AuthorityProblem::kBadIpv6;
    }
    *host = std::string(authority.substr(1, close - 1));
    const std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') {
        return AuthorityProblem::kBadAddress;
      }
      given_port = after.substr(1);
    }
  } else {
    const size_t colon = authority.rfind(':');
    *host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      given_port = authority.substr(colon + 1);
    }
  }
  if (host->empty()) {
    return AuthorityProblem::kNoHost;
  }
  if (given_port.empty()) {
    *port = std::string(default_port);
    return AuthorityProblem::kNone;
  }
  int number = 0;
  const auto [end, error] =
      std::from_chars(given_port.data(), given_port.data() + given_port.size(), number);
  if (error != std::errc() || end != given_port.data() + given_port.size() || number <= 0 ||
      number > 65535) {
    return AuthorityProblem::kBadPort;
  }
  *port = std::string(given_port);
  return AuthorityProblem::kNone;
}

std::string FormatRequest(std::string_view method, std::string_view target, std::string_view host,
                          const std::vector<Header>& headers, std::string_view body) {
  std::string out;
  out.reserve(128 + target.size() + body.size() + headers.size() * 48);
  out.append(method).append(" ").append(target).append(" HTTP/1.1\r\nHost: ").append(host);
  out.append("\r\n");
  for (const Header& header : headers) {
    out.append(header.name).append(": ").append(header.value).append("\r\n");
  }
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    out.append("Content-Length: ").append(std::to_string(body.size())).append("\r\n");
  }
  out.append("\r\n");
  out.append(body);
  return out;
}

Result<size_t> ChunkedDecoder::Feed(std::string_view input, std::string& out) {
  size_t pos = 0;
  while (pos < input.size() && state_ != State::kDone) {
    const char c = input[pos];
    switch (state_) {
      case State::kSize: {
        const int digit = HexDigit(c);
        if (digit >= 0) {
          if (++size_digits_ > 15) {
            return Internal("chunk size too large");
          }
          remaining_ = remaining_ * 16 + static_cast<uint64_t>(digit);
          ++pos;
          ++line_bytes_;
          break;
        }
        if (size_digits_ == 0 || c == '\n') {
          return Internal("malformed chunk size");
        }
        state_ = c == '\r' ? State::kSizeLf : State::kSizeExtension;
        ++pos;
        ++line_bytes_;
        break;
      }
      case State::kSizeExtension:  // ";name=value" or spaces before CRLF: ignored
        if (++line_bytes_ > kMaxChunkLine) {
          return Internal("chunk size line too long");
        }
        if (c == '\r') {
          state_ = State::kSizeLf;
        } else if (c == '\n') {
          return Internal("malformed chunk size line");
        }
        ++pos;
        break;
      case State::kSizeLf:
        if (c != '\n') {
          return Internal("malformed chunk size line");
        }
        ++pos;
        line_bytes_ = 0;
        size_digits_ = 0;
        if (remaining_ == 0) {
          state_ = State::kTrailer;
          trailer_line_ = 0;
        } else {
          state_ = State::kData;
        }
        break;
      case State::kData: {
        const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, input.size() - pos));
        out.append(input.substr(pos, take));
        pos += take;
        remaining_ -= take;
        if (remaining_ == 0) {
          state_ = State::kDataCr;
        }
        break;
      }
      case State::kDataCr:
        if (c != '\r') {
          return Internal("chunk data longer than its size");
        }
        state_ = State::kDataLf;
        ++pos;
        break;
      case State::kDataLf:
        if (c != '\n') {
          return Internal("chunk data longer than its size");
        }
        state_ = State::kSize;
        ++pos;
        break;
      case State::kTrailer:  // trailer fields, ignored, up to the empty line
        ++pos;
        if (c == '\n') {
          if (trailer_line_ == 0) {
            state_ = State::kDone;
          }
          trailer_line_ = 0;
        } else if (c != '\r' || trailer_line_ > 0) {
          if (++trailer_line_ > kMaxTrailerLine) {
            return Internal("chunked trailer line too long");
          }
        }
        break;
      case State::kDone:
        break;
    }
  }
  return pos;
}

}  // namespace hybridjob::k8s::http
