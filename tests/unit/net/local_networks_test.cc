#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "net/local_networks.h"
#include "net_test_util.h"

namespace tnk::net {
namespace {

using testing::address;

// A host with a public IPv4 and a global IPv6 on eth0, a second IPv4 network on eth1, and lo.
const std::vector<InterfaceAddress> kHost = {
    {"lo", address("127.0.0.1"), 8},
    {"eth0", address("198.51.100.1"), 24},
    {"eth0", address("2001:db8:5::1"), 64},
    {"eth1", address("203.0.113.130"), 25},
    {"lo", address("::1"), 128},
};

std::string local_reason(const std::string& text, const std::vector<InterfaceAddress>& interfaces = kHost) {
  return local_network_reason(address(text), interfaces).value_or("off-link");
}

TEST(NetLocalNetworks, TheHostsOwnAddressesAreRefused) {
  EXPECT_EQ(local_reason("198.51.100.1"), "address of this host's interface eth0");
  EXPECT_EQ(local_reason("2001:db8:5::1"), "address of this host's interface eth0");
  EXPECT_EQ(local_reason("203.0.113.130"), "address of this host's interface eth1");
  EXPECT_EQ(local_reason("::ffff:198.51.100.1"), "address of this host's interface eth0");  // connects as IPv4
}

TEST(NetLocalNetworks, OnLinkNeighboursAreRefused) {
  EXPECT_EQ(local_reason("198.51.100.7"), "on-link network of eth0");
  EXPECT_EQ(local_reason("198.51.100.255"), "on-link network of eth0");
  EXPECT_EQ(local_reason("2001:db8:5::7"), "on-link network of eth0");
  EXPECT_EQ(local_reason("2001:db8:5:0:ffff:ffff:ffff:ffff"), "on-link network of eth0");
  EXPECT_EQ(local_reason("203.0.113.200"), "on-link network of eth1");  // the /25's upper half
  EXPECT_EQ(local_reason("::ffff:198.51.100.9"), "on-link network of eth0");
}

TEST(NetLocalNetworks, OffLinkAddressesAreLeftToTheFixedRanges) {
  EXPECT_EQ(local_reason("198.51.101.1"), "off-link");
  EXPECT_EQ(local_reason("203.0.113.127"), "off-link");  // the /25's lower half
  EXPECT_EQ(local_reason("192.0.2.1"), "off-link");
  EXPECT_EQ(local_reason("2001:db8:5:1::1"), "off-link");  // the next /64
  EXPECT_EQ(local_reason("2001:db8:6::1"), "off-link");
  // Families never cross: an IPv6 address with the IPv4 address's bytes in front is not on eth0.
  EXPECT_EQ(local_reason("c633:6401::1"), "off-link");
  EXPECT_EQ(local_reason("198.51.100.1", {}), "off-link");  // no interfaces, nothing local
}

TEST(NetLocalNetworks, AddressesAreReadFromTheKernel) {
  auto interfaces = local_interface_addresses();
  ASSERT_TRUE(interfaces.ok()) << interfaces.error().message;
  auto loopback = std::find_if(interfaces->begin(), interfaces->end(), [](const InterfaceAddress& a) {
    return local_network_reason(address("127.0.0.1"), {a}).has_value();
  });
  ASSERT_NE(loopback, interfaces->end());
  EXPECT_EQ(loopback->prefix_length, 8);
  EXPECT_EQ(local_reason("127.0.0.1", *interfaces), "address of this host's interface " + loopback->interface);
}

// The proxy's own check: the fixed ranges first, then this host's real interfaces.
TEST(NetLocalNetworks, TheProxysCheckIsTheFixedRangesThenTheInterfaces) {
  EXPECT_EQ(host_address_reason(address("127.0.0.1")), "loopback");  // the fixed range names it first
  EXPECT_EQ(host_address_reason(address("10.1.2.3")), "private");
  auto interfaces = local_interface_addresses();
  ASSERT_TRUE(interfaces.ok()) << interfaces.error().message;
  for (const InterfaceAddress& own : *interfaces) {
    std::optional<std::string> why = host_address_reason(own.address);
    ASSERT_TRUE(why.has_value()) << own.interface;  // every address of this host is refused, one way or another
  }
  // Of these documentation and benchmark addresses, one not on this host's links gets through.
  int off_link = 0;
  for (const char* text : {"198.18.0.1", "203.0.113.1", "198.51.100.1", "2001:db8:ffff::1"}) {
    if (local_network_reason(address(text), *interfaces)) continue;
    EXPECT_EQ(host_address_reason(address(text)), std::nullopt) << text;
    ++off_link;
  }
  EXPECT_GT(off_link, 0);
}

}  // namespace
}  // namespace tnk::net
