#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <hybridjob/common/mutex.h>
#include <hybridjob/common/openssl.h>
#include <hybridjob/k8s/http_transport.h>

namespace hybridjob::k8s::http {
namespace {

using Clock = std::chrono::steady_clock;

// An idle connection older than this is closed rather than reused: servers
// close idle connections after a while (kube-apiserver after 90 s), and a
// request written into one that the server is closing is lost.
constexpr std::chrono::seconds kMaxIdle{30};
constexpr size_t kReadChunk = 64 * 1024;

std::string ErrnoText(int error) {
  char text[128];
  return strerror_r(error, text, sizeof(text));
}

using SslCtxPtr = openssl::Ptr<SSL_CTX>;
using openssl::ErrorText;

openssl::Ptr<BIO> MemoryBio(const std::string& pem) {
  return openssl::Ptr<BIO>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

// Every certificate of a PEM bundle; none is an error.
Result<std::vector<openssl::Ptr<X509>>> ReadCertificates(const std::string& pem,
                                                         std::string_view what) {
  std::vector<openssl::Ptr<X509>> certs;
  auto bio = MemoryBio(pem);
  while (X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certs.emplace_back(cert);
  }
  ERR_clear_error();  // the end of the bundle reads as an error
  if (certs.empty()) {
    return InvalidArgument(std::string(what) + " holds no PEM certificate");
  }
  return certs;
}

// Has OpenSSL decode and cache a certificate's extensions now, while one
// thread holds it. A certificate the context shares would otherwise get them
// during the first handshakes, under its lock in one thread while others read
// them through an unlocked fast path (ThreadSanitizer reports that race in
// libcrypto when connections open in parallel).
void CacheExtensions(X509* cert) {
  (void)X509_check_purpose(cert, -1, 0);
}

Result<SslCtxPtr> MakeSslContext(const TlsOptions& tls) {
  ERR_clear_error();
  SslCtxPtr ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) {
    return Internal(ErrorText("cannot create a TLS context"));
  }
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_AUTO_RETRY);
  // Reads take whatever the socket holds, several records at once, instead of
  // a record's header and then its body: half the read calls or fewer on a
  // busy watch.
  SSL_CTX_set_read_ahead(ctx.get(), 1);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
  // A server that closes without close_notify ends the stream; it is no error.
  SSL_CTX_set_options(ctx.get(), SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
  if (!tls.insecure_skip_verify) {
    if (tls.ca_pem.empty()) {
      if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
        return InvalidArgument(ErrorText("cannot load the system's CA certificates"));
      }
    } else {
      auto certs = ReadCertificates(tls.ca_pem, "the CA data");
      if (!certs) {
        return certs.status();
      }
      X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
      for (const auto& cert : *certs) {
        if (X509_STORE_add_cert(store, cert.get()) != 1) {
          return InvalidArgument(ErrorText("unusable CA certificate"));
        }
        CacheExtensions(cert.get());
      }
    }
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  } else {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  }
  if (!tls.client_cert_pem.empty() || !tls.client_key_pem.empty()) {
    if (tls.client_cert_pem.empty() || tls.client_key_pem.empty()) {
      return InvalidArgument("a client certificate needs its key, and a key its certificate");
    }
    auto chain = ReadCertificates(tls.client_cert_pem, "the client certificate");
    if (!chain) {
      return chain.status();
    }
    for (const auto& cert : *chain) {
      CacheExtensions(cert.get());
    }
    if (SSL_CTX_use_certificate(ctx.get(), (*chain)[0].get()) != 1) {
      return InvalidArgument(ErrorText("unusable client certificate"));
    }
    for (size_t i = 1; i < chain->size(); ++i) {
      if (SSL_CTX_add1_chain_cert(ctx.get(), (*chain)[i].get()) != 1) {
        return InvalidArgument(ErrorText("unusable client certificate chain"));
      }
    }
    auto bio = MemoryBio(tls.client_key_pem);
    openssl::Ptr<EVP_PKEY> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    if (!key) {
      return InvalidArgument(ErrorText("the client key is not a PEM private key"));
    }
    if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1 ||
        SSL_CTX_check_private_key(ctx.get()) != 1) {
      return InvalidArgument(ErrorText("the client key does not match its certificate"));
    }
  }
  return ctx;
}

