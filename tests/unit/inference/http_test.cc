#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>

#include "inference/http_client.h"
#include "inference/http_parse.h"
#include "inference_test_server.h"

namespace tnk::inference {
namespace {

using testing::TestHttpServer;
using namespace std::chrono_literals;

// Feeds `raw` to a ResponseReader `step` bytes at a time, then signals the end of the connection.
Result<HttpResponse> read_all(const std::string& raw, size_t step) {
  ResponseReader reader("GET http://t/");
  for (size_t off = 0; off < raw.size() && !reader.complete(); off += step) {
    TNK_RETURN_IF_ERROR(reader.feed(std::string_view(raw).substr(off, step)));
  }
  if (!reader.complete()) TNK_RETURN_IF_ERROR(reader.finish_at_eof());
  return reader.take();
}

TEST(ResponseReader, ContentLengthAtAnySplit) {
  std::string raw = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}";
  for (size_t step : {1u, 2u, 5u, 1000u}) {
    auto r = read_all(raw, step);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->content_type, "application/json");
    EXPECT_EQ(r->body, "{\"a\":1}");
  }
}

TEST(ResponseReader, ChunkedWithExtensionsAndTrailers) {
  std::string raw =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4;ext=1\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\nX-Trailer: 1\r\n\r\n";
  for (size_t step : {1u, 3u, 1000u}) {
    auto r = read_all(raw, step);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->body, "Wikipedia in\r\n\r\nchunks.");
  }
}

TEST(ResponseReader, ReadUntilCloseAndSkips100Continue) {
  auto r = read_all("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 200 OK\nContent-Type: text/plain\n\nhello", 4);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello");
}

TEST(ResponseReader, NoBodyFor204) {
  auto r = read_all("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", 100);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->body, "");
}

TEST(ResponseReader, BadAnswersAreMarked) {
  for (const char* raw : {"SSH-2.0-OpenSSH_9.2\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcdef\r\n",
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n",
                          "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", "HTTP/1.1 200 OK\r\nno colon\r\n\r\n"}) {
    auto r = read_all(raw, 7);
    ASSERT_FALSE(r.ok()) << raw;
    EXPECT_TRUE(is_bad_answer(r.error())) << r.error().message;
    EXPECT_NE(r.error().message.find("GET http://t/"), std::string::npos) << r.error().message;
  }
}

TEST(ResponseReader, ClosedBeforeAnyAnswerIsNotABadAnswer) {
  auto r = read_all("", 1);
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(is_bad_answer(r.error()));
  EXPECT_EQ(r.error().sys_errno, ECONNRESET);
}

TEST(ResponseReader, BodyCappedAt4MiB) {
  std::string big(kMaxBodyBytes + 1, 'x');
  auto by_length = read_all("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(big.size()) + "\r\n\r\n", 100);
  ASSERT_FALSE(by_length.ok());
  EXPECT_EQ(by_length.error().sys_errno, EFBIG);
  auto by_close = read_all("HTTP/1.1 200 OK\r\n\r\n" + big, 65536);
  ASSERT_FALSE(by_close.ok());
  EXPECT_EQ(by_close.error().sys_errno, EFBIG);
  auto by_chunk = read_all("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n400001\r\n", 100);
  ASSERT_FALSE(by_chunk.ok());
  EXPECT_EQ(by_chunk.error().sys_errno, EFBIG);
  auto exactly = read_all("HTTP/1.1 200 OK\r\n\r\n" + std::string(kMaxBodyBytes, 'y'), 65536);
  ASSERT_TRUE(exactly.ok());
  EXPECT_EQ(exactly->body.size(), kMaxBodyBytes);
}

TEST(HttpGet, SendsOneCloseRequestAndReadsContentLength) {
  auto server = TestHttpServer::start(TestHttpServer::json_response("{\"ok\":true}"));
  ASSERT_NE(server, nullptr);
  auto r = http_get(server->base("/v1/models"), 2s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "{\"ok\":true}");
  std::string request = server->last_request();
  EXPECT_EQ(request.rfind("GET /v1/models HTTP/1.1\r\n", 0), 0u) << request;
  EXPECT_NE(request.find("\r\nHost: 127.0.0.1:" + std::to_string(server->port()) + "\r\n"), std::string::npos);
  EXPECT_NE(request.find("\r\nConnection: close\r\n"), std::string::npos);
}

TEST(HttpGet, ChunkedResponseSentInPieces) {
  auto server = TestHttpServer::start(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
      TestHttpServer::Mode::kRespond, AF_INET, 3);
  ASSERT_NE(server, nullptr);
  auto r = http_get(server->base("/"), 2s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->body, "hello world");
}

TEST(HttpGet, ReadUntilClose) {
  auto server = TestHttpServer::start("HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil close");
  ASSERT_NE(server, nullptr);
  auto r = http_get(server->base("/"), 2s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->content_type, "text/plain");
  EXPECT_EQ(r->body, "until close");
}

TEST(HttpGet, HostnameViaGetaddrinfo) {
  auto server = TestHttpServer::start(TestHttpServer::json_response("{}"));
  ASSERT_NE(server, nullptr);
  auto r = http_get("http://localhost:" + std::to_string(server->port()) + "/x", 2s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NE(server->last_request().find("\r\nHost: localhost:"), std::string::npos);
}

TEST(HttpGet, Ipv6Literal) {
  auto server = TestHttpServer::start(TestHttpServer::json_response("{}"), TestHttpServer::Mode::kRespond, AF_INET6);
  if (server == nullptr) GTEST_SKIP() << "no IPv6 loopback on this machine";
  auto r = http_get(server->base("/v1/models"), 2s);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_NE(server->last_request().find("\r\nHost: [::1]:"), std::string::npos);
}

TEST(HttpGet, SilentServerTimesOutOnTime) {
  auto server = TestHttpServer::start("", TestHttpServer::Mode::kSilent);
  ASSERT_NE(server, nullptr);
  auto start = std::chrono::steady_clock::now();
  auto r = http_get(server->base("/v1/models"), 1s);
  auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().sys_errno, ETIMEDOUT);
  EXPECT_EQ(r.error().message, "GET " + server->base("/v1/models") + ": no answer within 1 s");
  EXPECT_GE(elapsed, 900ms);
  EXPECT_LT(elapsed, 1500ms);  // a correctness bound: the timeout covers the whole exchange
}

TEST(HttpGet, ConnectionRefused) {
  std::string url = "http://127.0.0.1:" + std::to_string(testing::closed_port()) + "/v1/models";
  auto r = http_get(url, 1s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().sys_errno, ECONNREFUSED);
  EXPECT_FALSE(is_bad_answer(r.error()));
  EXPECT_NE(r.error().message.find("GET " + url + ": cannot connect to 127.0.0.1:"), std::string::npos)
      << r.error().message;
}

TEST(HttpGet, HttpsIsRefusedClearly) {
  auto r = http_get("https://127.0.0.1:1/v1/models", 1s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "GET https://127.0.0.1:1/v1/models: https endpoints cannot be probed yet");
}

TEST(FormatTimeout, SecondsOrMilliseconds) {
  EXPECT_EQ(format_timeout(1s), "1 s");
  EXPECT_EQ(format_timeout(1500ms), "1500 ms");
  EXPECT_EQ(format_timeout(0ms), "0 ms");
}

}  // namespace
}  // namespace tnk::inference
