// git as tnk runs it on the host (issue 32, security review M2): in a repository the sandbox may have
// written, git may read the repository's config, but nothing in it runs. Every git tnk starts goes
// through here, so that the set of settings that keep it so lives in one place.
#pragma once

#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/subprocess.h"

namespace tnk {

// `git <hardening> -C dir <args>`. The hardening is the smallest set that leaves git nothing to run
// for the commands tnk uses (config --file, ls-files, check-ignore, rev-parse, clone):
//   --no-pager                 core.pager and pager.* (a command) are never started;
//   -c core.fsmonitor=false    reading an index runs core.fsmonitor otherwise (ls-files, check-ignore);
//   -c core.hooksPath=/dev/null no hook is found, whatever core.hooksPath or .git/hooks hold (clone's
//                              post-checkout; none of the others runs a hook today);
//   -c safe.directory=*        run by root in a user's project, git refuses it as another user's.
// Command-line -c wins over every config file git reads. The keys that run something only in commands
// tnk never runs (diff.external and *.textconv: diff and log; filter.*: checkout, add, status;
// core.sshCommand, credential.*, remote.*.uploadpack: fetch and push; alias.*: never for a built-in)
// are left alone: listing them would only suggest that they are reached. `git config --file` reads
// that file alone, without includes, and ignores -c.
std::vector<std::string> host_git_argv(const std::filesystem::path& dir, const std::vector<std::string>& args);

// Runs host_git_argv with "/" as git's working directory: the calling directory (often the project)
// is never where git, or a program git looks up through a relative PATH entry, is found. Output is
// captured.
Result<ProcessResult> run_host_git(const std::filesystem::path& dir, const std::vector<std::string>& args,
                                   std::chrono::milliseconds timeout);

}  // namespace tnk