bool IsAddress(const std::string& host) {
  in6_addr v6;
  in_addr v4;
  return inet_pton(AF_INET, host.c_str(), &v4) == 1 || inet_pton(AF_INET6, host.c_str(), &v6) == 1;
}

bool IsIdempotent(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" ||
         method == "OPTIONS";
}

// One TCP connection, with TLS or without. Used by one thread at a time;
// Abort may come from any thread.
class Connection {
 public:
  Connection(int fd, SSL* ssl) : fd_(fd), ssl_(ssl) {}
  ~Connection() {
    if (ssl_ != nullptr) {
      SSL_free(ssl_);
    }
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }

  // The socket of a plain connection, handed over (to start TLS on it).
  int ReleaseFd() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Bounds each later read and write.
  void SetTimeout(std::chrono::milliseconds timeout) {
    if (timeout == timeout_) {
      return;
    }
    timeout_ = timeout;
    const auto ms = std::max<int64_t>(timeout.count(), 1);
    timeval tv{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>((ms % 1000) * 1000)};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  }

  Status WriteAll(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = 0;
      if (ssl_ != nullptr) {
        ERR_clear_error();
        const int wrote = SSL_write(ssl_, data.data(), static_cast<int>(data.size()));
        if (wrote <= 0) {
          return IoFailure("write", wrote);
        }
        n = wrote;
      } else {
        n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0) {
          if (errno == EINTR)
            continue;
          return IoFailure("write", -1);
        }
      }
      data.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  }

  // Appends what arrives next to `buffer`; false once the peer closed.
  Result<bool> ReadMore(std::string& buffer) {
    const size_t before = buffer.size();
    buffer.resize(before + kReadChunk);
    while (true) {
      ssize_t n = 0;
      if (ssl_ != nullptr) {
        ERR_clear_error();
        errno = 0;  // a clean end is told from a failure by errno staying 0
        const int read = SSL_read(ssl_, buffer.data() + before, static_cast<int>(kReadChunk));
        if (read <= 0) {
          const int error = SSL_get_error(ssl_, read);
          buffer.resize(before);
          if (error == SSL_ERROR_ZERO_RETURN ||
              (error == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && errno == 0)) {
            return false;
          }
          return IoFailure("read", read);
        }
        n = read;
      } else {
        n = ::recv(fd_, buffer.data() + before, kReadChunk, 0);
        if (n < 0 && errno == EINTR)
          continue;
        if (n <= 0) {
          buffer.resize(before);
          if (n == 0) {
            return false;
          }
          return IoFailure("read", -1);
        }
      }
      buffer.resize(before + static_cast<size_t>(n));
      return true;
    }
  }

  // Whether an idle connection is still open with nothing unread: a server
  // that closed it, or sent anything unasked, makes it unusable.
  bool IdleAndOpen() const {
    // SSL_has_pending: read-ahead may hold bytes of records not yet decrypted.
    if (ssl_ != nullptr && SSL_has_pending(ssl_) == 1) {
      return false;
    }
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, 0) == 0;
  }

  // Unblocks a read or write in another thread; the fd stays open until
  // the destructor, so it cannot be reused meanwhile.
  void Abort() { ::shutdown(fd_, SHUT_RDWR); }

  std::string& buffer() { return buffer_; }
  Clock::time_point idle_since;

 private:
  Status IoFailure(std::string_view op, int result) {
    const int saved = errno;
    if (ssl_ != nullptr) {
      const int error = SSL_get_error(ssl_, result);
      if (error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE) {
        return Unavailable("timed out waiting for the server");
      }
      if (error == SSL_ERROR_SYSCALL && saved != 0) {
        return Unavailable(std::string(op) + ": " + ErrnoText(saved));
      }
      if (error == SSL_ERROR_SYSCALL || error == SSL_ERROR_ZERO_RETURN) {
        return Unavailable(std::string(op) + ": connection closed by the server");
      }
      return Unavailable(ErrorText(std::string(op) + ": TLS error"));
    }
    if (saved == EAGAIN || saved == EWOULDBLOCK) {
      return Unavailable("timed out waiting for the server");
    }
    return Unavailable(std::string(op) + ": " + ErrnoText(saved));
  }

  int fd_;
  SSL* ssl_;
  std::string buffer_;  // read from the connection, not yet consumed
  std::chrono::milliseconds timeout_{-1};
};

