#include "net/route_query.h"

#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "core/unique_fd.h"

namespace tnk::net {
namespace {

constexpr int kReplyTimeoutMs = 1000;  // the kernel answers at once; this only bounds a surprise

// The destination as the kernel routes it: an IPv4-mapped IPv6 address is connected as IPv4.
struct Destination {
  int family = AF_UNSPEC;
  std::array<uint8_t, 16> bytes{};
  std::size_t size = 0;
};

Destination destination_of(const sockaddr_storage& address) {
  Destination out;
  if (address.ss_family == AF_INET) {
    sockaddr_in v4;
    std::memcpy(&v4, &address, sizeof v4);
    out = {AF_INET, {}, 4};
    std::memcpy(out.bytes.data(), &v4.sin_addr, 4);
  } else if (address.ss_family == AF_INET6) {
    sockaddr_in6 v6;
    std::memcpy(&v6, &address, sizeof v6);
    static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    bool mapped = std::memcmp(v6.sin6_addr.s6_addr, kMapped, sizeof kMapped) == 0;
    out = mapped ? Destination{AF_INET, {}, 4} : Destination{AF_INET6, {}, 16};
    std::memcpy(out.bytes.data(), v6.sin6_addr.s6_addr + (mapped ? 12 : 0), out.size);
  }
  return out;
}

// A request message: the header, then `payload` (the family's struct and its attributes).
std::string netlink_request(uint16_t type, uint32_t seq, std::string_view payload) {
  nlmsghdr header{};
  header.nlmsg_len = static_cast<uint32_t>(NLMSG_LENGTH(payload.size()));
  header.nlmsg_type = type;
  header.nlmsg_flags = NLM_F_REQUEST;
  header.nlmsg_seq = seq;
  std::string bytes(NLMSG_HDRLEN, '\0');
  std::memcpy(bytes.data(), &header, sizeof header);
  return bytes.append(payload);
}

// `value` as a struct's bytes, padded to netlink's alignment.
template <class T>
std::string padded_bytes(const T& value) {
  std::string bytes(NLMSG_ALIGN(sizeof value), '\0');
  std::memcpy(bytes.data(), &value, sizeof value);
  return bytes;
}

// RTM_GETROUTE for one address: the route that matched (RTM_F_FIB_MATCH), not a host route made for it.
std::string route_request(const Destination& to, uint32_t seq) {
  rtmsg route{};
  route.rtm_family = static_cast<unsigned char>(to.family);
  route.rtm_dst_len = static_cast<unsigned char>(to.size * 8);
  route.rtm_flags = RTM_F_FIB_MATCH;
  rtattr dst{};
  dst.rta_len = static_cast<unsigned short>(RTA_LENGTH(to.size));
  dst.rta_type = RTA_DST;
  std::string address(RTA_ALIGN(to.size), '\0');
  std::memcpy(address.data(), to.bytes.data(), to.size);
  return netlink_request(RTM_GETROUTE, seq, padded_bytes(route) + padded_bytes(dst) + address);
}

// RTM_GETLINK for one interface, for its name (if_indextoname's ioctl is not among the relay's calls).
std::string link_request(uint32_t index, uint32_t seq) {
  ifinfomsg link{};
  link.ifi_family = AF_UNSPEC;
  link.ifi_index = static_cast<int>(index);
  return netlink_request(RTM_GETLINK, seq, padded_bytes(link));
}

// Sends `request` and returns the kernel's answer (it answers at once, before sendto returns).
Result<std::string> exchange(int fd, const std::string& request) {
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd, request.data(), request.size(), 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0) {
    return sys_error(errno, "asking the kernel for a route");
  }
  pollfd ready{fd, POLLIN, 0};
  if (::poll(&ready, 1, kReplyTimeoutMs) <= 0) return failed("the kernel did not answer a route request");
  std::string reply(8192, '\0');
  ssize_t n = ::recv(fd, reply.data(), reply.size(), 0);
  if (n < 0) return sys_error(errno, "reading the kernel's route answer");
  reply.resize(static_cast<std::size_t>(n));
  return reply;
}

Error bad_reply(const std::string& what) { return failed("the kernel's route answer: " + what); }

// Calls `take(type, value)` for each attribute (rtattr) of a message body, from `offset`.
template <class Take>
Status for_each_attribute(std::string_view body, std::size_t offset, Take take) {
  for (std::size_t at = offset; at + sizeof(rtattr) <= body.size();) {
    rtattr attribute;
    std::memcpy(&attribute, body.data() + at, sizeof attribute);
    if (attribute.rta_len < sizeof attribute || at + attribute.rta_len > body.size())
      return bad_reply("a cut attribute");
    take(attribute.rta_type, body.substr(at + RTA_LENGTH(0), attribute.rta_len - RTA_LENGTH(0)));
    at += RTA_ALIGN(attribute.rta_len);
  }
  return ok_status();
}

// The body of the message of type `type` that answers request `seq`; nullopt when the kernel answered
// ENETUNREACH or EHOSTUNREACH (no route); another error it reports fails with its errno.
Result<std::optional<std::string_view>> answer_body(std::string_view reply, uint32_t seq, uint16_t type) {
  while (reply.size() >= sizeof(nlmsghdr)) {
    nlmsghdr header;
    std::memcpy(&header, reply.data(), sizeof header);
    if (header.nlmsg_len < NLMSG_HDRLEN || header.nlmsg_len > reply.size()) return bad_reply("a cut message");
    std::string_view body = reply.substr(NLMSG_HDRLEN, header.nlmsg_len - NLMSG_HDRLEN);
    reply.remove_prefix(std::min<std::size_t>(NLMSG_ALIGN(header.nlmsg_len), reply.size()));
    if (header.nlmsg_seq != seq) continue;  // not ours
    if (header.nlmsg_type == type) return std::optional<std::string_view>(body);
    if (header.nlmsg_type != NLMSG_ERROR) continue;
    int error = 0;
    if (body.size() < sizeof error) return bad_reply("a cut error");
    std::memcpy(&error, body.data(), sizeof error);  // nlmsgerr starts with it
    if (error == -ENETUNREACH || error == -EHOSTUNREACH) return std::optional<std::string_view>();
    if (error != 0) return sys_error(-error, "asking the kernel for a route");
  }
  return bad_reply("no answer to the request in it");
}

// An RTM_NEWROUTE message's body: the rtmsg, then its attributes.
Result<RouteAnswer> parse_route(std::string_view body) {
  rtmsg route;
  if (body.size() < sizeof route) return bad_reply("a route message too short");
  std::memcpy(&route, body.data(), sizeof route);
  RouteAnswer answer;
  answer.family = route.rtm_family;
  answer.type = route.rtm_type;
  answer.prefix_length = route.rtm_dst_len;
  TNK_RETURN_IF_ERROR(for_each_attribute(body, NLMSG_ALIGN(sizeof route), [&](unsigned type, std::string_view value) {
    if (type == RTA_GATEWAY || type == RTA_VIA || type == RTA_MULTIPATH) answer.via_gateway = true;
    if (type == RTA_OIF && value.size() >= sizeof answer.interface_index) {
      std::memcpy(&answer.interface_index, value.data(), sizeof answer.interface_index);
    }
  }));
  return answer;
}

}  // namespace

