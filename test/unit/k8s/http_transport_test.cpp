// The HTTP transport, and the watch stream over it, against a scripted peer on
// loopback (plain HTTP; TLS is exercised by every integration test against the
// real API server).
#include <arpa/inet.h>
#include <atomic>
#include <cstdio>
#include <functional>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <hybridjob/k8s/http_transport.h>
#include <hybridjob/k8s/rest_client.h>

namespace hybridjob::k8s::http {
namespace {

using std::chrono::milliseconds;

bool SendAll(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) {
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string Reply(std::string_view body, std::string_view extra_headers = "") {
  return "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         std::string(extra_headers) + "\r\n" + std::string(body);
}

// Accepts connections one after another and hands each request to the
// handler, which writes the answer on the socket and says whether to keep the
// connection open.
class ScriptedPeer {
 public:
  using Handler = std::function<bool(int fd, const std::string& request)>;

  explicit ScriptedPeer(Handler handler) : handler_(std::move(handler)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::listen(listener_, 16) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
      ADD_FAILURE() << "cannot listen on loopback";
    }
    port_ = ntohs(address.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }

  ~ScriptedPeer() {
    stop_ = true;
    thread_.join();
    ::close(listener_);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int connections() const { return connections_.load(); }
  std::vector<std::string> requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void Serve() {
    while (!stop_) {
      pollfd p{listener_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) {
        continue;
      }
      const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        continue;
      }
      ++connections_;
      ServeConnection(fd);
      ::close(fd);
    }
  }

  void ServeConnection(int fd) {
    std::string buffer;
    // Waits a little for bytes; false once the client closed the connection.
    auto read_more = [&] {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) {
        return true;
      }
      char chunk[4096];
      const ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
      if (n <= 0) {
        return false;
      }
      buffer.append(chunk, static_cast<size_t>(n));
      return true;
    };
    while (!stop_) {
      const size_t head_end = buffer.find("\r\n\r\n");
      if (head_end == std::string::npos) {
        if (!read_more()) {
          return;
        }
        continue;
      }
      size_t body_length = 0;
      const size_t at = buffer.find("Content-Length: ");
      if (at != std::string::npos && at < head_end) {
        body_length = std::stoul(buffer.substr(at + 16));
      }
      if (buffer.size() < head_end + 4 + body_length) {
        if (!read_more()) {
          return;
        }
        continue;
      }
      const std::string request = buffer.substr(0, head_end + 4 + body_length);
      buffer.erase(0, request.size());
      {
        std::lock_guard lock(mu_);
        requests_.push_back(request);
      }
      if (!handler_(fd, request)) {
        return;
      }
    }
  }

  Handler handler_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

std::unique_ptr<Transport> Connect(const std::string& url) {
  auto transport = Transport::Create(url, {}, 4);
  EXPECT_TRUE(transport.ok()) << transport.status().ToString();
  return transport.ok() ? std::move(*transport) : nullptr;
}

TEST(HttpTransportTest, KeepsOneConnectionAliveAcrossRequests) {
  ScriptedPeer peer([](int fd, const std::string& request) {
    return SendAll(fd, Reply(request.starts_with("POST") ? "created" : "got"));
  });
  auto transport = Connect(peer.url() + "/prefix/");
  ASSERT_NE(transport, nullptr);
  for (int i = 0; i < 3; ++i) {
    auto got = transport->RoundTrip({"GET", "/api/v1/pods?limit=1", {{"Accept", "x"}}, ""},
                                    milliseconds(2000));
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(got->head.status, 200);
    EXPECT_EQ(got->body, "got");
  }
  auto created = transport->RoundTrip(
      {"POST", "/api/v1/namespaces/a/pods", {{"Content-Type", "application/json"}}, "{\"a\":1}"},
      milliseconds(2000));
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(created->body, "created");
  EXPECT_EQ(peer.connections(), 1);
  const auto requests = peer.requests();
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_TRUE(requests[0].starts_with("GET /prefix/api/v1/pods?limit=1 HTTP/1.1\r\n"))
      << requests[0];
  EXPECT_NE(requests[0].find("Host: 127.0.0.1:"), std::string::npos);
  EXPECT_TRUE(requests[3].ends_with("Content-Length: 7\r\n\r\n{\"a\":1}")) << requests[3];
}

TEST(HttpTransportTest, AnIdleConnectionTheServerClosedIsReplaced) {
  // The server answers as if the connection stayed open, then closes it
  // while it idles: the next request goes on a new connection.
  ScriptedPeer peer([](int fd, const std::string&) {
    SendAll(fd, Reply("once"));
    std::this_thread::sleep_for(milliseconds(20));
    return false;
  });
  auto transport = Connect(peer.url());
  ASSERT_NE(transport, nullptr);
  for (int i = 0; i < 3; ++i) {
    if (i > 0) {
      std::this_thread::sleep_for(milliseconds(100));  // the close has arrived
    }
    auto got = transport->RoundTrip({"POST", "/x", {}, "{}"}, milliseconds(2000));
    ASSERT_TRUE(got.ok()) << "request " << i << ": " << got.status().ToString();
    EXPECT_EQ(got->body, "once");
  }
  EXPECT_EQ(peer.connections(), 3);
}

TEST(HttpTransportTest, AGetOnAConnectionClosedUnderItIsSentAgain) {
  // The close may arrive after the next request went out on the connection:
  // a GET is sent again on a new one (a POST would not be: it may have
  // been acted on).
  ScriptedPeer peer([](int fd, const std::string&) {
    SendAll(fd, Reply("once"));
    return false;
  });
  auto transport = Connect(peer.url());
  ASSERT_NE(transport, nullptr);
  for (int i = 0; i < 5; ++i) {
    auto got = transport->RoundTrip({"GET", "/x", {}, ""}, milliseconds(2000));
    ASSERT_TRUE(got.ok()) << "request " << i << ": " << got.status().ToString();
    EXPECT_EQ(got->body, "once");
  }
  EXPECT_EQ(peer.connections(), 5);
}

// A GET answered with `reply` by a peer that then closes the connection.
Result<Response> GetAnsweredWith(const std::string& reply) {
  ScriptedPeer peer([&reply](int fd, const std::string&) {
    SendAll(fd, reply);
    return false;
  });
  auto transport = Connect(peer.url());
  if (transport == nullptr) {
    return Internal("no transport");
  }
  return transport->RoundTrip({"GET", "/", {}, ""}, milliseconds(2000));
}

TEST(HttpTransportTest, ConnectionCloseAndBodiesUntilCloseAreHonoured) {
  auto got = GetAnsweredWith(
      "HTTP/1.1 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\nbroken");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->head.status, 500);
  EXPECT_EQ(got->body, "broken");
}

TEST(HttpTransportTest, ChunkedStreamArrivesAsSentAndCancelUnblocksAWaitingRead) {
  std::atomic<bool> release{false};
  ScriptedPeer peer([&](int fd, const std::string&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    SendAll(fd, "6\r\nfirst\n\r\n");
    std::this_thread::sleep_for(milliseconds(50));
    SendAll(fd, "7\r\nsecond\n\r\n");
    while (!release) {
      std::this_thread::sleep_for(milliseconds(5));
    }
    return false;
  });
  auto transport = Connect(peer.url());
  ASSERT_NE(transport, nullptr);
  auto stream =
      transport->OpenStream({"GET", "/watch", {}, ""}, milliseconds(2000), milliseconds(60000));
  ASSERT_TRUE(stream.ok()) << stream.status().ToString();
  EXPECT_EQ(stream->head.status, 200);
  std::string body;
  while (body.size() < 13) {
    auto more = stream->body->ReadSome(body);
    ASSERT_TRUE(more.ok()) << more.status().ToString();
    ASSERT_TRUE(*more);
  }
  EXPECT_EQ(body, "first\nsecond\n");

  // Nothing more comes; Cancel from another thread ends the blocked read.
  std::thread canceller([&] {
    std::this_thread::sleep_for(milliseconds(100));
    stream->body->Cancel();
  });
  auto blocked = stream->body->ReadSome(body);
  canceller.join();
  release = true;
  ASSERT_FALSE(blocked.ok());
  EXPECT_EQ(blocked.status().code(), StatusCode::kCancelled);
}

TEST(HttpTransportTest, AStreamThatEndsReportsTheEnd) {
  ScriptedPeer peer([](int fd, const std::string&) {
    SendAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
    return false;
  });
  auto transport = Connect(peer.url());
  ASSERT_NE(transport, nullptr);
  auto stream =
      transport->OpenStream({"GET", "/watch", {}, ""}, milliseconds(2000), milliseconds(2000));
  ASSERT_TRUE(stream.ok());
  auto all = ReadAll(*stream->body);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  EXPECT_EQ(*all, "abc");
}

TEST(HttpTransportTest, ABodyCutShortIsAnError) {
  auto got = GetAnsweredWith("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
}

TEST(HttpTransportTest, ASilentServerTimesOut) {
  ScriptedPeer peer([](int, const std::string&) {
    std::this_thread::sleep_for(milliseconds(600));
    return false;
  });
  auto transport = Connect(peer.url());
  ASSERT_NE(transport, nullptr);
  auto got = transport->RoundTrip({"GET", "/", {}, ""}, milliseconds(150));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(got.status().message().find("timed out"), std::string::npos) << got.status().message();
}

TEST(HttpTransportTest, NoServerIsUnavailableNamingTheAddress) {
  int port = 0;
  {
    ScriptedPeer gone([](int, const std::string&) { return false; });
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  auto transport = Connect("http://127.0.0.1:" + std::to_string(port));
  ASSERT_NE(transport, nullptr);
  auto got = transport->RoundTrip({"GET", "/", {}, ""}, milliseconds(1000));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(got.status().message().find("127.0.0.1:" + std::to_string(port)), std::string::npos)
      << got.status().message();
}

// The peer as an HTTP proxy: a request to an http server is sent to it with
// the whole URL and the proxy's credentials.
TEST(HttpTransportTest, AnHttpServerIsReachedThroughTheProxyWithTheAbsoluteUrl) {
  ScriptedPeer proxy([](int fd, const std::string&) { return SendAll(fd, Reply("via proxy")); });
  auto parsed = ParseProxyUrl("http://user:secret@" + proxy.url().substr(7));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->url, "http://user:***@" + proxy.url().substr(7));
  // The server's name is never resolved here: only the proxy is dialled.
  auto transport = Transport::Create("http://api.cluster.invalid:8080/k8s", {}, 4, *parsed);
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  auto got = (*transport)->RoundTrip({"GET", "/api?x=1", {}, ""}, milliseconds(2000));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->body, "via proxy");
  ASSERT_EQ(proxy.requests().size(), 1u);
  const std::string request = proxy.requests()[0];
  EXPECT_TRUE(request.starts_with("GET http://api.cluster.invalid:8080/k8s/api?x=1 HTTP/1.1\r\n"))
      << request;
  EXPECT_NE(request.find("\r\nHost: api.cluster.invalid:8080\r\n"), std::string::npos) << request;
  EXPECT_NE(request.find("\r\nProxy-Authorization: Basic dXNlcjpzZWNyZXQ=\r\n"),
            std::string::npos)
      << request;
}

// An https server is reached through a CONNECT tunnel (the TLS inside it is
// tested against the real API server through a real proxy); a proxy that
// refuses the tunnel, or is not there, is an error naming it.
TEST(HttpTransportTest, ATunnelTheProxyRefusesOrAMissingProxyIsAClearError) {
  ScriptedPeer proxy([](int fd, const std::string&) {
    return SendAll(fd, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n");
  });
  auto parsed = ParseProxyUrl(proxy.url());
  ASSERT_TRUE(parsed.ok());
  auto transport = Transport::Create("https://api.cluster.invalid:6443", {}, 4, *parsed);
  ASSERT_TRUE(transport.ok()) << transport.status().ToString();
  auto got = (*transport)->RoundTrip({"GET", "/api", {}, ""}, milliseconds(2000));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(got.status().message().find("proxy " + proxy.url() +
                                        " refused the tunnel to api.cluster.invalid:6443: HTTP 403"),
            std::string::npos)
      << got.status().message();
  ASSERT_EQ(proxy.requests().size(), 1u);
  EXPECT_EQ(proxy.requests()[0],
            "CONNECT api.cluster.invalid:6443 HTTP/1.1\r\nHost: api.cluster.invalid:6443\r\n\r\n");

  int port = 0;
  {
    ScriptedPeer gone([](int, const std::string&) { return false; });
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  auto missing = ParseProxyUrl("127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(missing.ok());
  auto nowhere = Transport::Create("https://api.cluster.invalid:6443", {}, 4, *missing);
  ASSERT_TRUE(nowhere.ok());
  auto failed = (*nowhere)->RoundTrip({"GET", "/api", {}, ""}, milliseconds(1000));
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("cannot connect to proxy http://127.0.0.1:" +
                                           std::to_string(port)),
            std::string::npos)
      << failed.status().message();
}

TEST(HttpTransportTest, UnusableTlsMaterialIsRefusedAtCreation) {
  TlsOptions garbage_ca;
  garbage_ca.ca_pem = "-----BEGIN CERTIFICATE-----\ngarbage\n-----END CERTIFICATE-----\n";
  auto bad_ca = Transport::Create("https://127.0.0.1:6443", garbage_ca, 1);
  ASSERT_FALSE(bad_ca.ok());
  EXPECT_EQ(bad_ca.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad_ca.status().message().find("TLS"), std::string::npos);

  TlsOptions key_only;
  key_only.client_key_pem = "-----BEGIN PRIVATE KEY-----\nxx\n-----END PRIVATE KEY-----\n";
  auto bad_pair = Transport::Create("https://127.0.0.1:6443", key_only, 1);
  ASSERT_FALSE(bad_pair.ok());
  EXPECT_EQ(bad_pair.status().code(), StatusCode::kInvalidArgument);

  auto bad_url = Transport::Create("127.0.0.1:6443", {}, 1);
  ASSERT_FALSE(bad_url.ok());
  EXPECT_EQ(bad_url.status().code(), StatusCode::kInvalidArgument);
}

// A watch's events are lines of JSON that the server's chunks cut anywhere:
// the client's stream joins them whole, skips blank lines, and takes a last
// event that ends without a newline. The first read holds exactly one line,
// the second ends inside an event.
TEST(HttpTransportTest, WatchEventsCutAcrossChunksArriveWhole) {
  const std::string first = R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})";
  const std::string second = R"({"type":"MODIFIED","object":{"metadata":{"name":"b"}}})";
  const std::string last = R"({"type":"DELETED","object":{"metadata":{"name":"c"}}})";
  const std::string rest = second + "\n\n" + last;
  ScriptedPeer peer([&](int fd, const std::string&) {
    auto chunk = [](std::string_view data) {
      char size[32];
      std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
      return std::string(size) + std::string(data) + "\r\n";
    };
    SendAll(fd,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n");
    SendAll(fd, chunk(first + "\n"));
    std::this_thread::sleep_for(milliseconds(30));
    SendAll(fd, chunk(std::string_view(rest).substr(0, 11)));
    std::this_thread::sleep_for(milliseconds(30));
    SendAll(fd, chunk(std::string_view(rest).substr(11)) + "0\r\n\r\n");
    return false;
  });
  ClientConfig config;
  config.server = peer.url();
  config.qps = 0;
  auto client = RestClient::Create(config);
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto watch = (*client)->Watch(resources::Pods(), "default", {});
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();

  std::vector<std::pair<WatchEventType, std::string>> seen;
  while (true) {
    auto event = (*watch)->Next();
    ASSERT_TRUE(event.ok()) << event.status().ToString();
    if (!event->has_value()) {
      break;
    }
    seen.emplace_back((*event)->type, (*event)->object["metadata"]["name"]);
  }
  const std::vector<std::pair<WatchEventType, std::string>> want = {
      {WatchEventType::kAdded, "a"},
      {WatchEventType::kModified, "b"},
      {WatchEventType::kDeleted, "c"}};
  EXPECT_EQ(seen, want);
}

}  // namespace
}  // namespace hybridjob::k8s::http