// Reads the body of `head` from `conn` (and what its buffer already holds)
// as it arrives.
class ConnectionBodyReader final : public BodyReader {
 public:
  ConnectionBodyReader(std::unique_ptr<Connection> conn, const ResponseHead& head)
      : conn_(std::move(conn)), framing_(head.framing), remaining_(head.content_length) {}

  Result<bool> ReadSome(std::string& out) override {
    const size_t before = out.size();
    while (true) {
      if (cancelled_.load()) {
        return Cancelled("stream cancelled");
      }
      std::string& buffer = conn_->buffer();
      switch (framing_) {
        case BodyFraming::kNone:
          return false;
        case BodyFraming::kContentLength: {
          const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, buffer.size()));
          out.append(buffer, 0, take);
          buffer.erase(0, take);
          remaining_ -= take;
          if (remaining_ == 0 && out.size() == before) {
            return false;
          }
          break;
        }
        case BodyFraming::kChunked: {
          auto consumed = chunked_.Feed(buffer, out);
          if (!consumed) {
            return consumed.status();
          }
          buffer.erase(0, *consumed);
          if (chunked_.done() && out.size() == before) {
            return false;
          }
          break;
        }
        case BodyFraming::kUntilClose:
          out.append(buffer);
          buffer.clear();
          if (ended_ && out.size() == before) {
            return false;
          }
          break;
      }
      if (out.size() > before) {
        return true;
      }
      if (ended_) {
        return Unavailable("the server closed the connection in the middle of the body");
      }
      auto more = conn_->ReadMore(buffer);
      if (!more) {
        return cancelled_.load() ? Cancelled("stream cancelled") : more.status();
      }
      ended_ = !*more;
    }
  }

  void Cancel() override {
    if (!cancelled_.exchange(true)) {
      conn_->Abort();
    }
  }

  // The connection, once the whole body was read, to carry another request.
  std::unique_ptr<Connection> Release() { return std::move(conn_); }

 private:
  std::unique_ptr<Connection> conn_;
  BodyFraming framing_;
  uint64_t remaining_;
  ChunkedDecoder chunked_;
  bool ended_ = false;
  std::atomic<bool> cancelled_{false};
};

}  // namespace

Result<Endpoint> ParseServerUrl(std::string_view url) {
  Endpoint endpoint;
  std::string_view rest;
  if (url.starts_with("https://")) {
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    endpoint.tls = false;
    rest = url.substr(7);
  } else {
    return InvalidArgument("server must be an http(s) URL: \"" + std::string(url) + "\"");
  }
  const size_t slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    if (rest[slash] != '/') {
      return InvalidArgument("server URL may not carry a query or fragment: \"" + std::string(url) +
                             "\"");
    }
    std::string_view path = rest.substr(slash);
    while (path.ends_with('/')) {
      path.remove_suffix(1);
    }
    endpoint.path_prefix = std::string(path);
  }
  if (authority.find('@') != std::string_view::npos) {
    return InvalidArgument("server URL may not carry user information: \"" + std::string(url) +
                           "\"");
  }
  endpoint.host_header = std::string(authority);
  const std::string quoted = "\"" + std::string(url) + "\"";
  switch (SplitAuthority(authority, endpoint.tls ? "443" : "80", &endpoint.host, &endpoint.port)) {
    case AuthorityProblem::kNone:
      break;
    case AuthorityProblem::kBadIpv6:
      return InvalidArgument("bad IPv6 address in server URL " + quoted);
    case AuthorityProblem::kBadAddress:
      return InvalidArgument("bad server URL " + quoted);
    case AuthorityProblem::kNoHost:
      return InvalidArgument("server URL names no host: " + quoted);
    case AuthorityProblem::kBadPort:
      return InvalidArgument("bad port in server URL " + quoted);
  }
  return endpoint;
}

