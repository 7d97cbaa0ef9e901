#include "review/git_ignore.h"

#include <set>
#include <string>

#include "core/host_git.h"

namespace tnk::review {
namespace {

constexpr size_t kBatch = 500;  // paths per git run: far below ARG_MAX for any path length

}  // namespace

Result<bool> mark_ignored(const std::filesystem::path& project, std::vector<Change>& changes) {
  // git refuses paths inside its own directory: those are never ignored anyway.
  std::vector<std::string> paths;
  for (const auto& c : changes) {
    if (c.path != ".git" && !c.path.starts_with(".git/")) paths.push_back(c.path);
  }
  std::set<std::string> ignored;
  for (size_t start = 0; start < paths.size(); start += kBatch) {
    std::vector<std::string> args = {"-c", "core.quotePath=false", "check-ignore", "--"};
    for (size_t i = start; i < paths.size() && i < start + kBatch; ++i) args.push_back(paths[i]);
    // Nothing of the project's config runs, and git starts outside it (core/host_git.h).
    Result<ProcessResult> ran = run_host_git(project, args, std::chrono::seconds(30));
    if (!ran || (ran->exit_code != 0 && ran->exit_code != 1)) return false;  // no git, or not a work tree
    // One path a line; git quotes one with a newline or a quote in it, which then stays reported.
    for (size_t pos = 0; pos < ran->out.size();) {
      size_t end = ran->out.find('\n', pos);
      if (end == std::string::npos) end = ran->out.size();
      ignored.insert(ran->out.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  for (auto& c : changes) c.ignored = ignored.count(c.path) != 0;
  return true;
}

}  // namespace tnk::review
