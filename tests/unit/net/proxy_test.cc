#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "net/address_check.h"
#include "net/policy_channel.h"
#include "net/proxy.h"
#include "net/proxy_credential.h"
#include "net_test_util.h"
#include "tls_test_util.h"

namespace tnk::net {
namespace {

using namespace std::chrono_literals;
using testing::connect_loopback;
using testing::count_open_fds;
using testing::EchoServer;
using testing::listen_loopback;
using testing::port_of;
using testing::read_until;
using testing::read_until_eof;
using testing::send_text;
using testing::Serving;

uint16_t port_in(const sockaddr_storage& ss) {
  if (ss.ss_family == AF_INET6) {
    sockaddr_in6 v6;
    std::memcpy(&v6, &ss, sizeof v6);
    return ntohs(v6.sin6_port);
  }
  if (ss.ss_family != AF_INET) return 0;
  sockaddr_in v4;
  std::memcpy(&v4, &ss, sizeof v4);
  return ntohs(v4.sin_port);
}

// Lets exactly 127.0.0.1:<port> (and [::1]:<port>, where `localhost` has both) through (one test
// server); everything else gets the real check.
AddressCheck allow_test_server(uint16_t port) {
  return [port](const sockaddr_storage& ss) -> std::optional<std::string> {
    std::string address = address_to_string(ss);
    if ((address == "127.0.0.1" || address == "::1") && port_in(ss) == port) return std::nullopt;
    return internal_address_reason(ss);
  };
}

ProxyConfig allowing(std::vector<std::string> allow, std::string list_name = "test") {
  ProxyConfig config;
  config.allow = std::move(allow);
  config.list_name = std::move(list_name);
  return config;
}

// Allows `host` on the echo server's port, and lets that port through the address check.
ProxyConfig allowing_echo(const EchoServer& echo, const std::string& host) {
  ProxyConfig config = allowing({host + ":" + std::to_string(echo.port())});
  config.address_check = allow_test_server(echo.port());
  return config;
}

// A proxy on a loopback listener that records its events.
class ProxyUnderTest {
 public:
  explicit ProxyUnderTest(ProxyConfig config) : listener_(listen_loopback()), config_(std::move(config)) {
    config_.on_event = [this](const NetEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(e);
    };
    serving_ = std::make_unique<Serving>([this](int stop) { return serve_proxy(listener_.get(), config_, stop); });
  }
  uint16_t port() const { return port_of(listener_.get()); }
  Status stop() { return serving_->stop(); }

  // Sends `request` on a new connection (then ends the stream when `half_close`) and returns
  // everything the proxy answers until it closes.
  std::string ask(const std::string& request, bool half_close = false) {
    UniqueFd client = connect_loopback(port());
    send_text(client.get(), request);
    if (half_close) ::shutdown(client.get(), SHUT_WR);
    return read_until_eof(client.get());
  }

