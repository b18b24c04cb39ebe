// cpprestsdk's U() macro would break fmt (spdlog) templates.
#define _TURN_OFF_PLATFORM_STRING  // NOLINT(bugprone-reserved-identifier): cpprestsdk's name

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <cctype>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <limits>
#include <list>
#include <map>
#include <thread>
#include <vector>

#include <cpprest/http_listener.h>
#include <cpprest/producerconsumerstream.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <hybridjob/common/mutex.h>
#include <hybridjob/common/strings.h>
#include <hybridjob/observability/tls.h>
#include <hybridjob/sim/kubelet_server.h>

namespace hybridjob::sim {
namespace {

namespace http = web::http;
using web::http::experimental::listener::http_listener;
using web::http::experimental::listener::http_listener_config;

// ---- pure parsing ----

int HexValue(char c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// %XX escapes (and '+' as a space in a query); a malformed escape is kept as
// written.
std::string PercentDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%' && i + 2 < text.size()) {
      const int high = HexValue(text[i + 1]);
      const int low = HexValue(text[i + 2]);
      if (high >= 0 && low >= 0) {
        out.push_back(static_cast<char>(high * 16 + low));
        i += 2;
        continue;
      }
    }
    out.push_back(plus_is_space && c == '+' ? ' ' : c);
  }
  return out;
}

// The first value of each parameter, decoded (as Go's url.Values.Get reads it).
std::map<std::string, std::string> ParseQuery(std::string_view query) {
  std::map<std::string, std::string> values;
  if (query.empty()) {
    return values;
  }
  for (std::string_view pair : Split(query, '&')) {
    if (pair.empty()) {
      continue;
    }
    const size_t eq = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, eq), true);
    std::string value =
        eq == std::string_view::npos ? "" : PercentDecode(pair.substr(eq + 1), true);
    values.emplace(std::move(key), std::move(value));
  }
  return values;
}

// The kubelet decodes PodLogOptions with the API machinery's query
// conversion: only "0" and "false" (any case) are false.
bool QueryBool(const std::map<std::string, std::string>& query, const std::string& key) {
  auto it = query.find(key);
  if (it == query.end()) {
    return false;
  }
  std::string lower = it->second;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return lower != "0" && lower != "false";
}

Result<std::optional<int64_t>> QueryInt(const std::map<std::string, std::string>& query,
                                        const std::string& key) {
  auto it = query.find(key);
  if (it == query.end() || it->second.empty()) {
    return std::optional<int64_t>();
  }
  const std::string& text = it->second;
  int64_t value = 0;
  const char* begin = text.data() + (text.front() == '+' ? 1 : 0);
  auto [end, error] = std::from_chars(begin, text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) {
    return InvalidArgument(key + ": Invalid value: \"" + text + "\": not an integer");
  }
  return std::optional<int64_t>(value);
}

// Where the last `lines` lines of `contents` start; an unfinished last line
// counts as one.
uint64_t TailStart(std::string_view contents, int64_t lines) {
  if (lines <= 0) {
    return contents.size();
  }
  if (contents.empty()) {
    return 0;
  }
  // The newline ending the last line is not the start of another.
  size_t search_from = contents.size() - 1;
  if (contents.back() == '\n') {
    if (search_from == 0) {
      return 0;
    }
    --search_from;
  }
  int64_t found = 0;
  while (true) {
    const size_t newline = contents.rfind('\n', search_from);
    if (newline == std::string_view::npos) {
      return 0;
    }
    if (++found == lines) {
      return newline + 1;
    }
    if (newline == 0) {
      return 0;
    }
    search_from = newline - 1;
  }
}

// ---- files and replies ----

