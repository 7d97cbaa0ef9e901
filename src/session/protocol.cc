#include "session/protocol.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/unix_address.h"

namespace tnk::session {
namespace {

using nlohmann::json;

constexpr std::size_t kControlBytes = CMSG_SPACE(sizeof(int) * kMaxFds);

// Room for kMaxFds descriptors, aligned for cmsghdr.
union ControlBuffer {
  char bytes[kControlBytes];
  cmsghdr align;
};

std::string limit_text() { return std::to_string(kMaxMessageBytes / 1024) + " KiB"; }

// Moves every descriptor of every SCM_RIGHTS header into owned fds.
std::vector<UniqueFd> take_fds(msghdr& msg) {
  std::vector<UniqueFd> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd = -1;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      fds.emplace_back(fd);
    }
  }
  return fds;
}

Result<json> parse_body(const std::string& text) {
  json body;
  try {
    body = json::parse(text);
  } catch (const json::exception& e) {
    return failed(std::string("control message is not valid JSON: ") + e.what());
  }
  if (!body.is_object()) return failed("control message is not a JSON object");
  return body;
}

int connect_to(int fd, const sockaddr_un& addr) {
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  } while (rc < 0 && errno == EINTR);
  return rc < 0 ? errno : 0;
}

Result<UniqueFd> new_socket() {
  UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys_error(errno, "cannot create a unix socket");
  return fd;
}

// A socket file that nobody listens on is left over from a supervisor that died: remove it.
Status remove_stale_socket(const std::filesystem::path& path, const sockaddr_un& addr) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return ok_status();
    return sys_error(errno, "cannot inspect " + path.string());
  }
  if (!S_ISSOCK(st.st_mode)) return failed("refusing to replace " + path.string() + ": it is not a socket");
  TNK_ASSIGN_OR_RETURN(UniqueFd probe, new_socket());
  int err = connect_to(probe.get(), addr);
  if (err == 0) {
    return failed("another supervisor is already listening on " + path.string(),
                  "stop the sandbox first with `tnk sandbox stop`");
  }
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
    return sys_error(errno, "cannot remove the stale control socket " + path.string());
  }
  return ok_status();
}

}  // namespace

Status send_message(int sock, const json& body, std::span<const int> fds) {
  if (!body.is_object()) return failed("cannot send control message: it is not a JSON object");
  if (fds.size() > kMaxFds) {
    return failed("cannot send control message: " + std::to_string(fds.size()) + " descriptors, the limit is " +
                  std::to_string(kMaxFds));
  }
  std::string text;
  try {
    text = body.dump();
  } catch (const json::exception& e) {
    return failed(std::string("cannot encode control message: ") + e.what(), "arguments must be valid UTF-8");
  }
  if (text.size() > kMaxMessageBytes) {
    return failed("cannot send control message: it is " + std::to_string(text.size()) + " bytes, the limit is " +
                  limit_text());
  }
  iovec iov{text.data(), text.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  ControlBuffer control{};
  if (!fds.empty()) {
    msg.msg_control = control.bytes;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do {
    n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return sys_error(errno, "cannot send control message");
  return ok_status();
}

Result<std::optional<Message>> recv_message(int sock) {
  std::string buffer(kMaxMessageBytes, '\0');
  iovec iov{buffer.data(), buffer.size()};
  ControlBuffer control{};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.bytes;
  msg.msg_controllen = sizeof(control.bytes);
  ssize_t n;
  do {
    n = ::recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && errno == ECONNRESET) return std::optional<Message>();  // the peer is gone: same as EOF
  if (n < 0) return sys_error(errno, "cannot receive control message");
  Message m;
  m.fds = take_fds(msg);  // owned from here: an error below closes them
  if ((msg.msg_flags & MSG_CTRUNC) != 0) {
    return failed("control message truncated: it carried more than " + std::to_string(kMaxFds) + " descriptors");
  }
  if ((msg.msg_flags & MSG_TRUNC) != 0) {
    return failed("control message truncated: it is larger than the " + limit_text() + " limit");
  }
  if (n == 0) return std::optional<Message>();  // orderly EOF (empty messages are never sent)
  buffer.resize(static_cast<std::size_t>(n));
  TNK_ASSIGN_OR_RETURN(m.body, parse_body(buffer));
  return std::optional<Message>(std::move(m));
}

Result<std::optional<Message>> recv_message_until(int sock, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      Error e = failed("no answer on the control socket in time");
      e.sys_errno = ETIMEDOUT;  // callers tell a timeout from other failures by this
      return e;
    }
    pollfd p{sock, POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 60'000)));
    if (rc < 0 && errno != EINTR) return sys_error(errno, "cannot wait on the control socket");
    if (rc > 0) return recv_message(sock);
  }
}

Result<UniqueFd> listen_control(const std::filesystem::path& path) {
  TNK_ASSIGN_OR_RETURN(sockaddr_un addr, unix_address(path, "control socket"));
  TNK_RETURN_IF_ERROR(remove_stale_socket(path, addr));
  TNK_ASSIGN_OR_RETURN(UniqueFd fd, new_socket());
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return sys_error(errno, "cannot bind the control socket " + path.string());
  }
  // The state directory is 0700, so the moment between bind and chmod exposes nothing.
  if (::chmod(path.c_str(), 0600) != 0) return sys_error(errno, "cannot chmod 0600 " + path.string());
  if (::listen(fd.get(), 64) != 0) return sys_error(errno, "cannot listen on " + path.string());
  return fd;
}

Result<UniqueFd> connect_control(const std::filesystem::path& path, std::chrono::milliseconds timeout) {
  TNK_ASSIGN_OR_RETURN(sockaddr_un addr, unix_address(path, "control socket"));
  TNK_ASSIGN_OR_RETURN(UniqueFd fd, new_socket());
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  if (timeout.count() > 0) ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  int err = connect_to(fd.get(), addr);
  if (err == ENOENT || err == ECONNREFUSED) {
    return not_found("no supervisor is listening on " + path.string(), "start the sandbox with `tnk sandbox start`");
  }
  if (err == EAGAIN) {
    return failed("the supervisor on " + path.string() + " did not accept the connection within " +
                  std::to_string(timeout.count()) + " ms");
  }
  if (err != 0) return sys_error(err, "cannot connect to " + path.string());
  timeval none{};
  if (timeout.count() > 0) ::setsockopt(fd.get(), SOL_SOCKET, SO_SNDTIMEO, &none, sizeof(none));
  return fd;
}

Result<UniqueFd> accept_control(int listen_fd) {
  for (;;) {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) return UniqueFd(fd);
    if (errno != EINTR && errno != ECONNABORTED) return sys_error(errno, "cannot accept a control connection");
  }
}

}  // namespace tnk::session
