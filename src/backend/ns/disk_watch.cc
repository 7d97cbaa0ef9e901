// The ns sandbox's disk watch (disk_watch.h): the walk, the schedule, the watch process and what the
// supervisor makes of its end.
#include "backend/ns/disk_watch.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <utility>

#include "core/nofollow_dir.h"
#include "linux/syscalls.h"

namespace tnk::ns {
namespace fs = std::filesystem;

namespace {

constexpr int kExitOver = 3;
constexpr int kExitError = 4;

uint64_t allocated(const struct stat& st) { return static_cast<uint64_t>(st.st_blocks) * 512; }

std::string mib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return text;
}

// A directory being walked: its descriptor, its names (read whole, by core's dir_names) and how far.
struct Level {
  UniqueFd fd;
  std::vector<std::string> names;
  size_t next = 0;
};

// The directory `entry` of `parent` (`shown` in errors) as a Level; nullopt when it is gone or no longer
// a directory (the sandbox changed it while the walk went by). No symbolic link is followed.
Result<std::optional<Level>> open_level(int parent, const std::string& entry, const std::string& shown) {
  UniqueFd fd(openat(parent, entry.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP) return std::optional<Level>();
    return sys_error(errno, "opening " + shown);
  }
  TNK_ASSIGN_OR_RETURN(std::vector<std::string> names, dir_names(fd.get(), shown));
  return std::optional<Level>(Level{std::move(fd), std::move(names)});
}

}  // namespace

Result<uint64_t> tree_bytes(int dir_fd, const std::string& name, uint64_t stop_above) {
  struct stat st {};
  if (fstat(dir_fd, &st) != 0) return sys_error(errno, "stat " + name);
  const dev_t device = st.st_dev;
  uint64_t total = allocated(st);
  std::set<ino_t> linked;  // inodes with more than one name, counted at the first
  std::vector<Level> stack;
  TNK_ASSIGN_OR_RETURN(std::optional<Level> top, open_level(dir_fd, ".", name));
  if (!top) return not_found(name + " is gone");
  stack.push_back(std::move(*top));
  while (!stack.empty() && total <= stop_above) {
    Level& current = stack.back();
    if (current.next == current.names.size()) {
      stack.pop_back();
      continue;
    }
    const std::string& entry = current.names[current.next++];
    if (fstatat(current.fd.get(), entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;
      return sys_error(errno, "stat " + entry + " under " + name);
    }
    if (st.st_dev != device) continue;  // a mount: not the sandbox's layer
    if (S_ISDIR(st.st_mode)) {
      TNK_ASSIGN_OR_RETURN(std::optional<Level> sub, open_level(current.fd.get(), entry, entry + " under " + name));
      if (!sub) continue;
      total += allocated(st);
      stack.push_back(std::move(*sub));  // `current` is not used past here: the push may move it
    } else if (st.st_nlink < 2 || linked.insert(st.st_ino).second) {
      total += allocated(st);
    }
  }
  return total;
}

bool should_measure(uint64_t free_then, uint64_t free_now, uint64_t used, uint64_t limit) {
  if (used >= limit) return true;
  uint64_t fallen = free_then > free_now ? free_then - free_now : 0;
  return fallen >= std::max((limit - used) / 2, kFallTrigger);
}

namespace {

// The free bytes of the file system `fd` is on; 0 when it cannot tell (the watch then measures at
// every look, the safe side).
uint64_t free_bytes(int fd) {
  struct statfs fs {};
  if (fstatfs(fd, &fs) != 0) return 0;
  return static_cast<uint64_t>(fs.f_bfree) * static_cast<uint64_t>(fs.f_frsize);
}

}  // namespace

int disk_watch_main(int argc, char** argv) {
  if (argc < 6 || argc % 2 != 0) return kExitError;
  char* end = nullptr;
  errno = 0;
  const uint64_t limit = std::strtoull(argv[2], &end, 10);
  if (errno != 0 || end == argv[2] || *end != '\0') return kExitError;
  (void)prctl(PR_SET_NAME, "tnk-disk-watch");  // for ps; exec named it "exe"
  const int init_pidfd = std::atoi(argv[3]);
  const int first_dir = std::atoi(argv[4]);
  // A deep tree holds a descriptor per level while it is walked.
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0) {
    files.rlim_cur = files.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &files);
  }
  for (;;) {
    uint64_t used = 0;
    for (int i = 4; i + 1 < argc && used <= limit; i += 2) {
      Result<uint64_t> bytes = tree_bytes(std::atoi(argv[i]), argv[i + 1], limit - used);
      if (!bytes) {
        std::printf("error %s\n", bytes.error().message.c_str());
        return kExitError;
      }
      used += *bytes;
    }
    if (used > limit) {
      // Said before the sandbox ends, so that the supervisor knows why whichever end it sees first.
      std::printf("over %llu\n", static_cast<unsigned long long>(used));
      std::fflush(stdout);
      // Its PID 1, and with it every process of its pid namespace: the writes stop now, not once
      // the supervisor has heard.
      (void)syscall(SYS_pidfd_send_signal, init_pidfd, SIGKILL, nullptr, 0U);
      return kExitOver;
    }
    const uint64_t free_then = free_bytes(first_dir);
    const auto deadline = std::chrono::steady_clock::now() + kMaxMeasureInterval;
    while (std::chrono::steady_clock::now() < deadline) {
      // The wait is a poll of stdout, whose reader is the supervisor: gone, it is the watch's end too.
      pollfd out{STDOUT_FILENO, 0, 0};
      int ready = poll(&out, 1, static_cast<int>(kLookInterval.count()));
      if (ready > 0 && (out.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return 0;
      if (should_measure(free_then, free_bytes(first_dir), used, limit)) break;
    }
  }
}

Result<DiskWatch> DiskWatch::start(const Sandbox& sandbox, const std::vector<fs::path>& dirs, uint64_t limit) {
  if (dirs.empty()) return failed("the disk watch was given no directory");
  std::vector<UniqueFd> handles;
  handles.emplace_back(static_cast<int>(syscall(SYS_pidfd_open, sandbox.init_pid, 0U)));
  if (!handles.back().valid()) return sys_error(errno, "opening a pidfd of the sandbox's PID 1");
  std::vector<std::string> args{"tnk", kDiskWatchArg, std::to_string(limit), std::to_string(handles.back().get())};
  // Opened here, as the caller: the way to them may pass through directories that the sandbox's root,
  // whom the watch becomes, may not search.
  for (const fs::path& dir : dirs) {
    handles.emplace_back(open(dir.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!handles.back().valid()) return sys_error(errno, "opening " + dir.string());
    args.insert(args.end(), {std::to_string(handles.back().get()), dir.string()});
  }
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  char* no_env[] = {nullptr};
  TNK_ASSIGN_OR_RETURN(Pipe report, make_pipe());
  if (fcntl(report.read_end.get(), F_SETFL, O_NONBLOCK) != 0) return sys_error(errno, "the disk watch's pipe");
  pid_t pid = fork();
  if (pid < 0) return sys_error(errno, "forking the sandbox's disk watch");
  if (pid == 0) {  // system calls only until exec: the supervisor has threads
    auto fail = [](const char* step) {
      linux::sys::CharBuf line;
      line.add("error ").add(step).add("\n");
      (void)!write(STDOUT_FILENO, line.c_str(), std::strlen(line.c_str()));  // one write: read whole
      _exit(kExitError);
    };
    if (dup2(report.write_end.get(), STDOUT_FILENO) < 0) _exit(kExitError);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, STDIN_FILENO) < 0) fail("opening /dev/null");
    if (chdir("/") != 0) fail("chdir /");
    for (const UniqueFd& handle : handles) {
      if (fcntl(handle.get(), F_SETFD, 0) != 0) fail("passing a directory on");
    }
    if (setns(sandbox.namespaces.fd(kUserNs), CLONE_NEWUSER) != 0) fail("joining the sandbox's user namespace");
    (void)setgroups(0, nullptr);  // refused where the namespace denies it: the groups then stay unmapped
    if (setresgid(0, 0, 0) != 0 || setresuid(0, 0, 0) != 0) fail("becoming the sandbox's root");
    // After the id change, which clears it; exec keeps it (tnk is no set-id program).
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() == 1) _exit(0);
    execve("/proc/self/exe", argv.data(), no_env);
    fail("executing tnk");
  }
  report.write_end.reset();
  return DiskWatch(pid, std::move(report.read_end), limit, dirs.front());
}

