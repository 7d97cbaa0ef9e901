// Running a host program from an argv array (never a shell string), optionally capturing its
// output, with a deadline after which it is killed and reaped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace tnk {

struct ProcessOptions {
  bool capture_stdout = false;  // else inherited
  bool capture_stderr = false;  // else inherited
  std::optional<std::filesystem::path> cwd;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};
};

struct ProcessResult {
  int exit_code = 0;  // the exit status, or 128+signal when killed
  std::string out;
  std::string err;
};

// Fails when the program cannot be started or runs past the timeout; a non-zero exit is a result.
Result<ProcessResult> run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Forks and execs `argv` (PATH lookup, no shell). `child_setup` runs in the child first (async-signal-
// safe calls only: dup2, chdir, ...) and returns 0, or an errno that ends the child. Returns once the
// program runs; a program that cannot start (setup failure or exec failure) is an error naming argv[0],
// and the child is reaped.
// The child's report of a failure to start is on a descriptor at or above kReportFdFloor, so that a
// setup may dup2 onto any number below it.
inline constexpr int kReportFdFloor = 64;
Result<pid_t> start_process(const std::vector<std::string>& argv, const std::function<int()>& child_setup);

// 128+n for a signal, the status otherwise (the convention of shells and of `tnk sandbox exec`).
int exit_code_from_wait_status(int status);

}  // namespace tnk
