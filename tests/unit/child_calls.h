// System calls made in a forked child (so that a seccomp filter or a namespace change stays there),
// each reported by name as "ok" or its errno's name ("EPERM"), for tests that pair the same calls with
// and without a confinement.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <map>
#include <sstream>
#include <string>

namespace tnk::testing_support {

// Reports one call: its name and its return value (negative: failed, errno says why).
using ShowCall = std::function<void(const char* name, long rc)>;

// Runs `calls` in a child; a child that cannot set itself up _exits non-zero and the map comes back
// empty. Empty too when the pipe cannot be made.
inline std::map<std::string, std::string> calls_in_child(const std::function<void(const ShowCall&)>& calls) {
  int fds[2];
  if (::pipe(fds) != 0) return {};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    calls([&out](const char* name, long rc) {
      out += std::string(name) + "=" + (rc < 0 ? strerrorname_np(errno) : "ok") + "\n";
    });
    (void)!::write(fds[1], out.data(), out.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string text;
  char buf[512];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::map<std::string, std::string> results;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return results;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    auto eq = line.find('=');
    results[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return results;
}

}  // namespace tnk::testing_support
