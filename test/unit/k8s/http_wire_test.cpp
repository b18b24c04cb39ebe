// The HTTP/1.1 framing the API client reads and writes, byte by byte.
#include <gtest/gtest.h>

#include <hybridjob/k8s/http_transport.h>
#include <hybridjob/k8s/http_wire.h>

namespace hybridjob::k8s::http {
namespace {

TEST(HttpWireTest, HeadLengthWaitsForTheBlankLine) {
  EXPECT_EQ(HeadLength("HTTP/1.1 200 OK\r\nA: b\r\n"), 0u);
  EXPECT_EQ(HeadLength("HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody"), 25u);
}

TEST(HttpWireTest, ParsesStatusHeadersAndContentLength) {
  auto head = ParseResponseHead(
      "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 12\r\n"
      "warning: 299 - \"a\"\r\nWarning: 299 - \"b\"\r\nRetry-After:  3 \r\n\r\n",
      "POST");
  ASSERT_TRUE(head.ok()) << head.status().ToString();
  EXPECT_EQ(head->status, 201);
  EXPECT_EQ(head->framing, BodyFraming::kContentLength);
  EXPECT_EQ(head->content_length, 12u);
  EXPECT_TRUE(head->keep_alive);
  EXPECT_EQ(head->Get("content-type"), "application/json");
  EXPECT_EQ(head->Get("WARNING"), "299 - \"a\", 299 - \"b\"");
  EXPECT_EQ(head->Get("Retry-After"), "3");
  EXPECT_FALSE(head->Has("Location"));
  EXPECT_EQ(head->Get("Location"), "");
}

TEST(HttpWireTest, FramingFollowsTheMethodStatusAndHeaders) {
  auto chunked = ParseResponseHead("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "GET");
  ASSERT_TRUE(chunked.ok());
  EXPECT_EQ(chunked->framing, BodyFraming::kChunked);

  auto until_close = ParseResponseHead("HTTP/1.1 200 OK\r\n\r\n", "GET");
  ASSERT_TRUE(until_close.ok());
  EXPECT_EQ(until_close->framing, BodyFraming::kUntilClose);
  EXPECT_FALSE(until_close->keep_alive);

  auto no_content = ParseResponseHead("HTTP/1.1 204 No Content\r\n\r\n", "DELETE");
  ASSERT_TRUE(no_content.ok());
  EXPECT_EQ(no_content->framing, BodyFraming::kNone);

  auto head = ParseResponseHead("HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", "HEAD");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->framing, BodyFraming::kNone);

  // A proxy's 200 to CONNECT opens the tunnel (tinyproxy's wording); its
  // refusal has a body like any answer.
  auto tunnel = ParseResponseHead(
      "HTTP/1.0 200 Connection established\r\nProxy-agent: tinyproxy/1.11.1\r\n\r\n", "CONNECT");
  ASSERT_TRUE(tunnel.ok());
  EXPECT_EQ(tunnel->framing, BodyFraming::kNone);
  auto refused = ParseResponseHead(
      "HTTP/1.0 407 Proxy Authentication Required\r\nContent-Length: 12\r\n\r\n", "CONNECT");
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->framing, BodyFraming::kContentLength);

  auto closing =
      ParseResponseHead("HTTP/1.1 200 OK\r\nConnection: Close\r\nContent-Length: 0\r\n\r\n", "GET");
  ASSERT_TRUE(closing.ok());
  EXPECT_FALSE(closing->keep_alive);

