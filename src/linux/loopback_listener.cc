// listen_loopback_in(): a child forked from the caller joins only a network namespace (through its user
// namespace, which owns it and gives the rights to join: an ns sandbox's, or a rootless vm's QEMU's),
// creates the listening socket there and passes it back over a socketpair (SCM_RIGHTS). A socket stays in
// the namespace it was created in, so the caller accepts connections made to 127.0.0.1 inside it.
#include "linux/loopback_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "linux/syscalls.h"

namespace tnk::linux {

namespace {

struct ListenReport {
  int32_t step = 0;  // 0 = ok (an fd is attached), 1 setns, 2 socket, 3 bind, 4 listen
  int32_t err = 0;
};

[[noreturn]] void listen_child(int userns, int netns, int channel, uint16_t port) {  // userns -1: none
  ListenReport report;
  int sock = -1;
  int one = 1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if ((userns >= 0 && setns(userns, CLONE_NEWUSER) != 0) || setns(netns, CLONE_NEWNET) != 0) {
    report = {1, errno};
  } else if ((sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0) {
    report = {2, errno};
  } else if (setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
             bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    report = {3, errno};
  } else if (listen(sock, SOMAXCONN) != 0) {
    report = {4, errno};
  }
  iovec iov{&report, sizeof(report)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (report.step == 0) {
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(cmsg), &sock, sizeof(int));
  }
  _exit(sendmsg(channel, &msg, MSG_NOSIGNAL) < 0 ? 1 : 0);
}

Result<UniqueFd> receive_socket(int channel, uint16_t port, const std::string& where) {
  ListenReport report{-1, 0};
  iovec iov{&report, sizeof(report)};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msg.msg_control = control;
  msg.msg_controllen = sizeof(control);
  ssize_t n;
  do {
    n = recvmsg(channel, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  UniqueFd sock;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c), sizeof(int));
      sock.reset(fd);
    }
  }
  const std::string what = "listening on 127.0.0.1:" + std::to_string(port) + " " + where;
  if (n != static_cast<ssize_t>(sizeof(report))) return failed(what + ": the helper process died");
  static const char* const kSteps[] = {"", "joining its network namespace", "creating the socket", "binding",
                                       "listening"};
  if (report.step != 0 || !sock.valid()) {
    int step = report.step >= 1 && report.step <= 4 ? report.step : 0;
    return sys_error(report.err == 0 ? EIO : report.err, what + " (" + kSteps[step] + ")");
  }
  return sock;
}

}  // namespace

Result<UniqueFd> listen_loopback_in(int userns_fd, int netns_fd, uint16_t port, const std::string& where) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return sys_error(errno, "creating a socketpair");
  }
  UniqueFd ours(pair[0]), theirs(pair[1]);
  pid_t child = fork();
  if (child < 0) return sys_error(errno, "forking the listen helper");
  if (child == 0) listen_child(userns_fd, netns_fd, theirs.get(), port);
  theirs.reset();
  Result<UniqueFd> sock = receive_socket(ours.get(), port, where);
  sys::wait_for(child);
  return sock;
}

}  // namespace tnk::linux