// The file from `offset` on, at most `max_bytes`; a missing file is empty.
std::string ReadFrom(const std::filesystem::path& file, uint64_t offset, uint64_t max_bytes) {
  std::ifstream in(file, std::ios::binary);
  if (!in) {
    return {};
  }
  in.seekg(static_cast<std::streamoff>(offset));
  if (!in) {
    return {};
  }
  std::string out;
  char chunk[64 * 1024];
  while (out.size() < max_bytes && in) {
    const auto want = static_cast<std::streamsize>(
        std::min<uint64_t>(sizeof(chunk), max_bytes - static_cast<uint64_t>(out.size())));
    in.read(chunk, want);
    out.append(chunk, static_cast<size_t>(in.gcount()));
  }
  return out;
}

constexpr uint64_t kWholeFile = std::numeric_limits<uint64_t>::max();

http::status_code HttpStatusFor(const Status& status) {
  switch (status.code()) {
    case StatusCode::kNotFound:
      return http::status_codes::NotFound;
    case StatusCode::kInvalidArgument:
    case StatusCode::kBadRequest:
      return http::status_codes::BadRequest;
    default:
      return http::status_codes::InternalError;
  }
}

// Not waited for: the listener's threads are better spent than on a slow
// client, and cpprestsdk itself observes a failed send.
void Reply(const http::http_request& request, const http::http_response& response) {
  try {
    (void)request.reply(response);
  } catch (const std::exception&) {
    // Already replied, or the connection is gone: nothing to tell.
  }
}

void ReplyText(const http::http_request& request, http::status_code code, const std::string& body) {
  http::http_response response(code);
  response.set_body(body, "text/plain; charset=utf-8");
  Reply(request, response);
}

}  // namespace

Result<ParsedLogRequest> ParseContainerLogRequest(std::string_view path, std::string_view query) {
  const std::vector<std::string_view> segments = Split(path, '/');
  // "", "containerLogs", namespace, pod, container
  if (segments.size() != 5 || !segments[0].empty() || segments[1] != "containerLogs") {
    return NotFound("404 page not found");
  }
  ParsedLogRequest parsed;
  parsed.request.namespace_name = PercentDecode(segments[2], false);
  parsed.request.pod = PercentDecode(segments[3], false);
  parsed.request.container = PercentDecode(segments[4], false);
  if (parsed.request.namespace_name.empty() || parsed.request.pod.empty() ||
      parsed.request.container.empty()) {
    return InvalidArgument("namespace, pod and container must not be empty");
  }

  std::map<std::string, std::string> values = ParseQuery(query);
  // The kubelet still takes the old `tail` ("all" = every line).
  if (auto tail = values.find("tail"); tail != values.end() && !tail->second.empty()) {
    if (tail->second == "all") {
      values.erase("tailLines");
    } else {
      values["tailLines"] = tail->second;
    }
  }
  ContainerLogOptions& options = parsed.options;
  options.follow = QueryBool(values, "follow");
  options.timestamps = QueryBool(values, "timestamps");
  parsed.request.previous = QueryBool(values, "previous");
  for (auto [key, field] :
       {std::pair{"tailLines", &options.tail_lines}, std::pair{"limitBytes", &options.limit_bytes},
        std::pair{"sinceSeconds", &options.since_seconds}}) {
    auto value = QueryInt(values, key);
    if (!value) {
      return value.status();
    }
    *field = *value;
  }
  if (auto since_time = values.find("sinceTime");
      since_time != values.end() && !since_time->second.empty()) {
    options.since_time = since_time->second;
  }
  // ValidatePodLogOptions' rules.
  if (options.tail_lines && *options.tail_lines < 0) {
    return InvalidArgument("tailLines: Invalid value: " + std::to_string(*options.tail_lines) +
                           ": must be greater than or equal to 0");
  }
  if (options.limit_bytes && *options.limit_bytes < 1) {
    return InvalidArgument("limitBytes: Invalid value: " + std::to_string(*options.limit_bytes) +
                           ": must be greater than 0");
  }
  if (options.since_seconds && options.since_time) {
    return InvalidArgument("at most one of `sinceTime` or `sinceSeconds` may be specified");
  }
  if (options.since_seconds && *options.since_seconds < 1) {
    return InvalidArgument("sinceSeconds: Invalid value: " +
                           std::to_string(*options.since_seconds) + ": must be greater than 0");
  }
  return parsed;
}

