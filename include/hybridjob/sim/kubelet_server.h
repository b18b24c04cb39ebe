// The simulated kubelet's HTTPS endpoint, for what the API server asks a
// kubelet on a user's behalf: container logs (`kubectl logs [-f]`, which the
// API server turns into GET /containerLogs/{namespace}/{pod}/{container} on
// the node's InternalIP and status.daemonEndpoints.kubeletEndpoint.Port), and
// the streaming endpoints (`kubectl exec`, `attach`, `port-forward`), which it
// refuses with a message saying what works instead.
// The API server verifies the kubelet's certificate only when it is given
// --kubelet-certificate-authority, so a self-signed one made at Start()
// serves; no client certificate is asked for.
//
// Parsing a request and choosing the bytes to send are pure functions below;
// KubeletServer is the shell (cpprestsdk stays inside its implementation).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <hybridjob/common/status.h>

namespace hybridjob::sim {

// Which container's log a request is for.
struct ContainerLogRequest {
  std::string namespace_name;
  std::string pod;
  std::string container;
  bool previous = false;  // the previous (terminated) instance's log
};

// Where that log is. The file holds the container's output as written (a
// missing file reads as empty). still_writing() is true while the container
// runs and may append to it; a follow stream ends once it is false and the
// file is drained. It is called from the stream's own thread, every poll.
struct ContainerLogSource {
  std::filesystem::path file;
  std::function<bool()> still_writing;
  // The whole log instead of a file, when no process writes it (default
  // mode's synthetic log): sent as it is, and a follow stream ends with it.
  std::optional<std::string> text;
};

// Finds the log of a container. The error's code picks the reply: NotFound
// 404 (unknown pod or container), InvalidArgument or BadRequest 400 (e.g. no
// previous instance), anything else 500; its message is the reply's body, so
// it should read like the kubelet's ("container \"c\" not found in pod \"p\"").
// Called on a server thread; must not block for long.
using ContainerLogLookup = std::function<Result<ContainerLogSource>(const ContainerLogRequest&)>;

// The query of a log request: the kubelet's v1 PodLogOptions.
struct ContainerLogOptions {
  bool follow = false;
  bool timestamps = false;  // accepted; lines are sent as written
  std::optional<int64_t> tail_lines;
  std::optional<int64_t> limit_bytes;
  std::optional<int64_t> since_seconds;   // accepted; every line is sent
  std::optional<std::string> since_time;  // accepted; every line is sent
};

struct ParsedLogRequest {
  ContainerLogRequest request;
  ContainerLogOptions options;
};

// path: the URL's path, "/containerLogs/{namespace}/{pod}/{container}"
// (percent-encoded); query: the URL's query, without '?'. Booleans read as
// the kubelet reads them ("0" and "false" are false, any other value true);
// the legacy `tail` ("all" or a number) is tailLines. NotFound for another
// path, InvalidArgument for a bad parameter (not a number, tailLines < 0,
// limitBytes or sinceSeconds < 1, both sinceSeconds and sinceTime).
Result<ParsedLogRequest> ParseContainerLogRequest(std::string_view path, std::string_view query);

// A part of a log: `length` bytes from `offset`.
struct LogByteRange {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// What to send of a log whose contents are `contents`: the last tail_lines
// lines (all when unset; an unfinished last line counts as one, as for
// `tail -n`), then at most limit_bytes of those. A follow stream sends this
// and then what is appended, limit_bytes counting both.
LogByteRange SelectLogBytes(std::string_view contents, const ContainerLogOptions& options);

// The kubelet's streaming endpoints: the API server forwards pods/exec,
// pods/attach and pods/portforward to /exec, /attach and /portForward (as an
// SPDY upgrade); /run is only for direct callers.
enum class StreamingKind { kExec, kAttach, kPortForward, kRun };

struct StreamingRequest {
  StreamingKind kind = StreamingKind::kExec;
  std::string namespace_name;
  std::string pod;
  std::string container;  // empty for port-forward
};

// path: "/{exec,attach,run}/{namespace}/{pod}[/{uid}]/{container}" or
// "/portForward/{namespace}/{pod}[/{uid}]", percent-encoded. NotFound for
// another path, InvalidArgument for an empty name.
Result<StreamingRequest> ParseStreamingRequest(std::string_view path);

// How the pods' containers run, which decides what the kubelet can offer.
enum class KubeletMode {
  kSimulated,  // default: no process runs
  kExec,       // hybridjob-sim --exec: containers are local processes
};

// Why a streaming request is refused and what works instead in `mode`, for
// the user to read.
std::string StreamingRefusalMessage(const StreamingRequest& request, KubeletMode mode);

// A metav1.Status failure as JSON. client-go decodes the body of a non-101
// answer to its SPDY upgrade as one, and kubectl then prints
// "Error from server (<reason>): <message>".
std::string FailureStatusJson(int code, std::string_view reason, std::string_view message);

struct KubeletServerOptions {
  std::string address = "127.0.0.1";  // an IP: the certificate names it
  int port = 0;                       // 0: a free port, see KubeletServer::port()
  // How often a follow stream looks for bytes appended to the file.
  std::chrono::milliseconds follow_poll_interval{150};
  // What a refused streaming request says (StreamingRefusalMessage).
  KubeletMode mode = KubeletMode::kSimulated;
};

// Serves GET /containerLogs/... over HTTPS, and refuses the streaming
// endpoints (any method) with a 400 metav1.Status; other paths are 404, other
// methods 405. Each follow stream is fed by a
// thread the server owns, until the container stops writing, limitBytes is
// reached, a send finds the client gone, or Stop(). Stop() ends the streams
// (the client sees the end of the body), joins their threads and closes the
// listener.
class KubeletServer {
 public:
  KubeletServer(KubeletServerOptions options, ContainerLogLookup logs);
  ~KubeletServer();
  KubeletServer(const KubeletServer&) = delete;
  KubeletServer& operator=(const KubeletServer&) = delete;

  // Makes the certificate and starts listening. Unavailable when the port
  // cannot be bound.
  Status Start();
  void Stop();

  // The port listened on (the chosen one when options.port was 0); 0 before
  // Start().
  int port() const;
  const std::string& address() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hybridjob::sim