std::optional<Error> DiskWatch::verdict() const {
  if (said_) return said_;
  char text[512] = {};
  ssize_t n = read(report_.get(), text, sizeof text - 1);
  if (n <= 0) return std::nullopt;
  std::string last(text, static_cast<size_t>(n));
  while (!last.empty() && last.back() == '\n') last.pop_back();
  if (last.rfind("over ", 0) == 0) {
    uint64_t used = std::strtoull(last.c_str() + 5, nullptr, 10);
    said_ = failed("the sandbox's disk is full: what it wrote (" + upper_.string() + ") passed its resources.disk of " +
                       mib(limit_) + " (at least " + mib(used) + " on the host), and tnk stopped the sandbox",
                   "its files are kept: raise resources.disk in the profile's manifest (or [sandbox] disk in "
                   "tnk.toml) and start it again, then remove what it does not need; `tnk sandbox delete` "
                   "removes it all");
  } else {
    said_ = ended(last.rfind("error ", 0) == 0 ? last.substr(6) : last);
  }
  return said_;
}

Error DiskWatch::ended(const std::string& why) {
  return failed(
      "the sandbox's disk watch failed (" + why + "), and tnk stopped the sandbox: its disk was no longer bounded",
      "start it again; supervisor.log in its state directory has the supervisor's side");
}

DiskWatch::DiskWatch(DiskWatch&& other) noexcept
    : pid_(std::exchange(other.pid_, 0)),
      report_(std::move(other.report_)),
      limit_(other.limit_),
      upper_(std::move(other.upper_)),
      said_(std::move(other.said_)) {}

DiskWatch& DiskWatch::operator=(DiskWatch&& other) noexcept {
  if (this != &other) {
    end();
    pid_ = std::exchange(other.pid_, 0);
    report_ = std::move(other.report_);
    limit_ = other.limit_;
    upper_ = std::move(other.upper_);
    said_ = std::move(other.said_);
  }
  return *this;
}

DiskWatch::~DiskWatch() { end(); }

void DiskWatch::end() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    linux::sys::wait_for(pid_);
  }
  pid_ = 0;
}

}  // namespace tnk::ns