  // Waits a little for the n-th event (allowed connections report when they end).
  std::vector<NetEvent> events(size_t at_least = 1) {
    for (int i = 0; i < 200; ++i) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (events_.size() >= at_least) return events_;
      }
      std::this_thread::sleep_for(10ms);
    }
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  UniqueFd listener_;
  ProxyConfig config_;
  std::mutex mu_;
  std::vector<NetEvent> events_;
  std::unique_ptr<Serving> serving_;
};

std::string answer_body(const std::string& answer) {
  size_t at = answer.find("\r\n\r\n");
  return at == std::string::npos ? "" : answer.substr(at + 4);
}

std::string status_line(const std::string& answer) { return answer.substr(0, answer.find("\r\n")); }

TEST(NetProxy, HostNotOnTheListIs403) {
  ProxyUnderTest proxy(allowing({"example.org", "*.example.net"}, "provision"));
  std::string answer = proxy.ask("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
  EXPECT_EQ(status_line(answer), "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(answer_body(answer), "tnk: example.com is not in this sandbox's allow-list (provision)\n");
  EXPECT_NE(answer.find("Content-Type: text/plain"), std::string::npos);
  auto events = proxy.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0].allowed);
  EXPECT_EQ(events[0].host, "example.com");
  EXPECT_EQ(events[0].port, 443);
  EXPECT_EQ(events[0].reason, "not in allow-list");
  EXPECT_EQ(events[0].rule, "");
}

TEST(NetProxy, PortNotOnTheListIs403NamingThePort) {
  ProxyUnderTest proxy(allowing({"example.org"}));
  std::string answer = proxy.ask("GET http://example.org:8080/ HTTP/1.1\r\nHost: example.org\r\n\r\n");
  EXPECT_EQ(answer_body(answer), "tnk: example.org:8080 is not in this sandbox's allow-list (test)\n");
  EXPECT_EQ(proxy.events().at(0).reason, "port not in allow-list");
}

// DNS rebinding: a listed name that resolves to the host itself is refused, although a server answers there.
TEST(NetProxy, ListedNameResolvingToLoopbackIsRefused) {
  EchoServer echo;
  std::string port = std::to_string(echo.port());
  ProxyUnderTest proxy(allowing({"localhost:" + port, "localhost"}));
  for (const std::string& request :
       std::vector<std::string>{"CONNECT localhost:" + port + " HTTP/1.1\r\n\r\n",
                                "GET http://LOCALHOST/ HTTP/1.1\r\nHost: localhost\r\n\r\n"}) {
    std::string answer = proxy.ask(request);
    EXPECT_EQ(status_line(answer), "HTTP/1.1 403 Forbidden") << request;
    EXPECT_TRUE(answer_body(answer) == "tnk: localhost resolves to 127.0.0.1, a host-internal address (loopback)\n" ||
                answer_body(answer) == "tnk: localhost. resolves to ::1, a host-internal address (loopback)\n" ||
                answer_body(answer) == "tnk: localhost resolves to ::1, a host-internal address (loopback)\n" ||
                answer_body(answer) == "tnk: localhost. resolves to 127.0.0.1, a host-internal address (loopback)\n")
        << answer_body(answer);
  }
  auto events = proxy.events(2);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_FALSE(events[0].allowed);
  EXPECT_EQ(events[0].rule, "localhost:" + port);
  EXPECT_EQ(events[0].reason, "host-internal address (loopback)");
  EXPECT_EQ(echo.accepted(), 0);
}

TEST(NetProxy, InternalIpLiteralsAreRefused) {
  ProxyUnderTest proxy(
      allowing({"127.0.0.1", "[::1]", "169.254.169.254", "10.1.2.3", "[::ffff:127.0.0.1]", "0.0.0.0", "127.1"}));
  struct Case {
    std::string target, address, kind;
  };
  for (const Case& c : std::vector<Case>{{"127.0.0.1:443", "127.0.0.1", "loopback"},
                                         {"[::1]:443", "::1", "loopback"},
                                         {"169.254.169.254:80", "169.254.169.254", "link-local"},
                                         {"10.1.2.3:443", "10.1.2.3", "private"},
                                         {"[::ffff:127.0.0.1]:443", "::ffff:127.0.0.1", "loopback (IPv4-mapped)"},
                                         {"0.0.0.0:80", "0.0.0.0", "unspecified"},
                                         {"127.1:443", "127.0.0.1", "loopback"}}) {
    std::string answer = proxy.ask("CONNECT " + c.target + " HTTP/1.1\r\n\r\n");
    EXPECT_EQ(status_line(answer), "HTTP/1.1 403 Forbidden") << c.target;
    EXPECT_NE(answer_body(answer).find(" resolves to " + c.address + ", a host-internal address"), std::string::npos)
        << answer_body(answer);
  }
  for (const NetEvent& e : proxy.events(7)) EXPECT_NE(e.reason.find("host-internal address ("), std::string::npos);
}

// The pair of the test above: the same loopback server is reachable once the check lets it through.
TEST(NetProxy, ConnectTunnelRelaysAndCountsBytes) {
  EchoServer echo;
  std::string port = std::to_string(echo.port());
  ProxyConfig config = allowing({"127.0.0.1:" + port});
  config.address_check = allow_test_server(echo.port());
  ProxyUnderTest proxy(std::move(config));
  UniqueFd client = connect_loopback(proxy.port());
  ASSERT_TRUE(send_text(client.get(), "CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\nHost: x\r\n\r\nearly-"));
  // The echo of "early-" may arrive in the same read as the proxy's answer.
  std::string answer = read_until(client.get(), "\r\n\r\n");
  ASSERT_TRUE(send_text(client.get(), "bytes"));
  ::shutdown(client.get(), SHUT_WR);
  answer += read_until_eof(client.get());
  EXPECT_EQ(answer, "HTTP/1.1 200 Connection established\r\n\r\nearly-bytes");
  auto events = proxy.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].allowed);
  EXPECT_EQ(events[0].host, "127.0.0.1");
  EXPECT_EQ(events[0].address, "127.0.0.1");
  EXPECT_EQ(events[0].rule, "127.0.0.1:" + port);
  EXPECT_EQ(events[0].reason, "closed");
  EXPECT_EQ(events[0].bytes_up, 11u);
  EXPECT_EQ(events[0].bytes_down, 11u);
}

