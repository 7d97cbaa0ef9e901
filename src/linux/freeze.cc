#include "linux/freeze.h"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include "core/files.h"

namespace tnk::linux {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr std::chrono::seconds kFreezeTimeout{5};

bool wait_until(const std::function<bool()>& done) {
  auto deadline = Clock::now() + kFreezeTimeout;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

// v2: "frozen 1" in cgroup.events; v1: FROZEN in freezer.state.
bool cgroup_frozen(const fs::path& file) {
  if (file.filename() == "cgroup.freeze") {
    auto events = read_file(file.parent_path() / "cgroup.events");
    return events.ok() && events->find("frozen 1") != std::string::npos;
  }
  auto state = read_file(file);
  return state.ok() && state->starts_with("FROZEN");
}

// The processes whose pid namespace is `init_pid`'s (PID 1 included).
std::vector<pid_t> pid_namespace_members(pid_t init_pid) {
  std::vector<pid_t> members;
  struct stat ns {};
  if (::stat(("/proc/" + std::to_string(init_pid) + "/ns/pid").c_str(), &ns) != 0) return members;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) continue;
    struct stat theirs {};
    if (::stat((entry.path() / "ns/pid").c_str(), &theirs) != 0) continue;
    if (theirs.st_ino == ns.st_ino && theirs.st_dev == ns.st_dev) members.push_back(std::stoi(name));
  }
  return members;
}

// 'T' (stopped) or 't' in /proc/PID/stat's state field, or gone.
bool is_stopped(pid_t pid) {
  auto stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return true;
  size_t paren = stat->rfind(')');
  return paren == std::string::npos || paren + 2 >= stat->size() || (*stat)[paren + 2] == 'T' ||
         (*stat)[paren + 2] == 't' || (*stat)[paren + 2] == 'Z' || (*stat)[paren + 2] == 'X';
}

// A process may fork while the others are being stopped: stop until a pass finds nobody new.
Result<Frozen> stop_by_signal(pid_t init_pid) {
  Frozen frozen;
  frozen.how = "SIGSTOP";
  bool settled = wait_until([&] {
    bool fresh = false;
    for (pid_t pid : pid_namespace_members(init_pid)) {
      if (std::find(frozen.stopped.begin(), frozen.stopped.end(), pid) != frozen.stopped.end()) continue;
      if (::kill(pid, SIGSTOP) == 0) frozen.stopped.push_back(pid);
      fresh = true;
    }
    if (fresh) return false;
    return std::all_of(frozen.stopped.begin(), frozen.stopped.end(), is_stopped);
  });
  if (settled) return frozen;
  (void)thaw_sandbox(frozen);
  return failed("the sandbox's processes did not all stop within " + std::to_string(kFreezeTimeout.count()) + " s");
}

}  // namespace

Result<Frozen> freeze_sandbox(pid_t init_pid, const std::vector<fs::path>& cgroup_dirs) {
  struct Freezer {
    const char* file;
    const char* value;
    const char* how;
  };
  constexpr Freezer kFreezers[] = {{"cgroup.freeze", "1", "cgroup v2 freezer"},
                                   {"freezer.state", "FROZEN", "cgroup v1 freezer"}};
  for (const auto& dir : cgroup_dirs) {
    for (const Freezer& freezer : kFreezers) {
      const fs::path file = dir / freezer.file;
      std::error_code ec;
      if (!fs::exists(file, ec) || !write_kernel_file(file, freezer.value).ok()) continue;
      Frozen frozen{file, {}, freezer.how};
      if (wait_until([&file] { return cgroup_frozen(file); })) return frozen;
      (void)thaw_sandbox(frozen);
      return failed("the sandbox's cgroup " + dir.string() + " did not freeze within " +
                    std::to_string(kFreezeTimeout.count()) + " s");
    }
  }
  return stop_by_signal(init_pid);
}

Status thaw_sandbox(const Frozen& frozen) {
  if (!frozen.cgroup_file.empty()) {
    bool v2 = frozen.cgroup_file.filename() == "cgroup.freeze";
    return write_kernel_file(frozen.cgroup_file, v2 ? "0" : "THAWED");
  }
  for (pid_t pid : frozen.stopped) ::kill(pid, SIGCONT);
  return ok_status();
}

}  // namespace tnk::linux