LogByteRange SelectLogBytes(std::string_view contents, const ContainerLogOptions& options) {
  LogByteRange range;
  range.offset = options.tail_lines ? TailStart(contents, *options.tail_lines) : 0;
  range.length = contents.size() - range.offset;
  if (options.limit_bytes) {
    range.length = std::min(range.length, static_cast<uint64_t>(*options.limit_bytes));
  }
  return range;
}

Result<StreamingRequest> ParseStreamingRequest(std::string_view path) {
  const std::vector<std::string_view> segments = Split(path, '/');
  if (segments.size() < 2 || !segments[0].empty()) {
    return NotFound("404 page not found");
  }
  StreamingRequest parsed;
  const std::string_view endpoint = segments[1];
  if (endpoint == "exec") {
    parsed.kind = StreamingKind::kExec;
  } else if (endpoint == "attach") {
    parsed.kind = StreamingKind::kAttach;
  } else if (endpoint == "run") {
    parsed.kind = StreamingKind::kRun;
  } else if (endpoint == "portForward") {
    parsed.kind = StreamingKind::kPortForward;
  } else {
    return NotFound("404 page not found");
  }
  // namespace, pod, [uid], container; port-forward names no container.
  const bool names_container = parsed.kind != StreamingKind::kPortForward;
  const size_t names = segments.size() - 2;
  const size_t without_uid = names_container ? 3 : 2;
  if (names != without_uid && names != without_uid + 1) {
    return NotFound("404 page not found");
  }
  for (size_t i = 2; i < segments.size(); ++i) {
    if (segments[i].empty()) {
      return InvalidArgument("namespace, pod, uid and container must not be empty");
    }
  }
  parsed.namespace_name = PercentDecode(segments[2], false);
  parsed.pod = PercentDecode(segments[3], false);
  if (names_container) {
    parsed.container = PercentDecode(segments.back(), false);
  }
  return parsed;
}

std::string StreamingRefusalMessage(const StreamingRequest& request, KubeletMode mode) {
  const std::string pod = "pod \"" + request.pod + "\"";
  const std::string container = "container \"" + request.container + "\" of " + pod;
  std::string refused;
  std::string consequence;
  switch (request.kind) {
    case StreamingKind::kExec:
      refused = "cannot exec into " + container;
      consequence = "there is nothing to exec into";
      break;
    case StreamingKind::kAttach:
      refused = "cannot attach to " + container;
      consequence = "there is nothing to attach to";
      break;
    case StreamingKind::kRun:
      refused = "cannot run a command in " + container;
      consequence = "there is nothing to run it in";
      break;
    case StreamingKind::kPortForward:
      refused = "cannot forward ports to " + pod;
      consequence = "nothing listens on its ports";
      break;
  }
  const std::string logs =
      "kubectl logs " + request.pod + (request.container.empty() ? "" : " -c " + request.container);
  if (mode == KubeletMode::kSimulated) {
    return refused + ": this member is simulated by hybridjob-sim and no process runs, so " +
           consequence + "; " + logs +
           " shows what the member was given, and hybridjob-sim --exec runs members as local "
           "processes";
  }
  std::string message = refused +
                        ": hybridjob-sim --exec runs this member as local processes but does not "
                        "implement the kubelet's exec, attach and port-forward streaming; " +
                        logs + " shows its output";
  if (request.kind == StreamingKind::kPortForward) {
    // Members share the simulator host's network, each on its pod IP.
    const std::string pod_ip = "kubectl get pod " + request.pod + " -o wide";
    message +=
        ", and its processes listen on the pod's IP on the simulator's host (" + pod_ip + ")";
  }
  return message;
}