// `open`: any name is let through to the address check, which still refuses internal ranges.
TEST(NetProxy, OpenAllowsAnyNameButStillChecksAddresses) {
  EchoServer echo;
  std::string port = std::to_string(echo.port());
  ProxyConfig config;
  config.allow_any = true;
  config.open_ports = {echo.port()};
  config.address_check = allow_test_server(echo.port());
  ProxyUnderTest proxy(std::move(config));
  UniqueFd client = connect_loopback(proxy.port());
  ASSERT_TRUE(send_text(client.get(), "CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\n\r\n"));
  EXPECT_EQ(read_until(client.get(), "\r\n\r\n"), "HTTP/1.1 200 Connection established\r\n\r\n");
  ::shutdown(client.get(), SHUT_WR);
  EXPECT_EQ(read_until_eof(client.get()), "");
  std::string refused = proxy.ask("CONNECT 10.1.2.3:443 HTTP/1.1\r\n\r\n");
  EXPECT_EQ(status_line(refused), "HTTP/1.1 403 Forbidden");
  auto events = proxy.events(2);
  ASSERT_EQ(events.size(), 2u);
  const NetEvent& allowed = events[0].allowed ? events[0] : events[1];
  const NetEvent& denied = events[0].allowed ? events[1] : events[0];
  EXPECT_EQ(allowed.rule, "open");
  EXPECT_FALSE(denied.allowed);
  EXPECT_EQ(denied.reason, "host-internal address (private)");
}

// `open` means ports 80 and 443, plus network.open_ports: other ports are refused before any lookup.
TEST(NetProxy, OpenLetsThroughOnlyHttpHttpsAndTheListedPorts) {
  ProxyConfig config;
  config.allow_any = true;
  config.open_ports = {8080};
  config.address_check = [](const sockaddr_storage&) -> std::optional<std::string> { return "checked"; };
  ProxyUnderTest proxy(std::move(config));
  std::string refused = proxy.ask("CONNECT 192.0.2.1:22 HTTP/1.1\r\n\r\n");
  EXPECT_EQ(status_line(refused), "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(answer_body(refused),
            "tnk: port 22 is not open to this sandbox (open: 80, 443, 8080; a profile adds ports with "
            "network.open_ports)\n");
  std::string plain = proxy.ask("GET http://192.0.2.1:25/ HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(status_line(plain), "HTTP/1.1 403 Forbidden");
  // Past the port rule, each of these reaches the address check (which refuses all here).
  for (const char* open :
       {"CONNECT 192.0.2.1:443 HTTP/1.1\r\n\r\n", "GET http://192.0.2.1/ HTTP/1.1\r\nHost: x\r\n\r\n",
        "CONNECT 192.0.2.1:8080 HTTP/1.1\r\n\r\n"}) {
    EXPECT_NE(answer_body(proxy.ask(open)).find("a host-internal address (checked)"), std::string::npos) << open;
  }
  auto events = proxy.events(5);
  ASSERT_EQ(events.size(), 5u);
  std::vector<std::pair<uint16_t, std::string>> decisions;
  for (const NetEvent& e : events) decisions.emplace_back(e.port, e.reason);
  EXPECT_EQ(decisions, (std::vector<std::pair<uint16_t, std::string>>{{22, "port not open"},
                                                                      {25, "port not open"},
                                                                      {443, "host-internal address (checked)"},
                                                                      {80, "host-internal address (checked)"},
                                                                      {8080, "host-internal address (checked)"}}));
}

TEST(NetProxy, HealthNameIsAnsweredByTheProxyAndIsNoDecision) {
  ProxyUnderTest proxy(allowing({}));
  std::string answer = proxy.ask("GET http://" + std::string(kProxyHealthHost) + "/ HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(status_line(answer), "HTTP/1.1 200 OK");
  EXPECT_EQ(answer_body(answer), "tnk proxy: ok\n");
  std::string denied = proxy.ask("CONNECT example.com:443 HTTP/1.1\r\n\r\n");
  auto events = proxy.events(1);
  ASSERT_EQ(events.size(), 1u);  // only the refusal
  EXPECT_EQ(events[0].host, "example.com");
}

TEST(NetProxy, PlainHttpIsRewrittenToOriginForm) {
  EchoServer echo;  // answers with exactly what the upstream received
  std::string port = std::to_string(echo.port());
  ProxyConfig config = allowing({"127.0.0.1:" + port});
  config.address_check = allow_test_server(echo.port());
  ProxyUnderTest proxy(std::move(config));
  UniqueFd client = connect_loopback(proxy.port());
  ASSERT_TRUE(send_text(client.get(), "POST http://127.0.0.1:" + port +
                                          "/v1/x?y=1 HTTP/1.1\r\nHost: other\r\nProxy-Connection: keep-alive\r\n"
                                          "Content-Length: 5\r\n\r\nhel"));
  ASSERT_TRUE(send_text(client.get(), "lo"));
  ::shutdown(client.get(), SHUT_WR);
  std::string expected =
      "POST /v1/x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
  EXPECT_EQ(read_until_eof(client.get()), expected);
  auto events = proxy.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].allowed);
  EXPECT_EQ(events[0].bytes_up, expected.size());
  EXPECT_EQ(events[0].bytes_down, expected.size());
}

