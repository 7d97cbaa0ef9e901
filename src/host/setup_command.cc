#include "host/setup_command.h"

#include <chrono>

#include "core/subprocess.h"

namespace tnk::host {

Status run_setup_command(const std::vector<std::string>& argv) {
  ProcessOptions options;
  options.capture_stdout = true;
  options.capture_stderr = true;
  options.cwd = "/";  // root's helper, never in the caller's directory (a project: security review M2)
  options.timeout = std::chrono::seconds(60);
  TNK_ASSIGN_OR_RETURN(ProcessResult result, run_process(argv, options));
  if (result.exit_code == 0) return ok_status();
  std::string why = result.err;
  while (!why.empty() && (why.back() == '\n' || why.back() == ' ')) why.pop_back();
  return failed(argv.front() + " exited " + std::to_string(result.exit_code) + (why.empty() ? "" : ": " + why));
}

}  // namespace tnk::host