std::string FailureStatusJson(int code, std::string_view reason, std::string_view message) {
  nlohmann::ordered_json status;
  status["kind"] = "Status";
  status["apiVersion"] = "v1";
  status["metadata"] = nlohmann::ordered_json::object();
  status["status"] = "Failure";
  status["message"] = message;
  status["reason"] = reason;
  status["code"] = code;
  return status.dump();
}

// ---- the server ----

// One `follow` reply: its body is fed from the file by a thread of its own.
struct LogFollower {
  ContainerLogSource source;
  uint64_t file_offset = 0;            // the next byte of the file to send
  std::optional<uint64_t> bytes_left;  // what limitBytes still allows
  concurrency::streams::producer_consumer_buffer<uint8_t> body;
  pplx::task<void> reply_sent;  // done once the reply ended, sent or not
  std::atomic<bool> finished{false};
  std::thread thread;
};

class KubeletServer::Impl {
 public:
  Impl(KubeletServerOptions options, ContainerLogLookup logs)
      : options_(std::move(options)), logs_(std::move(logs)) {}

  Status Start();
  void Stop();

  int port() const { return port_.load(); }
  const std::string& address() const { return options_.address; }

 private:
  Status Listen(int port);
  void Handle(const http::http_request& request);
  void HandleGet(const http::http_request& request);
  void StartFollowing(const http::http_request& request, ContainerLogSource source,
                      const std::string& contents, const LogByteRange& range,
                      const ContainerLogOptions& options);
  void Follow(LogFollower& follower);
  bool SendAppended(LogFollower& follower);

  const KubeletServerOptions options_;
  const ContainerLogLookup logs_;
  observability::ServingCertificate pem_;
  std::unique_ptr<http_listener> listener_;
  std::atomic<int> port_{0};

  Mutex mu_;
  std::condition_variable wake_;
  bool stopping_ HJ_GUARDED_BY(mu_) = false;
  std::list<std::unique_ptr<LogFollower>> followers_ HJ_GUARDED_BY(mu_);
};

Status KubeletServer::Impl::Start() {
  if (listener_) {
    return Status::Ok();
  }
  if (options_.port < 0 || options_.port > 65535) {
    return InvalidArgument("kubelet port " + std::to_string(options_.port) +
                           " is not between 0 and 65535");
  }
  auto pem = observability::SelfSignedCertificate("hybridjob-sim-kubelet@" + options_.address,
                                                  {options_.address});
  if (!pem) {
    return pem.status();
  }
  pem_ = std::move(*pem);
  {
    MutexLock lock(mu_);
    stopping_ = false;
  }
  if (options_.port != 0) {
    return Listen(options_.port);
  }
  // cpprestsdk does not say which port it bound, so pick a free one first;
  // another process may take it in between, hence the retries.
  Status last;
  for (int attempt = 0; attempt < 5; ++attempt) {
    int free_port = 0;
    try {
      boost::asio::io_context io;
      boost::asio::ip::tcp::acceptor probe(io,
                                           {boost::asio::ip::make_address(options_.address), 0});
      free_port = probe.local_endpoint().port();
    } catch (const std::exception& e) {
      return Unavailable("kubelet server on " + options_.address + ": " + e.what());
    }
    last = Listen(free_port);
    if (last.ok()) {
      return last;
    }
  }
  return last;
}