Result<std::string> ReadAll(BodyReader& body) {
  std::string all;
  while (true) {
    auto more = body.ReadSome(all);
    if (!more) {
      return more.status();
    }
    if (!*more) {
      return all;
    }
  }
}

class Transport::Impl {
 public:
  Impl(Endpoint endpoint, SslCtxPtr ctx, std::string server_name, bool verify, size_t max_idle,
       std::optional<Proxy> proxy)
      : endpoint_(std::move(endpoint)),
        ctx_(std::move(ctx)),
        server_name_(std::move(server_name)),
        verify_(verify),
        max_idle_(max_idle),
        proxy_(std::move(proxy)) {}

  // A connection to the server: straight, or through the proxy (a tunnel
  // for https, the proxy itself for http).
  Result<std::unique_ptr<Connection>> Dial(std::chrono::milliseconds timeout) {
    if (!proxy_) {
      auto conn = DialTcp(endpoint_.host, endpoint_.port, endpoint_.host_header, timeout);
      if (!conn || !endpoint_.tls) {
        return conn;
      }
      return Handshake((*conn)->ReleaseFd(), timeout);
    }
    auto conn = DialTcp(proxy_->host, proxy_->port, "proxy " + proxy_->url, timeout);
    if (!conn || !endpoint_.tls) {
      return conn;
    }
    Connection& tunnel = **conn;
    if (Status wrote = tunnel.WriteAll(
            FormatConnectRequest(endpoint_.host, endpoint_.port, proxy_->authorization));
        !wrote.ok()) {
      return Unavailable("proxy " + proxy_->url + ": " + wrote.message());
    }
    auto head = ReadHead(tunnel, "CONNECT");
    if (!head) {
      return Unavailable("proxy " + proxy_->url + ": no answer to CONNECT " +
                         endpoint_.host_header + ": " + head.status().message());
    }
    if (head->status < 200 || head->status > 299) {
      return Unavailable("proxy " + proxy_->url + " refused the tunnel to " +
                         endpoint_.host_header + ": HTTP " + std::to_string(head->status));
    }
    if (!tunnel.buffer().empty()) {
      return Unavailable("proxy " + proxy_->url + " sent data before the tunnel was used");
    }
    return Handshake(tunnel.ReleaseFd(), timeout);
  }

  // A plain TCP connection to host:port; `what` names it in messages.
  Result<std::unique_ptr<Connection>> DialTcp(const std::string& host, const std::string& port,
                                              const std::string& what,
                                              std::chrono::milliseconds timeout) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int resolved = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
    if (resolved != 0) {
      return Unavailable("cannot resolve " + host + ": " + gai_strerror(resolved));
    }
    std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> addresses(found, &freeaddrinfo);
    std::string failure = "no address";
    for (addrinfo* address = found; address != nullptr; address = address->ai_next) {
      const int fd = ::socket(address->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      if (fd < 0) {
        failure = ErrnoText(errno);
        continue;
      }
      if (Status connected = ConnectWithin(fd, *address, timeout); !connected.ok()) {
        failure = connected.message();
        ::close(fd);
        continue;
      }
      const int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      auto conn = std::make_unique<Connection>(fd, nullptr);
      conn->SetTimeout(timeout);
      return conn;
    }
    return Unavailable("cannot connect to " + what + ": " + failure);
  }

