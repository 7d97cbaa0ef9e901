#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstring>
#include <optional>
#include <string>

#include "net/address_check.h"
#include "net_test_util.h"

namespace tnk::net {
namespace {

using testing::address;

std::string internal_reason(const std::string& text) {
  return internal_address_reason(address(text)).value_or("public");
}

TEST(NetAddressCheck, Ipv4Ranges) {
  EXPECT_EQ(internal_reason("127.0.0.1"), "loopback");
  EXPECT_EQ(internal_reason("127.255.255.254"), "loopback");
  EXPECT_EQ(internal_reason("0.0.0.0"), "unspecified");
  EXPECT_EQ(internal_reason("0.1.2.3"), "unspecified");
  EXPECT_EQ(internal_reason("10.0.0.1"), "private");
  EXPECT_EQ(internal_reason("10.255.255.255"), "private");
  EXPECT_EQ(internal_reason("172.16.0.1"), "private");
  EXPECT_EQ(internal_reason("172.31.255.255"), "private");
  EXPECT_EQ(internal_reason("172.15.255.255"), "public");
  EXPECT_EQ(internal_reason("172.32.0.0"), "public");
  EXPECT_EQ(internal_reason("192.168.1.1"), "private");
  EXPECT_EQ(internal_reason("192.169.0.1"), "public");
  EXPECT_EQ(internal_reason("100.64.0.1"), "private (CGNAT)");
  EXPECT_EQ(internal_reason("100.127.255.255"), "private (CGNAT)");
  EXPECT_EQ(internal_reason("100.128.0.0"), "public");
  EXPECT_EQ(internal_reason("169.254.169.254"), "link-local");  // cloud metadata
  EXPECT_EQ(internal_reason("169.254.0.1"), "link-local");
  EXPECT_EQ(internal_reason("224.0.0.1"), "multicast");
  EXPECT_EQ(internal_reason("239.255.255.250"), "multicast");
  EXPECT_EQ(internal_reason("255.255.255.255"), "broadcast");
  EXPECT_EQ(internal_reason("240.0.0.1"), "reserved");
  EXPECT_EQ(internal_reason("8.8.8.8"), "public");
  EXPECT_EQ(internal_reason("1.1.1.1"), "public");
  EXPECT_EQ(internal_reason("93.184.216.34"), "public");
}

TEST(NetAddressCheck, Ipv6Ranges) {
  EXPECT_EQ(internal_reason("::1"), "loopback");
  EXPECT_EQ(internal_reason("::"), "unspecified");
  EXPECT_EQ(internal_reason("fc00::1"), "private");
  EXPECT_EQ(internal_reason("fd12:3456::1"), "private");
  EXPECT_EQ(internal_reason("fe80::1"), "link-local");
  EXPECT_EQ(internal_reason("febf::1"), "link-local");
  EXPECT_EQ(internal_reason("fec0::1"), "private (site-local)");
  EXPECT_EQ(internal_reason("ff02::1"), "multicast");
  EXPECT_EQ(internal_reason("2001:4860:4860::8888"), "public");
  EXPECT_EQ(internal_reason("2606:4700::1111"), "public");
}

TEST(NetAddressCheck, Ipv4MappedAndTranslatedForms) {
  EXPECT_EQ(internal_reason("::ffff:127.0.0.1"), "loopback (IPv4-mapped)");
  EXPECT_EQ(internal_reason("::ffff:10.1.2.3"), "private (IPv4-mapped)");
  EXPECT_EQ(internal_reason("::ffff:169.254.169.254"), "link-local (IPv4-mapped)");
  EXPECT_EQ(internal_reason("::ffff:0.0.0.0"), "unspecified (IPv4-mapped)");
  EXPECT_EQ(internal_reason("::ffff:8.8.8.8"), "public");
  EXPECT_EQ(internal_reason("64:ff9b::127.0.0.1"), "loopback (NAT64)");
  EXPECT_EQ(internal_reason("64:ff9b::192.168.0.1"), "private (NAT64)");
  EXPECT_EQ(internal_reason("64:ff9b::8.8.8.8"), "public");
  EXPECT_EQ(internal_reason("64:ff9b:1::1"), "private (local NAT64)");
  EXPECT_EQ(internal_reason("2002:7f00:1::"), "loopback (6to4)");
  EXPECT_EQ(internal_reason("2002:0808:0808::1"), "public");
  EXPECT_EQ(internal_reason("::127.0.0.1"), "reserved (IPv4-compatible)");
}

TEST(NetAddressCheck, UnknownFamilyIsInternal) {
  sockaddr_storage ss{};
  ss.ss_family = AF_UNIX;
  EXPECT_TRUE(internal_address_reason(ss).has_value());
  EXPECT_EQ(address_to_string(ss), "?");
}

TEST(NetAddressCheck, AddressText) {
  EXPECT_EQ(address_to_string(address("192.0.2.1")), "192.0.2.1");
  EXPECT_EQ(address_to_string(address("2001:DB8:0::1")), "2001:db8::1");
  EXPECT_EQ(address_to_string(address("::ffff:127.0.0.1")), "::ffff:127.0.0.1");
}

}  // namespace
}  // namespace tnk::net
