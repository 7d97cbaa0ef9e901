// listen_loopback_in(): a child forked from the caller joins only a network namespace (through its user
// namespace, which owns it and gives the rights to join: an ns sandbox's, or a rootless vm's QEMU's),
// creates the listening socket there and passes it back over a socketpair (SCM_RIGHTS). A socket stays in
// the namespace it was created in, so the caller accepts connections made to 127.0.0.1 inside it.
// listen_unix_in(): the same for a unix socket at a path of another mount namespace.
#include "linux/loopback_listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "linux/syscalls.h"

namespace tnk::linux {

namespace {

struct ListenReport {
  int32_t step = 0;  // 0 = ok (an fd is attached), 1 setns, 2 socket, 3 bind, 4 listen
  int32_t err = 0;
};

ListenReport listen_tcp(int userns, int netns, uint16_t port, int& sock) {  // userns -1: none
  int one = 1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if ((userns >= 0 && setns(userns, CLONE_NEWUSER) != 0) || setns(netns, CLONE_NEWNET) != 0) return {1, errno};
  if ((sock = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0) return {2, errno};
  if (setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0 ||
      bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return {3, errno};
  }
  if (listen(sock, SOMAXCONN) != 0) return {4, errno};
  return {};
}

// As the sandbox's root (its user namespace joined, ids 0), in its mount namespace: `path`'s directory
// made (0755), any old socket there replaced, the new one open to every user inside (0666), as a
// system-wide agent socket is; the directory's mode keeps others from replacing it.
ListenReport listen_unix(int userns, int mntns, const std::string& path, int& sock) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return {3, ENAMETOOLONG};
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (setns(userns, CLONE_NEWUSER) != 0 || setgroups(0, nullptr) != 0 || setresgid(0, 0, 0) != 0 ||
      setresuid(0, 0, 0) != 0 || setns(mntns, CLONE_NEWNS) != 0) {
    return {1, errno};
  }
  std::string dir = path.substr(0, path.rfind('/'));
  if (!dir.empty() && mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return {3, errno};
  if ((sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) < 0) return {2, errno};
  unlink(path.c_str());
  if (bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || chmod(path.c_str(), 0666) != 0) {
    return {3, errno};
  }
  if (listen(sock, SOMAXCONN) != 0) return {4, errno};
  return {};
}

[[noreturn]] void send_socket(int channel, ListenReport report, int sock) {
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

Result<UniqueFd> receive_socket(int channel, const std::string& what) {
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
  if (n != static_cast<ssize_t>(sizeof(report))) return failed(what + ": the helper process died");
  static const char* const kSteps[] = {"", "joining its namespaces", "creating the socket", "binding", "listening"};
  if (report.step != 0 || !sock.valid()) {
    int step = report.step >= 1 && report.step <= 4 ? report.step : 0;
    return sys_error(report.err == 0 ? EIO : report.err, what + " (" + kSteps[step] + ")");
  }
  return sock;
}

// The socket a child forked from the caller makes with `make`, passed back over a socketpair.
Result<UniqueFd> socket_from_child(const std::function<ListenReport(int& sock)>& make, const std::string& what) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
    return sys_error(errno, "creating a socketpair");
  }
  UniqueFd ours(pair[0]), theirs(pair[1]);
  pid_t child = fork();
  if (child < 0) return sys_error(errno, "forking the listen helper");
  if (child == 0) {
    int sock = -1;
    ListenReport report = make(sock);
    send_socket(theirs.get(), report, sock);
  }
  theirs.reset();
  Result<UniqueFd> sock = receive_socket(ours.get(), what);
  sys::wait_for(child);
  return sock;
}

}  // namespace

Result<UniqueFd> listen_loopback_in(int userns_fd, int netns_fd, uint16_t port, const std::string& where) {
  return socket_from_child([&](int& sock) { return listen_tcp(userns_fd, netns_fd, port, sock); },
                           "listening on 127.0.0.1:" + std::to_string(port) + " " + where);
}

Result<UniqueFd> listen_unix_in(int userns_fd, int mntns_fd, const std::string& path, const std::string& where) {
  return socket_from_child([&](int& sock) { return listen_unix(userns_fd, mntns_fd, path, sock); },
                           "listening on " + path + " " + where);
}

}  // namespace tnk::linux
