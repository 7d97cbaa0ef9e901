// The `open` proxy's check of the host's own networks (src/net/local_networks.h, security review H2 and
// R3-L5): the decision as a pure function of the kernel's route answer, the answer's bytes parsed, and
// the check against this host's real routes.
#include <gtest/gtest.h>

#include <ifaddrs.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "net/local_networks.h"
#include "net/route_query.h"
#include "net_test_util.h"

namespace tnk::net {
namespace {

using testing::address;

RouteAnswer route(unsigned type, int prefix, bool gateway, int family = AF_INET, std::string dev = "eth0") {
  RouteAnswer answer;
  answer.family = family;
  answer.type = type;
  answer.prefix_length = prefix;
  answer.via_gateway = gateway;
  answer.interface_index = 2;
  answer.interface = std::move(dev);
  return answer;
}

std::string reason(const RouteAnswer& answer) { return local_route_reason(answer).value_or("passes"); }

TEST(NetLocalNetworks, LocalRoutesAreRefusedAnyIpIncluded) {
  EXPECT_EQ(reason(route(RTN_LOCAL, 32, false)), "address of this host's interface eth0");
  EXPECT_EQ(reason(route(RTN_LOCAL, 128, false, AF_INET6)), "address of this host's interface eth0");
  // `ip route add local 2001:db8:1::/64 dev lo`: the host answers every address of the prefix.
  EXPECT_EQ(reason(route(RTN_LOCAL, 64, false, AF_INET6, "lo")), "local route of this host on lo");
  EXPECT_EQ(reason(route(RTN_LOCAL, 24, false, AF_INET, "lo")), "local route of this host on lo");
  EXPECT_EQ(reason(route(RTN_ANYCAST, 128, false, AF_INET6)), "anycast address of this host on eth0");
  EXPECT_EQ(reason(route(RTN_BROADCAST, 32, false)), "broadcast address of eth0");
  RouteAnswer nameless = route(RTN_LOCAL, 32, false, AF_INET, "");
  EXPECT_EQ(reason(nameless), "address of this host's interface #2");
}

// On-link: the interface's LAN, a /128 host's on-link /64, a VPN's prefix, a second LAN prefix.
TEST(NetLocalNetworks, OnLinkRoutesAreRefused) {
  EXPECT_EQ(reason(route(RTN_UNICAST, 24, false)), "on-link network of eth0");
  EXPECT_EQ(reason(route(RTN_UNICAST, 64, false, AF_INET6)), "on-link network of eth0");
  EXPECT_EQ(reason(route(RTN_UNICAST, 8, false, AF_INET, "tun0")), "on-link network of tun0");
  EXPECT_EQ(reason(route(RTN_UNICAST, 32, false)), "on-link network of eth0");  // a host route on the link
}

// The pair: what leaves through a gateway, a default route over a point-to-point link (the way out),
// and routes that let nothing through pass this check (the connection then succeeds or fails by itself).
TEST(NetLocalNetworks, RoutesThroughAGatewayPass) {
  EXPECT_EQ(reason(route(RTN_UNICAST, 0, true)), "passes");
  EXPECT_EQ(reason(route(RTN_UNICAST, 16, true)), "passes");
  EXPECT_EQ(reason(route(RTN_UNICAST, 0, false, AF_INET, "wg0")), "passes");
  EXPECT_EQ(reason(route(RTN_UNREACHABLE, 24, false)), "passes");
  EXPECT_EQ(reason(route(RTN_BLACKHOLE, 24, false)), "passes");
}

// A message as the kernel sends it: its header, then `payload`.
std::string message(uint16_t type, uint32_t seq, const std::string& payload) {
  nlmsghdr h{};
  h.nlmsg_len = static_cast<uint32_t>(NLMSG_HDRLEN + payload.size());
  h.nlmsg_type = type;
  h.nlmsg_seq = seq;
  std::string out(NLMSG_HDRLEN, '\0');
  std::memcpy(out.data(), &h, sizeof h);
  return out + payload;
}

template <class T>
std::string struct_bytes(const T& value) {
  std::string bytes(NLMSG_ALIGN(sizeof value), '\0');
  std::memcpy(bytes.data(), &value, sizeof value);
  return bytes;
}

std::string attributes(const std::vector<std::pair<unsigned short, std::string>>& attrs) {
  std::string out;
  for (const auto& [kind, value] : attrs) {
    rtattr a{static_cast<unsigned short>(RTA_LENGTH(value.size())), kind};
    std::string bytes(RTA_SPACE(value.size()), '\0');
    std::memcpy(bytes.data(), &a, sizeof a);
    std::memcpy(bytes.data() + RTA_LENGTH(0), value.data(), value.size());
    out += bytes;
  }
  return out;
}

// An RTM_NEWROUTE answer with the attributes given as (type, bytes).
std::string reply(uint32_t seq, unsigned type, int prefix,
                  const std::vector<std::pair<unsigned short, std::string>>& attrs) {
  rtmsg rt{};
  rt.rtm_family = AF_INET;
  rt.rtm_type = static_cast<unsigned char>(type);
  rt.rtm_dst_len = static_cast<unsigned char>(prefix);
  return message(RTM_NEWROUTE, seq, struct_bytes(rt) + attributes(attrs));
}

std::string error_reply(uint32_t seq, int error) {
  nlmsgerr e{};
  e.error = -error;
  return message(NLMSG_ERROR, seq, struct_bytes(e));
}

TEST(NetRouteQuery, TheKernelsAnswerIsParsed) {
  std::string oif(4, '\0');
  uint32_t index = 7;
  std::memcpy(oif.data(), &index, 4);
  auto onlink = parse_route_reply(reply(5, RTN_UNICAST, 24, {{RTA_OIF, oif}}), 5);
  ASSERT_TRUE(onlink.ok() && onlink->has_value());
  EXPECT_EQ((*onlink)->type, unsigned{RTN_UNICAST});
  EXPECT_EQ((*onlink)->prefix_length, 24);
  EXPECT_FALSE((*onlink)->via_gateway);
  EXPECT_EQ((*onlink)->interface_index, 7u);
  auto routed = parse_route_reply(reply(5, RTN_UNICAST, 0, {{RTA_GATEWAY, std::string(4, '\1')}, {RTA_OIF, oif}}), 5);
  ASSERT_TRUE(routed.ok() && routed->has_value());
  EXPECT_TRUE((*routed)->via_gateway);
  // Another request's message is skipped; no route is no answer; other errors and cut bytes fail.
  auto skipped = parse_route_reply(reply(4, RTN_LOCAL, 32, {}) + reply(5, RTN_UNICAST, 24, {}), 5);
  ASSERT_TRUE(skipped.ok() && skipped->has_value());
  EXPECT_EQ((*skipped)->type, unsigned{RTN_UNICAST});
  auto none = parse_route_reply(error_reply(5, ENETUNREACH), 5);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto denied = parse_route_reply(error_reply(5, EPERM), 5);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().sys_errno, EPERM);
  std::string whole = reply(5, RTN_UNICAST, 24, {{RTA_OIF, oif}});
  EXPECT_FALSE(parse_route_reply(whole.substr(0, whole.size() - 2), 5).ok());
  EXPECT_FALSE(parse_route_reply("", 5).ok());
}

TEST(NetRouteQuery, TheInterfacesNameIsParsed) {
  ifinfomsg link{};
  link.ifi_index = 7;
  std::string name("eth0\0", 5);
  auto parsed =
      parse_link_name_reply(message(RTM_NEWLINK, 2, struct_bytes(link) + attributes({{IFLA_IFNAME, name}})), 2);
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  EXPECT_EQ(*parsed, "eth0");
  EXPECT_FALSE(parse_link_name_reply(error_reply(2, ENODEV), 2).ok());
}

// This host's real routes: loopback is a local route on lo, every address the fixed ranges name is
// refused by them first.
TEST(NetRouteQuery, TheKernelIsAsked) {
  auto loopback = query_route(address("127.0.0.1"));
  ASSERT_TRUE(loopback.ok()) << loopback.error().message;
  ASSERT_TRUE(loopback->has_value());
  EXPECT_EQ((*loopback)->type, unsigned{RTN_LOCAL});
  EXPECT_EQ((*loopback)->interface, "lo");
  auto mapped = query_route(address("::ffff:127.0.0.1"));  // connected as IPv4
  ASSERT_TRUE(mapped.ok() && mapped->has_value());
  EXPECT_EQ((*mapped)->family, AF_INET);
  EXPECT_EQ(host_address_reason(address("127.0.0.1")), "loopback");  // the fixed range names it first
  EXPECT_EQ(host_address_reason(address("10.1.2.3")), "private");
}

// Cross-checked with the interfaces' own view (getifaddrs): every address of this host is refused.
TEST(NetLocalNetworks, EveryAddressOfThisHostIsRefused) {
  ifaddrs* list = nullptr;
  ASSERT_EQ(::getifaddrs(&list), 0);
  int checked = 0;
  for (const ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || (ifa->ifa_addr->sa_family != AF_INET && ifa->ifa_addr->sa_family != AF_INET6)) {
      continue;
    }
    sockaddr_storage own{};
    std::memcpy(&own, ifa->ifa_addr, ifa->ifa_addr->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6));
    EXPECT_TRUE(host_address_reason(own).has_value()) << ifa->ifa_name;
    ++checked;
  }
  ::freeifaddrs(list);
  EXPECT_GT(checked, 0);
}

}  // namespace
}  // namespace tnk::net