// Security review M3: the provisioning proxy serves only requests that carry its per-run credential,
// which reaches the run's own processes only; the credential itself never goes upstream.
TEST(NetProxy, ACredentialProxyAnswers407WithoutItAndPassesWithIt) {
  EchoServer echo;
  std::string port = std::to_string(echo.port());
  ProxyConfig config = allowing_echo(echo, "127.0.0.1");
  config.credential = basic_credential("tnk", "secret");
  config.limits.idle_timeout = 500ms;
  ProxyUnderTest proxy(std::move(config));
  std::string request = "GET http://127.0.0.1:" + port + "/a HTTP/1.1\r\nHost: x\r\n";
  EXPECT_TRUE(proxy.ask(request + "\r\n").starts_with("HTTP/1.1 407 Proxy Authentication Required\r\n"));
  EXPECT_TRUE(proxy.ask("CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 407 "));
  std::string passed = proxy.ask(request + "Proxy-Authorization: Basic dG5rOnNlY3JldA==\r\n\r\n");
  EXPECT_EQ(passed, "GET /a HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\nConnection: close\r\n\r\n");
  auto events = proxy.events(3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_FALSE(events[0].allowed);
  EXPECT_EQ(events[0].reason, "no valid proxy credential");
  EXPECT_FALSE(events[1].allowed);
  EXPECT_TRUE(events[2].allowed);
}

// Security review L3 (pipelining): one request per connection; what the client pipelines behind it, for
// whatever Host, never reaches the upstream (the echo server answers with exactly what it received).
TEST(NetProxy, PlainHttpPassesTheFirstRequestOnly) {
  EchoServer echo;
  std::string port = std::to_string(echo.port());
  ProxyConfig config = allowing_echo(echo, "127.0.0.1");
  config.limits.idle_timeout = 500ms;  // the echo never closes: the request's end is not passed on
  ProxyUnderTest proxy(std::move(config));
  std::string first = "POST http://127.0.0.1:" + port + "/a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  std::string body = "3\r\nabc\r\n0\r\n\r\n";
  std::string second = "GET /b HTTP/1.1\r\nHost: other.example\r\n\r\n";
  UniqueFd client = connect_loopback(proxy.port());
  ASSERT_TRUE(send_text(client.get(), first + body + second));
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(send_text(client.get(), second));  // and one sent later
  std::string upstream = read_until_eof(client.get());
  EXPECT_EQ(upstream, "POST /a HTTP/1.1\r\nHost: 127.0.0.1:" + port +
                          "\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n" + body);
  auto events = proxy.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].bytes_up, upstream.size());
}

// Security review L3 (domain fronting): through a CONNECT to a name, a ClientHello for that name is
// relayed (the pair; the name compares case-insensitively, and the hello may come in pieces), one for
// another name, without a name, or something that is not TLS, is refused: the tunnel closes after the
// 200 and nothing reaches the upstream.
// The echo stands for a server on 443.
ProxyConfig checking_server_names(const EchoServer& echo) {
  ProxyConfig config = allowing_echo(echo, "localhost");
  config.server_name_ports = {echo.port()};
  return config;
}