  auto http10 = ParseResponseHead("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", "GET");
  ASSERT_TRUE(http10.ok());
  EXPECT_FALSE(http10->keep_alive);
  auto http10_kept = ParseResponseHead(
      "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n", "GET");
  ASSERT_TRUE(http10_kept.ok());
  EXPECT_TRUE(http10_kept->keep_alive);
}

TEST(HttpWireTest, AuthoritiesSplitIntoHostAndPort) {
  std::string host;
  std::string port;
  EXPECT_EQ(SplitAuthority("api.example:6443", "443", &host, &port), AuthorityProblem::kNone);
  EXPECT_EQ(host, "api.example");
  EXPECT_EQ(port, "6443");
  EXPECT_EQ(SplitAuthority("[fd00::1]", "80", &host, &port), AuthorityProblem::kNone);
  EXPECT_EQ(host, "fd00::1");
  EXPECT_EQ(port, "80");
  EXPECT_EQ(SplitAuthority("[fd00::1", "80", &host, &port), AuthorityProblem::kBadIpv6);
  EXPECT_EQ(SplitAuthority("[fd00::1]x", "80", &host, &port), AuthorityProblem::kBadAddress);
  EXPECT_EQ(SplitAuthority(":6443", "80", &host, &port), AuthorityProblem::kNoHost);
  EXPECT_EQ(SplitAuthority("api:0", "80", &host, &port), AuthorityProblem::kBadPort);
  EXPECT_EQ(SplitAuthority("api:65536", "80", &host, &port), AuthorityProblem::kBadPort);
  EXPECT_EQ(SplitAuthority("api:12x", "80", &host, &port), AuthorityProblem::kBadPort);
}

TEST(HttpWireTest, MalformedHeadsAreErrorsThatQuoteThem) {
  for (const char* bad :
       {"HTTP/2 200 OK\r\n\r\n", "HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 200OK\r\n\r\n",
        "garbage\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        "HTTP/1.1 200 OK\r\n: empty name\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 12a\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n"}) {
    auto head = ParseResponseHead(bad, "GET");
    EXPECT_FALSE(head.ok()) << bad;
  }
  auto status = ParseResponseHead("HTTP/1.1 2x0 OK\r\n\r\n", "GET").status();
  EXPECT_NE(status.message().find("2x0"), std::string::npos) << status.message();
}

TEST(HttpWireTest, FormatsARequestWithLengthAndHeaders) {
  EXPECT_EQ(
      FormatRequest("POST", "/api/v1/namespaces/a/pods?x=1", "127.0.0.1:6443",
                    {{"Accept", "application/json"}, {"Content-Type", "application/json"}}, "{}"),
      "POST /api/v1/namespaces/a/pods?x=1 HTTP/1.1\r\nHost: 127.0.0.1:6443\r\n"
      "Accept: application/json\r\nContent-Type: application/json\r\n"
      "Content-Length: 2\r\n\r\n{}");
  EXPECT_EQ(FormatRequest("GET", "/readyz", "h", {}, ""),
            "GET /readyz HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(FormatRequest("PUT", "/x", "h", {}, ""),
            "PUT /x HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n");
}

constexpr std::string_view kChunked =
    "5;name=value\r\nhello\r\n1\r\n \r\n6\r\nworld!\r\n0\r\nTrailer: x\r\n\r\nNEXT";

TEST(HttpWireTest, ChunkedBodyDecodesWholeOrByteByByte) {
  ChunkedDecoder whole;
  std::string out;
  auto consumed = whole.Feed(kChunked, out);
  ASSERT_TRUE(consumed.ok()) << consumed.status().ToString();
  EXPECT_TRUE(whole.done());
  EXPECT_EQ(out, "hello world!");
  EXPECT_EQ(kChunked.substr(*consumed), "NEXT");  // the next response's bytes stay unread

  ChunkedDecoder bytewise;
  std::string pieces;
  size_t total = 0;
  for (size_t i = 0; i < kChunked.size() && !bytewise.done(); ++i) {
    auto one = bytewise.Feed(kChunked.substr(i, 1), pieces);
    ASSERT_TRUE(one.ok()) << "at byte " << i << ": " << one.status().ToString();
    total += *one;
  }
  EXPECT_TRUE(bytewise.done());
  EXPECT_EQ(pieces, "hello world!");
  EXPECT_EQ(total, *consumed);
}

TEST(HttpWireTest, ChunkedBodyWithoutTrailerEnds) {
  ChunkedDecoder decoder;
  std::string out;
  auto consumed = decoder.Feed("3\r\nabc\r\n0\r\n\r\n", out);
  ASSERT_TRUE(consumed.ok());
  EXPECT_TRUE(decoder.done());
  EXPECT_EQ(out, "abc");
}

TEST(HttpWireTest, MalformedChunksAreErrors) {
  for (const char* bad :
       {"x\r\n", "3\r\nabcd\r\n", "3\nabc", "ffffffffffffffffff\r\n", "3\r\nabc\rX"}) {
    ChunkedDecoder decoder;
    std::string out;
    EXPECT_FALSE(decoder.Feed(bad, out).ok()) << bad;
  }
}

TEST(HttpWireTest, ServerUrlsGivePortHostHeaderAndPrefix) {
  auto plain = ParseServerUrl("https://10.0.0.1:6443");
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE(plain->tls);
  EXPECT_EQ(plain->host, "10.0.0.1");
  EXPECT_EQ(plain->port, "6443");
  EXPECT_EQ(plain->host_header, "10.0.0.1:6443");
  EXPECT_EQ(plain->path_prefix, "");

  auto defaulted = ParseServerUrl("https://api.example.com/k8s/clusters/c1/");
  ASSERT_TRUE(defaulted.ok());
  EXPECT_EQ(defaulted->host, "api.example.com");
  EXPECT_EQ(defaulted->port, "443");
  EXPECT_EQ(defaulted->host_header, "api.example.com");
  EXPECT_EQ(defaulted->path_prefix, "/k8s/clusters/c1");

  auto v6 = ParseServerUrl("http://[::1]:8080");
  ASSERT_TRUE(v6.ok());
  EXPECT_FALSE(v6->tls);
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, "8080");
  EXPECT_EQ(v6->host_header, "[::1]:8080");

  for (const char* bad :
       {"ftp://host", "https://", "https://host:0", "https://host:99999", "https://host:port",
        "https://host?x=1", "https://user@host", "https://[::1", "host:6443"}) {
    EXPECT_FALSE(ParseServerUrl(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace hybridjob::k8s::http
