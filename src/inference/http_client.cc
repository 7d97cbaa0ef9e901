#include "inference/http_client.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <optional>

#include "core/unique_fd.h"
#include "inference/url.h"

namespace tnk::inference {
namespace {

using Clock = std::chrono::steady_clock;

// One request's shared facts: its name in messages and its single deadline.
struct Call {
  std::string what;  // "GET http://host:port/path"
  std::chrono::milliseconds timeout;
  Clock::time_point deadline;

  int remaining_ms() const {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return left <= 0 ? 0 : static_cast<int>(std::min<long long>(left, INT_MAX));
  }
};

Error timed_out(const Call& call) {
  Error e = failed(call.what + ": no answer within " + format_timeout(call.timeout),
                   "check that the inference server is running and not stuck");
  e.sys_errno = ETIMEDOUT;
  return e;
}

// Waits until `fd` is ready for `events` or the call's deadline passes.
Status wait_for(int fd, short events, const Call& call) {
  for (;;) {
    int ms = call.remaining_ms();
    if (ms == 0) return timed_out(call);
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return sys_error(errno, call.what + ": poll");
    if (r > 0) return ok_status();
  }
}

std::string address_text(const addrinfo* ai) {
  char host[NI_MAXHOST] = {};
  char port[NI_MAXSERV] = {};
  if (::getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return "?";
  }
  return ai->ai_family == AF_INET6 ? "[" + std::string(host) + "]:" + port : std::string(host) + ":" + port;
}

Result<UniqueFd> connect_to(const addrinfo* ai, const Call& call) {
  UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol));
  if (!fd.valid()) return sys_error(errno, call.what + ": cannot create a socket");
  std::string what = call.what + ": cannot connect to " + address_text(ai);
  if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0) return fd;
  if (errno != EINPROGRESS && errno != EINTR) return sys_error(errno, what);
  TNK_RETURN_IF_ERROR(wait_for(fd.get(), POLLOUT, call));
  int err = 0;
  socklen_t len = sizeof err;
  if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) return sys_error(errno, what);
  if (err != 0) return sys_error(err, what);
  return fd;
}

// Resolves the host and connects to the first address that accepts, within the one deadline.
Result<UniqueFd> connect_any(const Url& url, const Call& call) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  int rc = ::getaddrinfo(url.host.c_str(), std::to_string(url.port).c_str(), &hints, &found);
  if (rc != 0) {
    std::string why = rc == EAI_SYSTEM ? std::string(std::strerror(errno)) : std::string(::gai_strerror(rc));
    return failed(call.what + ": cannot resolve host '" + url.host + "': " + why,
                  "check the host name in the inference URL");
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> list(found, &::freeaddrinfo);
  std::optional<Error> last;
  for (const addrinfo* ai = list.get(); ai != nullptr; ai = ai->ai_next) {
    auto fd = connect_to(ai, call);
    if (fd.ok()) return fd;
    if (fd.error().sys_errno == ETIMEDOUT) return std::move(fd).error();
    last = std::move(fd).error();
  }
  if (last) return *last;
  return failed(call.what + ": host '" + url.host + "' has no addresses");
}

Status send_all(int fd, const std::string& request, const Call& call) {
  size_t done = 0;
  while (done < request.size()) {
    TNK_RETURN_IF_ERROR(wait_for(fd, POLLOUT, call));
    ssize_t n = ::send(fd, request.data() + done, request.size() - done, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n < 0) return sys_error(errno, call.what + ": cannot send the request");
    done += static_cast<size_t>(n);
  }
  return ok_status();
}

Result<HttpResponse> receive(int fd, const Call& call) {
  ResponseReader reader(call.what);
  char buf[16384];
  while (!reader.complete()) {
    TNK_RETURN_IF_ERROR(wait_for(fd, POLLIN, call));
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n < 0) return sys_error(errno, call.what + ": cannot read the answer");
    if (n == 0) {
      TNK_RETURN_IF_ERROR(reader.finish_at_eof());
      break;
    }
    TNK_RETURN_IF_ERROR(reader.feed(std::string_view(buf, static_cast<size_t>(n))));
  }
  return reader.take();
}

}  // namespace

std::string format_timeout(std::chrono::milliseconds timeout) {
  auto ms = timeout.count();
  if (ms > 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + " s";
  return std::to_string(ms) + " ms";
}

bool is_bad_answer(const Error& error) { return error.sys_errno == EBADMSG || error.sys_errno == EFBIG; }

Result<HttpResponse> http_get(const std::string& url, std::chrono::milliseconds timeout, const std::string& bearer) {
  Call call{"GET " + url, timeout, Clock::now() + timeout};
  TNK_ASSIGN_OR_RETURN(Url parsed, parse_url(url));
  if (parsed.scheme == "https") {
    return failed(call.what + ": https endpoints cannot be probed yet",
                  "use the server's plain http:// address (tnk talks to a local server)");
  }
  TNK_ASSIGN_OR_RETURN(UniqueFd fd, connect_any(parsed, call));
  if (bearer.find_first_of("\r\n") != std::string::npos) return failed(call.what + ": the API key has a line break");
  std::string auth = bearer.empty() ? "" : "Authorization: Bearer " + bearer + "\r\n";
  std::string request = "GET " + parsed.path + " HTTP/1.1\r\nHost: " + parsed.host_header() +
                        "\r\nUser-Agent: tnk\r\nAccept: application/json\r\nAccept-Encoding: identity\r\n" + auth +
                        "Connection: close\r\n\r\n";
  TNK_RETURN_IF_ERROR(send_all(fd.get(), request, call));
  return receive(fd.get(), call);
}

Result<HttpResponse> http_exchange(int fd, const std::string& request, const std::string& what,
                                   std::chrono::milliseconds timeout) {
  Call call{what, timeout, Clock::now() + timeout};
  TNK_RETURN_IF_ERROR(send_all(fd, request, call));
  return receive(fd, call);
}

}  // namespace tnk::inference