TEST(NetProxy, ConnectToANameCarriesOnlyAHelloForThatName) {
  EchoServer echo;
  std::string port = std::to_string(echo.port());
  ProxyUnderTest proxy(checking_server_names(echo));
  std::string connect = "CONNECT LocalHost:" + port + " HTTP/1.1\r\n\r\n";
  std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
  std::string good = testing::tls::client_hello("LOCALHOST", 50);
  UniqueFd client = connect_loopback(proxy.port());
  ASSERT_TRUE(send_text(client.get(), connect + good.substr(0, 30)));
  std::this_thread::sleep_for(50ms);
  ASSERT_TRUE(send_text(client.get(), good.substr(30)));
  ::shutdown(client.get(), SHUT_WR);
  EXPECT_EQ(read_until_eof(client.get()), established + good);
  struct Case {
    std::string first_bytes, reason;
  };
  for (const Case& c : std::vector<Case>{
           {testing::tls::client_hello("other.example"), "TLS server name other.example is not the CONNECT name"},
           {testing::tls::client_hello(std::nullopt), "a TLS ClientHello without a server name"},
           {"GET / HTTP/1.1\r\nHost: other.example\r\n\r\n", "not TLS (a tunnel to a name carries TLS only)"},
           {"\x16\x03\x01\x40\x01", "malformed TLS ClientHello: a handshake record of 16385 bytes"}}) {
    EXPECT_EQ(proxy.ask(connect + c.first_bytes, true), established) << c.reason;
  }
  auto events = proxy.events(5);
  ASSERT_EQ(events.size(), 5u);
  EXPECT_TRUE(events[0].allowed);
  EXPECT_EQ(events[0].bytes_up, good.size());
  for (size_t i = 1; i < 5; ++i) {
    EXPECT_FALSE(events[i].allowed);
    EXPECT_EQ(events[i].host, "localhost");
    EXPECT_EQ(events[i].bytes_up, 0u);
  }
  EXPECT_EQ(events[1].reason, "TLS server name other.example is not the CONNECT name");
  EXPECT_EQ(events[4].reason, "malformed TLS ClientHello: a handshake record of 16385 bytes");
}

// On a port where no front end routes by name (an allow-list's name:port, network.open_ports), the
// tunnel carries any protocol: ssh, a database, a server that speaks first.
TEST(NetProxy, ConnectToANameOnAnotherPortCarriesAnyProtocol) {
  EchoServer echo;
  ProxyUnderTest proxy(allowing_echo(echo, "localhost"));
  std::string bytes = "SSH-2.0-OpenSSH_9.2\r\n";
  EXPECT_EQ(proxy.ask("CONNECT localhost:" + std::to_string(echo.port()) + " HTTP/1.1\r\n\r\n" + bytes, true),
            "HTTP/1.1 200 Connection established\r\n\r\n" + bytes);
  auto events = proxy.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].allowed);
}

TEST(NetProxy, ConnectWithoutAHelloInTimeIsRefused) {
  EchoServer echo;
  std::string port = std::to_string(echo.port());
  ProxyConfig config = checking_server_names(echo);
  config.limits.head_timeout = 200ms;
  ProxyUnderTest proxy(std::move(config));
  EXPECT_EQ(proxy.ask("CONNECT localhost:" + port + " HTTP/1.1\r\n\r\n\x16\x03"),
            "HTTP/1.1 200 Connection established\r\n\r\n");
  auto events = proxy.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0].allowed);
  EXPECT_EQ(events[0].reason, "no TLS ClientHello within 200 ms");
}

// Security review L1: a refusal quoting bytes >= 0x80 is answered and reported, the bytes escaped.
TEST(NetProxy, MalformedRequestWithNonAsciiBytesIs400WithEscapedBytes) {
  ProxyUnderTest proxy(allowing({"example.org"}));
  std::string answer = proxy.ask("GET http://x/ HTTP/1.1\r\n\xff\xc3\\: a\r\n\r\n");
  EXPECT_EQ(status_line(answer), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(answer_body(answer), "tnk: bad request: invalid header name \"\\xff\\xc3\\x5c\"\n");
  auto events = proxy.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "bad request: invalid header name \"\\xff\\xc3\\x5c\"");
  EXPECT_NO_THROW((void)to_json(events[0]).dump());  // the strict encoder: nothing left to replace
}