  Result<std::unique_ptr<Connection>> Handshake(int fd, std::chrono::milliseconds timeout) {
    ERR_clear_error();
    SSL* ssl = SSL_new(ctx_.get());
    if (ssl == nullptr) {
      ::close(fd);
      return Internal(ErrorText("cannot create a TLS session"));
    }
    auto conn = std::make_unique<Connection>(fd, ssl);  // owns both from here
    conn->SetTimeout(timeout);
    SSL_set_fd(ssl, fd);
    if (!IsAddress(server_name_)) {
      SSL_set_tlsext_host_name(ssl, server_name_.c_str());
    }
    if (verify_) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
      const int named = IsAddress(server_name_)
                            ? X509_VERIFY_PARAM_set1_ip_asc(param, server_name_.c_str())
                            : X509_VERIFY_PARAM_set1_host(param, server_name_.c_str(), 0);
      if (named != 1) {
        return Internal(ErrorText("cannot set the name to verify"));
      }
    }
    if (SSL_connect(ssl) != 1) {
      const long verified = SSL_get_verify_result(ssl);
      if (verify_ && verified != X509_V_OK) {
        ERR_clear_error();
        return Unavailable(
            "TLS handshake with " + endpoint_.host_header +
            ": server certificate not trusted: " + X509_verify_cert_error_string(verified));
      }
      const int saved = errno;
      std::string reason = ErrorText("TLS handshake with " + endpoint_.host_header);
      if (saved == EAGAIN || saved == EWOULDBLOCK) {
        reason += ": timed out";
      } else if (saved != 0) {
        reason += ": " + ErrnoText(saved);
      }
      return Unavailable(reason);
    }
    return conn;
  }

  static Status ConnectWithin(int fd, const addrinfo& address, std::chrono::milliseconds timeout) {
    if (::connect(fd, address.ai_addr, address.ai_addrlen) == 0) {
      return Status::Ok();
    }
    if (errno != EINPROGRESS) {
      return Unavailable(ErrnoText(errno));
    }
    pollfd p{fd, POLLOUT, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(timeout.count(), 1)));
    if (ready == 0) {
      return Unavailable("connect timed out");
    }
    int error = 0;
    socklen_t length = sizeof(error);
    if (ready < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0) {
      return Unavailable(ErrnoText(errno));
    }
    return error == 0 ? Status::Ok() : Unavailable(ErrnoText(error));
  }

  std::unique_ptr<Connection> TakeIdle() {
    const auto now = Clock::now();
    MutexLock lock(mu_);
    while (!idle_.empty()) {
      std::unique_ptr<Connection> conn = std::move(idle_.back());
      idle_.pop_back();
      if (now - conn->idle_since < kMaxIdle && conn->IdleAndOpen()) {
        return conn;
      }
    }
    return nullptr;
  }

  void PutIdle(std::unique_ptr<Connection> conn) {
    conn->idle_since = Clock::now();
    MutexLock lock(mu_);
    if (idle_.size() < max_idle_) {
      idle_.push_back(std::move(conn));
    }
  }

  // Writes the request on a kept-alive connection or a new one and reads the
  // response head. A kept-alive connection the server closed meanwhile is
  // replaced, and the request sent again when that cannot repeat its effect.
  Result<std::pair<std::unique_ptr<Connection>, ResponseHead>> Exchange(
      const Request& request, std::chrono::milliseconds timeout) {
    // Through a proxy, a request to an http server names the whole URL.
    const bool via_proxy = proxy_ && !endpoint_.tls;
    std::string target = endpoint_.path_prefix + std::string(request.target);
    if (via_proxy) {
      target = "http://" + endpoint_.host_header + target;
    }
    std::vector<Header> headers = request.headers;
    if (via_proxy && !proxy_->authorization.empty()) {
      headers.push_back({"Proxy-Authorization", proxy_->authorization});
    }
    const std::string bytes =
        FormatRequest(request.method, target, endpoint_.host_header, headers, request.body);
    for (int attempt = 0;; ++attempt) {
      std::unique_ptr<Connection> conn = attempt == 0 ? TakeIdle() : nullptr;
      const bool reused = conn != nullptr;
      if (!conn) {
        auto dialed = Dial(timeout);
        if (!dialed) {
          return dialed.status();
        }
        conn = std::move(*dialed);
      }
      conn->SetTimeout(timeout);
      if (Status wrote = conn->WriteAll(bytes); !wrote.ok()) {
        if (reused) {
          continue;  // the server closed it first; nothing of the request was read
        }
        return wrote;
      }
      auto head = ReadHead(*conn, request.method);
      if (!head) {
        if (reused && conn->buffer().empty() && IsIdempotent(request.method)) {
          continue;
        }
        return head.status();
      }
      return std::make_pair(std::move(conn), std::move(*head));
    }
  }

  static Result<ResponseHead> ReadHead(Connection& conn, std::string_view method) {
    std::string& buffer = conn.buffer();
    while (true) {
      const size_t length = HeadLength(buffer);
      if (length == 0) {
        if (buffer.size() > kMaxHeadBytes) {
          return Internal("response head larger than " + std::to_string(kMaxHeadBytes) + " bytes");
        }
        auto more = conn.ReadMore(buffer);
        if (!more) {
          return more.status();
        }
        if (!*more) {
          return Unavailable("the server closed the connection before answering");
        }
        continue;
      }
      auto head = ParseResponseHead(std::string_view(buffer).substr(0, length), method);
      buffer.erase(0, length);
      if (!head) {
        return head.status();
      }
      if (head->status >= 100 && head->status < 200 && head->status != 101) {
        continue;  // an interim answer (100 Continue); the real one follows
      }
      return head;
    }
  }

  Endpoint endpoint_;
  SslCtxPtr ctx_;  // shared by every connection; OpenSSL locks it itself
  std::string server_name_;
  bool verify_;
  size_t max_idle_;
  std::optional<Proxy> proxy_;
  Mutex mu_;
  std::vector<std::unique_ptr<Connection>> idle_ HJ_GUARDED_BY(mu_);
};