Result<std::optional<RouteAnswer>> parse_route_reply(std::string_view reply, uint32_t seq) {
  TNK_ASSIGN_OR_RETURN(std::optional<std::string_view> body, answer_body(reply, seq, RTM_NEWROUTE));
  if (!body) return std::optional<RouteAnswer>();
  TNK_ASSIGN_OR_RETURN(RouteAnswer answer, parse_route(*body));
  return std::optional<RouteAnswer>(std::move(answer));
}

Result<std::string> parse_link_name_reply(std::string_view reply, uint32_t seq) {
  TNK_ASSIGN_OR_RETURN(std::optional<std::string_view> body, answer_body(reply, seq, RTM_NEWLINK));
  if (!body || body->size() < sizeof(ifinfomsg)) return bad_reply("no interface in it");
  std::string name;
  TNK_RETURN_IF_ERROR(
      for_each_attribute(*body, NLMSG_ALIGN(sizeof(ifinfomsg)), [&](unsigned type, std::string_view value) {
        if (type == IFLA_IFNAME) name = std::string(value.substr(0, value.find('\0')));
      }));
  return name;
}

Result<std::optional<RouteAnswer>> query_route(const sockaddr_storage& address) {
  Destination to = destination_of(address);
  if (to.family == AF_UNSPEC) return failed("asking for a route: not an IPv4 or IPv6 address");
  UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE));
  if (!fd.valid()) return sys_error(errno, "opening a netlink socket to ask for a route");
  TNK_ASSIGN_OR_RETURN(std::string reply, exchange(fd.get(), route_request(to, 1)));
  TNK_ASSIGN_OR_RETURN(std::optional<RouteAnswer> route, parse_route_reply(reply, 1));
  if (!route || route->interface_index == 0) return route;
  TNK_ASSIGN_OR_RETURN(reply, exchange(fd.get(), link_request(route->interface_index, 2)));
  auto name = parse_link_name_reply(reply, 2);
  if (name) route->interface = std::move(*name);  // else the reason names the index
  return route;
}

}  // namespace tnk::net
