// Fuzzes the decoding of a watch response body: the API server's
// newline-delimited JSON events, split into lines as the REST client's stream
// does (blank lines skipped), each given to DecodeWatchEvent. The whole body
// also goes through StatusFromHttpResponse, which reads the body of every
// failed request.
//
// The same bytes also go through the HTTP framing the stream arrives in: as
// a response head (to a GET, and to a proxy's CONNECT), and as a chunked
// body fed whole and byte by byte, which must decode alike.
//
// Contracts checked besides crashes: an ERROR event always carries an error
// Status, a 410 always means "relist" (kGone) and nothing else does unless its
// reason is Expired or Gone, and every event carries an object.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string_view>

#include <hybridjob/k8s/api_status.h>
#include <hybridjob/k8s/http_wire.h>
#include <hybridjob/k8s/watch.h>

namespace {

using hybridjob::StatusCode;
namespace k8s = hybridjob::k8s;

[[noreturn]] void Fail(std::string_view what, std::string_view line) {
  std::cerr << "contract broken: " << what << "\n" << line << "\n";
  std::abort();
}

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t\r") == std::string_view::npos;
}

void CheckLine(std::string_view line) {
  auto event = k8s::DecodeWatchEvent(line);
  if (!event.ok()) {
    if (event.status().code() == StatusCode::kOk) {
      Fail("failed decode with an OK status", line);
    }
    return;
  }
  if (!event->object.is_object()) {
    Fail("event without an object", line);
  }
  if (event->type != k8s::WatchEventType::kError) {
    return;
  }
  if (event->error.ok()) {
    Fail("ERROR event with an OK status", line);
  }
  // A 410 always means relist, and nothing means relist unless the server
  // said 410 or Expired/Gone. (The HTTP code wins over the reason: 409 with
  // reason Expired is a conflict.)
  const auto code = event->object.find("code");
  const bool said_410 = code != event->object.end() && code->is_number_integer() && *code == 410;
  const auto reason = event->object.find("reason");
  const bool said_gone_reason = reason != event->object.end() && reason->is_string() &&
                                (*reason == "Expired" || *reason == "Gone");
  const bool gone = event->error.code() == StatusCode::kGone;
  if (said_410 && !gone) {
    Fail("ERROR 410 that does not mean Gone", line);
  }
  if (gone && !said_410 && !said_gone_reason) {
    Fail("ERROR event read as Gone though the server said neither 410 nor Expired/Gone", line);
  }
}

void CheckHttpFraming(std::string_view bytes) {
  namespace http = k8s::http;
  const size_t head_length = http::HeadLength(bytes);
  if (head_length > 0) {
    auto head = http::ParseResponseHead(bytes.substr(0, head_length), "GET");
    if (head.ok() && (head->status < 100 || head->status > 999)) {
      Fail("response head with a status outside 100-999", bytes);
    }
    // A proxy's answer to CONNECT: the same parser, and a 2xx has no body.
    auto tunnel = http::ParseResponseHead(bytes.substr(0, head_length), "CONNECT");
    if (tunnel.ok() && tunnel->status >= 200 && tunnel->status <= 299 &&
        tunnel->framing != http::BodyFraming::kNone) {
      Fail("a 2xx answer to CONNECT framed with a body", bytes);
    }
  }
  http::ChunkedDecoder whole;
  std::string whole_out;
  auto whole_consumed = whole.Feed(bytes, whole_out);
  http::ChunkedDecoder split;
  std::string split_out;
  size_t split_consumed = 0;
  hybridjob::Status split_error;
  for (size_t i = 0; i < bytes.size() && !split.done(); ++i) {
    auto one = split.Feed(bytes.substr(i, 1), split_out);
    if (!one.ok()) {
      split_error = one.status();
      break;
    }
    split_consumed += *one;
  }
  if (whole_consumed.ok() != split_error.ok()) {
    Fail("chunked body decoded differently whole and byte by byte", bytes);
  }
  if (whole_consumed.ok() && (*whole_consumed != split_consumed || whole_out != split_out ||
                              whole.done() != split.done())) {
    Fail("chunked body decoded differently whole and byte by byte", bytes);
  }
  if (whole_consumed.ok() && *whole_consumed > bytes.size()) {
    Fail("chunked decoder consumed more than it was given", bytes);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  size_t start = 0;
  while (start <= body.size()) {
    size_t end = body.find('\n', start);
    if (end == std::string_view::npos) {
      end = body.size();
    }
    const std::string_view line = body.substr(start, end - start);
    if (!IsBlank(line)) {
      CheckLine(line);
    }
    start = end + 1;
  }

  CheckHttpFraming(body);

  for (int http_status : {400, 404, 409, 410, 429, 500, 503}) {
    hybridjob::Status status = k8s::StatusFromHttpResponse(http_status, body, std::nullopt);
    if (status.ok()) {
      Fail("failed HTTP response read as OK", body);
    }
  }
  return 0;
}