TEST(NetProxy, MalformedRequestIs400) {
  ProxyUnderTest proxy(allowing({"example.org"}));
  std::string answer = proxy.ask("hello there\r\n\r\n");
  EXPECT_EQ(status_line(answer), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(answer_body(answer), "tnk: bad request: the request line is not \"METHOD target HTTP/1.x\"\n");
  EXPECT_EQ(status_line(proxy.ask(std::string("\x16\x03\x01\x00\xa5\x01\x00\x00", 8))), "HTTP/1.1 400 Bad Request");
  EXPECT_EQ(status_line(proxy.ask("GET /x HTTP/1.1\r\nHost: example.org\r\n\r\n")), "HTTP/1.1 400 Bad Request");
  auto events = proxy.events(3);
  ASSERT_EQ(events.size(), 3u);
  EXPECT_FALSE(events[0].allowed);
  EXPECT_EQ(events[0].reason.rfind("bad request: ", 0), 0u);
}

TEST(NetProxy, OversizeHeadIs431) {
  ProxyUnderTest proxy(allowing({"example.org"}));
  std::string answer =
      proxy.ask("GET http://example.org/ HTTP/1.1\r\nHost: example.org\r\nX: " + std::string(20000, 'a') + "\r\n\r\n");
  EXPECT_EQ(status_line(answer), "HTTP/1.1 431 Request Header Fields Too Large");
  EXPECT_EQ(answer_body(answer), "tnk: request head larger than 16 KiB\n");
}

TEST(NetProxy, SlowHeadIs408) {
  ProxyConfig config = allowing({"example.org"});
  config.limits.head_timeout = 200ms;
  ProxyUnderTest proxy(std::move(config));
  std::string answer = proxy.ask("CONNECT example.org:443 HTTP/1.1\r\n");
  EXPECT_EQ(status_line(answer), "HTTP/1.1 408 Request Timeout");
  EXPECT_EQ(answer_body(answer), "tnk: no complete request head within 200 ms\n");
}

// A connection that sends nothing within the head timeout is answered and reported like a slow head:
// it held a slot all that time (the load test's idle clients; on vm an emulated guest's late request).
TEST(NetProxy, ConnectionThatSendsNothingIs408AndReported) {
  ProxyConfig config = allowing({"example.org"});
  config.limits.head_timeout = 200ms;
  ProxyUnderTest proxy(std::move(config));
  UniqueFd client = connect_loopback(proxy.port());
  std::string answer = read_until_eof(client.get());
  EXPECT_EQ(status_line(answer), "HTTP/1.1 408 Request Timeout");
  EXPECT_EQ(answer_body(answer), "tnk: no request head within 200 ms\n");
  auto events = proxy.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_FALSE(events[0].allowed);
  EXPECT_EQ(events[0].reason, "no request head within 200 ms");
}

// One that closes without a byte made no request: no answer, no record.
TEST(NetProxy, ConnectionClosedWithoutAByteIsNotReported) {
  ProxyUnderTest proxy(allowing({"example.org"}));
  EXPECT_EQ(proxy.ask("", /*half_close=*/true), "");
  std::this_thread::sleep_for(100ms);
  EXPECT_TRUE(proxy.events(0).empty());
}

TEST(NetProxy, RefusedUpstreamIs502) {
  uint16_t dead = port_of(listen_loopback().get());
  ProxyConfig config = allowing({"127.0.0.1:" + std::to_string(dead)});
  config.address_check = allow_test_server(dead);
  ProxyUnderTest proxy(std::move(config));
  std::string answer = proxy.ask("CONNECT 127.0.0.1:" + std::to_string(dead) + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(status_line(answer), "HTTP/1.1 502 Bad Gateway");
  EXPECT_NE(answer_body(answer).find("Connection refused"), std::string::npos) << answer;
  auto events = proxy.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].allowed);  // the policy allowed it; the reason says what happened
  EXPECT_NE(events[0].reason.find("Connection refused"), std::string::npos);
}

TEST(NetProxy, SilentUpstreamIs504) {
  // A listener whose accept queue is full drops further SYNs: connecting hangs.
  UniqueFd full = listen_loopback(0);
  uint16_t port = port_of(full.get());
  std::vector<UniqueFd> fillers;
  for (int i = 0; i < 4; ++i) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    (void)::connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a);
    fillers.push_back(std::move(fd));
  }
  std::this_thread::sleep_for(100ms);
  ProxyConfig config = allowing({"127.0.0.1:" + std::to_string(port)});
  config.address_check = allow_test_server(port);
  config.limits.connect_timeout = 300ms;
  ProxyUnderTest proxy(std::move(config));
  std::string answer = proxy.ask("CONNECT 127.0.0.1:" + std::to_string(port) + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(status_line(answer), "HTTP/1.1 504 Gateway Timeout");
  EXPECT_EQ(answer_body(answer), "tnk: 127.0.0.1:" + std::to_string(port) + " did not answer within 300 ms\n");
}

