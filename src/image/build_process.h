// Running the image builder (mmdebstrap) with its output streamed line by line as it arrives, and
// turning its `I:` phase lines into short progress lines.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace tnk::image {

struct StreamOptions {
  std::chrono::milliseconds timeout{std::chrono::minutes(30)};
  // A descriptor the child keeps open (CLOEXEC cleared in the child only), e.g. the build lock.
  int inherit_fd = -1;
  // Run the child in a private mount namespace, so that whatever it mounts (mmdebstrap mounts /proc,
  // /sys and /dev inside the tree) vanishes with it even when it is killed. Needs CAP_SYS_ADMIN;
  // without it the child runs in tnk's namespace.
  bool private_mounts = false;
};

// Runs argv (no shell) in a process group of its own, with stdin from /dev/null and stdout+stderr merged
// into one pipe; calls `on_line` with every line (without its newline) as it arrives. Returns the exit
// status (128+signal when killed); whatever of its group is still running when it ends is killed. Fails
// when the program cannot start (ENOENT -> not_found), when tnk gets SIGINT, SIGTERM or SIGHUP (passed on
// to the group) or when it overruns the timeout (SIGTERM); either way the group gets SIGKILL once the
// program has ended or 20 s later.
Result<int> run_streaming(const std::vector<std::string>& argv, const StreamOptions& options,
                          const std::function<void(std::string_view)>& on_line);

// mmdebstrap's phases as short progress lines: feed it every output line; it returns a line to show
// when a new phase starts, nullopt otherwise.
class ProgressFilter {
 public:
  static constexpr int kPhases = 7;
  std::optional<std::string> feed(std::string_view line);
  int phase() const { return phase_; }  // 1..kPhases: the one feed() last announced

 private:
  std::string last_;
  int phase_ = 0;
};

}  // namespace tnk::image
