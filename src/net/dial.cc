#include "net/dial.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>

#include "net/address_check.h"

namespace tnk::net {
namespace {

// What the lookup thread hands back. The thread closes its end of the pipe when the result is in.
struct Lookup {
  std::mutex mu;
  int status = EAI_AGAIN;
  int sys_errno = 0;
  std::vector<Endpoint> endpoints;
};

int run_getaddrinfo(const std::string& host, uint16_t port, int flags, std::vector<Endpoint>& out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = flags | AI_NUMERICSERV;
  addrinfo* list = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list);
  if (rc != 0) return rc;
  for (addrinfo* ai = list; ai != nullptr; ai = ai->ai_next) {
    if (ai->ai_addrlen > sizeof(sockaddr_storage)) continue;
    Endpoint e;
    std::memcpy(&e.address, ai->ai_addr, ai->ai_addrlen);
    e.length = ai->ai_addrlen;
    out.push_back(e);
  }
  ::freeaddrinfo(list);
  return out.empty() ? EAI_NONAME : 0;
}

Error lookup_error(const std::string& host, int status, int err) {
  std::string why = status == EAI_SYSTEM ? std::strerror(err) : ::gai_strerror(status);
  return failed("cannot resolve " + host + ": " + why);
}

Error deadline_error(const std::string& what, Ready r) {
  Error e = failed(what + (r == Ready::kStopped ? ": stopped" : ": timed out"));
  e.sys_errno = r == Ready::kStopped ? ECANCELED : ETIMEDOUT;
  return e;
}

// Starts getaddrinfo on a detached thread and waits for it, the deadline or the stop fd. A lookup
// that is given up on finishes alone; it owns nothing but its shared result and its pipe end.
Result<std::vector<Endpoint>> lookup_on_thread(const std::string& host, uint16_t port, Clock::time_point deadline,
                                               int stop_fd) {
  int ends[2];
  if (::pipe2(ends, O_CLOEXEC) != 0) return sys_error(errno, "resolving " + host + ": pipe");
  UniqueFd done(ends[0]);
  auto lookup = std::make_shared<Lookup>();
  try {
    std::thread([lookup, host, port, write_end = ends[1]] {
      std::vector<Endpoint> found;
      int rc = run_getaddrinfo(host, port, 0, found);
      int err = errno;
      {
        std::lock_guard<std::mutex> lock(lookup->mu);
        lookup->status = rc;
        lookup->sys_errno = err;
        lookup->endpoints = std::move(found);
      }
      ::close(write_end);
    }).detach();
  } catch (const std::exception&) {
    ::close(ends[1]);
    return failed("resolving " + host + ": cannot start a lookup thread");
  }
  Ready r = wait_ready(done.get(), POLLIN, deadline, stop_fd);
  if (r != Ready::kYes) return deadline_error("resolving " + host, r);
  std::lock_guard<std::mutex> lock(lookup->mu);
  if (lookup->status != 0) return lookup_error(host, lookup->status, lookup->sys_errno);
  return std::move(lookup->endpoints);
}

Result<UniqueFd> connect_one(const Endpoint& endpoint, Clock::time_point deadline, int stop_fd) {
  std::string what = "connecting to " + address_to_string(endpoint.address);
  UniqueFd fd(::socket(endpoint.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return sys_error(errno, what + ": socket");
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&endpoint.address), endpoint.length) == 0) return fd;
  if (errno != EINPROGRESS) return sys_error(errno, what);
  Ready r = wait_ready(fd.get(), POLLOUT, deadline, stop_fd);
  if (r != Ready::kYes) return deadline_error(what, r);
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err != 0) return sys_error(err, what);
  return fd;
}

}  // namespace

Result<std::vector<Endpoint>> resolve_tcp(const std::string& host, uint16_t port, Clock::time_point deadline,
                                          int stop_fd) {
  std::vector<Endpoint> literal;
  if (run_getaddrinfo(host, port, AI_NUMERICHOST, literal) == 0) return literal;
  return lookup_on_thread(host, port, deadline, stop_fd);
}

Result<std::pair<UniqueFd, Endpoint>> connect_any(const std::vector<Endpoint>& endpoints, Clock::time_point deadline,
                                                  int stop_fd) {
  std::optional<Error> last;
  for (const Endpoint& endpoint : endpoints) {
    auto fd = connect_one(endpoint, deadline, stop_fd);
    if (fd.ok()) return std::make_pair(std::move(fd).value(), endpoint);
    last = std::move(fd).error();
    if (last->sys_errno == ETIMEDOUT || last->sys_errno == ECANCELED) break;
  }
  if (!last) return failed("no address to connect to");
  return *last;
}

}  // namespace tnk::net
