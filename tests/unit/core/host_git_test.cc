#include "core/host_git.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "temp_dir.h"

namespace tnk {
namespace {

// Security review M2: what keeps the repository's config from running anything comes before the
// command, and the directory is git's -C, never its working directory.
TEST(HostGit, HardeningComesBeforeTheCommand) {
  EXPECT_EQ(
      host_git_argv("/p", {"ls-files", "-z"}),
      (std::vector<std::string>{"git", "--no-pager", "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
                                "-c", "safe.directory=*", "-C", "/p", "ls-files", "-z"}));
}

// A repository whose core.fsmonitor is a command: git as tnk runs it lists the index without running
// it; the same git without the hardening (the control) runs it.
TEST(HostGit, ARepositorysFsmonitorDoesNotRun) {
  testing_support::TempDir tmp;
  const std::filesystem::path repo = tmp.path() / "repo", marker = tmp.path() / "ran";
  ProcessOptions quiet;
  quiet.capture_stdout = quiet.capture_stderr = true;
  auto made = run_process({"git", "init", "-q", repo.string()}, quiet);
  if (!made.ok() || made->exit_code != 0) GTEST_SKIP() << "git is not installed";
  { std::ofstream(repo / "f") << "f\n"; }
  ASSERT_EQ(run_process({"git", "-C", repo.string(), "add", "f"}, quiet)->exit_code, 0);  // an index to read
  ASSERT_EQ(run_process(
                {"git", "-C", repo.string(), "config", "core.fsmonitor", "touch " + marker.string() + "; false"}, quiet)
                ->exit_code,
            0);
  auto listed = run_host_git(repo, {"ls-files", "-z"}, std::chrono::seconds(10));
  ASSERT_TRUE(listed.ok()) << listed.error().message;
  EXPECT_EQ(listed->exit_code, 0) << listed->err;
  EXPECT_FALSE(std::filesystem::exists(marker));
  (void)run_process({"git", "-c", "safe.directory=*", "-C", repo.string(), "ls-files"}, quiet);
  EXPECT_TRUE(std::filesystem::exists(marker)) << "the control: plain git runs core.fsmonitor";
}

}  // namespace
}  // namespace tnk