TEST(NetProxy, IdleTunnelIsClosed) {
  EchoServer echo;
  std::string port = std::to_string(echo.port());
  ProxyConfig config = allowing({"127.0.0.1:" + port});
  config.address_check = allow_test_server(echo.port());
  config.limits.idle_timeout = 300ms;
  ProxyUnderTest proxy(std::move(config));
  UniqueFd client = connect_loopback(proxy.port());
  ASSERT_TRUE(send_text(client.get(), "CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\n\r\n"));
  auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(read_until_eof(client.get()), "HTTP/1.1 200 Connection established\r\n\r\n");
  EXPECT_LT(std::chrono::steady_clock::now() - started, 3s);
  EXPECT_EQ(proxy.events().at(0).reason, "idle timeout");
}

TEST(NetProxy, StopEndsOpenTunnels) {
  EchoServer echo;
  std::string port = std::to_string(echo.port());
  ProxyConfig config = allowing({"127.0.0.1:" + port});
  config.address_check = allow_test_server(echo.port());
  ProxyUnderTest proxy(std::move(config));
  UniqueFd client = connect_loopback(proxy.port());
  ASSERT_TRUE(send_text(client.get(), "CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\n\r\n"));
  read_until(client.get(), "\r\n\r\n");
  UniqueFd waiting = connect_loopback(proxy.port());  // and one still sending its head
  ASSERT_TRUE(send_text(waiting.get(), "CONNECT 127.0.0.1:"));
  std::this_thread::sleep_for(50ms);
  auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(proxy.stop().ok());
  EXPECT_LT(std::chrono::steady_clock::now() - started, 2s);
  EXPECT_EQ(read_until_eof(client.get()), "");
  EXPECT_EQ(proxy.events().at(0).reason, "stopped");
}

TEST(NetProxy, ConnectionsBeyondTheLimitGet503) {
  ProxyUnderTest proxy(allowing({"example.org"}));
  std::vector<UniqueFd> clients;
  for (int i = 0; i < 300; ++i) {
    clients.push_back(connect_loopback(proxy.port(), 1));
    ASSERT_TRUE(clients.back().valid()) << i;
  }
  int busy = 0;
  int silent = 0;
  for (UniqueFd& client : clients) {
    pollfd p{client.get(), POLLIN, 0};
    if (::poll(&p, 1, busy + silent < 256 ? 0 : 2000) == 1 &&
        read_until_eof(client.get()).starts_with("HTTP/1.1 503 Service Unavailable\r\n")) {
      ++busy;
    } else {
      ++silent;
    }
  }
  EXPECT_EQ(busy, 300 - 256);
  clients.clear();
  EXPECT_TRUE(proxy.stop().ok());
  auto events = proxy.events(44);
  ASSERT_EQ(events.size(), 44u);
  EXPECT_EQ(events[0].reason, "too many connections");
}

TEST(NetProxy, NoFdLeakAfterManyConnections) {
  int before = count_open_fds();
  {
    EchoServer echo;
    std::string port = std::to_string(echo.port());
    ProxyConfig config = allowing({"127.0.0.1:" + port, "localhost"});
    config.address_check = allow_test_server(echo.port());
    ProxyUnderTest proxy(std::move(config));
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\n\r\nabc", "HTTP/1.1 200 Connection established\r\n\r\nabc"},
        {"CONNECT localhost:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 403 Forbidden\r\n"},
        {"CONNECT nowhere.example:443 HTTP/1.1\r\n\r\n", "HTTP/1.1 403 Forbidden\r\n"},
        {"BAD\r\n\r\n", "HTTP/1.1 400 Bad Request\r\n"}};
    for (int i = 0; i < 100; ++i) {
      const auto& [request, answer] = cases[static_cast<size_t>(i) % cases.size()];
      ASSERT_TRUE(proxy.ask(request, true).starts_with(answer)) << i;
    }
    EXPECT_EQ(proxy.events(100).size(), 100u);
    EXPECT_TRUE(proxy.stop().ok());
  }
  EXPECT_EQ(count_open_fds(), before);
}

// A tunnel the proxy opened for `connect` (a CONNECT head), held open.
UniqueFd tunnel_through(ProxyUnderTest& proxy, const std::string& connect) {
  UniqueFd tunnel = connect_loopback(proxy.port());
  EXPECT_TRUE(send_text(tunnel.get(), connect));
  EXPECT_EQ(read_until(tunnel.get(), "\r\n\r\n"), "HTTP/1.1 200 Connection established\r\n\r\n");
  return tunnel;
}

// `deny 127.0.0.1` sent on the policy channel cuts `tunnel`, at once (not at the idle timeout).
void expect_denied_and_cut(int supervisor_end, int tunnel) {
  auto cut = send_policy(supervisor_end, {}, {"127.0.0.1"}, 2s);
  ASSERT_TRUE(cut.ok()) << cut.error().message;
  EXPECT_EQ(*cut, 1u);
  EXPECT_EQ(read_until_eof(tunnel), "");
}

