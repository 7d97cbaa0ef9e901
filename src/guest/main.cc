// tnk-agent: the guest's PID 1 and command server (see guest/init.h). Not PID 1 (tests, debugging), it
// serves the same protocol on the host without mounting anything:
//   tnk-agent --serve-fd N --token T        one connection on an inherited fd, then exits
//   tnk-agent --serve-socket PATH --token T connections on a unix socket, one after another, until poweroff
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/unique_fd.h"
#include "guest/init.h"
#include "guest/server.h"

#ifndef TNK_VERSION
#define TNK_VERSION "dev"
#endif

namespace {

constexpr int kExitUsage = 64;

int usage() {
  std::fprintf(stderr,
               "usage: tnk-agent                          (as PID 1 in the guest)\n"
               "       tnk-agent --serve-fd N --token T\n"
               "       tnk-agent --serve-socket PATH --token T\n"
               "       tnk-agent --version\n");
  return kExitUsage;
}

int fail(const tnk::Error& error) {
  std::fprintf(stderr, "tnk-agent: %s\n", error.message.c_str());
  return 1;
}

// Nothing may land on 0..2 by accident: a session's pipes are moved there in the child.
void ensure_stdio() {
  for (int fd = 0; fd < 3; ++fd) {
    if (::fcntl(fd, F_GETFD) < 0) (void)::open("/dev/null", O_RDWR);
  }
}

tnk::Result<tnk::UniqueFd> listen_at(const std::string& path) {
  sockaddr_un addr{};
  if (path.empty() || path.size() >= sizeof addr.sun_path) return tnk::failed("bad socket path " + path);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  tnk::UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ::unlink(path.c_str());
  if (!fd.valid() || ::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(fd.get(), 4) != 0) {
    return tnk::sys_error(errno, "cannot listen on " + path);
  }
  return fd;
}

int serve(const std::string& mode, const std::string& where, const std::string& token) {
  auto server = tnk::guest::AgentServer::create({token, std::string("tnk-agent ") + TNK_VERSION});
  if (!server) return fail(server.error());
  if (mode == "--serve-fd") {
    char* end = nullptr;
    long fd = std::strtol(where.c_str(), &end, 10);
    if (where.empty() || *end != '\0' || fd < 0 || fd > 1 << 20) return usage();
    auto done = (*server)->serve(static_cast<int>(fd));
    return done ? 0 : fail(done.error());
  }
  auto listener = listen_at(where);
  if (!listener) return fail(listener.error());
  tnk::Status done = (*server)->serve_listener(listener->get());
  return done.ok() ? 0 : fail(done.error());
}

}  // namespace

int main(int argc, char** argv) {
  if (::getpid() == 1) tnk::guest::run_as_init();
  ensure_stdio();
  std::string mode, where, token;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--version") {
      std::printf("tnk-agent %s\n", TNK_VERSION);
      return 0;
    }
    if (i + 1 >= argc) return usage();
    if (arg == "--serve-fd" || arg == "--serve-socket") {
      mode = arg;
      where = argv[++i];
    } else if (arg == "--token") {
      token = argv[++i];
    } else {
      return usage();
    }
  }
  if (mode.empty() || token.empty()) return usage();
  return serve(mode, where, token);
}
