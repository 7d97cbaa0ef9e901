#include "linux/syscalls.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace tnk::linux::sys {

pid_t clone_process(unsigned long flags) {
  return static_cast<pid_t>(syscall(SYS_clone, flags, 0UL, nullptr, nullptr, 0UL));
}

int pivot_root(const char* new_root, const char* put_old) {
  return static_cast<int>(syscall(SYS_pivot_root, new_root, put_old));
}

int set_capabilities(uint64_t effective, uint64_t permitted, uint64_t inheritable) {
  __user_cap_header_struct header{};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  __user_cap_data_struct data[2]{};
  data[0].effective = static_cast<uint32_t>(effective);
  data[1].effective = static_cast<uint32_t>(effective >> 32);
  data[0].permitted = static_cast<uint32_t>(permitted);
  data[1].permitted = static_cast<uint32_t>(permitted >> 32);
  data[0].inheritable = static_cast<uint32_t>(inheritable);
  data[1].inheritable = static_cast<uint32_t>(inheritable >> 32);
  return static_cast<int>(syscall(SYS_capset, &header, data));
}

CharBuf& CharBuf::add(const char* text) {
  for (; *text != '\0'; ++text) {
    if (len_ + 1 >= sizeof(data_)) {
      overflow_ = true;
      break;
    }
    data_[len_++] = *text;
  }
  data_[len_] = '\0';
  return *this;
}

CharBuf& CharBuf::add_int(long value) {
  char digits[24];
  size_t n = 0;
  bool negative = value < 0;
  unsigned long v = negative ? 0UL - static_cast<unsigned long>(value) : static_cast<unsigned long>(value);
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  char text[26];
  size_t pos = 0;
  if (negative) text[pos++] = '-';
  while (n > 0) text[pos++] = digits[--n];
  text[pos] = '\0';
  return add(text);
}

CharBuf fd_path(int fd, const char* suffix) {
  CharBuf buf;
  buf.add("/proc/self/fd/").add_int(fd).add(suffix);
  return buf;
}

bool send_report(int fd, int32_t step, int err, int32_t value) {
  Report report{step, err, value};
  ssize_t n;
  do {
    n = write(fd, &report, sizeof(report));
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(sizeof(report));
}

Status read_reports(int fd, std::chrono::milliseconds timeout, std::vector<Report>* out) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  Report report;
  size_t have = 0;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return failed("timed out after " + std::to_string(timeout.count()) +
                    " ms waiting for the sandbox's setup processes");
    }
    pollfd pfd{fd, POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return sys_error(errno, "waiting for the sandbox's setup processes");
    if (ready == 0) continue;
    ssize_t n = read(fd, reinterpret_cast<char*>(&report) + have, sizeof(report) - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return sys_error(errno, "reading from the sandbox's setup processes");
    if (n == 0) return ok_status();  // every writer is gone (exited or exec'd)
    have += static_cast<size_t>(n);
    if (have == sizeof(report)) {
      out->push_back(report);
      have = 0;
    }
  }
}

int wait_for(pid_t pid) {
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, __WALL);
    if (r == pid) return status;
    if (r < 0 && errno == EINTR) continue;
    return -1;
  }
}

int open_dirs_below(int root, const char* rel, bool create, unsigned mode) {
  int current = fcntl(root, F_DUPFD_CLOEXEC, 0);
  const char* p = rel;
  while (current >= 0 && *p != '\0') {
    while (*p == '/') ++p;
    const char* end = p;
    while (*end != '\0' && *end != '/') ++end;
    size_t len = static_cast<size_t>(end - p);
    if (len == 0) break;
    char name[NAME_MAX + 1];
    if (len > NAME_MAX) {
      close(current);
      errno = ENAMETOOLONG;
      return -1;
    }
    std::memcpy(name, p, len);
    name[len] = '\0';
    if (create && mkdirat(current, name, static_cast<mode_t>(mode)) != 0 && errno != EEXIST) {
      int err = errno;
      close(current);
      errno = err;
      return -1;
    }
    // O_NOFOLLOW with O_DIRECTORY fails with ENOTDIR on a symlink.
    int next = openat(current, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    close(current);
    errno = err;
    current = next;
    p = end;
  }
  return current;
}

}  // namespace tnk::linux::sys
