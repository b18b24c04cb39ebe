// HTTP/1.1 as the API client speaks it: the request it writes, and the
// response head and chunked body it reads. Pure: no sockets, so the parsers
// are unit-tested and fuzzed byte by byte.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <hybridjob/common/status.h>

namespace hybridjob::k8s::http {

struct Header {
  std::string name;
  std::string value;
};

// A response head larger than this is refused rather than buffered.
inline constexpr size_t kMaxHeadBytes = 64 * 1024;

// How the body after a head ends.
enum class BodyFraming {
  kNone,           // HEAD requests, 1xx, 204 and 304: no body at all
  kContentLength,  // exactly content_length bytes
  kChunked,        // Transfer-Encoding: chunked
  kUntilClose,     // neither: the body runs until the server closes
};

struct ResponseHead {
  int status = 0;
  std::vector<Header> headers;
  BodyFraming framing = BodyFraming::kUntilClose;
  uint64_t content_length = 0;
  // The connection may carry another request once this body is read.
  bool keep_alive = true;

  // Every value of the header `name` (case-insensitive), joined by ", " as
  // RFC 9110 allows for repeated fields; empty when absent.
  std::string Get(std::string_view name) const;
  bool Has(std::string_view name) const;
};

// Where the head in `buffer` ends: the offset just past its blank line, or 0
// while the head is incomplete.
size_t HeadLength(std::string_view buffer);

// The head (status line and header fields, with or without the final blank
// line) of the answer to a request with `request_method`.
Result<ResponseHead> ParseResponseHead(std::string_view head, std::string_view request_method);

// What is wrong with a URL's authority, for the caller to word.
enum class AuthorityProblem { kNone, kBadIpv6, kBadAddress, kNoHost, kBadPort };

// host[:port] or [IPv6][:port] of a URL's authority, as server and proxy URLs
// spell it: the host without brackets, the port as written or
// `default_port`, checked to be 1-65535.
AuthorityProblem SplitAuthority(std::string_view authority, std::string_view default_port,
                                std::string* host, std::string* port);

// The bytes of one request. `target` is the path and query; a non-empty body
// gets its Content-Length.
std::string FormatRequest(std::string_view method, std::string_view target, std::string_view host,
                          const std::vector<Header>& headers, std::string_view body);

// Decodes a chunked body fed to it in pieces of any size.
class ChunkedDecoder {
 public:
  // Consumes what it can of `input`, appending the body's data to `out`.
  // Returns the bytes consumed: less than the input only once the body is
  // done (the rest belongs to the next response).
  Result<size_t> Feed(std::string_view input, std::string& out);
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSize, kSizeExtension, kSizeLf, kData, kDataCr, kDataLf, kTrailer, kDone };
  State state_ = State::kSize;
  uint64_t remaining_ = 0;  // data bytes left in this chunk, or the size being read
  int size_digits_ = 0;
  size_t trailer_line_ = 0;  // bytes in the trailer line being read
  size_t line_bytes_ = 0;    // bytes of the size line, bounded
};

}  // namespace hybridjob::k8s::http
