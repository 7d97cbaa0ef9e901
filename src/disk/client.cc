#include "disk/client.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/files.h"
#include "core/subprocess.h"
#include "core/user_name.h"
#include "disk/rules.h"

namespace tnk::disk {
namespace {

namespace fs = std::filesystem;

Status run_helper(const std::vector<std::string>& args, const std::string& what) {
  std::vector<std::string> argv{helper_path().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessOptions options;
  options.capture_stderr = true;
  options.capture_stdout = true;
  options.timeout = std::chrono::minutes(2);
  TNK_ASSIGN_OR_RETURN(ProcessResult result, run_process(argv, options));
  if (result.exit_code == 0) return ok_status();
  std::string why = result.err;
  while (!why.empty() && why.back() == '\n') why.pop_back();
  if (why.starts_with("tnk-disk: ")) why = why.substr(10);
  return failed(
      what + ": " + (why.empty() ? "tnk-disk exited " + std::to_string(result.exit_code) : why),
      "docs/ns-backend.md, \"Disk\", says what tnk-disk does and how `sudo tnk setup --user NAME` installs it");
}

}  // namespace

fs::path helper_path() {
  std::error_code ec;
  fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
  fs::path beside = dir / "tnk-disk";
  if (fs::is_regular_file(beside, ec)) return beside;
  return dir.parent_path() / "libexec/tnk/tnk-disk";
}

bool available(std::string* why_not) {
  auto say = [&](const std::string& why) {
    if (why_not != nullptr) *why_not = why;
    return false;
  };
  struct stat st {};
  fs::path helper = helper_path();
  if (::stat(helper.c_str(), &st) != 0) return say(helper.string() + " is missing");
  if (::geteuid() != 0 && (st.st_uid != 0 || (st.st_mode & S_ISUID) == 0)) {
    return say(helper.string() + " is not set-user-id root");
  }
  auto conf = read_file(kAllowanceFile);
  std::string user = effective_user_name();
  if (!conf.ok() || !allowance_for(*conf, user))
    return say(std::string(kAllowanceFile) + " gives " + user + " no allowance");
  return true;
}

Status attach(const std::string& key, const fs::path& dir, uint64_t bytes, bool fresh) {
  std::vector<std::string> args{"attach", key, dir.string(), std::to_string(std::max(bytes, kMinDiskBytes))};
  if (fresh) args.push_back("--fresh");
  return run_helper(args, "mounting the disk of sandbox " + key + " on " + dir.string());
}

Status release(const std::string& key, const fs::path& dir) {
  std::error_code ec;
  if (fs::is_directory(dir, ec))
    TNK_RETURN_IF_ERROR(run_helper({"detach", dir.string()}, "unmounting " + dir.string()));
  return run_helper({"remove", key}, "removing the disk of sandbox " + key);
}

}  // namespace tnk::disk
