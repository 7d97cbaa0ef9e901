#include "core/host_git.h"

namespace tnk {

std::vector<std::string> host_git_argv(const std::filesystem::path& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {
      "git", "--no-pager", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "safe.directory=*",
      "-C",  dir.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

Result<ProcessResult> run_host_git(const std::filesystem::path& dir, const std::vector<std::string>& args,
                                   std::chrono::milliseconds timeout) {
  ProcessOptions options;
  options.capture_stdout = true;
  options.capture_stderr = true;
  options.cwd = "/";
  options.timeout = timeout;
  return run_process(host_git_argv(dir, args), options);
}

}  // namespace tnk
