// Fuzzes the decoding of a watch response body: the API server's
// newline-delimited JSON events, split into lines as the REST client's stream
// does (blank lines skipped), each given to DecodeWatchEvent. The whole body
// also goes through StatusFromHttpResponse, which reads the body of every
// failed request.
//
// The HTTP framing the stream arrives in (response heads, chunked bodies) is
// fuzzed by test/fuzz/http.
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


  for (int http_status : {400, 404, 409, 410, 429, 500, 503}) {
    hybridjob::Status status = k8s::StatusFromHttpResponse(http_status, body, std::nullopt);
    if (status.ok()) {
      Fail("failed HTTP response read as OK", body);
    }
  }
  return 0;
}