Status KubeletServer::Impl::Listen(int port) {
  const std::string host = options_.address.find(':') == std::string::npos
                               ? options_.address
                               : "[" + options_.address + "]";
  const std::string uri = "https://" + host + ":" + std::to_string(port) + "/";
  http_listener_config config;
  // No verify mode is set, so no client certificate is asked for.
  config.set_ssl_context_callback([this](boost::asio::ssl::context& ctx) {
    ctx.set_options(boost::asio::ssl::context::default_workarounds |
                    boost::asio::ssl::context::no_sslv2 | boost::asio::ssl::context::no_sslv3 |
                    boost::asio::ssl::context::no_tlsv1 | boost::asio::ssl::context::no_tlsv1_1);
    ctx.use_certificate_chain(
        boost::asio::buffer(pem_.certificate.data(), pem_.certificate.size()));
    ctx.use_private_key(boost::asio::buffer(pem_.private_key.data(), pem_.private_key.size()),
                        boost::asio::ssl::context::pem);
  });
  try {
    auto listener = std::make_unique<http_listener>(uri, config);
    listener->support([this](const http::http_request& request) { Handle(request); });
    listener->open().wait();
    listener_ = std::move(listener);
  } catch (const std::exception& e) {
    return Unavailable("kubelet server on " + uri + ": " + e.what());
  }
  port_ = port;
  spdlog::info("simulated kubelet serving on {}", uri);
  return Status::Ok();
}

void KubeletServer::Impl::Handle(const http::http_request& request) {
  const web::uri relative = request.relative_uri();
  if (auto streaming = ParseStreamingRequest(relative.path());
      streaming.ok() || streaming.status().code() != StatusCode::kNotFound) {
    // Whatever the method: exec and attach come as POST or GET, port-forward
    // as GET. A plain reply, not 101, so the caller's upgrade fails with it.
    const int code = http::status_codes::BadRequest;
    const std::string message = streaming.ok() ? StreamingRefusalMessage(*streaming, options_.mode)
                                               : streaming.status().message();
    http::http_response response(code);
    response.set_body(FailureStatusJson(code, "BadRequest", message), "application/json");
    Reply(request, response);
    return;
  }
  if (request.method() != http::methods::GET) {
    http::http_response response(http::status_codes::MethodNotAllowed);
    response.headers().add("Allow", "GET");
    Reply(request, response);
    return;
  }
  HandleGet(request);
}

void KubeletServer::Impl::HandleGet(const http::http_request& request) {
  const web::uri relative = request.relative_uri();
  auto parsed = ParseContainerLogRequest(relative.path(), relative.query());
  if (!parsed) {
    ReplyText(request, HttpStatusFor(parsed.status()), parsed.status().message());
    return;
  }
  Result<ContainerLogSource> source = Internal("no log source");
  try {
    source = logs_(parsed->request);
  } catch (const std::exception& e) {
    source = Internal(e.what());
  }
  if (!source) {
    ReplyText(request, HttpStatusFor(source.status()), source.status().message());
    return;
  }
  const ContainerLogOptions& options = parsed->options;
  const std::string contents = source->text ? *source->text : ReadFrom(source->file, 0, kWholeFile);
  const LogByteRange range = SelectLogBytes(contents, options);
  const bool limit_reached =
      options.limit_bytes && range.length >= static_cast<uint64_t>(*options.limit_bytes);
  // A text log never grows: following it is reading it.
  if (!options.follow || limit_reached || source->text) {
    http::http_response response(http::status_codes::OK);
    response.set_body(contents.substr(range.offset, range.length), "text/plain");
    Reply(request, response);
    return;
  }
  StartFollowing(request, std::move(*source), contents, range, options);
}