Result<std::unique_ptr<Transport>> Transport::Create(std::string_view server_url,
                                                     const TlsOptions& tls, size_t max_idle,
                                                     std::optional<Proxy> proxy) {
  auto endpoint = ParseServerUrl(server_url);
  if (!endpoint) {
    return endpoint.status();
  }
  // OpenSSL writes to the socket with write(2): a server that closed the
  // connection would kill the process with SIGPIPE instead of failing the write.
  static std::once_flag ignore_sigpipe;
  std::call_once(ignore_sigpipe, [] { std::signal(SIGPIPE, SIG_IGN); });
  SslCtxPtr ctx;
  if (endpoint->tls) {
    auto made = MakeSslContext(tls);
    if (!made) {
      return Status(
          made.status().code(),
          "unusable TLS material (CA, client certificate or key): " + made.status().message());
    }
    ctx = std::move(*made);
  }
  std::string server_name = tls.server_name.empty() ? endpoint->host : tls.server_name;
  return std::unique_ptr<Transport>(new Transport(
      std::make_unique<Impl>(std::move(*endpoint), std::move(ctx), std::move(server_name),
                             !tls.insecure_skip_verify, max_idle, std::move(proxy))));
}

Transport::Transport(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Transport::~Transport() = default;

Result<Response> Transport::RoundTrip(const Request& request, std::chrono::milliseconds timeout) {
  auto exchanged = impl_->Exchange(request, timeout);
  if (!exchanged) {
    return exchanged.status();
  }
  auto& [conn, head] = *exchanged;
  const bool keep_alive = head.keep_alive && head.framing != BodyFraming::kUntilClose;
  ConnectionBodyReader reader(std::move(conn), head);
  Response response;
  if (head.framing == BodyFraming::kContentLength) {
    response.body.reserve(static_cast<size_t>(std::min<uint64_t>(head.content_length, 1 << 26)));
  }
  while (true) {
    auto more = reader.ReadSome(response.body);
    if (!more) {
      return more.status();
    }
    if (!*more) {
      break;
    }
  }
  std::unique_ptr<Connection> done = reader.Release();
  if (keep_alive && done->buffer().empty()) {
    impl_->PutIdle(std::move(done));
  }
  response.head = std::move(head);
  return response;
}

Result<StreamedResponse> Transport::OpenStream(const Request& request,
                                               std::chrono::milliseconds head_timeout,
                                               std::chrono::milliseconds read_timeout) {
  auto exchanged = impl_->Exchange(request, head_timeout);
  if (!exchanged) {
    return exchanged.status();
  }
  auto& [conn, head] = *exchanged;
  conn->SetTimeout(read_timeout);
  StreamedResponse streamed;
  streamed.body = std::make_unique<ConnectionBodyReader>(std::move(conn), head);
  streamed.head = std::move(head);
  return streamed;
}

}  // namespace hybridjob::k8s::http
