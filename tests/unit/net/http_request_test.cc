#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "net/http_request.h"

namespace tnk::net {
namespace {

// Parses a head that must be complete and valid.
RequestHead parsed(const std::string& text) {
  auto r = parse_request_head(text);
  EXPECT_TRUE(r.ok()) << r.error().message;
  if (!r.ok() || !r->has_value()) {
    ADD_FAILURE() << "incomplete: " << text;
    return {};
  }
  return **r;
}

// The parse error's message for a head that must be refused.
std::string refused(const std::string& text, int want_status = 400) {
  auto r = parse_request_head(text);
  EXPECT_FALSE(r.ok()) << "accepted: " << text;
  if (r.ok()) return {};
  EXPECT_EQ(http_status_for(r.error()), want_status) << r.error().message;
  return r.error().message;
}

TEST(NetHttpRequest, Connect) {
  RequestHead h = parsed("CONNECT Example.ORG:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\nTLS...");
  EXPECT_TRUE(h.is_connect);
  EXPECT_EQ(h.method, "CONNECT");
  EXPECT_EQ(h.target, "Example.ORG:443");
  EXPECT_EQ(h.host, "example.org");
  EXPECT_EQ(h.port, 443);
  EXPECT_EQ(h.version, "HTTP/1.1");
  EXPECT_EQ(h.path, "");
  EXPECT_EQ(h.head_bytes, std::string("CONNECT Example.ORG:443 HTTP/1.1\r\nHost: example.org:443\r\n\r\n").size());
}

TEST(NetHttpRequest, ConnectWithoutHostHeaderIsFine) {
  // Python's http.client sends "CONNECT host:port HTTP/1.0" with no Host.
  RequestHead h = parsed("CONNECT pypi.org:443 HTTP/1.0\r\n\r\n");
  EXPECT_EQ(h.host, "pypi.org");
  EXPECT_EQ(h.port, 443);
}

TEST(NetHttpRequest, ConnectNeedsAPort) {
  EXPECT_NE(refused("CONNECT example.org HTTP/1.1\r\nHost: x\r\n\r\n").find("host:port"), std::string::npos);
  refused("CONNECT example.org:0 HTTP/1.1\r\n\r\n");
  refused("CONNECT example.org:65536 HTTP/1.1\r\n\r\n");
  refused("CONNECT example.org:44x HTTP/1.1\r\n\r\n");
  refused("CONNECT example.org: HTTP/1.1\r\n\r\n");
}

TEST(NetHttpRequest, AbsoluteFormWithPort) {
  RequestHead h =
      parsed("GET http://deb.example:8080/a/b?c=d HTTP/1.1\r\nHost: deb.example:8080\r\nAccept: */*\r\n\r\n");
  EXPECT_FALSE(h.is_connect);
  EXPECT_EQ(h.host, "deb.example");
  EXPECT_EQ(h.port, 8080);
  EXPECT_EQ(h.path, "/a/b?c=d");
  ASSERT_EQ(h.headers.size(), 2u);
  EXPECT_EQ(h.headers[1].first, "Accept");
  EXPECT_EQ(h.headers[1].second, "*/*");
}

TEST(NetHttpRequest, AbsoluteFormWithoutPortOrPath) {
  RequestHead h = parsed("GET HTTP://Example.org HTTP/1.1\r\nHost: example.org\r\n\r\n");
  EXPECT_EQ(h.host, "example.org");
  EXPECT_EQ(h.port, 80);
  EXPECT_EQ(h.path, "/");
  EXPECT_EQ(parsed("GET http://example.org?q=1 HTTP/1.1\r\nHost: e\r\n\r\n").path, "/?q=1");
}

TEST(NetHttpRequest, Ipv6Literal) {
  RequestHead h = parsed("CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n");
  EXPECT_EQ(h.host, "::1");
  EXPECT_EQ(h.port, 443);
  RequestHead g = parsed("GET http://[2001:DB8::1]/x HTTP/1.1\r\nHost: h\r\n\r\n");
  EXPECT_EQ(g.host, "2001:db8::1");
  EXPECT_EQ(g.port, 80);
  refused("CONNECT [::1:443 HTTP/1.1\r\n\r\n");
  refused("CONNECT [not-v6]:443 HTTP/1.1\r\n\r\n");
  refused("CONNECT [::1]x:443 HTTP/1.1\r\n\r\n");
  refused("CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n");
}

TEST(NetHttpRequest, LowercaseMethodIsRefused) {
  EXPECT_NE(refused("connect example.org:443 HTTP/1.1\r\nHost: example.org\r\n\r\n").find("not upper-case"),
            std::string::npos);
  refused("get http://example.org/ HTTP/1.1\r\nHost: example.org\r\n\r\n");
}

TEST(NetHttpRequest, MissingHost) {
  EXPECT_NE(refused("GET http://example.org/ HTTP/1.1\r\nAccept: */*\r\n\r\n").find("without Host"), std::string::npos);
  EXPECT_EQ(parsed("GET http://example.org/ HTTP/1.0\r\n\r\n").host, "example.org");  // 1.0 has no Host rule
  refused("GET http://example.org/ HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n");
}

TEST(NetHttpRequest, IncompleteHeadNeedsMoreBytes) {
  for (std::string part : {"", "CONN", "CONNECT example.org:443 HTTP/1.1\r\n", "CONNECT example.org:443 HTTP/1.1\r\nHo",
                           "CONNECT example.org:443 HTTP/1.1\r\n\r"}) {
    auto r = parse_request_head(part);
    ASSERT_TRUE(r.ok()) << part << ": " << r.error().message;
    EXPECT_FALSE(r->has_value()) << part;
  }
}

TEST(NetHttpRequest, OversizeHead) {
  std::string big = "GET http://example.org/ HTTP/1.1\r\nHost: example.org\r\nX-Pad: " + std::string(17 * 1024, 'a');
  EXPECT_NE(refused(big, 431).find("16 KiB"), std::string::npos);  // before the end of the head arrives
  refused(big + "\r\n\r\n", 431);
  std::string fits = "GET http://e/ HTTP/1.1\r\nHost: e\r\nX: " + std::string(15 * 1024, 'a') + "\r\n\r\n";
  EXPECT_EQ(parsed(fits).host, "e");
}

TEST(NetHttpRequest, GarbageIsRefusedEarly) {
  refused(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11));  // a TLS ClientHello, no CRLF yet
  refused("hello there\r\n");
  refused("GET\r\n\r\n");
  refused("GET  http://e/ HTTP/1.1\r\nHost: e\r\n\r\n");
  refused("GET http://e/ HTTP/2.0\r\nHost: e\r\n\r\n");
  refused("GET http://e/ HTTP/1.1\nHost: e\n\n");
  refused("GET http://e/ HTTP/1.1\r\nHost: e\rX: y\r\n\r\n");
  refused("\r\n\r\n");
  refused(std::string("GET http://e/\0 HTTP/1.1\r\n\r\n", 27));
  refused("GET http://e/ HTTP/1.1\r\nHost: e\r\nBad Name: v\r\n\r\n");
  refused("GET http://e/ HTTP/1.1\r\nHost: e\r\nNoColon\r\n\r\n");
  refused("GET http://e/\xc3\xa9 HTTP/1.1\r\nHost: e\r\n\r\n");
}

TEST(NetHttpRequest, HeaderFoldingIsRefused) {
  EXPECT_NE(refused("GET http://e/ HTTP/1.1\r\nHost: e\r\nX-A: one\r\n two\r\n\r\n").find("folding"),
            std::string::npos);
  refused("GET http://e/ HTTP/1.1\r\nHost: e\r\nX-A: one\r\n\ttwo\r\n\r\n");
}

TEST(NetHttpRequest, OnlyAbsoluteHttpTargets) {
  EXPECT_NE(refused("GET /index.html HTTP/1.1\r\nHost: e\r\n\r\n").find("absolute URL"), std::string::npos);
  EXPECT_NE(refused("GET https://e/ HTTP/1.1\r\nHost: e\r\n\r\n").find("CONNECT"), std::string::npos);
  refused("GET ftp://e/ HTTP/1.1\r\nHost: e\r\n\r\n");
  refused("OPTIONS * HTTP/1.1\r\nHost: e\r\n\r\n");
  refused("GET http://user:pw@e/ HTTP/1.1\r\nHost: e\r\n\r\n");
  refused("GET http://e/#frag HTTP/1.1\r\nHost: e\r\n\r\n");
  refused("GET http:///x HTTP/1.1\r\nHost: e\r\n\r\n");
  refused("GET http://e%2e/ HTTP/1.1\r\nHost: e\r\n\r\n");
}

TEST(NetHttpRequest, OriginFormHeadForUpstream) {
  RequestHead h = parsed(
      "POST http://api.example:8080/v1?x=1 HTTP/1.1\r\nHost: evil.example\r\nProxy-Connection: keep-alive\r\n"
      "Connection: keep-alive, X-Hop, Content-Length\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nProxy-Authorization: Basic x\r\n"
      "Content-Length: 5\r\nUser-Agent: t\r\n\r\nhello");
  EXPECT_EQ(origin_form_head(h),
            "POST /v1?x=1 HTTP/1.1\r\nHost: api.example:8080\r\nContent-Length: 5\r\nUser-Agent: t\r\n"
            "Connection: close\r\n\r\n");
  RequestHead v6 = parsed("GET http://[::1]/ HTTP/1.0\r\n\r\n");
  EXPECT_EQ(origin_form_head(v6), "GET / HTTP/1.0\r\nHost: [::1]\r\nConnection: close\r\n\r\n");
}

}  // namespace
}  // namespace tnk::net