void KubeletServer::Impl::StartFollowing(const http::http_request& request,
                                         ContainerLogSource source, const std::string& contents,
                                         const LogByteRange& range,
                                         const ContainerLogOptions& options) {
  auto follower = std::make_unique<LogFollower>();
  follower->source = std::move(source);
  follower->file_offset = contents.size();
  if (options.limit_bytes) {
    follower->bytes_left = static_cast<uint64_t>(*options.limit_bytes) - range.length;
  }
  if (range.length > 0) {
    follower->body
        .putn_nocopy(reinterpret_cast<const uint8_t*>(contents.data()) + range.offset,
                     static_cast<size_t>(range.length))
        .wait();
    follower->body.sync().wait();
  }

  std::list<std::unique_ptr<LogFollower>> done;
  {
    MutexLock lock(mu_);
    if (stopping_) {
      lock.Unlock();
      ReplyText(request, http::status_codes::ServiceUnavailable, "the kubelet is stopping");
      return;
    }
    http::http_response response(http::status_codes::OK);
    response.set_body(concurrency::streams::istream(follower->body), "text/plain");
    follower->reply_sent = request.reply(response);
    LogFollower& started = *follower;
    follower->thread = std::thread([this, &started] { Follow(started); });
    followers_.push_back(std::move(follower));
    // Reap the streams that ended since the last one began.
    for (auto it = followers_.begin(); it != followers_.end();) {
      if ((*it)->finished.load()) {
        done.push_back(std::move(*it));
        it = followers_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& ended : done) {
    ended->thread.join();
  }
}

// Sends what was appended since the last look, within limitBytes. False once
// nothing more may be sent (the limit is reached or the client is gone).
bool KubeletServer::Impl::SendAppended(LogFollower& follower) {
  while (true) {
    if (follower.reply_sent.is_done()) {
      return false;
    }
    constexpr uint64_t kChunk = uint64_t{64} * 1024;
    const uint64_t want = follower.bytes_left ? std::min(kChunk, *follower.bytes_left) : kChunk;
    if (want == 0) {
      return false;
    }
    const std::string appended = ReadFrom(follower.source.file, follower.file_offset, want);
    if (appended.empty()) {
      return true;
    }
    follower.body.putn_nocopy(reinterpret_cast<const uint8_t*>(appended.data()), appended.size())
        .wait();
    // sync() lets the server send what is buffered now rather than wait for a full chunk.
    follower.body.sync().wait();
    follower.file_offset += appended.size();
    if (follower.bytes_left) {
      *follower.bytes_left -= appended.size();
    }
  }
}

void KubeletServer::Impl::Follow(LogFollower& follower) {
  while (true) {
    bool still_writing = false;
    try {
      still_writing = follower.source.still_writing && follower.source.still_writing();
    } catch (const std::exception& e) {
      spdlog::warn("container log source failed: {}", e.what());
    }
    // Read after asking: whatever was written before it stopped is sent.
    const bool more_allowed = SendAppended(follower);
    if (!more_allowed || !still_writing) {
      break;
    }
    MutexLock lock(mu_);
    if (lock.WaitFor(wake_, options_.follow_poll_interval,
                     [this]() HJ_REQUIRES(mu_) { return stopping_; })) {
      break;
    }
  }
  try {
    follower.body.close(std::ios_base::out).wait();  // the body's end
  } catch (const std::exception&) {
  }
  follower.finished = true;
}

void KubeletServer::Impl::Stop() {
  std::list<std::unique_ptr<LogFollower>> followers;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    followers.swap(followers_);
  }
  wake_.notify_all();
  // Before the listener: closing it waits for every connection, and a stream
  // whose body never ends would keep its connection forever.
  for (auto& follower : followers) {
    follower->thread.join();
  }
  // Each ended body still has its last chunk to send: closing the listener
  // first cut some replies short ("Retrieving message chunk header" at the
  // client). A client that stopped reading is not waited for long.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (auto& follower : followers) {
    while (!follower->reply_sent.is_done() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (listener_) {
    try {
      listener_->close().wait();
    } catch (const std::exception&) {
    }
    listener_.reset();
  }
  port_ = 0;
}

KubeletServer::KubeletServer(KubeletServerOptions options, ContainerLogLookup logs)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(logs))) {}

KubeletServer::~KubeletServer() {
  Stop();
}

Status KubeletServer::Start() {
  return impl_->Start();
}

void KubeletServer::Stop() {
  impl_->Stop();
}

int KubeletServer::port() const {
  return impl_->port();
}

const std::string& KubeletServer::address() const {
  return impl_->address();
}

}  // namespace hybridjob::sim
