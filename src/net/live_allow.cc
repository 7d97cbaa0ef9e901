#include "net/live_allow.h"

#include <sys/socket.h>

#include <algorithm>

#include "net/domain_match.h"

namespace tnk::net {

LiveAllowList::Admission LiveAllowList::judge(std::string_view host, uint16_t port) const {
  Admission out;
  if (domain_denied(deny_, host, port, &out.rule)) {
    out.denied = true;
    return out;
  }
  if (std::ranges::find(any_name_ports_, port) != any_name_ports_.end()) {
    out.allowed = true;
    out.rule = "open";
    return out;
  }
  out.allowed = domain_allowed(allow_, host, port, &out.rule);
  out.port_only = !out.allowed && host_listed(allow_, host);
  return out;
}

LiveAllowList::Admission LiveAllowList::admit(std::string_view host, uint16_t port, int client_fd) {
  std::lock_guard<std::mutex> lock(mu_);
  Admission out = judge(host, port);
  if (!out.allowed) return out;
  out.ticket = next_ticket_++;
  open_[out.ticket] = Open{std::string(host), port, client_fd, -1, false};
  return out;
}

bool LiveAllowList::attach(uint64_t ticket, int upstream_fd) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(ticket);
  if (it == open_.end() || it->second.cut) return false;
  it->second.upstream_fd = upstream_fd;
  return true;
}

bool LiveAllowList::was_cut(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(ticket);
  return it != open_.end() && it->second.cut;
}

void LiveAllowList::release(uint64_t ticket) {
  std::lock_guard<std::mutex> lock(mu_);
  open_.erase(ticket);
}

std::size_t LiveAllowList::replace(std::vector<std::string> allow, std::vector<std::string> deny) {
  std::lock_guard<std::mutex> lock(mu_);
  allow_ = std::move(allow);
  deny_ = std::move(deny);
  std::size_t cut = 0;
  for (auto& [ticket, open] : open_) {
    if (open.cut || judge(open.host, open.port).allowed) continue;
    // The descriptors stay open (their thread closes them after release()): shutdown only wakes and
    // ends its relay, the client reading its end of stream.
    ::shutdown(open.client_fd, SHUT_RDWR);
    if (open.upstream_fd >= 0) ::shutdown(open.upstream_fd, SHUT_RDWR);
    open.cut = true;
    ++cut;
  }
  return cut;
}

}  // namespace tnk::net