// `tnk sandbox deny` and an expiry: a replaced list cuts the tunnels it no longer allows and refuses new
// ones at once; `allow` lets them through again, without a restart (issue 34).
TEST(NetProxy, AReplacedListCutsWhatItNoLongerAllowsAndAllowsWhatItAdds) {
  EchoServer echo;
  std::string port = std::to_string(echo.port());
  std::string target = "127.0.0.1:" + port;
  auto channel = open_policy_channel();
  ASSERT_TRUE(channel.ok());
  ProxyConfig config = allowing({target});
  config.address_check = allow_test_server(echo.port());
  config.policy_fd = channel->proxy_end.get();
  ProxyUnderTest proxy(std::move(config));
  std::string connect = "CONNECT " + target + " HTTP/1.1\r\nHost: x\r\n\r\n";
  UniqueFd open_tunnel = tunnel_through(proxy, connect);
  expect_denied_and_cut(channel->supervisor_end.get(), open_tunnel.get());
  auto events = proxy.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].allowed);
  EXPECT_EQ(events[0].reason, "cut: the policy no longer allows it");
  std::string refused = proxy.ask(connect);
  EXPECT_EQ(status_line(refused), "HTTP/1.1 403 Forbidden");
  EXPECT_EQ(answer_body(refused), "tnk: 127.0.0.1 is denied to this sandbox (tnk sandbox deny 127.0.0.1)\n");
  EXPECT_EQ(proxy.events(2).at(1).reason, "denied (127.0.0.1)");

  ASSERT_EQ(*send_policy(channel->supervisor_end.get(), {target}, {}, 2s), 0u);
  UniqueFd again = connect_loopback(proxy.port());
  ASSERT_TRUE(send_text(again.get(), connect + "hi"));
  std::string answer = read_until(again.get(), "hi");
  EXPECT_EQ(answer, "HTTP/1.1 200 Connection established\r\n\r\nhi");
  EXPECT_TRUE(proxy.stop().ok());
}

// Under `open` the live rules apply too: a deny cuts an open tunnel to the name and refuses the next one
// (every other name still passes), and an allow of name:port opens a port beyond open's (issue 34).
TEST(NetProxy, UnderOpenADenyCutsAndRefusesTheNameAndAnAllowOpensAPort) {
  EchoServer echo;
  std::string target = "127.0.0.1:" + std::to_string(echo.port());
  auto channel = open_policy_channel();
  ASSERT_TRUE(channel.ok());
  ProxyConfig config;
  config.allow_any = true;
  config.address_check = allow_test_server(echo.port());
  config.policy_fd = channel->proxy_end.get();
  ProxyUnderTest proxy(std::move(config));
  std::string connect = "CONNECT " + target + " HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_NE(answer_body(proxy.ask(connect)).find("port " + std::to_string(echo.port()) + " is not open"),
            std::string::npos);

  ASSERT_EQ(*send_policy(channel->supervisor_end.get(), {target}, {}, 2s), 0u);
  UniqueFd open_tunnel = tunnel_through(proxy, connect);
  expect_denied_and_cut(channel->supervisor_end.get(), open_tunnel.get());
  // The tunnel's client can see its end before the cut is reported: wait for it, so the order below holds.
  ASSERT_EQ(proxy.events(2).size(), 2u);
  EXPECT_EQ(answer_body(proxy.ask(connect)), "tnk: 127.0.0.1 is denied to this sandbox (tnk sandbox deny 127.0.0.1)\n");
  // Another name on an open port still reaches the address check (which refuses it here).
  EXPECT_NE(answer_body(proxy.ask("CONNECT 10.1.2.3:443 HTTP/1.1\r\n\r\n")).find("host-internal address"),
            std::string::npos);
  auto events = proxy.events(4);
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].reason, "port not open");
  EXPECT_EQ(events[1].rule, target);
  EXPECT_EQ(events[1].reason, "cut: the policy no longer allows it");
  EXPECT_EQ(events[2].reason, "denied (127.0.0.1)");
  EXPECT_EQ(events[3].reason, "host-internal address (private)");
  EXPECT_TRUE(proxy.stop().ok());
}

TEST(NetProxy, BrokenListenerIsAnError) {
  ProxyConfig config;
  auto status = serve_proxy(-1, config);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("egress proxy"), std::string::npos) << status.error().message;
}

}  // namespace
}  // namespace tnk::net
