#include "net/tls_sni.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "tls_test_util.h"

namespace tnk::net {
namespace {

using namespace testing::tls;

const std::string kOtherExtensions = extension(10, u16(2) + "\x00\x1d") + extension(43, u8(2) + "\x03\x04");

TEST(TlsSni, FindsTheNameInLowerCase) {
  SniResult r = client_hello_sni(hello_with(kOtherExtensions + server_name(name_entry("Example.ORG"))));
  EXPECT_EQ(r.status, SniStatus::kFound);
  EXPECT_EQ(r.name, "example.org");
}

// What follows the hello's record (a ChangeCipherSpec, early data) is not the parser's business.
TEST(TlsSni, IgnoresRecordsAfterTheHello) {
  std::string stream = hello_with(server_name(name_entry("a.example"))) + "\x14\x03\x03" + u16(1) + "\x01";
  EXPECT_EQ(client_hello_sni(stream).name, "a.example");
}

// Split over several records and read a byte at a time: every prefix waits, the whole hello answers.
TEST(TlsSni, FragmentedOverRecordsAndReads) {
  std::string stream = records(handshake(hello_body(server_name(name_entry("cdn.example.net")))), 7);
  for (std::size_t n = 0; n < stream.size(); ++n) {
    ASSERT_EQ(client_hello_sni(std::string_view(stream).substr(0, n)).status, SniStatus::kNeedMore) << n;
  }
  SniResult r = client_hello_sni(stream);
  EXPECT_EQ(r.status, SniStatus::kFound);
  EXPECT_EQ(r.name, "cdn.example.net");
}

TEST(TlsSni, NoServerName) {
  EXPECT_EQ(client_hello_sni(hello_with(kOtherExtensions)).status, SniStatus::kNoSni);
  EXPECT_EQ(client_hello_sni(records(handshake(hello_body(std::nullopt)))).status, SniStatus::kNoSni);
  // Only a name type other than host_name.
  EXPECT_EQ(client_hello_sni(hello_with(server_name(name_entry("x", 7)))).status, SniStatus::kNoSni);
}

TEST(TlsSni, NotTls) {
  for (const std::string& stream : {std::string("GET / HTTP/1.1\r\n"), std::string("SSH-2.0-OpenSSH_9.2\r\n"),
                                    std::string("\x16\x04\x01", 3), std::string("\x17", 1)}) {
    SniResult r = client_hello_sni(stream);
    EXPECT_EQ(r.status, SniStatus::kNotTls) << stream;
    EXPECT_EQ(r.reason, "not a TLS handshake");
  }
  EXPECT_EQ(client_hello_sni("").status, SniStatus::kNeedMore);
  EXPECT_EQ(client_hello_sni("\x16").status, SniStatus::kNeedMore);
}

TEST(TlsSni, TruncatedHelloIsMalformed) {
  std::string body = hello_body(server_name(name_entry("example.org")));
  // The handshake header promises the whole body, the records carry it, but the body's own vectors
  // overrun: cut inside the cipher suites.
  std::string cut = body.substr(0, 2 + 32 + 1 + 32 + 3);
  SniResult r = client_hello_sni(records(handshake(cut)));
  EXPECT_EQ(r.status, SniStatus::kMalformed);
  EXPECT_EQ(r.reason, "a truncated ClientHello");
  // An extension block that claims more than is there.
  std::string overrun = hello_body(std::nullopt) + u16(40) + extension(0, "");
  EXPECT_EQ(client_hello_sni(records(handshake(overrun))).status, SniStatus::kMalformed);
  // A server_name whose entry claims more than the extension holds.
  std::string bad_entry = extension(0, u16(6) + u8(0) + u16(60) + "abc");
  EXPECT_EQ(client_hello_sni(hello_with(bad_entry)).status, SniStatus::kMalformed);
}

TEST(TlsSni, OversizedLengthsAreMalformedWithoutWaiting) {
  // A record longer than TLS allows.
  EXPECT_EQ(client_hello_sni("\x16\x03\x01" + u16(16385)).status, SniStatus::kMalformed);
  // A handshake message longer than the bound, announced in the first record.
  SniResult big = client_hello_sni(records(u8(1) + u24(1 << 20) + std::string(20, 'x')));
  EXPECT_EQ(big.status, SniStatus::kMalformed);
  EXPECT_EQ(big.reason, "a ClientHello larger than 16 KiB");
  // Many records whose payloads never complete the message: a verdict by the bound, not kNeedMore.
  SniResult slow = client_hello_sni(records(handshake(std::string(16000, 'x')), 1));
  EXPECT_EQ(slow.status, SniStatus::kMalformed);
  EXPECT_EQ(slow.reason, "a ClientHello larger than 16 KiB");
  EXPECT_EQ(client_hello_sni("\x16\x03\x01" + u16(0)).status, SniStatus::kMalformed);  // an empty record
}

TEST(TlsSni, AmbiguousHellosAreMalformed) {
  std::string two_names = server_name(name_entry("a.example") + name_entry("b.example"));
  std::string two_extensions = server_name(name_entry("a.example")) + server_name(name_entry("b.example"));
  std::string after = handshake(hello_body(server_name(name_entry("a.example")))) + "junk";
  for (const std::string& stream :
       {hello_with(two_names), hello_with(two_extensions), hello_with(server_name(name_entry("a b.example"))),
        hello_with(server_name(name_entry(""))), hello_with(server_name(name_entry(std::string(256, 'a')))),
        hello_with(server_name("")), records(after), records(handshake(hello_body(std::nullopt), 2)),
        records(handshake(hello_body(std::nullopt)), 10).substr(0, 15) + "\x17\x03\x03" + u16(1) + "x"}) {
    EXPECT_EQ(client_hello_sni(stream).status, SniStatus::kMalformed);
  }
}

}  // namespace
}  // namespace tnk::net
