#include "backend/vm/qmp_events.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/unix_address.h"

namespace tnk::vm {
namespace {

constexpr const char* kCapabilities = "{\"execute\":\"qmp_capabilities\"}\n";
constexpr const char* kQueryStatus = "{\"execute\":\"query-status\"}\n";
constexpr const char* kQuit = "{\"execute\":\"quit\"}\n";

Result<UniqueFd> connect_retrying(const std::filesystem::path& socket, std::chrono::milliseconds timeout,
                                  const std::function<bool()>& gone) {
  TNK_ASSIGN_OR_RETURN(sockaddr_un addr, unix_address(socket, "QEMU's event monitor socket"));
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd.valid()) return sys_error(errno, "creating a unix socket");
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return fd;
    int err = errno;
    if ((err != ENOENT && err != ECONNREFUSED) || std::chrono::steady_clock::now() >= deadline || gone()) {
      return sys_error(err, "connecting to QEMU's event monitor at " + socket.string());
    }
    ::usleep(10'000);
  }
}

bool send_line(int fd, const char* line) { return ::send(fd, line, std::strlen(line), MSG_NOSIGNAL) >= 0; }

}  // namespace

std::string QmpEvents::disk_full_reason(const std::string& line) {
  auto doc = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!doc.is_object()) return "";
  const auto& data = doc.contains("data") ? doc["data"] : nlohmann::json();
  if (doc.value("event", "") == "BLOCK_IO_ERROR" && data.is_object() && data.value("nospace", false)) {
    std::string reason = data.value("reason", "");
    return reason.empty() ? std::strerror(ENOSPC) : reason;
  }
  // The answer to query-status: paused already, before the watcher connected. With werror=enospc only a
  // full file system pauses the guest on an I/O error.
  const auto& ret = doc.contains("return") ? doc["return"] : nlohmann::json();
  if (ret.is_object() && ret.value("status", "") == "io-error") return std::strerror(ENOSPC);
  return "";
}

Result<std::unique_ptr<QmpEvents>> QmpEvents::watch(const std::filesystem::path& socket,
                                                    std::chrono::milliseconds timeout,
                                                    const std::function<bool()>& gone, OnDiskFull on_full) {
  TNK_ASSIGN_OR_RETURN(UniqueFd fd, connect_retrying(socket, timeout, gone));
  if (!send_line(fd.get(), kCapabilities) || !send_line(fd.get(), kQueryStatus)) {
    return sys_error(errno, "writing to QEMU's event monitor at " + socket.string());
  }
  std::unique_ptr<QmpEvents> events(new QmpEvents(std::move(fd), std::move(on_full)));
  events->thread_ = std::thread([raw = events.get()] { raw->run(); });
  return events;
}

QmpEvents::~QmpEvents() {
  ::shutdown(fd_.get(), SHUT_RDWR);  // wakes the blocked read
  if (thread_.joinable()) thread_.join();
}

void QmpEvents::run() {
  std::string pending;
  char buf[4096];
  for (;;) {
    ssize_t n = ::recv(fd_.get(), buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // QEMU has gone, or the watcher is stopped
    pending.append(buf, static_cast<size_t>(n));
    for (size_t end; (end = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, end);
      pending.erase(0, end + 1);
      std::string reason = disk_full_reason(line);
      if (reason.empty()) continue;
      on_full_(reason);
      (void)send_line(fd_.get(), kQuit);
      return;
    }
    if (pending.size() > 1024 * 1024) pending.clear();  // no line is that long: not QMP
  }
}

}  // namespace tnk::vm
